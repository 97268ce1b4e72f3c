/* Export: the Chrome trace parses as JSON (json_tree.h's parser), has one
 * slice per event and per transfer end on each rank, flows with both ends
 * bound to slices, non-overlapping tracks and a memory counter; the SVG is
 * well-formed XML (xmllint) with one rect.op per event per rank; errors are
 * one line; the CLI writes files only on success. Works in a scratch
 * directory under $TMPDIR and removes it. */
#include "out/export.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "harness.h"
#include "json_tree.h"

static char dir[256];
static char dbfile[320];

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */
/* ------------------------------------------------------------------ */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

/* Reruns the fixture's programs on a mesh of the given link, so transfers
 * take time, and updates what the recorder writes. */
static int slow_links(fixture *fx, double bandwidth, double latency,
                      ps_err *err)
{
    net_free(fx->nw);
    fx->nw = net_new(fx->p);
    if (net_set_mesh(fx->nw, bandwidth, latency, err) ||
        net_finalize(fx->nw, err))
        return PS_ERR;
    eng_sim *e = eng_new();
    int rc = eng_run(e, fx->ps, fx->nw, ENG_EAGER, &fx->res, err);
    eng_free(e);
    if (rc || mem_ledger(fx->ps, fx->static_memory, fx->mem, NULL, NULL, err))
        return PS_ERR;
    double busy = 0;
    for (int r = 0; r < fx->p; r++) {
        fx->ranks[r].bubble = 1 - fx->ranks[r].busy / fx->res.makespan;
        fx->ranks[r].peak_memory = fx->mem[r].peak;
        fx->ranks[r].t_peak = fx->mem[r].t_peak;
        busy += fx->ranks[r].busy;
    }
    fx->run.makespan = fx->res.makespan;
    fx->run.bubble = 1 - busy / fx->p / fx->res.makespan;
    fx->pay.network = fx->nw;
    return PS_OK;
}

enum {
    RUN_1F1B = 1,
    RUN_GPIPE,
    RUN_INTERLEAVED,
    RUN_SUMMARY,
    RUN_FAILED,
    RUN_COLL
};

/* A two-rank exchange in two steps (tags 0 and 1) recorded as a collective
 * "allreduce": transfers and memory rows but no compute events. */
static int write_collective(rec_db *db, ps_err *err)
{
    prog_set *ps = prog_new(2);
    net *nw = net_new(2);
    int rc = net_set_mesh(nw, 1e9, 1e-6, err) || net_finalize(nw, err);
    int32_t lane[2] = {prog_add_lane(ps, 0), prog_add_lane(ps, 1)};
    for (int step = 0; step < 2 && rc == 0; step++) {
        int32_t m[2] = {prog_new_msg(ps), prog_new_msg(ps)};
        for (int r = 0; r < 2; r++) {
            prog_op op = prog_send(1 - r, m[r], 1e6, PROG_COLL, -1, PROG_BATCH);
            op.tag = step;
            prog_push(ps, lane[r], &op);
            op = prog_recv(1 - r, m[1 - r], 1e6, PROG_COLL, -1, 0);
            op.tag = step;
            prog_push(ps, lane[r], &op);
        }
    }
    eng_sim *e = eng_new();
    eng_result res;
    if (rc == 0)
        rc =
            prog_seal(ps, err) || eng_run(e, ps, nw, ENG_RENDEZVOUS, &res, err);
    double statics[2] = {1e6, 1e6};
    rec_collective coll = {"allreduce", "ring", 2, 1e6, 0, 0, 0, NULL};
    rec_run run = {.kind = "collective",
                   .name = "ring allreduce",
                   .p2p = "rendezvous",
                   .stages = 0,
                   .makespan = rc ? 0 : res.makespan,
                   .bubble = NAN,
                   .closed_form_bubble = NAN,
                   .imbalance = NAN,
                   .peak_memory = 1e6,
                   .status = "ok"};
    rec_payload pay = {.run = &run,
                       .collective = &coll,
                       .progs = ps,
                       .static_memory = statics,
                       .network = nw};
    int64_t id;
    if (rc == 0)
        rc = rec_write(db, &pay, REC_EVENTS, &id, err);
    eng_free(e);
    prog_free(ps);
    net_free(nw);
    return rc ? PS_ERR : PS_OK;
}

