/* Unit parsing: a number, optional spaces, then a unit from a small table.
 * The table is the whole vocabulary; anything else is an error that quotes
 * the text, so a typo in a scenario never becomes a silent 1e9 mistake. */
#include "base/unit.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct unit_def {
    const char *name;
    enum unit_kind kind;
    double scale;
};

static const struct unit_def units[] = {
    {"s", UNIT_SECONDS, 1},
    {"ms", UNIT_SECONDS, 1e-3},
    {"us", UNIT_SECONDS, 1e-6},
    {"ns", UNIT_SECONDS, 1e-9},
    {"B", UNIT_BYTES, 1},
    {"KB", UNIT_BYTES, 1e3},
    {"kB", UNIT_BYTES, 1e3},
    {"MB", UNIT_BYTES, 1e6},
    {"GB", UNIT_BYTES, 1e9},
    {"TB", UNIT_BYTES, 1e12},
    {"KiB", UNIT_BYTES, 1024.0},
    {"MiB", UNIT_BYTES, 1048576.0},
    {"GiB", UNIT_BYTES, 1073741824.0},
    {"TiB", UNIT_BYTES, 1099511627776.0},
    {"B/s", UNIT_BANDWIDTH, 1},
    {"KB/s", UNIT_BANDWIDTH, 1e3},
    {"MB/s", UNIT_BANDWIDTH, 1e6},
    {"GB/s", UNIT_BANDWIDTH, 1e9},
    {"TB/s", UNIT_BANDWIDTH, 1e12},
    {"KiB/s", UNIT_BANDWIDTH, 1024.0},
    {"MiB/s", UNIT_BANDWIDTH, 1048576.0},
    {"GiB/s", UNIT_BANDWIDTH, 1073741824.0},
    {"b/s", UNIT_BANDWIDTH, 1.0 / 8},
    {"bps", UNIT_BANDWIDTH, 1.0 / 8},
    {"Kb/s", UNIT_BANDWIDTH, 1e3 / 8},
    {"Kbps", UNIT_BANDWIDTH, 1e3 / 8},
    {"Mb/s", UNIT_BANDWIDTH, 1e6 / 8},
    {"Mbps", UNIT_BANDWIDTH, 1e6 / 8},
    {"Gb/s", UNIT_BANDWIDTH, 1e9 / 8},
    {"Gbps", UNIT_BANDWIDTH, 1e9 / 8},
    {"Tb/s", UNIT_BANDWIDTH, 1e12 / 8},
    {"Tbps", UNIT_BANDWIDTH, 1e12 / 8},
    {"FLOP", UNIT_FLOP, 1},
    {"KFLOP", UNIT_FLOP, 1e3},
    {"MFLOP", UNIT_FLOP, 1e6},
    {"GFLOP", UNIT_FLOP, 1e9},
    {"TFLOP", UNIT_FLOP, 1e12},
    {"PFLOP", UNIT_FLOP, 1e15},
    {"FLOPS", UNIT_FLOP_RATE, 1},
    {"FLOP/s", UNIT_FLOP_RATE, 1},
    {"GFLOPS", UNIT_FLOP_RATE, 1e9},
    {"GFLOP/s", UNIT_FLOP_RATE, 1e9},
    {"TFLOPS", UNIT_FLOP_RATE, 1e12},
    {"TFLOP/s", UNIT_FLOP_RATE, 1e12},
    {"PFLOPS", UNIT_FLOP_RATE, 1e15},
    {"PFLOP/s", UNIT_FLOP_RATE, 1e15},
    {"%", UNIT_RATIO, 0.01},
};

/* "989 TFLOPs" is how datasheets and papers often write a rate, and
 * "3.5 TFLOPs" a count: these take the kind the field wants (a count or a
 * rate; any other kind is an error). */
static const struct unit_def either_units[] = {
    {"FLOPs", UNIT_FLOP, 1},
    {"GFLOPs", UNIT_FLOP, 1e9},
    {"TFLOPs", UNIT_FLOP, 1e12},
    {"PFLOPs", UNIT_FLOP, 1e15},
};

const char *unit_kind_name(enum unit_kind kind)
{
    switch (kind) {
    case UNIT_SECONDS: return "time";
    case UNIT_BYTES: return "size in bytes";
    case UNIT_BANDWIDTH: return "bandwidth";
    case UNIT_FLOP: return "flop count";
    case UNIT_FLOP_RATE: return "flop rate";
    case UNIT_RATIO: return "number";
    }
    return "quantity";
}

