/* Shipped runs (issue 12, --jobs): a sweep worker's runs below the events
 * level as bytes (the run record, its stage, rank_stat and collective
 * rows) instead of rows in its scratch database, so that the writer
 * records them once, with rec_write as --jobs 1 does, rather than copying
 * rows the worker wrote (each run recorded twice, and decoded again).
 * rec_write's first step is here, above the write path (rec/rec.c): a
 * run shipped, or what was shipped written before it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "rec/impl.h"

struct rec_ship {
    unsigned char *p;
    size_t n, cap;
    int64_t runs;
    int oom;
};

rec_ship *rec_ship_new(void)
{
    return calloc(1, sizeof(rec_ship));
}

void rec_ship_free(rec_ship *s)
{
    if (s)
        free(s->p);
    free(s);
}

int64_t rec_ship_runs(const rec_ship *s)
{
    return s ? s->runs : 0;
}

const void *rec_ship_bytes(const rec_ship *s, size_t *n)
{
    *n = s ? s->n : 0;
    return s ? s->p : NULL;
}

static void put(rec_ship *s, const void *v, size_t n)
{
    if (!s->oom && vec_append_bytes(&s->p, &s->n, &s->cap, v, n))
        s->oom = 1;
}

static void put_i64(rec_ship *s, int64_t v)
{
    put(s, &v, sizeof v);
}

static void put_f64(rec_ship *s, double v)
{
    put(s, &v, sizeof v);
}

/* length + 1 then the bytes with their NUL (read back in place); 0: NULL */
static void put_str(rec_ship *s, const char *v)
{
    uint32_t n = v ? (uint32_t)strlen(v) + 1 : 0;
    put(s, &n, sizeof n);
    if (v)
        put(s, v, n);
}

/* Each shipped struct described once, field by field in the order they
 * travel, so that writing and reading cannot drift apart: a field added to
 * a table is shipped both ways. Field by field, not the structs' bytes:
 * their padding is uninitialised (and would show as such to valgrind in
 * the file's write). Integers and enums travel as 64 bits, doubles as
 * themselves, strings as put_str writes them. */
enum ship_kind { SHIP_STR, SHIP_I32, SHIP_I64, SHIP_F64, SHIP_FITS };

typedef struct ship_field {
    unsigned char kind;
    size_t off;
} ship_field;

#define FIELD(k, T, m)                                                         \
    {                                                                          \
        k, offsetof(T, m)                                                      \
    }
#define RUN(k, m) FIELD(k, rec_run, m)
#define STAGE(k, m) FIELD(k, rec_stage, m)
#define RANK(k, m) FIELD(k, rec_rank, m)
#define COLL(k, m) FIELD(k, rec_collective, m)
#define NFIELDS(t) (sizeof t / sizeof t[0])

static const ship_field run_fields[] = {
    RUN(SHIP_STR, kind),
    RUN(SHIP_STR, name),
    RUN(SHIP_STR, schedule),
    RUN(SHIP_STR, p2p),
    RUN(SHIP_STR, recompute),
    RUN(SHIP_STR, params_json),
    RUN(SHIP_STR, status),
    RUN(SHIP_STR, error),
    RUN(SHIP_STR, meta.sweep),
    RUN(SHIP_STR, meta.point),
    RUN(SHIP_STR, meta.tags),
    RUN(SHIP_STR, meta.model),
    RUN(SHIP_STR, meta.scenario),
    RUN(SHIP_STR, meta.eff.precision),
    RUN(SHIP_STR, meta.eff.note),
    RUN(SHIP_STR, backend),
    RUN(SHIP_I32, stages),
    RUN(SHIP_I32, microbatches),
    RUN(SHIP_I32, virtual_stages),
    RUN(SHIP_I32, dp),
    RUN(SHIP_I32, tp),
    RUN(SHIP_I32, sequence_parallel),
    RUN(SHIP_I32, folded),
    RUN(SHIP_FITS, fits),
    RUN(SHIP_I64, meta.point_index),
    RUN(SHIP_I64, meta.seq_length),
    RUN(SHIP_I64, meta.micro_batch),
    RUN(SHIP_I64, meta.global_batch),
    RUN(SHIP_I64, meta.eff.gpus),
    RUN(SHIP_F64, makespan),
    RUN(SHIP_F64, bubble),
    RUN(SHIP_F64, closed_form_bubble),
    RUN(SHIP_F64, imbalance),
    RUN(SHIP_F64, peak_memory),
    RUN(SHIP_F64, meta.eff.model_flops),
    RUN(SHIP_F64, meta.eff.hardware_flops),
    RUN(SHIP_F64, meta.eff.tokens),
    RUN(SHIP_F64, meta.eff.peak_flops),
    RUN(SHIP_F64, simulated),
};

static const ship_field stage_fields[] = {
    STAGE(SHIP_I32, stage),      STAGE(SHIP_I32, rank),
    STAGE(SHIP_I32, chunk),      STAGE(SHIP_I32, first_layer),
    STAGE(SHIP_I32, last_layer), STAGE(SHIP_F64, fwd_flops),
    STAGE(SHIP_F64, params),     STAGE(SHIP_F64, fwd_time),
    STAGE(SHIP_F64, bwd_time),   STAGE(SHIP_F64, act_bytes),
    STAGE(SHIP_F64, out_bytes),  STAGE(SHIP_F64, exposed_comm),
    STAGE(SHIP_F64, tp_comm),    STAGE(SHIP_F64, tp_exposed),
};