/* Writes runs 1..5 into dbfile: 1F1B (p=4, m=8, transfers take time,
 * params give device memory and 2 GPUs per node, an awkward name), GPipe
 * (same links), interleaved (v=2, free links), a summary-level 1F1B run and
 * a failed run. */
static int make_db(void)
{
    ps_err err = {0};
    rec_db *db = rec_open(dbfile, &err);
    if (!db) {
        printf("rec_open: %s\n", err.msg);
        return -1;
    }
    static const char *const sched[] = {"1f1b", "gpipe", "1f1b", "1f1b",
                                        "1f1b"};
    static const int vs[] = {1, 1, 2, 1, 1};
    for (int k = 0; k < 5; k++) {
        fixture fx;
        int64_t id;
        int rc =
            fixture_run(&fx, sched[k], 4, 8, vs[k], 1e-3, 2e-3, 4096.0, &err);
        if (rc == 0 && k < 2)
            rc = slow_links(&fx, 64 / 2e-4, 5e-5, &err);
        if (k == 0) {
            fx.run.name = "1f1b \"quoted\" <&> \\ tab\there";
            fx.run.params_json =
                "{\"cluster\": {\"gpus_per_node\": 2, \"device\": "
                "{\"memory\": \"24 KiB\", \"peak\": \"989 TFLOPS\"}}, "
                "\"note\": \"a \\\"quote\\\"\"}";
        }
        if (k == 1)
            fx.run.params_json = "not json {";
        if (k == 4) {
            fx.run.status = "failed";
            fx.run.error = "deadlock at t=0 s: rank 0 waits";
        }
        if (rc == 0)
            rc = rec_write(db, &fx.pay, k == 3 ? REC_SUMMARY : REC_EVENTS, &id,
                           &err);
        fixture_free(&fx);
        if (rc) {
            printf("make_db: %s\n", err.msg);
            rec_close(db, NULL);
            return -1;
        }
    }
    if (write_collective(db, &err)) {
        printf("write_collective: %s\n", err.msg);
        rec_close(db, NULL);
        return -1;
    }
    return rec_close(db, &err);
}

static int64_t count(rec_db *db, const char *sql, int64_t a, int64_t b)
{
    ps_err err;
    rec_query *q = rec_query_new(db, sql, &err);
    if (!q) {
        printf("%s\n", err.msg);
        return -1;
    }
    rec_query_bind_int(q, 1, a);
    rec_query_bind_int(q, 2, b);
    int64_t v = rec_query_step(q, &err) == 1 ? rec_query_int(q, 0) : -1;
    rec_query_free(q);
    return v;
}

/* Renders into a string via a memory stream; NULL on failure (err set). */
static char *render(rec_db *db, int chrome, const int64_t *ids, int n,
                    ps_err *err)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    int rc = chrome ? export_chrome(db, ids[0], NULL, f, err)
                    : export_svg(db, ids, n, NULL, f, err);
    fclose(f);
    if (rc) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ------------------------------------------------------------------ */
/* Chrome trace                                                        */
/* ------------------------------------------------------------------ */

typedef struct track {
    int pid, tid, n;
    double last_ts, last_end;
} track;

static int has_slice(const jv *evs, const jv *flow)
{
    for (int i = 0; i < evs->n; i++) {
        const jv *e = &evs->items[i];
        if (strcmp(str(e, "ph"), "X") == 0 &&
            num(e, "pid") == num(flow, "pid") &&
            num(e, "tid") == num(flow, "tid") &&
            num(e, "ts") == num(flow, "ts") &&
            strcmp(str(e, "cat"), str(flow, "cat")) == 0)
            return 1;
    }
    return 0;
}

