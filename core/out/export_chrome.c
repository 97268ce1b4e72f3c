/* Chrome Trace Event JSON (the JSON Object Format) of one run, for
 * Perfetto and chrome://tracing. Every track is non-overlapping: slices are
 * packed onto extra tracks where they would overlap, because both viewers
 * expect slices on one thread to nest. */
#include "out/export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "out/export_run.h"

/* ------------------------------------------------------------------ */
/* JSON output                                                         */
/* ------------------------------------------------------------------ */

/* Kept rather than SQLite's json_object/json_group_array (issue 11),
 * measured on a 1F1B run of 32 stages x 512 microbatches (32768 events,
 * 31744 transfers): this exporter writes the whole trace, 23.9 MB, in
 * 0.42-0.71 s (pipesim export DB 1 --format chrome, 3 runs); SQLite's
 * functions wrote the events alone, 4.1 MB, in 0.07-0.08 s (sqlite3 with
 * one json_group_array query), the same 57-59 MB/s. No speed to gain,
 * and json_group_array holds the whole document in memory where this
 * streams it row by row; the flows and counters would be more queries. */

static void json_str(FILE *out, const char *s)
{
    json_string(out, s); /* base/json.h: valid for any bytes */
}

/* A number; JSON has no NaN or infinity, so those become null. */
static void json_num(FILE *out, double x)
{
    if (!isfinite(x))
        fputs("null", out);
    else if (x == floor(x) && fabs(x) < 1e15)
        fprintf(out, "%.0f", x);
    else
        fprintf(out, "%.17g", x);
}

static void json_index(FILE *out, int32_t i)
{
    if (i < 0)
        fputs("null", out);
    else
        fprintf(out, "%d", (int)i);
}

/* ------------------------------------------------------------------ */
/* Tracks: slices packed so that no two on one track overlap           */
/* ------------------------------------------------------------------ */

#define MAX_LANES 50 /* per track kind */

/* The trace's thread id of a rank's track: compute lanes at 100 rank +
 * lane, comm lanes MAX_LANES above them, so each rank's tracks sort
 * together and never collide. */
#define TIDS_PER_RANK (2 * MAX_LANES)
static int32_t track_tid(int32_t rank, int comm, int lane)
{
    return TIDS_PER_RANK * rank + (comm ? MAX_LANES : 0) + lane;
}

typedef struct slice {
    double t0, t1;
    int32_t idx; /* event or transfer index */
    int8_t recv; /* transfer slice on the destination */
    int8_t lane; /* set by pack */
} slice;

static int slice_cmp(const void *a, const void *b)
{
    const slice *x = a, *y = b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1)
        return x->t1 < y->t1 ? -1 : 1;
    if (x->idx != y->idx)
        return x->idx < y->idx ? -1 : 1;
    return x->recv - y->recv;
}

/* Sorts s by start and gives each slice the first lane free at its start;
 * returns the number of lanes used. O(n log n + n * lanes). */
static int pack(slice *s, int32_t n)
{
    double start[MAX_LANES], end[MAX_LANES];
    int lanes = 0;
    qsort(s, (size_t)n, sizeof *s, slice_cmp);
    for (int32_t i = 0; i < n; i++) {
        int l = 0;
        /* a lane is free once its last slice has ended; two slices never
         * share a start on one track, so a flow binds to exactly one */
        while (l < lanes && (end[l] > s[i].t0 || start[l] == s[i].t0))
            l++;
        if (l == MAX_LANES)
            l = MAX_LANES - 1; /* too many: overlap on the last lane */
        if (l == lanes)
            lanes++;
        start[l] = s[i].t0;
        end[l] = s[i].t1;
        s[i].lane = (int8_t)l;
    }
    return lanes;
}

/* ------------------------------------------------------------------ */
/* Chrome trace                                                        */
/* ------------------------------------------------------------------ */

/* Microseconds rounded to the nanosecond, so that a slice ending where the
 * next begins prints the same figure for both. */
static double usec(double t)
{
    return round(t * 1e9) / 1e3;
}

static int32_t node_of(const export_run *r, int32_t rank)
{
    return r->gpus_per_node > 0 ? rank / r->gpus_per_node : rank;
}

static void chrome_meta(FILE *out, const char *what, int32_t pid, int32_t tid,
                        const char *key, const char *name, int *first)
{
    fprintf(out,
            "%s{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,"
            "\"args\":{\"%s\":",
            *first ? "" : ",\n", what, (int)pid, (int)tid, key);
    *first = 0;
    if (name)
        json_str(out, name);
    else
        fprintf(out, "%d", (int)tid);
    fputs("}}", out);
}

