/* Parsing of quantities with units, as scenarios write them: "450 GB/s",
 * "2 us", "989 TFLOPS", "80 GiB". SI prefixes are powers of 1000, binary
 * prefixes (Ki, Mi, Gi, Ti) powers of 1024; "b" is a bit, "B" a byte. */
#ifndef PS_UNIT_H
#define PS_UNIT_H

#include <stddef.h>

#include "base/err.h"

enum unit_kind {
    UNIT_SECONDS,   /* s, ms, us, ns */
    UNIT_BYTES,     /* B, KB, MB, GB, TB, KiB, MiB, GiB, TiB */
    UNIT_BANDWIDTH, /* B/s and bit/s forms: GB/s, GiB/s, Gb/s, Gbps */
    UNIT_FLOP,      /* FLOP, GFLOP, TFLOP, PFLOP (a count) */
    UNIT_FLOP_RATE, /* FLOPS, FLOP/s, TFLOPS, TFLOP/s, ... */
    UNIT_RATIO      /* a plain number, or a percentage: "50%" is 0.5 */
    /* FLOPs, GFLOPs, TFLOPs, PFLOPs are either, as the field wants */
};

/* Parses text as a quantity of the given kind into *out (base units: s, B,
 * B/s, FLOP, FLOP/s). A bare number is taken in base units. Fails, naming
 * the text, on an unknown unit, a unit of the wrong kind, or a malformed or
 * non-finite number. */
int unit_parse(const char *text, enum unit_kind kind, double *out, ps_err *err);
/* The same for len bytes of text (a Lua string's whole length): a NUL
 * byte inside is an error, not the end of the text. */
int unit_parse_len(const char *text, size_t len, enum unit_kind kind,
                   double *out, ps_err *err);

/* An example of a quantity of kind for messages: "\"5 us\"". */
const char *unit_example(enum unit_kind kind);

/* The name of a kind for messages ("time", "bytes", ...). */
const char *unit_kind_name(enum unit_kind kind);

#endif
