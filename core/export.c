/* Export of recorded runs: a loader that reads one run's rows through the
 * rec.h read API into plain arrays, a Chrome Trace Event JSON writer and an
 * SVG Gantt writer over those arrays. Invariant: the writers never query
 * the database; everything they draw is in an xrun. Cost is O(rows log
 * rows) per run (sorting slices onto tracks); the rows of one run are held
 * in memory. */
#include "export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

/* ------------------------------------------------------------------ */
/* Loading a run                                                       */
/* ------------------------------------------------------------------ */

typedef struct xevent {
    int32_t rank, stage, chunk, mb; /* -1 for NULL */
    char kind[8];                   /* "F", "B", "W", "R", "OPT" */
    double t0, t1;
} xevent;

typedef struct xtransfer {
    int32_t src, dst, mb, tag; /* mb, tag: -1 for NULL */
    char kind[8];              /* "act", "grad", "coll" */
    double bytes, t0, t1;
} xtransfer;

typedef struct xmem {
    int32_t rank;
    double t, bytes;
} xmem;

typedef struct xrank {
    int32_t rank;
    double busy;   /* seconds of compute */
    double bubble; /* idle fraction, NAN when unknown */
} xrank;

typedef struct xrun {
    int64_t id;
    char *kind, *name, *schedule, *p2p, *params, *status, *error, *created;
    int32_t stages, microbatches, v, dp;
    double makespan, bubble, closed_form_bubble, imbalance, peak_memory;
    xevent *ev; /* ordered by rank, then start */
    int32_t nev;
    xtransfer *tr; /* ordered by start */
    int32_t ntr;
    xmem *mem; /* ordered by rank, then time */
    int32_t nmem;
    xrank *ranks; /* every rank that appears anywhere, ascending */
    int32_t nranks;
    char coll_op[64];   /* the run's collective op, "coll" if none */
    double capacity;    /* device memory from params, 0 if unknown */
    int32_t gpus_per_node; /* from params, 0 if unknown */
} xrun;

static void xrun_free(xrun *r)
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

/* The database's file name, for messages (rec.h does not expose it). */
static void db_path(rec_db *db, char *buf, size_t size)
{
    snprintf(buf, size, "the database");
    rec_query *q = rec_query_new(
        db, "SELECT file FROM pragma_database_list WHERE name = 'main'",
        NULL);
    if (q && rec_query_step(q, NULL) == 1 && *rec_query_text(q, 0))
        snprintf(buf, size, "%s", rec_query_text(q, 0));
    rec_query_free(q);
}

static const char run_sql[] =
    "SELECT kind, name, schedule, p2p, params, status, error, created, "
    "stages, microbatches, virtual_stages, dp, makespan, bubble, "
    "closed_form_bubble, imbalance, peak_memory FROM run WHERE id = ?1";