const char *unit_example(enum unit_kind kind)
{
    switch (kind) {
    case UNIT_SECONDS: return "\"5 us\"";
    case UNIT_BYTES: return "\"80 GiB\"";
    case UNIT_BANDWIDTH: return "\"50 GB/s\" or \"400 Gb/s\"";
    case UNIT_FLOP: return "\"3.5 TFLOP\"";
    case UNIT_FLOP_RATE: return "\"312 TFLOPS\"";
    case UNIT_RATIO: return "0.5 or \"50%\"";
    }
    return "";
}

/* text (len bytes) as a printable, quoted copy for messages: NUL and
 * control bytes escaped, long texts cut. */
static const char *quoted(const char *text, size_t len, char *buf, size_t n)
{
    size_t o = 0;
    buf[o++] = '\'';
    for (size_t i = 0; i < len && o + 8 < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == 0) {
            buf[o++] = '\\';
            buf[o++] = '0';
        } else if (c < 32 || c == 127) {
            o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
        } else {
            buf[o++] = (char)c;
        }
        if (i + 1 < len && o + 8 >= n) {
            memcpy(buf + o, "...", 3);
            o += 3;
        }
    }
    buf[o++] = '\'';
    buf[o] = 0;
    return buf;
}

/* A value v of text once scaled by its unit: finite ("1e308 PFLOP" is
 * finite until scaled) and not underflowed ("1e-310 ns"). */
static int scaled(const char *text, double v, double out, ps_err *err)
{
    if (!isfinite(out))
        return ps_errf(err, "'%s' is not a finite number", text);
    if (v != 0 && fabs(out) < DBL_MIN)
        return ps_errf(err,
                       "'%s' is too small to represent (below %g it "
                       "underflows to 0): write 0 for none",
                       text, DBL_MIN);
    return PS_OK;
}

int unit_parse(const char *text, enum unit_kind kind, double *out, ps_err *err)
{
    return unit_parse_len(text, strlen(text), kind, out, err);
}

int unit_parse_len(const char *text, size_t len, enum unit_kind kind,
                   double *out, ps_err *err)
{
    char q[96], buf[128];
    if (memchr(text, 0, len))
        return ps_errf(err, "%s contains a NUL byte",
                       quoted(text, len, q, sizeof q));
    if (len >= sizeof buf)
        return ps_errf(err, "%s is too long for a %s",
                       quoted(text, len, q, sizeof q), unit_kind_name(kind));
    /* a terminated copy: strtod must not read past the caller's bytes */
    memcpy(buf, text, len);
    buf[len] = 0;
    text = buf;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    int range = errno == ERANGE;
    if (end == text)
        return ps_errf(err, "'%s' is not a %s (expected e.g. %s)", text,
                       unit_kind_name(kind), unit_example(kind));
    if (!isfinite(v))
        return ps_errf(err, "'%s' is not a finite number", text);
    /* strtod reads C's hexadecimal floats too ("0x10" is 16): a number
     * here is decimal (issue 27 item 15) */
    const char *digits = text + strspn(text, " \t\n\r\f\v+-");
    if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
        return ps_errf(err,
                       "'%s' is not a decimal number (hexadecimal numbers "
                       "are not read: write e.g. %s)",
                       text, unit_example(kind));
    if (range && fabs(v) < DBL_MIN) /* "1e-400": 0, or a subnormal */
        return ps_errf(err,
                       "'%s' is too small to represent (below %g it "
                       "underflows to 0): write 0 for none",
                       text, DBL_MIN);
    while (isspace((unsigned char)*end))
        end++;
    len = strlen(end);
    while (len > 0 && isspace((unsigned char)end[len - 1]))
        len--;
    if (len == 0) {
        *out = v;
        return PS_OK;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strlen(units[i].name) == len &&
            strncmp(units[i].name, end, len) == 0) {
            if (units[i].kind != kind)
                return ps_errf(err, "'%s' is a %s, expected a %s (e.g. %s)",
                               text, unit_kind_name(units[i].kind),
                               unit_kind_name(kind), unit_example(kind));
            *out = v * units[i].scale;
            return scaled(text, v, *out, err);
        }
    }
    for (size_t i = 0; i < sizeof either_units / sizeof either_units[0]; i++) {
        if (strlen(either_units[i].name) == len &&
            strncmp(either_units[i].name, end, len) == 0) {
            if (kind != UNIT_FLOP && kind != UNIT_FLOP_RATE)
                return ps_errf(err,
                               "'%s' is a flop count or rate, expected a %s "
                               "(e.g. %s)",
                               text, unit_kind_name(kind), unit_example(kind));
            *out = v * either_units[i].scale;
            return scaled(text, v, *out, err);
        }
    }
    return ps_errf(err, "unknown unit in '%s' (expected a %s such as %s)", text,
                   unit_kind_name(kind), unit_example(kind));
}
