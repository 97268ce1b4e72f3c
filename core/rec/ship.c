/* Shipped runs (issue 12, --jobs): a sweep worker's runs below the events
 * level as bytes (the run record, its stage, rank_stat and collective
 * rows) instead of rows in its scratch database, so that the writer
 * records them once, with rec_write as --jobs 1 does, rather than copying
 * rows the worker wrote (each run recorded twice, and decoded again). */
#include <stdlib.h>
#include <string.h>

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
    if (s->oom)
        return;
    if (n > s->cap - s->n) {
        size_t cap = s->cap ? s->cap : 65536;
        while (cap - s->n < n)
            cap *= 2;
        unsigned char *q = realloc(s->p, cap);
        if (!q) {
            s->oom = 1;
            return;
        }
        s->p = q;
        s->cap = cap;
    }
    memcpy(s->p + s->n, v, n);
    s->n += n;
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

/* Field by field, not the structs' bytes: their padding is uninitialised
 * (and would show as such to valgrind in the file's write). */
int rec_ship_add(rec_ship *s, const rec_payload *p, enum rec_level level,
                 ps_err *err)
{
    size_t mark = s->n;
    const rec_run *r = p->run;
    put_i64(s, level);
    const char *strs[] = {r->kind,          r->name,
                          r->schedule,      r->p2p,
                          r->recompute,     r->params_json,
                          r->status,        r->error,
                          r->meta.sweep,    r->meta.point,
                          r->meta.tags,     r->meta.model,
                          r->meta.scenario, r->meta.eff.precision,
                          r->meta.eff.note, r->backend};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        put_str(s, strs[i]);
    int64_t ints[] = {r->stages,
                      r->microbatches,
                      r->virtual_stages,
                      r->dp,
                      r->tp,
                      r->sequence_parallel,
                      r->fits,
                      r->meta.point_index,
                      r->meta.seq_length,
                      r->meta.micro_batch,
                      r->meta.global_batch,
                      r->meta.eff.gpus};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        put_i64(s, ints[i]);
    double reals[] = {r->makespan,
                      r->bubble,
                      r->closed_form_bubble,
                      r->imbalance,
                      r->peak_memory,
                      r->meta.eff.model_flops,
                      r->meta.eff.hardware_flops,
                      r->meta.eff.tokens,
                      r->meta.eff.peak_flops,
                      r->simulated};
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
        put_f64(s, reals[i]);
    int32_t ns = p->stages ? p->nstages : 0;
    put_i64(s, ns);
    for (int32_t i = 0; i < ns; i++) {
        const rec_stage *g = &p->stages[i];
        int64_t gi[] = {g->stage, g->rank, g->chunk, g->first_layer,
                        g->last_layer};
        double gd[] = {g->fwd_flops,    g->params,    g->fwd_time,
                       g->bwd_time,     g->act_bytes, g->out_bytes,
                       g->exposed_comm, g->tp_comm,   g->tp_exposed};
        put(s, gi, sizeof gi);
        put(s, gd, sizeof gd);
    }
    int32_t nr = p->ranks ? p->nranks : 0;
    put_i64(s, nr);
    for (int32_t i = 0; i < nr; i++) {
        const rec_rank *k = &p->ranks[i];
        int64_t ki[] = {k->rank, k->fits};
        double kd[] = {k->busy,        k->bubble,  k->static_memory,
                       k->peak_memory, k->t_peak,  k->exposed_comm,
                       k->capacity,    k->tp_comm, k->tp_exposed};
        put(s, ki, sizeof ki);
        put(s, kd, sizeof kd);
    }
    /* -1: no collective; else the count as rec_payload has it */
    put_i64(s, p->collective ? p->ncollectives : -1);
    int32_t nc = p->collective ? (p->ncollectives ? p->ncollectives : 1) : 0;
    for (int32_t i = 0; i < nc; i++) {
        const rec_collective *c = &p->collective[i];
        put_str(s, c->op);
        put_str(s, c->algorithm);
        put_str(s, c->protocol);
        put_i64(s, c->ranks);
        double cd[] = {c->bytes, c->time, c->algbw, c->busbw};
        put(s, cd, sizeof cd);
    }
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

/* Grows *a to n elements of size z; 0, or -1 out of memory. */
static int room(void **a, size_t *cap, size_t n, size_t z)
{
    if (n <= *cap)
        return 0;
    void *q = realloc(*a, n * z);
    if (!q)
        return -1;
    *a = q;
    *cap = n;
    return 0;
}

int rec_ship_write(rec_db *db, const void *bytes, size_t n, int64_t *ids,
                   int64_t max, ps_err *err)
{
    rd r = {bytes, (const unsigned char *)bytes + n, 0};
    rec_stage *stages = NULL;
    rec_rank *ranks = NULL;
    rec_collective *colls = NULL;
    size_t cs = 0, cr = 0, cc = 0;
    int rc = PS_OK;
    for (int64_t k = 0; r.p < r.end && rc == PS_OK; k++) {
        rec_run run;
        memset(&run, 0, sizeof run);
        enum rec_level level = (enum rec_level)take_i64(&r);
        const char **strs[] = {&run.kind,          &run.name,
                               &run.schedule,      &run.p2p,
                               &run.recompute,     &run.params_json,
                               &run.status,        &run.error,
                               &run.meta.sweep,    &run.meta.point,
                               &run.meta.tags,     &run.meta.model,
                               &run.meta.scenario, &run.meta.eff.precision,
                               &run.meta.eff.note, &run.backend};
        for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
            *strs[i] = take_str(&r);
        run.stages = (int32_t)take_i64(&r);
        run.microbatches = (int32_t)take_i64(&r);
        run.virtual_stages = (int32_t)take_i64(&r);
        run.dp = (int32_t)take_i64(&r);
        run.tp = (int32_t)take_i64(&r);
        run.sequence_parallel = (int32_t)take_i64(&r);
        run.fits = (enum rec_fits)take_i64(&r);
        run.meta.point_index = take_i64(&r);
        run.meta.seq_length = take_i64(&r);
        run.meta.micro_batch = take_i64(&r);
        run.meta.global_batch = take_i64(&r);
        run.meta.eff.gpus = take_i64(&r);
        double *reals[] = {&run.makespan,
                           &run.bubble,
                           &run.closed_form_bubble,
                           &run.imbalance,
                           &run.peak_memory,
                           &run.meta.eff.model_flops,
                           &run.meta.eff.hardware_flops,
                           &run.meta.eff.tokens,
                           &run.meta.eff.peak_flops,
                           &run.simulated};
        for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
            take(&r, reals[i], sizeof(double));
        rec_payload p = {.run = &run};
        int64_t ns = take_i64(&r);
        if (ns < 0 || ns > INT32_MAX ||
            room((void **)&stages, &cs, (size_t)ns, sizeof *stages)) {
            rc = ps_errf(err, "%s: shipped runs damaged or out of memory",
                         db->path);
            break;
        }
        for (int64_t i = 0; i < ns; i++) {
            rec_stage *g = &stages[i];
            int64_t gi[5];
            take(&r, gi, sizeof gi);
            g->stage = (int32_t)gi[0];
            g->rank = (int32_t)gi[1];
            g->chunk = (int32_t)gi[2];
            g->first_layer = (int32_t)gi[3];
            g->last_layer = (int32_t)gi[4];
            double gd[9];
            take(&r, gd, sizeof gd);
            g->fwd_flops = gd[0];
            g->params = gd[1];
            g->fwd_time = gd[2];
            g->bwd_time = gd[3];
            g->act_bytes = gd[4];
            g->out_bytes = gd[5];
            g->exposed_comm = gd[6];
            g->tp_comm = gd[7];
            g->tp_exposed = gd[8];
        }
        if (ns) {
            p.stages = stages;
            p.nstages = (int32_t)ns;
        }
        int64_t nr = take_i64(&r);
        if (nr < 0 || nr > INT32_MAX ||
            room((void **)&ranks, &cr, (size_t)nr, sizeof *ranks)) {
            rc = ps_errf(err, "%s: shipped runs damaged or out of memory",
                         db->path);
            break;
        }
        for (int64_t i = 0; i < nr; i++) {
            rec_rank *q = &ranks[i];
            int64_t ki[2];
            take(&r, ki, sizeof ki);
            q->rank = (int32_t)ki[0];
            q->fits = (enum rec_fits)ki[1];
            double kd[9];
            take(&r, kd, sizeof kd);
            q->busy = kd[0];
            q->bubble = kd[1];
            q->static_memory = kd[2];
            q->peak_memory = kd[3];
            q->t_peak = kd[4];
            q->exposed_comm = kd[5];
            q->capacity = kd[6];
            q->tp_comm = kd[7];
            q->tp_exposed = kd[8];
        }
        if (nr) {
            p.ranks = ranks;
            p.nranks = (int32_t)nr;
        }
        int64_t ncl = take_i64(&r);
        int64_t nc = ncl < 0 ? 0 : ncl ? ncl : 1;
        if (ncl > INT32_MAX ||
            room((void **)&colls, &cc, (size_t)nc, sizeof *colls)) {
            rc = ps_errf(err, "%s: shipped runs damaged or out of memory",
                         db->path);
            break;
        }
        for (int64_t i = 0; i < nc; i++) {
            rec_collective *c = &colls[i];
            c->op = take_str(&r);
            c->algorithm = take_str(&r);
            c->protocol = take_str(&r);
            c->ranks = (int32_t)take_i64(&r);
            double cd[4];
            take(&r, cd, sizeof cd);
            c->bytes = cd[0];
            c->time = cd[1];
            c->algbw = cd[2];
            c->busbw = cd[3];
        }
        if (ncl >= 0) {
            p.collective = colls;
            p.ncollectives = (int32_t)ncl;
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
    free(stages);
    free(ranks);
    free(colls);
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