static const ship_field rank_fields[] = {
    RANK(SHIP_I32, rank),          RANK(SHIP_FITS, fits),
    RANK(SHIP_F64, busy),          RANK(SHIP_F64, bubble),
    RANK(SHIP_F64, static_memory), RANK(SHIP_F64, peak_memory),
    RANK(SHIP_F64, t_peak),        RANK(SHIP_F64, exposed_comm),
    RANK(SHIP_F64, capacity),      RANK(SHIP_F64, tp_comm),
    RANK(SHIP_F64, tp_exposed),
};

static const ship_field coll_fields[] = {
    COLL(SHIP_STR, op),    COLL(SHIP_STR, algorithm), COLL(SHIP_STR, protocol),
    COLL(SHIP_I32, ranks), COLL(SHIP_F64, bytes),     COLL(SHIP_F64, time),
    COLL(SHIP_F64, algbw), COLL(SHIP_F64, busbw),
};

/* Appends the fields of the struct at row. */
static void put_row(rec_ship *s, const void *row, const ship_field *f,
                    size_t nf)
{
    const char *base = row;
    for (size_t i = 0; i < nf; i++) {
        const void *at = base + f[i].off;
        switch (f[i].kind) {
        case SHIP_STR: put_str(s, *(const char *const *)at); break;
        case SHIP_I32: put_i64(s, *(const int32_t *)at); break;
        case SHIP_I64: put_i64(s, *(const int64_t *)at); break;
        case SHIP_F64: put_f64(s, *(const double *)at); break;
        case SHIP_FITS: put_i64(s, *(const enum rec_fits *)at); break;
        }
    }
}

int rec_ship_add(rec_ship *s, const rec_payload *p, enum rec_level level,
                 ps_err *err)
{
    size_t mark = s->n;
    put_i64(s, level);
    put_row(s, p->run, run_fields, NFIELDS(run_fields));
    int32_t ns = p->stages ? p->nstages : 0;
    put_i64(s, ns);
    for (int32_t i = 0; i < ns; i++)
        put_row(s, &p->stages[i], stage_fields, NFIELDS(stage_fields));
    int32_t nr = p->ranks ? p->nranks : 0;
    put_i64(s, nr);
    for (int32_t i = 0; i < nr; i++)
        put_row(s, &p->ranks[i], rank_fields, NFIELDS(rank_fields));
    /* -1: no collective; else the count as rec_payload has it */
    put_i64(s, p->collective ? p->ncollectives : -1);
    int32_t nc = p->collective ? (p->ncollectives ? p->ncollectives : 1) : 0;
    for (int32_t i = 0; i < nc; i++)
        put_row(s, &p->collective[i], coll_fields, NFIELDS(coll_fields));
    if (s->oom) {
        s->n = mark;
        s->oom = 0;
        return ps_errf(err, "out of memory (run not recorded)");
    }
    s->runs++;
    return PS_OK;
}

typedef struct rd {
    const unsigned char *p, *end;
    int bad;
} rd;

static void take(rd *r, void *out, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p, n);
    r->p += n;
}

static int64_t take_i64(rd *r)
{
    int64_t v;
    take(r, &v, sizeof v);
    return v;
}

static const char *take_str(rd *r)
{
    uint32_t n;
    take(r, &n, sizeof n);
    if (r->bad || n == 0)
        return NULL;
    if ((size_t)(r->end - r->p) < n || r->p[n - 1] != '\0') {
        r->bad = 1;
        return NULL;
    }
    const char *s = (const char *)r->p;
    r->p += n;
    return s;
}

/* Reads the fields of the struct at row, as put_row wrote them; strings
 * point into the shipped bytes. */
static void take_row(rd *r, void *row, const ship_field *f, size_t nf)
{
    char *base = row;
    for (size_t i = 0; i < nf; i++) {
        void *at = base + f[i].off;
        switch (f[i].kind) {
        case SHIP_STR: *(const char **)at = take_str(r); break;
        case SHIP_I32: *(int32_t *)at = (int32_t)take_i64(r); break;
        case SHIP_I64: *(int64_t *)at = take_i64(r); break;
        case SHIP_F64: take(r, at, sizeof(double)); break;
        case SHIP_FITS:
            *(enum rec_fits *)at = (enum rec_fits)take_i64(r);
            break;
        }
    }
}

/* The rows of one shipped run, reused from run to run. */
typedef struct ship_rows {
    rec_stage *stages;
    rec_rank *ranks;
    rec_collective *colls;
    size_t cs, cr, cc;
} ship_rows;

/* Reads a count of rows into *count and the rows into *a (grown as
 * needed); -1 when the count is out of range or memory runs out. With
 * none_is_one, a count of 0 stands for one row (rec_payload's
 * ncollectives) and a negative count for none (no collective). */
