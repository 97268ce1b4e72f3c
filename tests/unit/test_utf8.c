/* Text for other programs is valid for any bytes (issue 26): base/utf8.h's
 * well-formedness (RFC 3629's table: the boundaries of each length,
 * overlong forms, surrogates, past U+10FFFF, truncated sequences) and the
 * writers that replace what is not UTF-8 with U+FFFD: base/json.h's
 * json_string, out/svg.h's svg_text, out/report.h's report_csv_field. */
#include "base/json.h"
#include "base/utf8.h"
#include "out/report.h"
#include "out/svg.h"

#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

static void test_len(void)
{
    /* well-formed: the first and last code point of each length */
    CHECK_INT(utf8_len("A"), 1);
    CHECK_INT(utf8_len("\x7f"), 1);
    CHECK_INT(utf8_len("\xc2\x80"), 2);         /* U+0080 */
    CHECK_INT(utf8_len("\xdf\xbf"), 2);         /* U+07FF */
    CHECK_INT(utf8_len("\xe0\xa0\x80"), 3);     /* U+0800 */
    CHECK_INT(utf8_len("\xed\x9f\xbf"), 3);     /* U+D7FF */
    CHECK_INT(utf8_len("\xee\x80\x80"), 3);     /* U+E000 */
    CHECK_INT(utf8_len("\xef\xbf\xbf"), 3);     /* U+FFFF */
    CHECK_INT(utf8_len("\xf0\x90\x80\x80"), 4); /* U+10000 */
    CHECK_INT(utf8_len("\xf4\x8f\xbf\xbf"), 4); /* U+10FFFF */
    /* not: continuation, overlong, surrogate, too large, truncated */
    CHECK_INT(utf8_len("\x80"), 0);
    CHECK_INT(utf8_len("\xc0\xaf"), 0);
    CHECK_INT(utf8_len("\xc1\xbf"), 0);
    CHECK_INT(utf8_len("\xe0\x9f\xbf"), 0);
    CHECK_INT(utf8_len("\xed\xa0\x80"), 0);     /* U+D800 */
    CHECK_INT(utf8_len("\xf0\x8f\xbf\xbf"), 0); /* overlong U+FFFF */
    CHECK_INT(utf8_len("\xf4\x90\x80\x80"), 0); /* U+110000 */
    CHECK_INT(utf8_len("\xf5\x80\x80\x80"), 0);
    CHECK_INT(utf8_len("\xff"), 0);
    CHECK_INT(utf8_len("\xe2\x82"), 0); /* a NUL where the third byte goes */
    CHECK_INT(utf8_len("\xc3("), 0);
    CHECK_INT(utf8_valid("ok \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), 1);
    CHECK_INT(utf8_valid("ok \xc3\xa9 \xff"), 0);
    CHECK_INT(utf8_valid(""), 1);
}

/* What write(f, s) writes, as a string the caller frees. */
static char *written(void (*write)(FILE *, const char *), const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    write(f, s);
    fclose(f);
    return buf;
}

static void check_written(void (*write)(FILE *, const char *), const char *s,
                          const char *want)
{
    char *got = written(write, s);
    CHECK_STR(got, want);
    free(got);
}

static void test_writers(void)
{
    /* one U+FFFD per byte that starts no sequence, as Lua's utf8.len
     * finds them (lua/pipesim/init.lua's quote) */
    const char *bad = "a\xff\xc3(\xed\xa0\x80\xc3\xa9\"";
    check_written(json_string, bad,
                  "\"a\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffd\xc3\xa9\\\"\"");
    check_written(json_string, "\t\n\r\\\x01\x7f",
                  "\"\\t\\n\\r\\\\\\u0001\x7f\"");
    check_written(svg_text, bad,
                  "a" UTF8_REPLACEMENT UTF8_REPLACEMENT
                  "(" UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT
                  "\xc3\xa9&quot;");
    /* U+FFFE and U+FFFF are well-formed but no XML character */
    check_written(svg_text, "\xef\xbf\xbe\xef\xbf\xbf\xef\xbf\xbd",
                  UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT);
    check_written(report_csv_field, "a\xff,\xc3\xa9",
                  "\"a" UTF8_REPLACEMENT ",\xc3\xa9\"");
    check_written(report_csv_field, "a\xff", "a" UTF8_REPLACEMENT);
    check_written(report_csv_field, "plain \xc3\xa9", "plain \xc3\xa9");
}

int main(void)
{
    test_len();
    test_writers();
    return harness_done();
}