static void chrome_slice(FILE *out, const export_run *r, const slice *s,
                         int32_t rank, int comm, int *first)
{
    char name[128];
    int32_t pid = node_of(r, rank);
    int32_t tid = track_tid(rank, comm, s->lane);
    double ts = usec(s->t0), te = usec(s->t1);
    if (comm) {
        const export_transfer *t = &r->tr[s->idx];
        export_transfer_name(r, t, s->recv, name, sizeof name);
        fprintf(out, "%s{\"ph\":\"X\",\"cat\":\"comm\",\"name\":",
                *first ? "" : ",\n");
        json_str(out, name);
        fprintf(out,
                ",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                "\"args\":{\"rank\":%d,\"src\":%d,\"dst\":%d,\"kind\":",
                (int)pid, (int)tid, ts, te - ts, (int)rank, (int)t->src,
                (int)t->dst);
        json_str(out, t->kind);
        fputs(",\"microbatch\":", out);
        json_index(out, t->mb);
        fputs(",\"tag\":", out);
        json_index(out, t->tag);
        fputs(",\"bytes\":", out);
        json_num(out, t->bytes);
        fputs("}}", out);
        /* the flow binds to the slice it shares pid, tid, ts and cat
         * with (chrome://tracing and Perfetto agree on this); none to
         * an end that is not drawn */
        if (t->both)
            fprintf(
                out,
                ",\n{\"ph\":\"%s\",%s\"cat\":\"comm\",\"name\":\"transfer\","
                "\"id\":%d,\"pid\":%d,\"tid\":%d,\"ts\":%.3f}",
                s->recv ? "f" : "s", s->recv ? "\"bp\":\"e\"," : "",
                (int)s->idx + 1, (int)pid, (int)tid, ts);
    } else {
        const export_event *e = &r->ev[s->idx];
        export_event_name(r, e, name, sizeof name);
        fprintf(out, "%s{\"ph\":\"X\",\"cat\":\"compute\",\"name\":",
                *first ? "" : ",\n");
        json_str(out, name);
        /* W and the overlapped FB in their own colours: chrome://tracing
         * reads catapult's reserved colour names; Perfetto colours by the
         * name, which differs anyway ("W3", "FB:F3") */
        if (strcmp(e->kind, "W") == 0)
            fputs(",\"cname\":\"olive\"", out);
        else if (strncmp(e->kind, "FB.", 3) == 0)
            fputs(",\"cname\":\"terrible\"", out);
        fprintf(out,
                ",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                "\"args\":{\"rank\":%d,\"kind\":",
                (int)pid, (int)tid, ts, te - ts, (int)rank);
        json_str(out, e->kind);
        fputs(",\"stage\":", out);
        json_index(out, e->stage);
        fputs(",\"chunk\":", out);
        json_index(out, e->chunk);
        fputs(",\"microbatch\":", out);
        json_index(out, e->mb);
        fputs("}}", out);
    }
    *first = 0;
}

static void chrome_other(FILE *out, const export_run *r)
{
    fprintf(out, ",\n\"otherData\":{\"generator\":\"pipesim %s\",\"run\":{",
#ifdef PS_VERSION
            PS_VERSION
#else
            "dev"
#endif
    );
    fprintf(out, "\"id\":%lld", (long long)r->id);
    if (*r->view) {
        fputs(",\"view\":", out);
        json_str(out, r->view);
    }
    const char *keys[] = {"kind",   "name",  "schedule", "p2p",
                          "status", "error", "created"};
    const char *vals[] = {r->kind,   r->name,  r->schedule, r->p2p,
                          r->status, r->error, r->created};
    for (int i = 0; i < 7; i++) {
        if (!*vals[i])
            continue;
        fprintf(out, ",\"%s\":", keys[i]);
        json_str(out, vals[i]);
    }
    fprintf(out,
            ",\"stages\":%d,\"microbatches\":%d,\"virtual_stages\":%d,"
            "\"dp\":%d",
            (int)r->stages, (int)r->microbatches, (int)r->v, (int)r->dp);
    const char *nkeys[] = {"makespan_s", "bubble", "closed_form_bubble",
                           "imbalance", "peak_memory_bytes"};
    double nvals[] = {r->makespan, r->bubble, r->closed_form_bubble,
                      r->imbalance, r->peak_memory};
    for (int i = 0; i < 5; i++) {
        fprintf(out, ",\"%s\":", nkeys[i]);
        json_num(out, nvals[i]);
    }
    fputs("},\"params\":", out);
    if (!*r->params)
        fputs("null", out);
    else if (export_json_valid(r->params))
        fputs(r->params, out);
    else
        json_str(out, r->params);
    fputs("}", out);
}