static int load_header(rec_db *db, int64_t id, xrun *r, ps_err *err)
{
    rec_query *q = rec_query_new(db, run_sql, err);
    if (!q)
        return PS_ERR;
    rec_query_bind_int(q, 1, id);
    int rc = rec_query_step(q, err);
    if (rc == 0) {
        char path[1024];
        db_path(db, path, sizeof path);
        rec_query_free(q);
        return ps_errf(err, "run %lld not found in %s", (long long)id, path);
    }
    if (rc < 0) {
        rec_query_free(q);
        return PS_ERR;
    }
    char **text[] = {&r->kind,   &r->name,  &r->schedule, &r->p2p,
                     &r->params, &r->status, &r->error,   &r->created};
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
static int load_events(rec_db *db, xrun *r, ps_err *err)
{
    rec_query *q = rec_query_new(
        db,
        "SELECT rank, kind, stage, chunk, mb, t_start, t_end FROM event "
        "WHERE run = ?1 ORDER BY rank, t_start, rowid",
        err);
    if (!q)
        return PS_ERR;
    rec_query_bind_int(q, 1, r->id);
    int32_t cap = 0;
    int rc;
    while ((rc = rec_query_step(q, err)) == 1) {
        if (grow(&r->ev, r->nev, &cap, sizeof *r->ev)) {
            rc = ps_errf(err, "run %lld: out of memory", (long long)r->id);
            break;
        }
        xevent *e = &r->ev[r->nev++];
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

static int load_transfers(rec_db *db, xrun *r, ps_err *err)
{
    rec_query *q = rec_query_new(
        db,
        "SELECT src, dst, bytes, t_start, t_end, kind, mb, tag "
        "FROM transfer WHERE run = ?1 ORDER BY t_start, rowid",
        err);
    if (!q)
        return PS_ERR;
    rec_query_bind_int(q, 1, r->id);
    int32_t cap = 0;
    int rc;
    while ((rc = rec_query_step(q, err)) == 1) {
        if (grow(&r->tr, r->ntr, &cap, sizeof *r->tr)) {
            rc = ps_errf(err, "run %lld: out of memory", (long long)r->id);
            break;
        }
        xtransfer *t = &r->tr[r->ntr++];
        t->src = (int32_t)rec_query_int(q, 0);
        t->dst = (int32_t)rec_query_int(q, 1);
        t->bytes = rec_query_double(q, 2);
        t->t0 = rec_query_double(q, 3);
        t->t1 = rec_query_double(q, 4);
        snprintf(t->kind, sizeof t->kind, "%s", rec_query_text(q, 5));
        t->mb = col_index(q, 6);
        t->tag = col_index(q, 7);
    }
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

static int load_memory(rec_db *db, xrun *r, ps_err *err)
{
    rec_query *q = rec_query_new(db,
                                 "SELECT rank, t, bytes FROM memory "
                                 "WHERE run = ?1 ORDER BY rank, t, rowid",
                                 err);
    if (!q)
        return PS_ERR;
    rec_query_bind_int(q, 1, r->id);
    int32_t cap = 0;
    int rc;
    while ((rc = rec_query_step(q, err)) == 1) {
        if (grow(&r->mem, r->nmem, &cap, sizeof *r->mem)) {
            rc = ps_errf(err, "run %lld: out of memory", (long long)r->id);
            break;
        }
        xmem *m = &r->mem[r->nmem++];
        m->rank = (int32_t)rec_query_int(q, 0);
        m->t = rec_query_double(q, 1);
        m->bytes = rec_query_double(q, 2);
    }
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

/* The ranks: every rank in rank_stat, event, transfer or memory, with
 * rank_stat's busy and bubble (computed from the events when absent). */
static int load_ranks(rec_db *db, xrun *r, ps_err *err)
{
    rec_query *q = rec_query_new(
        db,
        "WITH k(rank) AS (SELECT rank FROM rank_stat WHERE run = ?1 "
        "UNION SELECT rank FROM event WHERE run = ?1 "
        "UNION SELECT src FROM transfer WHERE run = ?1 "
        "UNION SELECT dst FROM transfer WHERE run = ?1 "
        "UNION SELECT rank FROM memory WHERE run = ?1) "
        "SELECT k.rank, s.busy, s.bubble FROM k LEFT JOIN rank_stat s "
        "ON s.run = ?1 AND s.rank = k.rank ORDER BY k.rank",
        err);
    if (!q)
        return PS_ERR;
    rec_query_bind_int(q, 1, r->id);
    int32_t cap = 0;
    int rc;
    while ((rc = rec_query_step(q, err)) == 1) {
        if (grow(&r->ranks, r->nranks, &cap, sizeof *r->ranks)) {
            rc = ps_errf(err, "run %lld: out of memory", (long long)r->id);
            break;
        }
        xrank *k = &r->ranks[r->nranks++];
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
        xrank *k = &r->ranks[i];
        double busy = 0;
        while (e < r->nev && r->ev[e].rank < k->rank)
            e++;
        for (; e < r->nev && r->ev[e].rank == k->rank; e++)
            busy += r->ev[e].t1 - r->ev[e].t0;
        if (isnan(k->busy))
            k->busy = busy;
        if (isnan(k->bubble) && r->makespan > 0)
            k->bubble = 1 - k->busy / r->makespan;
    }
    return PS_OK;
}

static int load_coll_op(rec_db *db, xrun *r, ps_err *err)
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

static void params_hints(xrun *r);

/* Loads run id. Fails when it does not exist, failed, or has no timeline;
 * on failure r is freed. */
static int load_run(rec_db *db, int64_t id, xrun *r, ps_err *err)
{
    memset(r, 0, sizeof *r);
    r->id = id;
    if (load_header(db, id, r, err))
        goto fail;
    if (strcmp(r->status, "ok") != 0) {
        ps_errf(err, "run %lld failed (%s): it has no timeline",
                (long long)id, *r->error ? r->error : "no message");
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
    if (load_memory(db, r, err) || load_ranks(db, r, err) ||
        load_coll_op(db, r, err))
        goto fail;
    params_hints(r);
    return PS_OK;
fail:
    xrun_free(r);
    return PS_ERR;
}

/* ------------------------------------------------------------------ */
/* JSON: writing strings and numbers, reading the run's params          */
/* ------------------------------------------------------------------ */

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
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

static int json_valid(const char *s)
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
static void params_hints(xrun *r)
{
    if (!*r->params || !json_valid(r->params))
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
/* Tracks: slices packed so that no two on one track overlap           */
/* ------------------------------------------------------------------ */

#define MAX_LANES 50 /* per track kind; tid = 100 rank + lane (+ 50 comm) */

typedef struct slice {
    double t0, t1;
    int32_t idx;  /* event or transfer index */
    int8_t recv;  /* transfer slice on the destination */
    int8_t lane;  /* set by pack */
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
static double usec(double t) { return round(t * 1e9) / 1e3; }

static void event_name(const xrun *r, const xevent *e, char *buf, size_t n)
{
    if (e->mb < 0)
        snprintf(buf, n, "%s", e->kind);
    else if (r->v > 1 && e->chunk >= 0)
        snprintf(buf, n, "%s%d.c%d", e->kind, (int)e->mb, (int)e->chunk);
    else
        snprintf(buf, n, "%s%d", e->kind, (int)e->mb);
}

static void transfer_name(const xrun *r, const xtransfer *t, int recv,
                          char *buf, size_t n)
{
    if (strcmp(t->kind, "coll") == 0) {
        if (t->tag >= 0)
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

static int32_t node_of(const xrun *r, int32_t rank)
{
    return r->gpus_per_node > 0 ? rank / r->gpus_per_node : rank;
}

static void chrome_meta(FILE *out, const char *what, int32_t pid, int32_t tid,
                        const char *key, const char *name, int *first)
{
    fprintf(out, "%s{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,"
                 "\"args\":{\"%s\":",
            *first ? "" : ",\n", what, (int)pid, (int)tid, key);
    *first = 0;
    if (name)
        json_str(out, name);
    else
        fprintf(out, "%d", (int)tid);
    fputs("}}", out);
}

static void chrome_slice(FILE *out, const xrun *r, const slice *s,
                         int32_t rank, int comm, int *first)
{
    char name[128];
    int32_t pid = node_of(r, rank);
    int32_t tid = 100 * rank + (comm ? 50 : 0) + s->lane;
    double ts = usec(s->t0), te = usec(s->t1);
    if (comm) {
        const xtransfer *t = &r->tr[s->idx];
        transfer_name(r, t, s->recv, name, sizeof name);
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
         * with (chrome://tracing and Perfetto agree on this) */
        fprintf(out,
                ",\n{\"ph\":\"%s\",%s\"cat\":\"comm\",\"name\":\"transfer\","
                "\"id\":%d,\"pid\":%d,\"tid\":%d,\"ts\":%.3f}",
                s->recv ? "f" : "s", s->recv ? "\"bp\":\"e\"," : "",
                (int)s->idx + 1, (int)pid, (int)tid, ts);
    } else {
        const xevent *e = &r->ev[s->idx];
        event_name(r, e, name, sizeof name);
        fprintf(out, "%s{\"ph\":\"X\",\"cat\":\"compute\",\"name\":",
                *first ? "" : ",\n");
        json_str(out, name);
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

static void chrome_other(FILE *out, const xrun *r)
{
    fprintf(out, ",\n\"otherData\":{\"generator\":\"pipesim %s\",\"run\":{",
#ifdef PS_VERSION
            PS_VERSION
#else
            "dev"
#endif
    );
    fprintf(out, "\"id\":%lld", (long long)r->id);
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
    else if (json_valid(r->params))
        fputs(r->params, out);
    else
        json_str(out, r->params);
    fputs("}", out);
}

/* Writes the slices of one rank: compute then comm tracks, each packed and
 * in time order, with their thread names. */
static int chrome_rank(FILE *out, const xrun *r, int32_t rank, slice *buf,
                       int *first)
{
    int32_t pid = node_of(r, rank);
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
            int32_t tid = 100 * rank + (comm ? 50 : 0) + l;
            int len = snprintf(tname, sizeof tname, "rank %d %s", (int)rank,
                               comm ? "comm" : "compute");
            if (l > 0)
                snprintf(tname + len, sizeof tname - (size_t)len, " %d",
                         l + 1);
            chrome_meta(out, "thread_name", pid, tid, "name", tname, first);
            chrome_meta(out, "thread_sort_index", pid, tid, "sort_index",
                        NULL, first);
        }
        for (int32_t i = 0; i < n; i++)
            chrome_slice(out, r, &buf[i], rank, comm, first);
    }
    return 0;
}

int export_chrome(rec_db *db, int64_t run, FILE *out, ps_err *err)
{
    xrun r;
    if (load_run(db, run, &r, err))
        return PS_ERR;
    int32_t most = r.nev > 2 * r.ntr ? r.nev : 2 * r.ntr;
    slice *buf = malloc((size_t)(most ? most : 1) * sizeof *buf);
    if (!buf) {
        xrun_free(&r);
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
            chrome_meta(out, "process_sort_index", pid, 0, "sort_index",
                        NULL, &first);
            last_pid = pid;
        }
        chrome_rank(out, &r, rank, buf, &first);
    }
    for (int32_t i = 0; i < r.nmem; i++) {
        const xmem *m = &r.mem[i];
        fprintf(out,
                "%s{\"ph\":\"C\",\"name\":\"memory\",\"pid\":%d,"
                "\"tid\":%d,\"ts\":%.3f,",
                first ? "" : ",\n", (int)node_of(&r, m->rank),
                (int)(100 * m->rank), usec(m->t));
        first = 0;
        if (r.gpus_per_node > 0) /* several ranks share the process */
            fprintf(out, "\"id\":\"rank %d\",", (int)m->rank);
        fputs("\"args\":{\"bytes\":", out);
        json_num(out, m->bytes);
        fputs("}}", out);
    }
    fputs("\n],\n\"displayTimeUnit\":\"ms\"", out);
    chrome_other(out, &r);
    fputs("}\n", out);
    free(buf);
    xrun_free(&r);
    if (ferror(out))
        return ps_errf(err, "run %lld: write error", (long long)run);
    return PS_OK;
}

/* ------------------------------------------------------------------ */
/* SVG Gantt                                                           */
/* ------------------------------------------------------------------ */

/* Geometry in px: the plot spans [ML, ML + PW]; each rank row is a compute
 * bar of height RH with a transfer lane of height CH under it. */
enum {
    SVG_W = 1200,
    ML = 76,
    MR = 64,
    PW = SVG_W - ML - MR,
    LEGEND_H = 38,
    TITLE_H = 30,
    RH = 20,
    CH = 4,
    PITCH = RH + CH + 8,
    AXIS_H = 30,
    MEM_CAP_H = 22, /* memory caption above the panel */
    MH = 84,
    BLOCK_GAP = 26
};

typedef struct op_style {
    const char *kind, *label, *fill;
} op_style;

static const op_style op_styles[] = {
    {"F", "forward", "#4e79a7"},  {"B", "backward", "#59a14f"},
    {"W", "weight grad", "#8cd17d"}, {"R", "recompute", "#b07aa1"},
    {"OPT", "optimizer", "#9c755f"},
};
#define NSTYLES ((int)(sizeof op_styles / sizeof op_styles[0]))
static const char other_fill[] = "#bab0ac";
static const char comm_fill[] = "#f28e2b";
static const char idle_fill[] = "#eef0f4";
static const char ink[] = "#1f2933";  /* titles, labels */
static const char ink2[] = "#52606d"; /* secondary text */
static const char grid[] = "#dde1e7";

/* Line colours of the memory curves, by rank. */
static const char *const rank_colors[] = {
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b",
    "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#ff7f0e",
};
#define NRANK_COLORS ((int)(sizeof rank_colors / sizeof rank_colors[0]))

static void xml_str(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            /* XML 1.0 forbids most control characters, even escaped */
            if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
                fputc(*s, out);
        }
    }
}

static int style_of(const char *kind)
{
    for (int i = 0; i < NSTYLES; i++)
        if (strcmp(kind, op_styles[i].kind) == 0)
            return i;
    return -1;
}

/* fill, lightened towards white by f in [0, 1] (later virtual chunks are
 * lighter), into out as #rrggbb; *dark_text says whether black text reads
 * better on it than white. */
static void tint(const char *fill, double f, char out[8], int *dark_text)
{
    unsigned rgb[3];
    sscanf(fill + 1, "%2x%2x%2x", &rgb[0], &rgb[1], &rgb[2]);
    double lum = 0;
    static const double w[3] = {0.299, 0.587, 0.114};
    for (int i = 0; i < 3; i++) {
        rgb[i] = (unsigned)lround(rgb[i] + (255 - rgb[i]) * f);
        lum += w[i] * rgb[i] / 255.0;
    }
    snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
    *dark_text = lum > 0.62;
}

/* 1, 2 or 5 times a power of ten, near span / target. */
static double nice_step(double span, int target)
{
    double raw = span / target;
    double base = pow(10, floor(log10(raw)));
    double f = raw / base;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * base;
}

/* Decimals that show a multiple of step exactly (step = 1/2/5 x 10^k). */
static int step_decimals(double step)
{
    int d = (int)-floor(log10(step) + 1e-9);
    return d > 0 ? d : 0;
}

typedef struct tunit {
    const char *name;
    double scale; /* display value = seconds * scale */
} tunit;

static tunit time_unit(double span)
{
    if (span >= 1)
        return (tunit){"s", 1};
    if (span >= 1e-3)
        return (tunit){"ms", 1e3};
    return (tunit){"us", 1e6};
}

static void fmt_time(double t, char *buf, size_t n)
{
    tunit u = time_unit(t);
    double v = t * u.scale;
    snprintf(buf, n, "%.*f %s", v >= 100 ? 1 : v >= 10 ? 2 : 3, v, u.name);
}

typedef struct bunit {
    const char *name;
    double size;
} bunit;

static bunit byte_unit(double b)
{
    static const bunit units[] = {{"TiB", 1099511627776.0},
                                  {"GiB", 1073741824.0},
                                  {"MiB", 1048576.0},
                                  {"KiB", 1024.0}};
    for (int i = 0; i < 4; i++)
        if (b >= units[i].size)
            return units[i];
    return (bunit){"B", 1};
}

static void fmt_bytes(double b, char *buf, size_t n)
{
    bunit u = byte_unit(b);
    double v = b / u.size;
    if (v == floor(v))
        snprintf(buf, n, "%.0f %s", v, u.name);
    else
        snprintf(buf, n, "%.*f %s", v >= 100 ? 0 : 1, v, u.name);
}

typedef struct svg_ctx {
    FILE *out;
    double tmax; /* the shared time scale: largest makespan */
    double ymax; /* the shared memory scale */
} svg_ctx;

static double xs(const svg_ctx *c, double t)
{
    return ML + (c->tmax > 0 ? t / c->tmax : 0) * PW;
}

static int block_height(const xrun *r)
{
    int h = TITLE_H + r->nranks * PITCH + AXIS_H;
    if (r->nmem > 0)
        h += MEM_CAP_H + MH + 12;
    return h + BLOCK_GAP;
}

static void svg_legend(svg_ctx *c, const xrun *runs, int nruns)
{
    int has[NSTYLES + 1] = {0}, comm = 0, chunks = 0;
    for (int k = 0; k < nruns; k++) {
        for (int32_t i = 0; i < runs[k].nev; i++) {
            int s = style_of(runs[k].ev[i].kind);
            has[s < 0 ? NSTYLES : s] = 1;
        }
        for (int32_t i = 0; i < runs[k].ntr; i++)
            comm |= runs[k].tr[i].t1 > runs[k].tr[i].t0;
        chunks |= runs[k].v > 1;
    }
    FILE *out = c->out;
    double x = ML;
    fputs("<g class=\"legend\" font-size=\"11\">\n", out);
    for (int i = 0; i <= NSTYLES + 2; i++) {
        const char *fill, *label;
        if (i < NSTYLES) {
            if (!has[i])
                continue;
            fill = op_styles[i].fill;
            label = op_styles[i].label;
        } else if (i == NSTYLES) {
            if (!has[i])
                continue;
            fill = other_fill;
            label = "other";
        } else if (i == NSTYLES + 1) {
            if (!comm)
                continue;
            fill = comm_fill;
            label = "transfer";
        } else {
            fill = idle_fill;
            label = "idle";
        }
        fprintf(out,
                "<rect class=\"swatch\" x=\"%.1f\" y=\"13\" width=\"12\" "
                "height=\"12\" rx=\"2\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"23\" fill=\"%s\">%s</text>\n",
                x, fill, x + 17, ink, label);
        x += 17 + 6.4 * (double)strlen(label) + 18;
    }
    if (chunks)
        fprintf(out,
                "<text x=\"%.1f\" y=\"23\" fill=\"%s\">lighter shade = "
                "later virtual chunk; labels are microbatches</text>\n",
                x + 6, ink2);
    else
        fprintf(out,
                "<text x=\"%.1f\" y=\"23\" fill=\"%s\">labels are "
                "microbatches</text>\n",
                x + 6, ink2);
    fputs("</g>\n", out);
}

static void svg_title(svg_ctx *c, const xrun *r, int y)
{
    char ms[32], bub[32] = "-";
    fmt_time(r->makespan, ms, sizeof ms);
    if (!isnan(r->bubble))
        snprintf(bub, sizeof bub, "%.1f%%", 100 * r->bubble);
    fprintf(c->out,
            "<text x=\"12\" y=\"%d\" font-size=\"14\" fill=\"%s\">"
            "<tspan font-weight=\"bold\">",
            y + 18, ink);
    xml_str(c->out, r->name);
    fprintf(c->out, "</tspan><tspan fill=\"%s\" font-size=\"12\">"
                    "  run %lld",
            ink2, (long long)r->id);
    if (*r->schedule) {
        fputs(" \xc2\xb7 ", c->out);
        xml_str(c->out, r->schedule);
    }
    if (strcmp(r->kind, "pipeline") == 0)
        fprintf(c->out, " \xc2\xb7 p=%d m=%d v=%d", (int)r->stages,
                (int)r->microbatches, (int)r->v);
    if (r->dp > 1)
        fprintf(c->out, " dp=%d", (int)r->dp);
    fprintf(c->out,
            " \xc2\xb7 makespan %s \xc2\xb7 bubble %s</tspan></text>\n", ms,
            bub);
}

/* Vertical grid lines and, at y_axis, the time axis with labels. */
static void svg_axis(svg_ctx *c, int y_top, int y_axis)
{
    FILE *out = c->out;
    tunit u = time_unit(c->tmax);
    double step = nice_step(c->tmax * u.scale, 8);
    int dec = step_decimals(step);
    fprintf(out, "<g class=\"grid\" stroke=\"%s\" stroke-width=\"1\">\n",
            grid);
    for (int i = 1; i * step <= c->tmax * u.scale * (1 + 1e-9); i++) {
        double x = xs(c, i * step / u.scale);
        fprintf(out, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\"/>\n",
                x, y_top, x, y_axis);
    }
    fputs("</g>\n", out);
    fprintf(out,
            "<g class=\"axis\" font-size=\"10\" fill=\"%s\" "
            "text-anchor=\"middle\">\n"
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\"/>\n",
            ink2, ML, y_axis, ML + PW, y_axis, "#9aa5b1");
    for (int i = 0; i * step <= c->tmax * u.scale * (1 + 1e-9); i++) {
        double x = xs(c, i * step / u.scale);
        fprintf(out,
                "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                "stroke=\"#9aa5b1\"/>"
                "<text x=\"%.2f\" y=\"%d\">%.*f %s</text>\n",
                x, y_axis, x, y_axis + 4, x, y_axis + 15, dec, i * step,
                u.name);
    }
    fputs("</g>\n", out);
}

static void svg_op(svg_ctx *c, const xrun *r, const xevent *e, double y)
{
    FILE *out = c->out;
    int s = style_of(e->kind);
    double f = 0;
    if (r->v > 1 && e->chunk > 0)
        f = 0.45 * e->chunk / (r->v - 1);
    char fill[8], name[64], t0[32], t1[32];
    int dark;
    tint(s < 0 ? other_fill : op_styles[s].fill, f, fill, &dark);
    double x0 = xs(c, e->t0), x1 = xs(c, e->t1);
    double w = x1 - x0 < 0.5 ? 0.5 : x1 - x0;
    event_name(r, e, name, sizeof name);
    fmt_time(e->t0, t0, sizeof t0);
    fmt_time(e->t1, t1, sizeof t1);
    fprintf(out, "<rect class=\"op ");
    xml_str(out, s < 0 ? "other" : op_styles[s].kind);
    fprintf(out,
            "\" data-run=\"%lld\" data-rank=\"%d\" x=\"%.2f\" y=\"%.1f\" "
            "width=\"%.2f\" height=\"%d\" rx=\"1.5\" fill=\"%s\" "
            "stroke=\"#fff\" stroke-width=\"0.6\"><title>rank %d: ",
            (long long)r->id, (int)e->rank, x0, y, w, RH, fill, (int)e->rank);
    xml_str(out, name);
    if (e->stage >= 0)
        fprintf(out, " (stage %d)", (int)e->stage);
    fprintf(out, ", %s to %s</title></rect>\n", t0, t1);
    if (e->mb >= 0) {
        char label[16];
        int n = snprintf(label, sizeof label, "%d", (int)e->mb);
        if (w >= 6.2 * n + 4)
            fprintf(out,
                    "<text x=\"%.2f\" y=\"%.1f\" font-size=\"10\" "
                    "text-anchor=\"middle\" fill=\"%s\" "
                    "pointer-events=\"none\">%s</text>\n",
                    x0 + w / 2, y + RH / 2.0 + 3.5, dark ? ink : "#fff",
                    label);
    }
}

static void svg_transfer(svg_ctx *c, const xrun *r, const xtransfer *t,
                         int recv, double y)
{
    if (!(t->t1 > t->t0))
        return; /* free communication has nothing to draw */
    char name[128], bytes[32], t0[32], t1[32];
    transfer_name(r, t, recv, name, sizeof name);
    fmt_bytes(t->bytes, bytes, sizeof bytes);
    fmt_time(t->t0, t0, sizeof t0);
    fmt_time(t->t1, t1, sizeof t1);
    double x0 = xs(c, t->t0), x1 = xs(c, t->t1);
    fprintf(c->out,
            "<rect class=\"comm\" data-rank=\"%d\" x=\"%.2f\" y=\"%.1f\" "
            "width=\"%.2f\" height=\"%d\" fill=\"%s\"%s><title>rank %d: ",
            (int)(recv ? t->dst : t->src), x0, y,
            x1 - x0 < 0.8 ? 0.8 : x1 - x0, CH, comm_fill,
            recv ? " fill-opacity=\"0.55\"" : "",
            (int)(recv ? t->dst : t->src));
    xml_str(c->out, name);
    fprintf(c->out, ", %s, %s to %s</title></rect>\n", bytes, t0, t1);
}

/* The memory panel: a step line per rank, the capacity dashed. */
static void svg_memory(svg_ctx *c, const xrun *r, int y)
{
    FILE *out = c->out;
    int top = y + MEM_CAP_H, bottom = top + MH;
    fprintf(out, "<g class=\"memory\" data-run=\"%lld\">\n",
            (long long)r->id);
    fprintf(out,
            "<text x=\"%d\" y=\"%d\" font-size=\"11\" font-weight=\"bold\" "
            "fill=\"%s\">memory</text>\n",
            ML, y + 14, ink);
    double lx = ML + 62;
    for (int32_t i = 0; i < r->nranks; i++) {
        const char *col = rank_colors[r->ranks[i].rank % NRANK_COLORS];
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                "stroke=\"%s\" stroke-width=\"2\"/><text x=\"%.1f\" "
                "y=\"%d\" font-size=\"10\" fill=\"%s\">rank %d</text>\n",
                lx, y + 10, lx + 14, y + 10, col, lx + 18, y + 14, ink2,
                (int)r->ranks[i].rank);
        lx += 66;
    }
    /* y axis: nice ticks in a binary unit */
    bunit u = byte_unit(c->ymax);
    double step = nice_step(c->ymax / u.size, 3);
    int dec = step_decimals(step);
    for (int i = 0; i * step <= c->ymax / u.size * (1 + 1e-9); i++) {
        double yy = bottom - i * step * u.size / c->ymax * MH;
        fprintf(out,
                "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" "
                "stroke=\"%s\"/><text x=\"%d\" y=\"%.2f\" font-size=\"10\" "
                "text-anchor=\"end\" fill=\"%s\">%.*f %s</text>\n",
                ML, yy, ML + PW, yy, i ? grid : "#9aa5b1", ML - 6, yy + 3.5,
                ink2, dec, i * step, u.name);
    }
    if (r->capacity > 0) {
        char cap[32];
        fmt_bytes(r->capacity, cap, sizeof cap);
        double yy = bottom - r->capacity / c->ymax * MH;
        fprintf(out,
                "<line class=\"capacity\" x1=\"%d\" y1=\"%.2f\" x2=\"%d\" "
                "y2=\"%.2f\" stroke=\"#c0392b\" stroke-width=\"1.2\" "
                "stroke-dasharray=\"6 4\"/><text x=\"%d\" y=\"%.2f\" "
                "font-size=\"10\" text-anchor=\"end\" fill=\"#c0392b\">"
                "device memory %s</text>\n",
                ML, yy, ML + PW, yy, ML + PW, yy - 3, cap);
    } else {
        fputs("<!-- no device capacity line: the run's params do not give "
              "the device memory -->\n",
              out);
    }
    for (int32_t i = 0; i < r->nmem;) {
        int32_t rank = r->mem[i].rank;
        fprintf(out,
                "<path class=\"mem\" data-rank=\"%d\" fill=\"none\" "
                "stroke=\"%s\" stroke-width=\"1.6\" "
                "stroke-linejoin=\"round\" d=\"M%.2f %.2f",
                (int)rank, rank_colors[rank % NRANK_COLORS],
                xs(c, r->mem[i].t), bottom - r->mem[i].bytes / c->ymax * MH);
        for (i++; i < r->nmem && r->mem[i].rank == rank; i++)
            fprintf(out, "H%.2fV%.2f", xs(c, r->mem[i].t),
                    bottom - r->mem[i].bytes / c->ymax * MH);
        fprintf(out, "H%.2f\"><title>rank %d memory</title></path>\n",
                xs(c, r->makespan), (int)rank);
    }
    fputs("</g>\n", out);
}

static void svg_block(svg_ctx *c, const xrun *r, int y)
{
    FILE *out = c->out;
    fprintf(out, "<g class=\"run\" data-run=\"%lld\">\n", (long long)r->id);
    svg_title(c, r, y);
    int y_rows = y + TITLE_H;
    int y_axis = y_rows + r->nranks * PITCH - 4;
    fprintf(out,
            "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"%s\">"
            "bubble</text>\n",
            ML + PW + 10, y_rows - 4, ink2);
    for (int32_t i = 0; i < r->nranks; i++) {
        double ry = y_rows + i * PITCH;
        fprintf(out,
                "<rect class=\"idle\" x=\"%d\" y=\"%.1f\" width=\"%.2f\" "
                "height=\"%d\" fill=\"%s\"/>\n"
                "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" "
                "text-anchor=\"end\" fill=\"%s\">rank %d</text>\n",
                ML, ry, xs(c, r->makespan) - ML, RH, idle_fill, ML - 8,
                ry + RH / 2.0 + 4, ink, (int)r->ranks[i].rank);
        char bub[16] = "-";
        if (!isnan(r->ranks[i].bubble))
            snprintf(bub, sizeof bub, "%.1f%%", 100 * r->ranks[i].bubble);
        fprintf(out,
                "<text class=\"bubble\" x=\"%d\" y=\"%.1f\" font-size=\"11\" "
                "fill=\"%s\">%s</text>\n",
                ML + PW + 10, ry + RH / 2.0 + 4, ink, bub);
    }
    svg_axis(c, y_rows - 2, y_axis);
    /* rows are in rank order and events are ordered by rank: one pass */
    int32_t e = 0;
    for (int32_t i = 0; i < r->nranks; i++) {
        int32_t rank = r->ranks[i].rank;
        double ry = y_rows + i * PITCH;
        while (e < r->nev && r->ev[e].rank < rank)
            e++;
        for (; e < r->nev && r->ev[e].rank == rank; e++)
            svg_op(c, r, &r->ev[e], ry);
        for (int32_t t = 0; t < r->ntr; t++) {
            if (r->tr[t].src == rank)
                svg_transfer(c, r, &r->tr[t], 0, ry + RH + 2);
            if (r->tr[t].dst == rank)
                svg_transfer(c, r, &r->tr[t], 1, ry + RH + 2);
        }
    }
    /* where this run ends, when the scale belongs to a longer one */
    if (r->makespan < c->tmax * (1 - 1e-9))
        fprintf(out,
                "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                "stroke=\"%s\" stroke-dasharray=\"3 3\"/>\n",
                xs(c, r->makespan), y_rows - 2, xs(c, r->makespan), y_axis,
                ink2);
    if (r->nmem > 0)
        svg_memory(c, r, y_axis + AXIS_H - 6);
    fputs("</g>\n", out);
}

int export_svg(rec_db *db, const int64_t *runs, int nruns, FILE *out,
               ps_err *err)
{
    if (nruns < 1)
        return ps_errf(err, "export: no run to draw");
    xrun *r = calloc((size_t)nruns, sizeof *r);
    if (!r)
        return ps_errf(err, "export: out of memory");
    int rc = PS_OK, loaded = 0;
    for (; loaded < nruns; loaded++)
        if ((rc = load_run(db, runs[loaded], &r[loaded], err)))
            break;
    if (rc == PS_OK) {
        svg_ctx c = {out, 0, 0};
        int height = LEGEND_H + 8;
        for (int k = 0; k < nruns; k++) {
            c.tmax = fmax(c.tmax, r[k].makespan);
            for (int32_t i = 0; i < r[k].nmem; i++)
                c.ymax = fmax(c.ymax, r[k].mem[i].bytes);
            c.ymax = fmax(c.ymax, r[k].capacity);
            height += block_height(&r[k]);
        }
        if (!(c.tmax > 0))
            c.tmax = 1;
        if (!(c.ymax > 0))
            c.ymax = 1;
        fprintf(out,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                "height=\"%d\" viewBox=\"0 0 %d %d\" "
                "font-family=\"sans-serif\">\n"
                "<!-- pipesim export: rect.op per compute event "
                "(data-run, data-rank), rect.comm per transfer end -->\n"
                "<rect class=\"background\" width=\"100%%\" height=\"100%%\" "
                "fill=\"#fff\"/>\n",
                SVG_W, height, SVG_W, height);
        svg_legend(&c, r, nruns);
        int y = LEGEND_H;
        for (int k = 0; k < nruns; k++) {
            svg_block(&c, &r[k], y);
            y += block_height(&r[k]);
        }
        fputs("</svg>\n", out);
        if (ferror(out))
            rc = ps_errf(err, "export: write error");
    }
    for (int k = 0; k < loaded; k++)
        xrun_free(&r[k]);
    free(r);
    return rc;
}
