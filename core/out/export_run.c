/* Loading one run for export: its rows through the rec/rec.h read API into
 * plain arrays (each ordered as the writers walk them), hints read from its
 * params JSON, and the names of events and transfers. The writers never
 * query the database themselves. */
#include "out/export_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unit.h"
#include "out/dbcheck.h"
#include "out/export.h"

/* ------------------------------------------------------------------ */
/* Loading a run                                                       */
/* ------------------------------------------------------------------ */

void export_run_free(export_run *r)
{
    if (!r)
        return;
    free(r->kind);
    free(r->name);
    free(r->schedule);
    free(r->p2p);
    free(r->params);
    free(r->status);
    free(r->error);
    free(r->created);
    free(r->ev);
    free(r->tr);
    free(r->mem);
    free(r->ranks);
    memset(r, 0, sizeof *r);
}

/* Makes room for one more element of size sz in *p (n used, *cap
 * allocated). Returns 0, or -1 when out of memory. */
static int grow(void *p, int32_t n, int32_t *cap, size_t sz)
{
    if (n < *cap)
        return 0;
    int32_t ncap = *cap ? *cap * 2 : 64;
    void *q = realloc(*(void **)p, (size_t)ncap * sz);
    if (!q)
        return -1;
    *(void **)p = q;
    *cap = ncap;
    return 0;
}

/* The rows of one table for run r: prepares sql (whose ?1 is the run id)
 * and binds it. NULL on failure, with the message in err. */
static rec_query *run_rows(rec_db *db, const export_run *r, const char *sql,
                           ps_err *err)
{
    rec_query *q = rec_query_new(db, sql, err);
    if (q)
        rec_query_bind_int(q, 1, r->id);
    return q;
}

/* Steps q and makes room for one more element of the array *p (n in use,
 * *cap allocated, elements of sz bytes): 1 a row is ready and has a slot,
 * 0 no more rows, PS_ERR failed (message in err). */