static void check_chrome(rec_db *db, int64_t run)
{
    ps_err err = {0};
    char *text = render(db, 1, &run, 1, &err);
    CHECK(text != NULL);
    if (!text) {
        printf("run %lld: %s\n", (long long)run, err.msg);
        return;
    }
    jv doc;
    int ok = parse_doc(text, &doc) == 0;
    CHECK(ok);
    if (!ok) {
        printf("run %lld: output is not JSON\n", (long long)run);
        jv_free(&doc);
        free(text);
        return;
    }
    const jv *evs = get(&doc, "traceEvents");
    CHECK(evs && evs->type == J_ARR);
    CHECK_STR(str(&doc, "displayTimeUnit"), "ms");
    const jv *other = get(&doc, "otherData");
    CHECK_INT(num(get(other, "run"), "id"), run);
    if (!evs || evs->type != J_ARR) {
        jv_free(&doc);
        free(text);
        return;
    }
    int slices[8] = {0}, counters = 0, nflows = 0, ntracks = 0;
    int flows_s[256] = {0}, flows_f[256] = {0}, overlaps = 0, unbound = 0;
    track tracks[64];
    for (int i = 0; i < evs->n; i++) {
        const jv *e = &evs->items[i];
        const char *ph = str(e, "ph");
        if (strcmp(ph, "X") == 0) {
            int rank = (int)num(get(e, "args"), "rank");
            if (rank >= 0 && rank < 8)
                slices[rank]++;
            int pid = (int)num(e, "pid"), tid = (int)num(e, "tid");
            double ts = num(e, "ts"), dur = num(e, "dur");
            int t = 0;
            while (t < ntracks &&
                   (tracks[t].pid != pid || tracks[t].tid != tid))
                t++;
            if (t == ntracks && ntracks < 64)
                tracks[ntracks++] = (track){pid, tid, 0, -1, -1};
            if (t < 64) {
                if (ts < tracks[t].last_ts || ts < tracks[t].last_end - 1e-6)
                    overlaps++;
                tracks[t].last_ts = ts;
                tracks[t].last_end = ts + dur;
            }
        } else if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
            int id = (int)num(e, "id");
            if (id > 0 && id < 256)
                (*ph == 's' ? flows_s : flows_f)[id]++;
            if (*ph == 'f')
                CHECK_STR(str(e, "bp"), "e");
            unbound += !has_slice(evs, e);
        } else if (strcmp(ph, "C") == 0) {
            CHECK_STR(str(e, "name"), "memory");
            CHECK(num(get(e, "args"), "bytes") > 0);
            counters++;
        }
    }
    CHECK_INT(overlaps, 0);
    CHECK_INT(unbound, 0);
    int64_t ntr =
        count(db, "SELECT count(*) FROM transfer WHERE run = ?1", run, 0);
    for (int id = 1; id < 256; id++) {
        if (flows_s[id] || flows_f[id]) {
            nflows++;
            CHECK(flows_s[id] == 1 && flows_f[id] == 1);
        }
    }
    CHECK_INT(nflows, ntr);
    for (int r = 0; r < 4; r++)
        CHECK_INT(slices[r],
                  count(db,
                        "SELECT (SELECT count(*) FROM event WHERE run = ?1 "
                        "AND rank = ?2) + (SELECT count(*) FROM transfer "
                        "WHERE run = ?1 AND src = ?2) + (SELECT count(*) "
                        "FROM transfer WHERE run = ?1 AND dst = ?2)",
                        run, r));
    CHECK_INT(counters,
              count(db, "SELECT count(*) FROM memory WHERE run = ?1", run, 0));
    if (run == RUN_1F1B) {
        /* escaping round-trips; valid params are embedded as an object;
         * 2 GPUs per node: ranks 2 and 3 live in process 1 */
        CHECK_STR(str(get(other, "run"), "name"),
                  "1f1b \"quoted\" <&> \\ tab\there");
        const jv *params = get(other, "params");
        CHECK(params && params->type == J_OBJ);
        CHECK_STR(str(params, "note"), "a \"quote\"");
        CHECK_HAS(text, "\"process_name\",\"pid\":1,\"tid\":0,"
                        "\"args\":{\"name\":\"node 1\"}");
        CHECK_HAS(text, "\"name\":\"send act 3 -> rank 1\",\"pid\":0,"
                        "\"tid\":50");
        CHECK_HAS(text, "\"name\":\"recv grad 3 <- rank 2\",\"pid\":0,"
                        "\"tid\":150");
        CHECK_HAS(text, "\"name\":\"B7\"");
        CHECK_HAS(text, "\"id\":\"rank 3\"");
    }
    if (run == RUN_GPIPE) {
        CHECK_STR(str(other, "params"), "not json {"); /* kept, as a string */
        CHECK_HAS(text, "\"process_name\",\"pid\":3,\"tid\":0,"
                        "\"args\":{\"name\":\"rank 3\"}");
    }
    if (run == RUN_COLL) {
        CHECK_HAS(text, "\"name\":\"allreduce step 1\",\"pid\":1");
        CHECK_HAS(text, "\"name\":\"rank 1 compute\"");
    }
    if (run == RUN_INTERLEAVED) {
        CHECK_HAS(text, "\"name\":\"B3.c1\"");
        CHECK_HAS(text, "\"name\":\"F0.c0\"");
    }
    jv_free(&doc);
    free(text);
}

