/* out/plot_svg.c's pieces that the CLI test cannot pin down exactly: the tick
 * positions of linear and log axes, unit names, and an SVG of two series
 * (one with a gap in its dashed companion) that holds what it should. */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "out/plot.h"

static void test_linear_ticks(void)
{
    double t[64], lo, hi;
    int n = plot_ticks(0, 42.86, 0, 0, t, 64, &lo, &hi);
    CHECK_INT(n, 6); /* 0, 10, ..., 50 */
    CHECK_NEAR(t[0], 0);
    CHECK_NEAR(t[1], 10);
    CHECK_NEAR(lo, 0);
    CHECK_NEAR(hi, 50);
    n = plot_ticks(4, 64, 0, 0, t, 64, &lo, &hi);
    CHECK_INT(n, 8); /* 0, 10, ..., 70 */
    CHECK_NEAR(hi, 70);
    n = plot_ticks(0.0012, 0.0031, 0, 0, t, 64, &lo, &hi);
    CHECK_NEAR(t[1] - t[0], 0.0005);
    CHECK_NEAR(lo, 0.001);
    /* a single value still gets an axis around it */
    n = plot_ticks(5, 5, 0, 0, t, 64, &lo, &hi);
    CHECK(n >= 2 && lo < 5 && hi > 5);
    n = plot_ticks(0, 0, 0, 0, t, 64, &lo, &hi);
    CHECK(n >= 2 && lo <= 0 && hi > 0);
}

static void test_log_ticks(void)
{
    double t[64], lo, hi;
    int n = plot_ticks(4, 64, 1, 1, t, 64, &lo, &hi);
    CHECK_INT(n, 5);
    CHECK_NEAR(t[0], 4);
    CHECK_NEAR(t[4], 64);
    CHECK_NEAR(lo, 4);
    CHECK_NEAR(hi, 64);
    /* 1 KiB .. 1 GiB: 20 doublings, labelled every third */
    n = plot_ticks(1024, 1 << 30, 1, 1, t, 64, &lo, &hi);
    CHECK_INT(n, 7);
    CHECK_NEAR(t[1], 8192);
    /* within two decades: 1-2-5 ticks, the axis tight around the data */
    n = plot_ticks(3, 40, 1, 0, t, 64, &lo, &hi);
    CHECK_NEAR(lo, 2);
    CHECK_NEAR(hi, 50);
    CHECK_INT(n, 5); /* 2 5 10 20 50 */
    n = plot_ticks(1e-6, 1, 1, 0, t, 64, &lo, &hi);
    CHECK_INT(n, 7); /* decades */
    CHECK_NEAR(t[6], 1);
}

static void test_units(void)
{
    CHECK_INT(plot_unit_of("makespan"), PLOT_UNIT_SECONDS);
    CHECK_INT(plot_unit_of("peak_memory"), PLOT_UNIT_BYTES);
    CHECK_INT(plot_unit_of("bubble"), PLOT_UNIT_FRACTION);
    CHECK_INT(plot_unit_of("busbw"), PLOT_UNIT_BANDWIDTH);
    CHECK_INT(plot_unit_of("microbatches"), PLOT_UNIT_NONE);
    CHECK_INT(plot_unit_parse("s"), PLOT_UNIT_SECONDS);
    CHECK_INT(plot_unit_parse("fraction"), PLOT_UNIT_FRACTION);
    CHECK_INT(plot_unit_parse("ms"), -1);
}

static void test_svg(void)
{
    double x[3] = {1, 2, 3}, y1[3] = {0.001, 0.002, 0.003};
    double y2[3] = {0.002, 0.003, 0.004}, d[3] = {0.001, NAN, 0.003};
    double d2[3] = {NAN, NAN, NAN};
    char la[] = "a<b", lc[] = "c";
    plot_series s[2] = {{.label = la, .n = 3, .x = x, .y = y1, .dashed = d},
                        {.label = lc, .n = 3, .x = x, .y = y2, .dashed = d2}};
    plot_chart c = {.title = "t & u",
                    .xlabel = "m",
                    .ylabel = "makespan",
                    .legend_title = "g",
                    .dashed_label = "closed form",
                    .yunit = PLOT_UNIT_SECONDS,
                    .series = s,
                    .nseries = 2};
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    ps_err err;
    CHECK_INT(plot_svg(&c, f, &err), PS_OK);
    fclose(f);
    CHECK(strstr(buf, ">makespan (ms)<") != NULL);
    CHECK(strstr(buf, ">t &amp; u<") != NULL);
    CHECK(strstr(buf, "data-label=\"a&lt;b\"") != NULL);
    /* the gap splits series a's dashed line into two one-point pieces,
     * drawn as polylines of one point; c has none */
    int dashed = 0;
    for (const char *p = buf; (p = strstr(p, "stroke-dasharray")); p++)
        dashed++;
    CHECK_INT(dashed, 3); /* two pieces and the legend's line */
    CHECK(strstr(buf, "a&lt;b: m = 2, makespan = 2 ms") != NULL);
    free(buf);
}

int main(void)
{
    test_linear_ticks();
    test_log_ticks();
    test_units();
    test_svg();
    return harness_done();
}