static int next_row(rec_query *q, const export_run *r, void *p, int32_t n,
                    int32_t *cap, size_t sz, ps_err *err)
{
    int rc = rec_query_step(q, err);
    if (rc == 1 && grow(p, n, cap, sz))
        return ps_errf(err, "run %lld: out of memory", (long long)r->id);
    return rc;
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static int32_t col_index(rec_query *q, int col)
{
    return rec_query_isnull(q, col) ? -1 : (int32_t)rec_query_int(q, col);
}

static double col_real(rec_query *q, int col)
{
    return rec_query_isnull(q, col) ? NAN : rec_query_double(q, col);
}

static const char run_sql[] =
    "SELECT kind, name, schedule, p2p, params, status, error, created, "
    "stages, microbatches, virtual_stages, dp, makespan, bubble, "
    "closed_form_bubble, imbalance, peak_memory FROM run WHERE id = ?1";

static int load_header(rec_db *db, int64_t id, export_run *r, ps_err *err)
{
    rec_query *q = rec_query_new(db, run_sql, err);
    if (!q)
        return PS_ERR;
    rec_query_bind_int(q, 1, id);
    int rc = rec_query_step(q, err);
    if (rc == 0) {
        rec_query_free(q);
        return ps_errf(err, "run %lld not found in %s", (long long)id,
                       rec_path(db));
    }
    if (rc < 0) {
        rec_query_free(q);
        return PS_ERR;
    }
    char **text[] = {&r->kind,   &r->name,   &r->schedule, &r->p2p,
                     &r->params, &r->status, &r->error,    &r->created};
    for (int i = 0; i < 8; i++) {
        *text[i] = dupstr(rec_query_text(q, i));
        if (!*text[i]) {
            rec_query_free(q);
            return ps_errf(err, "run %lld: out of memory", (long long)id);
        }
    }
    r->stages = (int32_t)rec_query_int(q, 8);
    r->microbatches = (int32_t)rec_query_int(q, 9);
    r->v = rec_query_isnull(q, 10) ? 1 : (int32_t)rec_query_int(q, 10);
    r->dp = rec_query_isnull(q, 11) ? 1 : (int32_t)rec_query_int(q, 11);
    r->makespan = col_real(q, 12);
    r->bubble = col_real(q, 13);
    r->closed_form_bubble = col_real(q, 14);
    r->imbalance = col_real(q, 15);
    r->peak_memory = col_real(q, 16);
    rec_query_free(q);
    return PS_OK;
}

/* Row loaders: each runs one query for run id and appends its rows. */
static int load_events(rec_db *db, export_run *r, ps_err *err)
{
    rec_query *q = run_rows(
        db, r,
        "SELECT rank, kind, stage, chunk, mb, t_start, t_end FROM event "
        "WHERE run = ?1 ORDER BY rank, t_start, rowid",
        err);
    if (!q)
        return PS_ERR;
    int32_t cap = 0;
    int rc;
    while ((rc = next_row(q, r, &r->ev, r->nev, &cap, sizeof *r->ev, err)) ==
           1) {
        export_event *e = &r->ev[r->nev++];
        e->rank = (int32_t)rec_query_int(q, 0);
        snprintf(e->kind, sizeof e->kind, "%s", rec_query_text(q, 1));
        e->stage = col_index(q, 2);
        e->chunk = col_index(q, 3);
        e->mb = col_index(q, 4);
        e->t0 = rec_query_double(q, 5);
        e->t1 = rec_query_double(q, 6);
    }
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

static int load_transfers(rec_db *db, export_run *r, ps_err *err)
{
    rec_query *q =
        run_rows(db, r,
                 "SELECT src, dst, bytes, t_start, t_end, kind, mb, tag "
                 "FROM transfer WHERE run = ?1 ORDER BY t_start, rowid",
                 err);
    if (!q)
        return PS_ERR;
    int32_t cap = 0;
    int rc;
    while ((rc = next_row(q, r, &r->tr, r->ntr, &cap, sizeof *r->tr, err)) ==
           1) {
        export_transfer *t = &r->tr[r->ntr++];
        t->src = (int32_t)rec_query_int(q, 0);
        t->dst = (int32_t)rec_query_int(q, 1);
        t->bytes = rec_query_double(q, 2);
        t->t0 = rec_query_double(q, 3);
        t->t1 = rec_query_double(q, 4);
        snprintf(t->kind, sizeof t->kind, "%s", rec_query_text(q, 5));
        t->mb = col_index(q, 6);
        t->tag = col_index(q, 7);
        t->both = 1;
    }
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

static int load_memory(rec_db *db, export_run *r, ps_err *err)
{
    rec_query *q = run_rows(db, r,
                            "SELECT rank, t, bytes FROM memory "
                            "WHERE run = ?1 ORDER BY rank, t, rowid",
                            err);
    if (!q)
        return PS_ERR;
    int32_t cap = 0;
    int rc;
    while ((rc = next_row(q, r, &r->mem, r->nmem, &cap, sizeof *r->mem, err)) ==
           1) {
        export_mem *m = &r->mem[r->nmem++];
        m->rank = (int32_t)rec_query_int(q, 0);
        m->t = rec_query_double(q, 1);
        m->bytes = rec_query_double(q, 2);
    }
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

/* A label under construction: "ranks " and the members in ascending
 * order, runs of consecutive ones as "a-b", cut with "..." when full. */
typedef struct label_buf {
    char *s;
    size_t n, len;
    int32_t count, lo, hi; /* members so far; the open run lo..hi */
} label_buf;

static void label_put(label_buf *b, const char *fmt, int32_t x)
{
    if (b->len + 16 >= b->n) { /* room for ",-2147483648" and "..." */
        if (b->s[b->len - 1] != '.')
            b->len += (size_t)snprintf(b->s + b->len, b->n - b->len, "...");
        return;
    }
    b->len += (size_t)snprintf(b->s + b->len, b->n - b->len, fmt, (int)x);
}

static void label_close(label_buf *b)
{
    label_put(b, b->len == 6 ? "%d" : ",%d", b->lo); /* 6: "ranks " */
    if (b->hi > b->lo)
        label_put(b, "-%d", b->hi);
}

static void label_add(label_buf *b, int32_t member)
{
    if (b->count > 0 && member == b->hi + 1) {
        b->hi = member;
    } else {
        if (b->count > 0)
            label_close(b);
        b->lo = b->hi = member;
    }
    b->count++;
}

/* Ends the label of b, when it stands for more than its own rank. */
static void label_end(label_buf *b)
{
    if (b->s && b->count > 1)
        label_close(b);
}

/* Each rank's label, the cluster ranks it stands for (rank_member, one
 * row per cluster rank at the events level) or "rank N", and its replica;
 * the run's number of replicas. Both ordered by rank: one merge pass. */
static int label_ranks(rec_db *db, export_run *r, const view_set *pick,
                       ps_err *err)
{
    for (int32_t i = 0; i < r->nranks; i++) {
        snprintf(r->ranks[i].label, sizeof r->ranks[i].label, "rank %d",
                 (int)r->ranks[i].rank);
        r->ranks[i].replica = -1;
        r->ranks[i].picked = view_has(pick, r->ranks[i].rank);
    }
    rec_query *q = run_rows(db, r,
                            "SELECT rank, member, dp FROM rank_member WHERE "
                            "run = ?1 ORDER BY rank, member",
                            err);
    if (!q)
        return PS_ERR;
    int32_t i = 0, at = -1; /* at: the rank of b, -1 before the first */
    label_buf b = {0};
    int rc;
    while ((rc = rec_query_step(q, err)) == 1) {
        int32_t rank = (int32_t)rec_query_int(q, 0);
        if (rank != at) {
            label_end(&b);
            at = rank;
            while (i < r->nranks && r->ranks[i].rank < rank)
                i++;
            b = (label_buf){0}; /* a rank not simulated: no label */
            if (i < r->nranks && r->ranks[i].rank == rank) {
                int64_t dp = rec_query_isnull(q, 2) ? -1 : rec_query_int(q, 2);
                r->ranks[i].replica =
                    dp >= 0 && dp < INT32_MAX ? (int32_t)dp : -1;
                if (r->ranks[i].replica >= r->replicas)
                    r->replicas = r->ranks[i].replica + 1;
                b.s = r->ranks[i].label;
                b.n = sizeof r->ranks[i].label;
                b.len = 6; /* after "ranks ", written once a second member
                              comes: one alone keeps "rank N" */
            }
        }
        if (b.s && b.count == 1)
            memcpy(b.s, "ranks ", 7);
        if (b.s) {
            label_add(&b, (int32_t)rec_query_int(q, 1));
            r->ranks[i].picked |= view_has(pick, rec_query_int(q, 1));
        }
    }
    label_end(&b);
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

/* Keeps the memory rows of the ranks in r->ranks (both ordered by rank:
 * one merge pass). */
static void keep_ranks_memory(export_run *r)
{
    int32_t k = 0, n = 0;
    for (int32_t i = 0; i < r->nmem; i++) {
        while (k < r->nranks && r->ranks[k].rank < r->mem[i].rank)
            k++;
        if (k < r->nranks && r->ranks[k].rank == r->mem[i].rank)
            r->mem[n++] = r->mem[i];
    }
    r->nmem = n;
}

/* The ranks: every rank in rank_stat, event or transfer, or with memory,
 * with rank_stat's busy and bubble (computed from the events when
 * absent). Memory rows all 0 are a rank the run did not simulate: ps.run
 * simulates one rank of each TP group (par/links.h) and records every
 * cluster rank's memory from 0. */
static int load_ranks(rec_db *db, export_run *r, const out_view *v, ps_err *err)
{
    rec_query *q =
        run_rows(db, r,
                 "WITH k(rank) AS (SELECT rank FROM rank_stat WHERE run = ?1 "
                 "UNION SELECT rank FROM event WHERE run = ?1 "
                 "UNION SELECT src FROM transfer WHERE run = ?1 "
                 "UNION SELECT dst FROM transfer WHERE run = ?1 "
                 "UNION SELECT rank FROM memory WHERE run = ?1 AND bytes "
                 "<> 0) "
                 "SELECT k.rank, s.busy, s.bubble FROM k LEFT JOIN rank_stat s "
                 "ON s.run = ?1 AND s.rank = k.rank ORDER BY k.rank",
                 err);
    if (!q)
        return PS_ERR;
    int32_t cap = 0;
    int rc;
    while ((rc = next_row(q, r, &r->ranks, r->nranks, &cap, sizeof *r->ranks,
                          err)) == 1) {
        export_rank *k = &r->ranks[r->nranks++];
        k->rank = (int32_t)rec_query_int(q, 0);
        k->busy = col_real(q, 1);
        k->bubble = col_real(q, 2);
    }
    rec_query_free(q);
    if (rc < 0)
        return PS_ERR;
    /* events are ordered by rank, ranks ascending: one merge pass */
    int32_t e = 0;
    for (int32_t i = 0; i < r->nranks; i++) {
        export_rank *k = &r->ranks[i];
        double busy = 0;
        while (e < r->nev && r->ev[e].rank < k->rank)
            e++;
        for (; e < r->nev && r->ev[e].rank == k->rank; e++)
            busy += r->ev[e].t1 - r->ev[e].t0;
        if (isnan(k->busy))
            k->busy = busy;
        /* a run without compute (a collective) has no bubble */
        if (isnan(k->bubble) && r->makespan > 0 && r->nev > 0)
            k->bubble = 1 - k->busy / r->makespan;
    }
    if (label_ranks(db, r, &v->ranks, err) || export_run_view(r, v, err))
        return PS_ERR;
    keep_ranks_memory(r);
    return PS_OK;
}

static int load_coll_op(rec_db *db, export_run *r, ps_err *err)
{
    snprintf(r->coll_op, sizeof r->coll_op, "coll");
    rec_query *q = rec_query_new(
        db, "SELECT op FROM collective WHERE run = ?1 ORDER BY rowid LIMIT 1",
        err);
    if (!q)
        return PS_ERR;
    rec_query_bind_int(q, 1, r->id);
    int rc = rec_query_step(q, err);
    if (rc == 1 && *rec_query_text(q, 0))
        snprintf(r->coll_op, sizeof r->coll_op, "%s", rec_query_text(q, 0));
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

static void params_hints(export_run *r);

int export_run_load(rec_db *db, int64_t id, const out_view *view, export_run *r,
                    ps_err *err)
{
    out_view none;
    if (!view) {
        view_init(&none);
        view = &none;
    }
    memset(r, 0, sizeof *r);
    r->id = id;
    /* rows are checked first: the writers index by rank and scale by
     * time, and the database may have been edited */
    if (load_header(db, id, r, err) || dbcheck_run(db, id, NULL, err))
        goto fail;
    if (strcmp(r->status, "ok") != 0) {
        ps_errf(err, "run %lld failed (%s): it has no timeline", (long long)id,
                *r->error ? r->error : "no message");
        goto fail;
    }
    if (load_events(db, r, err) || load_transfers(db, r, err))
        goto fail;
    if (r->nev == 0 && r->ntr == 0) {
        ps_errf(err,
                "run %lld has no timeline (recorded with record = "
                "\"summary\")",
                (long long)id);
        goto fail;
    }
    if (isnan(r->makespan)) {
        r->makespan = 0;
        for (int32_t i = 0; i < r->nev; i++)
            r->makespan = fmax(r->makespan, r->ev[i].t1);
        for (int32_t i = 0; i < r->ntr; i++)
            r->makespan = fmax(r->makespan, r->tr[i].t1);
    }
    if (load_memory(db, r, err) || load_ranks(db, r, view, err) ||
        load_coll_op(db, r, err))
        goto fail;
    params_hints(r);
    return PS_OK;
fail:
    export_run_free(r);
    return PS_ERR;
}

/* ------------------------------------------------------------------ */
/* Reading the run's params                                            */
/* ------------------------------------------------------------------ */

/* A minimal JSON reader over the params text: skips one value and reports
 * where it ends, or NULL when the text is not valid JSON. Depth is bounded
 * so a hostile params string cannot overflow the stack. */
static const char *jws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static const char *jstring(const char *p)
{
    if (*p++ != '"')
        return NULL;
    for (; *p && *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
                        return NULL;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
    }
    return *p == '"' ? p + 1 : NULL;
}

static const char *jnumber(const char *p)
{
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return NULL;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9'))
            return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return p;
}

static const char *jvalue(const char *p, int depth)
{
    p = jws(p);
    if (depth > 64)
        return NULL;
    if (*p == '"')
        return jstring(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = jws(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (close == '}') {
                if (!(p = jstring(jws(p))))
                    return NULL;
                p = jws(p);
                if (*p++ != ':')
                    return NULL;
            }
            if (!(p = jvalue(p, depth + 1)))
                return NULL;
            p = jws(p);
            if (*p == close)
                return p + 1;
            if (*p++ != ',')
                return NULL;
        }
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++)
        if (strncmp(p, words[i], strlen(words[i])) == 0)
            return p + strlen(words[i]);
    return jnumber(p);
}

int export_json_valid(const char *s)
{
    const char *end = jvalue(s, 0);
    return end && *jws(end) == '\0';
}

/* Finds key at any depth inside the valid JSON value at p (depth first,
 * first match) and returns the start of its value, or NULL. */
static const char *jfind(const char *p, const char *key, int depth)
{
    p = jws(p);
    if (depth > 64 || (*p != '{' && *p != '['))
        return NULL;
    char close = *p == '{' ? '}' : ']';
    size_t klen = strlen(key);
    p = jws(p + 1);
    while (*p && *p != close) {
        if (close == '}') {
            const char *k = p + 1, *kend = jstring(p);
            p = jws(kend) + 1; /* past ':' */
            p = jws(p);
            if ((size_t)(kend - 1 - k) == klen && strncmp(k, key, klen) == 0)
                return p;
        }
        const char *hit = jfind(p, key, depth + 1);
        if (hit)
            return hit;
        p = jws(jvalue(p, depth + 1));
        if (*p == ',')
            p = jws(p + 1);
    }
    return NULL;
}

/* A quantity at p: a number, or a string with a unit ("80 GiB"). */
static double jquantity(const char *p, enum unit_kind kind)
{
    if (!p)
        return 0;
    if (*p == '"') {
        const char *end = jstring(p);
        char buf[64];
        size_t n = (size_t)(end - p) - 2;
        if (n >= sizeof buf)
            return 0;
        memcpy(buf, p + 1, n);
        buf[n] = '\0';
        double v;
        return unit_parse(buf, kind, &v, NULL) == 0 ? v : 0;
    }
    const char *end = jnumber(p);
    return end ? strtod(p, NULL) : 0;
}

/* What the params may tell about the cluster: the device memory (keys
 * device_memory, memory_capacity, or memory inside device) and
 * gpus_per_node. The Lua front end decides what params holds; absent keys
 * leave the hints unknown. */
static void params_hints(export_run *r)
{
    if (!*r->params || !export_json_valid(r->params))
        return;
    double cap = jquantity(jfind(r->params, "device_memory", 0), UNIT_BYTES);
    if (cap <= 0)
        cap = jquantity(jfind(r->params, "memory_capacity", 0), UNIT_BYTES);
    if (cap <= 0) {
        const char *dev = jfind(r->params, "device", 0);
        if (dev && *dev == '{')
            cap = jquantity(jfind(dev, "memory", 0), UNIT_BYTES);
    }
    r->capacity = cap > 0 && isfinite(cap) ? cap : 0;
    double gpn = jquantity(jfind(r->params, "gpus_per_node", 0), UNIT_FLOP);
    if (gpn >= 1 && gpn < 1e6 && gpn == floor(gpn))
        r->gpus_per_node = (int32_t)gpn;
}

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

void export_event_name(const export_run *r, const export_event *e, char *buf,
                       size_t n)
{
    /* an overlapped FB's halves: "FB:F3", "FB:B1.c1" */
    char kind[16];
    if (strncmp(e->kind, "FB.", 3) == 0)
        snprintf(kind, sizeof kind, "FB:%s", e->kind + 3);
    else
        snprintf(kind, sizeof kind, "%s", e->kind);
    if (e->mb < 0)
        snprintf(buf, n, "%s", kind);
    else if ((r->v > 1 && e->chunk >= 0) || e->chunk > 0)
        snprintf(buf, n, "%s%d.c%d", kind, (int)e->mb, (int)e->chunk);
    else
        snprintf(buf, n, "%s%d", kind, (int)e->mb);
}

void export_transfer_name(const export_run *r, const export_transfer *t,
                          int recv, char *buf, size_t n)
{
    if (strcmp(t->kind, "coll") == 0) {
        /* in a training step, collective transfers are the gradient sync
         * and their tag is the bucket (par/dp.c) */
        int in_step = r->kind && strcmp(r->kind, "pipeline") == 0;
        if (in_step && t->tag >= 0)
            snprintf(buf, n, "grad sync bucket %d", (int)t->tag);
        else if (t->tag >= 0)
            snprintf(buf, n, "%s step %d", r->coll_op, (int)t->tag);
        else
            snprintf(buf, n, "%s", r->coll_op);
        return;
    }
    char mb[16] = "";
    if (t->mb >= 0)
        snprintf(mb, sizeof mb, " %d", (int)t->mb);
    snprintf(buf, n, "%s %s%s %s rank %d", recv ? "recv" : "send", t->kind, mb,
             recv ? "<-" : "->", (int)(recv ? t->src : t->dst));
}
