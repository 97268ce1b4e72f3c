/* base/unit.c: quantities as scenarios write them, the whole text read (a NUL
 * byte inside is an error, not the end), FLOPs as a count or a rate,
 * fractions, and the messages that quote the text. */
#include "base/unit.h"

#include "harness.h"

static double parse(const char *text, enum unit_kind kind)
{
    double v = -1;
    ps_err err;
    if (unit_parse(text, kind, &v, &err))
        return NAN;
    return v;
}

int main(void)
{
    CHECK_NEAR(parse("5 us", UNIT_SECONDS), 5e-6);
    CHECK_NEAR(parse(" 2 ms ", UNIT_SECONDS), 2e-3);
    CHECK_NEAR(parse("80 GiB", UNIT_BYTES), 80.0 * 1073741824.0);
    CHECK_NEAR(parse("400 Gb/s", UNIT_BANDWIDTH), 50e9);
    CHECK_NEAR(parse("7", UNIT_BYTES), 7);

    /* TFLOPs: the field's kind decides */
    CHECK_NEAR(parse("989 TFLOPs", UNIT_FLOP_RATE), 989e12);
    CHECK_NEAR(parse("3.5 TFLOPs", UNIT_FLOP), 3.5e12);
    CHECK_NEAR(parse("2 PFLOPs", UNIT_FLOP_RATE), 2e15);
    CHECK_NEAR(parse("7 GFLOPs", UNIT_FLOP), 7e9);
    CHECK_NEAR(parse("12 FLOPs", UNIT_FLOP_RATE), 12);
    CHECK(isnan(parse("1 TFLOPs", UNIT_BYTES)));
    CHECK(isnan(parse("1 TFLOP", UNIT_FLOP_RATE))); /* a count */

    /* fractions */
    CHECK_NEAR(parse("45%", UNIT_RATIO), 0.45);
    CHECK_NEAR(parse("0.5", UNIT_RATIO), 0.5);
    CHECK(isnan(parse("0.5 TFLOP", UNIT_RATIO)));

    /* the length is the caller's: "5 us\0junk" is not "5 us" */
    ps_err err;
    double v = -1;
    CHECK(unit_parse_len("5 us\0junk", 9, UNIT_SECONDS, &v, &err) != 0);
    CHECK_STR(err.msg, "'5 us\\0junk' contains a NUL byte");
    CHECK_INT(v, -1);
    CHECK(unit_parse_len("5 usXX", 4, UNIT_SECONDS, &v, &err) == 0);
    CHECK_NEAR(v, 5e-6); /* not terminated at len: reads only len bytes */

    /* messages quote the text */
    CHECK(unit_parse("50 GB/z", UNIT_BANDWIDTH, &v, &err) != 0);
    CHECK(strstr(err.msg, "unknown unit in '50 GB/z'") != NULL);
    CHECK(unit_parse("5 GB", UNIT_SECONDS, &v, &err) != 0);
    CHECK(strstr(err.msg, "'5 GB' is a size in bytes, expected a time") !=
          NULL);
    CHECK(unit_parse("inf s", UNIT_SECONDS, &v, &err) != 0);
    CHECK(strstr(err.msg, "not a finite number") != NULL);
    /* decimal only, and nothing that underflows (issue 27 item 15) */
    CHECK(unit_parse("0x10 s", UNIT_SECONDS, &v, &err) != 0);
    CHECK_STR(err.msg, "'0x10 s' is not a decimal number (hexadecimal "
                       "numbers are not read: write e.g. \"5 us\")");
    CHECK(isnan(parse("-0X1p3", UNIT_BYTES)));
    CHECK(unit_parse("1e-400 s", UNIT_SECONDS, &v, &err) != 0);
    CHECK_STR(err.msg, "'1e-400 s' is too small to represent (below "
                       "2.22507e-308 it underflows to 0): write 0 for none");
    CHECK(isnan(parse("1e-310 ns", UNIT_SECONDS))); /* once scaled */
    CHECK_NEAR(parse("1e-300 s", UNIT_SECONDS), 1e-300);
    CHECK_NEAR(parse("0 s", UNIT_SECONDS), 0);
    CHECK_NEAR(parse("010 s", UNIT_SECONDS), 10); /* not octal either */
    char long_text[300];
    memset(long_text, '1', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = 0;
    CHECK(unit_parse(long_text, UNIT_BYTES, &v, &err) != 0);
    CHECK(strstr(err.msg, "is too long") != NULL);
    CHECK(strlen(err.msg) < 200);
    return harness_done();
}