static int take_rows(rd *r, void **a, size_t *cap, size_t z,
                     const ship_field *f, size_t nf, int none_is_one,
                     int64_t *count)
{
    int64_t n = take_i64(r);
    int64_t rows = none_is_one ? (n < 0 ? 0 : n ? n : 1) : n;
    if ((!none_is_one && n < 0) || n > INT32_MAX ||
        vec_reserve(a, cap, (size_t)rows, z))
        return -1;
    for (int64_t i = 0; i < rows; i++)
        take_row(r, (char *)*a + (size_t)i * z, f, nf);
    *count = n;
    return 0;
}

/* Reads one run into *run and *p (rows in *w); PS_ERR when a count is
 * damaged or memory runs out (other damage shows in r->bad). */
static int take_run(rd *r, rec_run *run, rec_payload *p, ship_rows *w,
                    enum rec_level *level)
{
    int64_t ns, nr, ncl;
    memset(run, 0, sizeof *run);
    *p = (rec_payload){.run = run};
    *level = (enum rec_level)take_i64(r);
    take_row(r, run, run_fields, NFIELDS(run_fields));
    if (take_rows(r, (void **)&w->stages, &w->cs, sizeof *w->stages,
                  stage_fields, NFIELDS(stage_fields), 0, &ns))
        return PS_ERR;
    if (ns) {
        p->stages = w->stages;
        p->nstages = (int32_t)ns;
    }
    if (take_rows(r, (void **)&w->ranks, &w->cr, sizeof *w->ranks, rank_fields,
                  NFIELDS(rank_fields), 0, &nr))
        return PS_ERR;
    if (nr) {
        p->ranks = w->ranks;
        p->nranks = (int32_t)nr;
    }
    if (take_rows(r, (void **)&w->colls, &w->cc, sizeof *w->colls, coll_fields,
                  NFIELDS(coll_fields), 1, &ncl))
        return PS_ERR;
    if (ncl >= 0) {
        p->collective = w->colls;
        p->ncollectives = (int32_t)ncl;
    }
    return PS_OK;
}

int rec_ship_write(rec_db *db, const void *bytes, size_t n, int64_t *ids,
                   int64_t max, ps_err *err)
{
    rd r = {bytes, (const unsigned char *)bytes + n, 0};
    ship_rows w = {0};
    int rc = PS_OK;
    for (int64_t k = 0; r.p < r.end && rc == PS_OK; k++) {
        rec_run run;
        rec_payload p;
        enum rec_level level;
        if (take_run(&r, &run, &p, &w, &level)) {
            rc = ps_errf(err, "%s: shipped runs damaged or out of memory",
                         db->path);
            break;
        }
        if (r.bad || k >= max) {
            rc = ps_errf(err, "%s: shipped runs damaged", db->path);
            break;
        }
        int64_t id = 0;
        rc = rec_write(db, &p, level, &id, err);
        if (ids)
            ids[k] = id;
    }
    free(w.stages);
    free(w.ranks);
    free(w.colls);
    return rc;
}

void rec_set_shipper(rec_db *db, rec_ship *s)
{
    db->ship = s;
}

int rec_ship_unload(rec_db *db, ps_err *err)
{
    rec_ship *s = db->ship;
    if (!s)
        return PS_OK;
    db->ship = NULL; /* from here on, every run is written */
    int64_t k = s->runs;
    if (k == 0)
        return PS_OK;
    int64_t *ids = malloc((size_t)k * sizeof *ids);
    if (!ids)
        return ps_errf(err, "%s: out of memory (run not recorded)", db->path);
    int rc = rec_ship_write(db, s->p, s->n, ids, k, err);
    /* their results hold ids 1..k: a fresh scratch gives them the same */
    for (int64_t i = 0; rc == PS_OK && i < k; i++)
        if (ids[i] != i + 1)
            rc = ps_errf(err,
                         "%s: internal: shipped run %lld written as run %lld",
                         db->path, (long long)(i + 1), (long long)ids[i]);
    free(ids);
    s->n = 0;
    s->runs = 0;
    return rc;
}

/* rec_write (rec/rec.h): a sweep worker's run is shipped here, anything
 * else written after what was shipped, by rec_write_run (rec/rec.c), which
 * this file's rec_ship_write calls back through rec_write: the loop stays
 * in this file. */
int rec_write(rec_db *db, const rec_payload *p, enum rec_level level,
              int64_t *run_id, ps_err *err)
{
    *run_id = 0;
    if (db->readonly)
        return ps_errf(err, "%s: opened read-only", db->path);
    if (!p->run)
        return ps_errf(err, "%s: run without a run record", db->path);
    /* a sweep worker's run below the events level goes to the writer as
     * bytes (rec/ship.c); anything else first writes what was shipped */
    if (db->ship && level != REC_EVENTS && !db->streaming) {
        if (rec_ship_add(db->ship, p, level, err))
            return PS_ERR;
        *run_id = rec_ship_runs(db->ship);
        return PS_OK;
    }
    if (db->ship && rec_ship_unload(db, err))
        return PS_ERR;
    return rec_write_run(db, p, level, run_id, err);
}
