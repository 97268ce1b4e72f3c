/* A small pipeline fixture for recorder and report tests: builds GPipe,
 * 1F1B or interleaved programs by hand (so these tests do not depend on the
 * schedule module), runs them on a near-free network under eager p2p, and
 * fills the rec_* records the recorder writes. Uniform stages: forward f,
 * backward b seconds per chunk, act bytes held from F to B. */
#ifndef PS_FIXTURE_H
#define PS_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/net.h"
#include "rec/rec.h"
#include "sim/eng.h"
#include "sim/mem.h"
#include "sim/prog.h"

typedef struct fixture {
    int32_t p, m, v;
    prog_set *ps;
    net *nw;
    eng_result res;
    double *static_memory; /* p */
    mem_rank *mem;         /* p */
    rec_rank *ranks;       /* p */
    rec_stage *stages;     /* p * v */
    rec_run run;
    rec_payload pay;
} fixture;

typedef struct fixture_action {
    int kind; /* PROG_F or PROG_B */
    int chunk, mb;
} fixture_action;

/* The compute order of rank r; out has room for 2 * m * v actions. */
static inline int fixture_order(const char *schedule, int p, int m, int v,
                                int r, fixture_action *out)
{
    int n = 0, total = m * v;
    if (strcmp(schedule, "gpipe") == 0) {
        for (int i = 0; i < m; i++)
            out[n++] = (fixture_action){PROG_F, 0, i};
        for (int i = 0; i < m; i++)
            out[n++] = (fixture_action){PROG_B, 0, i};
        return n;
    }
    /* 1F1B and Megatron-LM's interleaved 1F1B (1F1B is v = 1) */
    int warmup = v == 1 ? p - r - 1 : (p - r - 1) * 2 + (v - 1) * p;
    if (warmup > total)
        warmup = total;
    int nf = 0, nb = 0;
#define FWD(k)                                                                 \
    (fixture_action)                                                           \
    {                                                                          \
        PROG_F, ((k) / p) % v, ((k) / (p * v)) * p + (k) % p                   \
    }
#define BWD(k)                                                                 \
    (fixture_action)                                                           \
    {                                                                          \
        PROG_B, v - 1 - ((k) / p) % v, ((k) / (p * v)) * p + (k) % p           \
    }
    while (nf < warmup)
        out[n++] = FWD(nf), nf++;
    while (nf < total) {
        out[n++] = FWD(nf), nf++;
        out[n++] = BWD(nb), nb++;
    }
    while (nb < total)
        out[n++] = BWD(nb), nb++;
#undef FWD
#undef BWD
    return n;
}

