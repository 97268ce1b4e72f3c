/* Unit parsing (base/unit.c), the scales: every prefix family gives its exact
 * scale, the kinds do not mix, "FLOPs" takes the field's kind, and bad text
 * fails naming the text. Expected values are the definitions (SI powers of
 * 1000, binary powers of 1024, a bit is 1/8 byte), written as the product the
 * parser must compute (5 * 1e-6 is not the double 5e-6), exact. */
#include "base/unit.h"
#include "harness.h"

static double parse(const char *text, enum unit_kind kind)
{
    double v = -12345;
    ps_err err;
    int rc = unit_parse(text, kind, &v, &err);
    CHECK_MSG(rc == 0, "unexpected error for '%s': %s", text, err.msg);
    return v;
}

/* 1 when text fails as kind; the message lands in err. (*out is not
 * promised untouched on failure: "1e308 PFLOP" leaves inf there.) */
static int fails(const char *text, enum unit_kind kind, ps_err *err)
{
    double v;
    return unit_parse(text, kind, &v, err) == PS_ERR;
}

int main(void)
{
    ps_err err;

    /* time */
    CHECK(parse("2 s", UNIT_SECONDS) == 2.0);
    CHECK(parse("5 ms", UNIT_SECONDS) == 5e-3);
    CHECK(parse("5 us", UNIT_SECONDS) == 5 * 1e-6);
    CHECK(parse("7 ns", UNIT_SECONDS) == 7 * 1e-9);
    CHECK(parse("0.25", UNIT_SECONDS) == 0.25); /* bare: base units */
    CHECK(parse("  3us  ", UNIT_SECONDS) == 3e-6);

    /* bytes: SI and binary */
    CHECK(parse("1 KB", UNIT_BYTES) == 1000.0);
    CHECK(parse("1 kB", UNIT_BYTES) == 1000.0);
    CHECK(parse("3 MB", UNIT_BYTES) == 3e6);
    CHECK(parse("80 GB", UNIT_BYTES) == 80e9);
    CHECK(parse("2 TB", UNIT_BYTES) == 2e12);
    CHECK(parse("1 KiB", UNIT_BYTES) == 1024.0);
    CHECK(parse("1 MiB", UNIT_BYTES) == 1048576.0);
    CHECK(parse("80 GiB", UNIT_BYTES) == 85899345920.0);
    CHECK(parse("1 TiB", UNIT_BYTES) == 1099511627776.0);
    CHECK(parse("512 B", UNIT_BYTES) == 512.0);

    /* bandwidth: bytes and bits */
    CHECK(parse("450 GB/s", UNIT_BANDWIDTH) == 450e9);
    CHECK(parse("1 GiB/s", UNIT_BANDWIDTH) == 1073741824.0);
    CHECK(parse("400 Gb/s", UNIT_BANDWIDTH) == 50e9);
    CHECK(parse("400 Gbps", UNIT_BANDWIDTH) == 50e9);
    CHECK(parse("8 b/s", UNIT_BANDWIDTH) == 1.0);
    CHECK(parse("1.6 Tbps", UNIT_BANDWIDTH) == 1.6 * (1e12 / 8));
    CHECK(parse("100 Mb/s", UNIT_BANDWIDTH) == 12.5e6);

    /* flop counts and rates */
    CHECK(parse("3.5 TFLOP", UNIT_FLOP) == 3.5e12);
    CHECK(parse("2 PFLOP", UNIT_FLOP) == 2e15);
    CHECK(parse("989 TFLOPS", UNIT_FLOP_RATE) == 989e12);
    CHECK(parse("312 TFLOP/s", UNIT_FLOP_RATE) == 312e12);
    CHECK(parse("1 FLOP/s", UNIT_FLOP_RATE) == 1.0);
    /* "TFLOPs" is either, as the field wants */
    CHECK(parse("989 TFLOPs", UNIT_FLOP_RATE) == 989e12);
    CHECK(parse("3 TFLOPs", UNIT_FLOP) == 3e12);
    CHECK(fails("3 TFLOPs", UNIT_BYTES, &err));
    CHECK_HAS(err.msg, "flop count or rate");

    /* kinds do not mix */
    CHECK(fails("5 us", UNIT_BYTES, &err));
    CHECK_HAS(err.msg, "'5 us'");
    CHECK_HAS(err.msg, "time");
    CHECK(fails("80 GB", UNIT_BANDWIDTH, &err));
    CHECK_HAS(err.msg, "bytes");
    CHECK(fails("1 TFLOPS", UNIT_FLOP, &err));

    /* malformed */
    CHECK(fails("fast", UNIT_SECONDS, &err));
    CHECK_HAS(err.msg, "'fast'");
    CHECK(fails("5 parsecs", UNIT_SECONDS, &err));
    CHECK_HAS(err.msg, "unknown unit");
    CHECK_HAS(err.msg, "'5 parsecs'");
    CHECK(fails("5 gb", UNIT_BYTES, &err)); /* case matters: b is a bit */
    CHECK(fails("inf", UNIT_SECONDS, &err));
    CHECK_HAS(err.msg, "finite");
    CHECK(fails("1e308 PFLOP", UNIT_FLOP, &err)); /* finite until scaled */
    CHECK_HAS(err.msg, "finite");
    CHECK(fails("", UNIT_BYTES, &err));

    /* the _len form: a NUL inside is an error, not the end */
    double v = -1;
    CHECK(unit_parse_len("5 us\0junk", 9, UNIT_SECONDS, &v, &err) == PS_ERR);
    CHECK_HAS(err.msg, "NUL");
    CHECK(unit_parse_len("5 usXX", 4, UNIT_SECONDS, &v, &err) == PS_OK);
    CHECK(v == 5 * 1e-6);

    /* names and examples used in messages */
    CHECK_STR(unit_kind_name(UNIT_SECONDS), "time");
    CHECK_STR(unit_kind_name(UNIT_BANDWIDTH), "bandwidth");
    CHECK_STR(unit_example(UNIT_BYTES), "\"80 GiB\"");
    return harness_done();
}
