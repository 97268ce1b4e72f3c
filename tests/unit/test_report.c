/* Reports: the run table (text and CSV) and the per-run Gantt chart,
 * rendered into memory and checked for structure: one row per rank, bubble
 * percentages, the closed form, glyph counts proportional to busy time, the
 * summary-level note and the missing-run error. */
#include "out/report.h"

#include <stdio.h>
#include <unistd.h>

#include "fixture.h"
#include "harness.h"

/* Renders run into a malloc'd string (NULL on failure, message in err). */
static char *render(rec_db *db, int64_t run, int width, ps_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = report_run(db, run, f, width, err);
    fclose(f);
    if (rc) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int count_lines(const char *s, const char *prefix)
{
    int n = 0;
    for (const char *l = s; l && *l;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        n += strncmp(l, prefix, strlen(prefix)) == 0;
    return n;
}

/* The timeline of rank r's row (between the bars) into out. */
static int timeline(const char *s, int r, char *out, size_t size)
{
    char head[32];
    snprintf(head, sizeof head, "\nrank %d |", r);
    const char *p = strstr(s, head);
    if (!p)
        return -1;
    p += strlen(head);
    const char *q = strchr(p, '|');
    if (!q || (size_t)(q - p) >= size)
        return -1;
    memcpy(out, p, (size_t)(q - p));
    out[q - p] = '\0';
    return (int)(q - p);
}

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

static int count_digits(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s >= '0' && *s <= '9';
    return n;
}

static int64_t write_fixture(rec_db *db, const char *schedule, int v,
                             enum rec_level level)
{
    ps_err err;
    fixture fx;
    int64_t id = -1;
    /* per chunk F = 1/v, B = 2/v: the closed forms' uniform stages */
    if (fixture_run(&fx, schedule, 4, 8, v, 1.0 / v, 2.0 / v, 1 << 20, &err) ||
        rec_write(db, &fx.pay, level, &id, &err))
        printf("fixture: %s\n", err.msg);
    fixture_free(&fx);
    return id;
}

/* label "rank N " 7 + bars 2 + " 27.3%" 8: width 83 leaves 66 columns, so
 * dt = 33 s / 66 = 0.5 s: F is 2 columns, B 4, exactly. */
static void test_gantt(rec_db *db, int64_t run, const char *schedule)
{
    ps_err err;
    char *s = render(db, run, 83, &err);
    CHECK(s != NULL);
    if (!s) {
        printf("%s\n", err.msg);
        return;
    }
    char want[128];
    snprintf(want, sizeof want, "run %lld \"%s\": %s p=4 m=8 v=1",
             (long long)run, schedule, schedule);
    CHECK_HAS(s, want);
    CHECK_HAS(s, "makespan 33 s");
    CHECK_HAS(s, "bubble 27.27% vs closed form (p-1)/(m+p-1) = 27.27%");
    CHECK_INT(count_lines(s, "rank "), 4);
    CHECK_INT(count_lines(s, "legend: "), 1);
    CHECK_HAS(s, "\n       +"); /* axis under the timeline */
    CHECK_HAS(s, "30 s\n");     /* the last tick label carries units */
    for (int r = 0; r < 4; r++) {
        char row[256];
        CHECK_INT(timeline(s, r, row, sizeof row), 66);
        /* busy 24 s of 33 s: 48 of 66 columns; 8 F of 2 and 8 B of 4
         * columns, each labelled with its one-digit microbatch */
        CHECK_INT(count_char(row, '.'), 18);
        CHECK_INT(count_digits(row), 16);
        CHECK_INT(count_char(row, '-'), 8);
        CHECK_INT(count_char(row, '='), 24);
    }
    CHECK_INT(count_lines(s, "rank 0 |0-1-"), 1); /* both start with F0 F1 */
    CHECK_HAS(s, "|  27.3%\nrank 1");
    free(s);

    /* 80 columns: every line fits */
    s = render(db, run, 80, &err);
    int longest = 0;
    for (const char *l = s; l && *l;) {
        const char *e = strchr(l, '\n');
        int len = e ? (int)(e - l) : (int)strlen(l);
        longest = len > longest ? len : longest;
        l = e ? e + 1 : NULL;
    }
    CHECK(longest <= 80);
    if (longest > 80)
        printf("%s", s);
    free(s);
}

static void test_report(void)
{
    ps_err err = {0};
    unlink("report.db");
    rec_db *db = rec_open("report.db", &err);
    CHECK_INT(write_fixture(db, "gpipe", 1, REC_EVENTS), 1);
    CHECK_INT(write_fixture(db, "1f1b", 1, REC_EVENTS), 2);
    CHECK_INT(write_fixture(db, "1f1b", 2, REC_EVENTS), 3);
    CHECK_INT(write_fixture(db, "1f1b", 1, REC_SUMMARY), 4);
    CHECK_INT(rec_close(db, &err), 0);

    db = rec_open_read("report.db", &err);
    test_gantt(db, 1, "gpipe");
    test_gantt(db, 2, "1f1b");

    char *s = render(db, 3, 100, &err);
    CHECK_HAS(s, "interleaved p=4 m=8 v=2, makespan 28.5 s");
    CHECK_HAS(s, "(p-1)/(v*m+p-1) = 15.79%");
    /* a row per chunk; two panels (halves of the time axis) so that
     * every block holds its microbatch */
    CHECK_INT(count_lines(s, "rank "), 8);
    CHECK_INT(count_lines(s, "rank 3 c0 |"), 2);
    CHECK_INT(count_lines(s, "       c1 |"), 8);
    CHECK_HAS(s, "  15.8%\n");
    free(s);

    s = render(db, 4, 100, &err);
    CHECK_HAS(s, "(no timeline: run recorded with record = \"summary\")");
    CHECK_INT(count_lines(s, "rank "), 0);
    free(s);

    CHECK(render(db, 7, 100, &err) == NULL);
    CHECK_STR(err.msg, "run 7 not found in report.db");

    /* the run table: header + 4 rows, aligned; CSV with raw numbers */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_INT(report_runs(db, f, 0, &err), 0);
    fclose(f);
    CHECK_INT(count_char(buf, '\n'), 5);
    CHECK_HAS(buf, "id  name");
    CHECK_HAS(buf, "makespan");
    CHECK_HAS(buf, "  28.5 s  15.79%  15.79%");
    CHECK_HAS(buf, "interleaved");
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    CHECK_INT(report_runs(db, f, 1, &err), 0);
    fclose(f);
    CHECK_HAS(buf, "id,name,kind,schedule,stages,microbatches,"
                   "virtual_stages,dp,makespan,bubble,closed_form_bubble,"
                   "peak_memory,fits,imbalance,status,model_tflops_per_gpu,mfu,"
                   "tokens_per_s_per_gpu\n1,gpipe,pipeline,gpipe,4,8,"
                   "1,1,33,");
    CHECK_INT(count_char(buf, '\n'), 5);
    free(buf);
    rec_close(db, &err);
}

/* A failed run reports its error instead of a chart. */
static void test_failed(void)
{
    ps_err err = {0};
    unlink("failed.db");
    rec_db *db = rec_open("failed.db", &err);
    rec_run r = {.kind = "pipeline",
                 .name = "naive",
                 .schedule = "1f1b",
                 .stages = 2,
                 .microbatches = 2,
                 .virtual_stages = 1,
                 .closed_form_bubble = NAN,
                 .bubble = NAN,
                 .peak_memory = NAN,
                 .status = "failed",
                 .error = "deadlock at t=0 s: rank 0 waits on send F0"};
    rec_payload p = {.run = &r};
    int64_t id;
    CHECK_INT(rec_write(db, &p, REC_EVENTS, &id, &err), 0);
    char *s = render(db, id, 100, &err);
    CHECK_HAS(s, "run 1 \"naive\": 1f1b p=2 m=2 v=1, makespan 0 s\n");
    CHECK_HAS(s, "status failed: deadlock at t=0 s: rank 0 waits on send F0");
    CHECK_HAS(s, "(no timeline: the run failed)");
    free(s);
    rec_close(db, &err);
}

/* The one CSV quoting of the readers: RFC 4180, CR included (a name with a
 * bare CR split a report's row before out/plot.c and out/report.c shared it).
 */
static void test_csv_field(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "plain"},   {"", ""},
        {"a,b", "\"a,b\""},   {"say \"hi\"", "\"say \"\"hi\"\"\""},
        {"a\nb", "\"a\nb\""}, {"a\rb", "\"a\rb\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        report_csv_field(f, cases[i].in);
        fclose(f);
        CHECK_STR(buf, cases[i].out);
        free(buf);
    }
}

int main(void)
{
    test_csv_field();
    test_report();
    test_failed();
    return harness_done();
}