/* ------------------------------------------------------------------ */
/* SVG                                                                 */
/* ------------------------------------------------------------------ */

/* Counts <rect elements whose class starts with "op" for run and rank. */
static int count_ops(const char *svg, int64_t run, int rank)
{
    char want[64];
    snprintf(want, sizeof want, "data-run=\"%lld\" data-rank=\"%d\"",
             (long long)run, rank);
    int n = 0;
    for (const char *p = svg; (p = strstr(p, "<rect")); p++) {
        const char *end = strchr(p, '>');
        const char *cls = strstr(p, "class=\"op");
        const char *attr = strstr(p, want);
        if (cls && attr && cls < end && attr < end)
            n++;
    }
    return n;
}

static int xml_ok(const char *svg)
{
    char path[300], cmd[400];
    snprintf(path, sizeof path, "%s/out.svg", dir);
    FILE *f = fopen(path, "w");
    fputs(svg, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s'", path);
    int rc = system(cmd);
    unlink(path);
    return rc == 0;
}

static void check_svg(rec_db *db, const int64_t *ids, int n)
{
    ps_err err = {0};
    char *svg = render(db, 0, ids, n, &err);
    CHECK(svg != NULL);
    if (!svg) {
        printf("svg: %s\n", err.msg);
        return;
    }
    CHECK(xml_ok(svg));
    for (int k = 0; k < n; k++)
        for (int r = 0; r < 4; r++)
            CHECK_INT(count_ops(svg, ids[k], r),
                      count(db,
                            "SELECT count(*) FROM event WHERE run = ?1 "
                            "AND rank = ?2",
                            ids[k], r));
    for (int k = 0; k < n; k++) {
        char want[64];
        snprintf(want, sizeof want, "<g class=\"run\" data-run=\"%lld\">",
                 (long long)ids[k]);
        CHECK_HAS(svg, want);
    }
    if (ids[0] == RUN_1F1B) {
        CHECK_HAS(svg, "class=\"capacity\"");
        CHECK_HAS(svg, "device memory 24 KiB");
        CHECK_HAS(svg, "1f1b &quot;quoted&quot; &lt;&amp;&gt; \\ tab");
        CHECK_HAS(svg, "class=\"comm\"");
        CHECK_HAS(svg, " ms</text>"); /* axis in ms: makespan ~50 ms */
    }
    if (n > 1)
        CHECK_HAS(svg, "<!-- no device capacity line");
    free(svg);
}

static void test_nice_output(rec_db *db)
{
    for (int64_t run = RUN_1F1B; run <= RUN_INTERLEAVED; run++)
        check_chrome(db, run);
    check_chrome(db, RUN_COLL);
    int64_t one = RUN_1F1B, all[] = {RUN_GPIPE, RUN_1F1B, RUN_INTERLEAVED};
    check_svg(db, &one, 1);
    check_svg(db, all, 3);
    int64_t coll = RUN_COLL;
    check_svg(db, &coll, 1);
}

/* ------------------------------------------------------------------ */
/* Errors and the CLI                                                  */
/* ------------------------------------------------------------------ */

static void test_errors(rec_db *db)
{
    ps_err err = {0};
    int64_t id = 7;
    char want[400];
    CHECK(render(db, 1, &id, 1, &err) == NULL);
    snprintf(want, sizeof want, "run 7 not found in ");
    CHECK_HAS(err.msg, want);
    CHECK_HAS(err.msg, "export.db");
    id = RUN_SUMMARY;
    CHECK(render(db, 0, &id, 1, &err) == NULL);
    CHECK_STR(err.msg, "run 4 has no timeline (recorded with record = "
                       "\"summary\")");
    id = RUN_FAILED;
    CHECK(render(db, 1, &id, 1, &err) == NULL);
    CHECK_STR(err.msg, "run 5 failed (deadlock at t=0 s: rank 0 waits): it "
                       "has no timeline");
    int64_t ids[] = {RUN_1F1B, 9};
    CHECK(render(db, 0, ids, 2, &err) == NULL);
    CHECK_HAS(err.msg, "run 9 not found in ");
}

/* Runs export_main with stdout and stderr captured into files under dir;
 * returns its status; *errline gets stderr's text. */
static int cli(int argc, const char *const *args, char *errtext, size_t size)
{
    char *argv[16];
    for (int i = 0; i < argc && i < 16; i++)
        argv[i] = strdup(args[i]);
    char out[300], errp[300];
    snprintf(out, sizeof out, "%s/stdout", dir);
    snprintf(errp, sizeof errp, "%s/stderr", dir);
    fflush(stdout);
    fflush(stderr);
    int save_out = dup(1), save_err = dup(2);
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fo, 1);
    dup2(fe, 2);
    close(fo);
    close(fe);
    int rc = export_main(argc, argv);
    for (int i = 0; i < argc && i < 16; i++)
        free(argv[i]);
    fflush(stdout);
    fflush(stderr);
    dup2(save_out, 1);
    dup2(save_err, 2);
    close(save_out);
    close(save_err);
    char *e = slurp(errp);
    snprintf(errtext, size, "%s", e ? e : "");
    free(e);
    unlink(errp);
    return rc;
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void expect_cli_error(int argc, const char *const *argv,
                             const char *want)
{
    char e[4096];
    CHECK_INT(cli(argc, argv, e, sizeof e), 1);
    CHECK_HAS(e, want);
    CHECK(strncmp(e, "pipesim: ", 9) == 0);
    CHECK_INT(lines(e), 1);
}

static void test_cli(void)
{
    char out[300], e[4096], junk[300], other[300], missing[300];
    snprintf(out, sizeof out, "%s/trace.json", dir);
    snprintf(junk, sizeof junk, "%s/junk.db", dir);
    snprintf(other, sizeof other, "%s/other.db", dir);
    snprintf(missing, sizeof missing, "%s/missing.db", dir);

    /* success: the file is written, nothing on stderr */
    const char *a1[] = {dbfile, "1", "--format", "chrome", "-o", out};
    CHECK_INT(cli(6, a1, e, sizeof e), 0);
    CHECK_STR(e, "");
    char *text = slurp(out);
    jv doc;
    CHECK(text && parse_doc(text, &doc) == 0);
    if (text)
        jv_free(&doc);
    free(text);
    unlink(out);

    /* format from the extension, --compare, stdout */
    char svg[300];
    snprintf(svg, sizeof svg, "%s/g.svg", dir);
    const char *a2[] = {dbfile, "--compare", "2,1,3", "-o", svg};
    CHECK_INT(cli(5, a2, e, sizeof e), 0);
    text = slurp(svg);
    CHECK(text && xml_ok(text));
    CHECK(text && count_ops(text, 3, 0) == 32);
    free(text);
    unlink(svg);
    const char *a3[] = {dbfile, "2", "--format=svg"};
    CHECK_INT(cli(3, a3, e, sizeof e), 0);
    char sout[300];
    snprintf(sout, sizeof sout, "%s/stdout", dir);
    text = slurp(sout);
    CHECK(text && strncmp(text, "<?xml", 5) == 0);
    free(text);

    /* errors: one line, no output file */
    const char *b1[] = {dbfile, "7", "--format", "chrome", "-o", out};
    expect_cli_error(6, b1, "pipesim: run 7 not found in ");
    CHECK(access(out, F_OK) != 0);
    const char *b2[] = {dbfile, "4", "--format", "svg", "-o", out};
    expect_cli_error(6, b2,
                     "pipesim: run 4 has no timeline (recorded with record "
                     "= \"summary\")");
    CHECK(access(out, F_OK) != 0);
    const char *b3[] = {missing, "1", "--format", "chrome"};
    expect_cli_error(4, b3, "no such file");
    FILE *f = fopen(junk, "w");
    fputs("this is not a database, just some text that is long enough "
          "to be looked at as a header by SQLite\n",
          f);
    fclose(f);
    const char *b4[] = {junk, "1", "--format", "chrome"};
    expect_cli_error(4, b4, "junk.db: not a pipesim database");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'CREATE TABLE t(x)'", other);
    if (system(cmd) == 0) {
        const char *b5[] = {other, "1", "--format", "svg"};
        expect_cli_error(4, b5, "other.db: not a pipesim database");
    } else {
        CHECK(!"sqlite3 CLI missing (make deps installs it)");
    }
    const char *b6[] = {dbfile, "1", "--format", "png"};
    expect_cli_error(4, b6, "unknown format 'png'");
    const char *b7[] = {dbfile, "x1", "--format", "svg"};
    expect_cli_error(4, b7, "bad run id 'x1'");
    const char *b8[] = {dbfile, "--compare", "1,,2"};
    expect_cli_error(3, b8, "bad run list '1,,2'");
    const char *b9[] = {dbfile, "1"};
    expect_cli_error(2, b9, "missing --format chrome|svg");
    const char *b10[] = {dbfile, "--compare", "1,2", "--format", "chrome"};
    expect_cli_error(5, b10, "needs --format svg");
    const char *b11[] = {dbfile, "1", "--bogus"};
    expect_cli_error(3, b11, "unknown option '--bogus'");
    const char *b12[] = {dbfile, "1",  "--format",
                         "svg",  "-o", "/nonexistent-dir/x.svg"};
    expect_cli_error(6, b12, "/nonexistent-dir/x.svg: ");
    const char *b13[] = {dbfile};
    expect_cli_error(1, b13, "missing RUN");
    unlink(junk);
    unlink(other);
    unlink(sout);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/pipesim-export.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror(dir);
        return 1;
    }
    snprintf(dbfile, sizeof dbfile, "%s/export.db", dir);
    CHECK_INT(make_db(), 0);
    ps_err err = {0};
    rec_db *db = rec_open_read(dbfile, &err);
    CHECK(db != NULL);
    if (db) {
        test_nice_output(db);
        test_errors(db);
        rec_close(db, NULL);
    }
    test_cli();
    unlink(dbfile);
    char side[340];
    snprintf(side, sizeof side, "%s-wal", dbfile);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", dbfile);
    unlink(side);
    if (rmdir(dir) != 0)
        perror(dir);
    return harness_done();
}