/* Builds and runs the schedule; 0 on success. */
static inline int fixture_run(fixture *fx, const char *schedule, int p, int m,
                              int v, double f, double b, double act,
                              ps_err *err)
{
    memset(fx, 0, sizeof *fx);
    fx->p = p;
    fx->m = m;
    fx->v = v;
    int P = p * v;
    fx->ps = prog_new(p);
    fx->nw = net_new(p);
    fx->static_memory = calloc((size_t)p, sizeof(double));
    fx->mem = calloc((size_t)p, sizeof(mem_rank));
    fx->ranks = calloc((size_t)p, sizeof(rec_rank));
    fx->stages = calloc((size_t)P, sizeof(rec_stage));
    fixture_action *order = malloc((size_t)(2 * m * v) * sizeof *order);
    if (!fx->ps || !fx->nw || !fx->static_memory || !fx->mem || !fx->ranks ||
        !fx->stages || !order) {
        free(order);
        return ps_errf(err, "out of memory");
    }
    if (net_set_mesh(fx->nw, 1e30, 0, err) || net_finalize(fx->nw, err)) {
        free(order);
        return PS_ERR;
    }
    fx->ps->nmsgs = P * m * 2; /* act of (s, mb): 2(s m + mb), grad: +1 */
    for (int r = 0; r < p; r++) {
        fx->static_memory[r] = 1000.0 * (r + 1);
        int32_t lane = prog_add_lane(fx->ps, r);
        int n = fixture_order(schedule, p, m, v, r, order);
        for (int i = 0; i < n; i++) {
            fixture_action a = order[i];
            int s = a.chunk * p + r;
            prog_op op;
            if (a.kind == PROG_F) {
                if (s > 0) {
                    op = prog_recv((s - 1) % p, 2 * ((s - 1) * m + a.mb), 64,
                                   PROG_F, a.mb, 0);
                    prog_push(fx->ps, lane, &op);
                }
                op = prog_compute(PROG_F, s, (int16_t)a.chunk, a.mb, f, act);
                prog_push(fx->ps, lane, &op);
                if (s < P - 1) {
                    op = prog_send((s + 1) % p, 2 * (s * m + a.mb), 64, PROG_F,
                                   a.mb, 0);
                    prog_push(fx->ps, lane, &op);
                }
            } else {
                if (s < P - 1) {
                    op = prog_recv((s + 1) % p, 2 * (s * m + a.mb) + 1, 64,
                                   PROG_B, a.mb, 0);
                    prog_push(fx->ps, lane, &op);
                }
                op = prog_compute(PROG_B, s, (int16_t)a.chunk, a.mb, b, -act);
                prog_push(fx->ps, lane, &op);
                if (s > 0) {
                    op = prog_send((s - 1) % p, 2 * ((s - 1) * m + a.mb) + 1,
                                   64, PROG_B, a.mb, 0);
                    prog_push(fx->ps, lane, &op);
                }
            }
        }
    }
    free(order);
    eng_sim *e = eng_new();
    int rc = prog_seal(fx->ps, err);
    if (rc == 0)
        rc = eng_run(e, fx->ps, fx->nw, ENG_EAGER, &fx->res, err);
    eng_free(e);
    if (rc == 0)
        rc = mem_ledger(fx->ps, fx->static_memory, fx->mem, NULL, NULL, err);
    if (rc)
        return rc;
    double peak = 0, busy_max = 0, busy_sum = 0;
    for (int r = 0; r < p; r++) {
        double busy = (f + b) * m * v;
        fx->ranks[r] = (rec_rank){r,
                                  busy,
                                  1 - busy / fx->res.makespan,
                                  fx->static_memory[r],
                                  fx->mem[r].peak,
                                  fx->mem[r].t_peak,
                                  NAN,
                                  NAN,
                                  REC_FITS_UNKNOWN,
                                  0,
                                  0};
        peak = fx->mem[r].peak > peak ? fx->mem[r].peak : peak;
        busy_max = busy > busy_max ? busy : busy_max;
        busy_sum += busy;
    }
    for (int s = 0; s < P; s++)
        fx->stages[s] =
            (rec_stage){s, s % p, s / p, 2 * s, 2 * s + 1, 1e12, 1e6,
                        f, b,     act,   64,    NAN,       0,    0};
    fx->run = (rec_run){
        .kind = "pipeline",
        .name = schedule,
        .schedule = strcmp(schedule, "gpipe") == 0 ? "gpipe"
                    : v > 1                        ? "interleaved"
                                                   : "1f1b",
        .p2p = "eager",
        .stages = p,
        .microbatches = m,
        .virtual_stages = v,
        .dp = 1,
        .makespan = fx->res.makespan,
        .bubble = 1 - busy_sum / p / fx->res.makespan,
        .closed_form_bubble = (p - 1.0) / (v * m + p - 1.0),
        .imbalance = busy_max / (busy_sum / p),
        .peak_memory = peak,
        .params_json = "{\"test\": true}",
        .status = "ok",
    };
    fx->pay = (rec_payload){
        .run = &fx->run,
        .stages = fx->stages,
        .nstages = P,
        .ranks = fx->ranks,
        .nranks = p,
        .progs = fx->ps,
        .static_memory = fx->static_memory,
        .network = fx->nw,
    };
    return PS_OK;
}

/* The first column of sql's first row as a double; NAN (and the error
 * printed) when the query fails: the recorder tests' one probe. */
static inline double fixture_scalar(rec_db *db, const char *sql)
{
    ps_err err;
    rec_query *q = rec_query_new(db, sql, &err);
    if (!q) {
        printf("query failed: %s\n", err.msg);
        return NAN;
    }
    double v = rec_query_step(q, &err) == 1 ? rec_query_double(q, 0) : NAN;
    rec_query_free(q);
    return v;
}

/* The first column of sql's first row as text in buf ("(error)" when the
 * query fails or returns no row). */
static inline const char *fixture_text(rec_db *db, const char *sql, char *buf,
                                       size_t size)
{
    ps_err err;
    rec_query *q = rec_query_new(db, sql, &err);
    snprintf(buf, size, "(error)");
    if (q && rec_query_step(q, &err) == 1)
        snprintf(buf, size, "%s", rec_query_text(q, 0));
    rec_query_free(q);
    return buf;
}

/* A new database at path, opened for writing: the file and its -wal and
 * -shm side files a previous run of the test left are removed first. */
static inline rec_db *fixture_new_db(const char *path, ps_err *err)
{
    static const char *const suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char file[4200];
        snprintf(file, sizeof file, "%s%s", path, suffix[i]);
        unlink(file);
    }
    /* the file appears at once (a new file's first run would otherwise
     * publish it, rec/txn.c), so that readers can open it */
    rec_db *db = rec_open(path, err);
    if (db && rec_flush(db, err)) {
        rec_close(db, NULL);
        return NULL;
    }
    return db;
}

/* Points fx's payload at dup, fx's first 3 ranks and rank 1 again: a run
 * the recorder refuses only after its timeline went in (rank_stat is
 * written last, and its (run, rank) is unique). fixture_ranks_back undoes
 * it. */
static inline void fixture_dup_rank(fixture *fx, rec_rank dup[4])
{
    memcpy(dup, fx->ranks, 3 * sizeof dup[0]);
    dup[3] = dup[1];
    fx->pay.ranks = dup;
    fx->pay.nranks = 4;
}

static inline void fixture_ranks_back(fixture *fx)
{
    fx->pay.ranks = fx->ranks;
    fx->pay.nranks = fx->p;
}

static inline void fixture_free(fixture *fx)
{
    prog_free(fx->ps);
    net_free(fx->nw);
    free(fx->static_memory);
    free(fx->mem);
    free(fx->ranks);
    free(fx->stages);
    memset(fx, 0, sizeof *fx);
}

#endif