/* Writes the slices of one rank: compute then comm tracks, each packed and
 * in time order, with their thread names. */
static int chrome_rank(FILE *out, const export_run *r, const export_rank *k,
                       slice *buf, int *first)
{
    int32_t rank = k->rank, pid = node_of(r, rank);
    for (int comm = 0; comm < 2; comm++) {
        int32_t n = 0;
        if (!comm) {
            for (int32_t i = 0; i < r->nev; i++)
                if (r->ev[i].rank == rank)
                    buf[n++] = (slice){r->ev[i].t0, r->ev[i].t1, i, 0, 0};
        } else {
            for (int32_t i = 0; i < r->ntr; i++) {
                if (r->tr[i].src == rank)
                    buf[n++] = (slice){r->tr[i].t0, r->tr[i].t1, i, 0, 0};
                if (r->tr[i].dst == rank)
                    buf[n++] = (slice){r->tr[i].t0, r->tr[i].t1, i, 1, 0};
            }
        }
        int lanes = pack(buf, n);
        if (lanes == 0)
            lanes = 1; /* name the track even when empty */
        for (int l = 0; l < lanes; l++) {
            char tname[64];
            int32_t tid = track_tid(rank, comm, l);
            int len = snprintf(tname, sizeof tname, "%s %s", k->label,
                               comm ? "comm" : "compute");
            if (l > 0)
                snprintf(tname + len, sizeof tname - (size_t)len, " %d", l + 1);
            chrome_meta(out, "thread_name", pid, tid, "name", tname, first);
            chrome_meta(out, "thread_sort_index", pid, tid, "sort_index", NULL,
                        first);
        }
        for (int32_t i = 0; i < n; i++)
            chrome_slice(out, r, &buf[i], rank, comm, first);
    }
    return 0;
}

int export_chrome(rec_db *db, int64_t run, const out_view *view, FILE *out,
                  ps_err *err)
{
    export_run r;
    if (export_run_load(db, run, view, &r, err))
        return PS_ERR;
    int32_t most = r.nev > 2 * r.ntr ? r.nev : 2 * r.ntr;
    slice *buf = malloc((size_t)(most ? most : 1) * sizeof *buf);
    if (!buf) {
        export_run_free(&r);
        return ps_errf(err, "run %lld: out of memory", (long long)run);
    }
    int first = 1;
    fputs("{\"traceEvents\":[\n", out);
    int32_t last_pid = -1;
    for (int32_t i = 0; i < r.nranks; i++) {
        int32_t rank = r.ranks[i].rank, pid = node_of(&r, rank);
        if (pid != last_pid) { /* ranks ascend, so nodes do too */
            char pname[64];
            snprintf(pname, sizeof pname, "%s %d",
                     r.gpus_per_node > 0 ? "node" : "rank", (int)pid);
            chrome_meta(out, "process_name", pid, 0, "name", pname, &first);
            chrome_meta(out, "process_sort_index", pid, 0, "sort_index", NULL,
                        &first);
            last_pid = pid;
        }
        chrome_rank(out, &r, &r.ranks[i], buf, &first);
    }
    /* memory rows are of r.ranks, both ordered by rank */
    for (int32_t i = 0, k = 0; i < r.nmem; i++) {
        const export_mem *m = &r.mem[i];
        while (r.ranks[k].rank < m->rank)
            k++;
        fprintf(out,
                "%s{\"ph\":\"C\",\"name\":\"memory\",\"pid\":%d,"
                "\"tid\":%d,\"ts\":%.3f,",
                first ? "" : ",\n", (int)node_of(&r, m->rank),
                (int)track_tid(m->rank, 0, 0), usec(m->t));
        first = 0;
        if (r.gpus_per_node > 0) /* several ranks share the process */
            fprintf(out, "\"id\":\"%s\",", r.ranks[k].label);
        fputs("\"args\":{\"bytes\":", out);
        json_num(out, m->bytes);
        fputs("}}", out);
    }
    fputs("\n],\n\"displayTimeUnit\":\"ms\"", out);
    chrome_other(out, &r);
    fputs("}\n", out);
    free(buf);
    export_run_free(&r);
    if (ferror(out))
        return ps_errf(err, "run %lld: write error", (long long)run);
    return PS_OK;
}
