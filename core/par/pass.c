/* What the passes share (par/pass.h): the collective log, appending a
 * logged collective and the protocol rule. The list of passes and its
 * drivers are par/passes.c, above every pass. */
#include "par/pass.h"

#include <math.h>
#include <stdlib.h>

#include "base/limit.h"

int par_protocol(const par_step *st, const coll_spec *spec, int asked)
{
    if (asked != PAR_PROTOCOL_DEFAULT)
        return asked;
    return coll_default_protocol(spec->op, spec->algorithm, spec->candidates,
                                 &st->hw);
}

void par_log_clear(par_log *log)
{
    for (int32_t k = 0; k < log->n; k++)
        limit_free(log->c[k].lanes);
    log->n = 0;
}

void par_log_free(par_log *log)
{
    par_log_clear(log);
    limit_free(log->c);
    log->c = NULL;
    log->cap = 0;
}

void par_log_span(const par_log *log, const prog_set *ps, int32_t k, double *t0,
                  double *t1)
{
    const par_coll *e = &log->c[k];
    *t0 = INFINITY;
    *t1 = -INFINITY;
    for (int32_t j = 0; j < e->d; j++) {
        const prog_lane *lane = &ps->lanes[e->lanes[j]];
        for (int32_t i = e->lo[j]; i < e->hi[j]; i++) {
            if (lane->ops[i].t_start < *t0)
                *t0 = lane->ops[i].t_start;
            if (lane->ops[i].t_end > *t1)
                *t1 = lane->ops[i].t_end;
        }
    }
    if (*t1 < *t0)
        *t0 = *t1 = 0;
}

/* A log entry for collective op on lanes, whose ops before it ended at
 * before[j]. */
static int log_coll(par_log *log, const prog_set *ps, const coll_spec *spec,
                    const int32_t *lanes, const int32_t *before, int used,
                    int proto, const par_fold_hook *fold)
{
    int32_t d = spec->nranks;
    if (log->n == log->cap) {
        int32_t cap = log->cap ? 2 * log->cap : 16;
        par_coll *p = limit_realloc(log->c, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        log->c = p;
        log->cap = cap;
    }
    int32_t *blk = limit_malloc((size_t)d * 3 * sizeof *blk);
    if (!blk)
        return -1;
    par_coll *e = &log->c[log->n++];
    *e = (par_coll){spec->op, used,    proto,      d, (double)spec->bytes,
                    blk,      blk + d, blk + 2 * d};
    for (int32_t j = 0; j < d; j++) {
        int32_t off = fold ? fold->dropped(fold->arg, lanes[j]) : 0;
        e->lanes[j] = lanes[j];
        e->lo[j] = before[j] + off;
        e->hi[j] = ps->lanes[lanes[j]].n + off;
    }
    return 0;
}

int par_append_coll(par_step *st, coll_forks *forks, const coll_spec *spec,
                    const int32_t *lanes, int32_t tag, ps_err *err)
{
    prog_set *ps = st->ps;
    int32_t *before = malloc((size_t)spec->nranks * sizeof *before);
    if (!before)
        return ps_errf(err, "out of memory");
    for (int32_t j = 0; j < spec->nranks; j++)
        before[j] = ps->lanes[lanes[j]].n;
    coll_spec live = *spec;
    if (st->moves) {
        live.moves = st->moves;
        live.protocol = COLL_PROTO_NONE;
    }
    int used, proto;
    int rc = coll_append(ps, st->nw, st->moves ? &live : spec, lanes, forks,
                         tag, &used, &proto, err);
    if (rc == PS_OK && st->log &&
        log_coll(st->log, ps, spec, lanes, before, used, proto, st->fold))
        rc = ps_errf(err, "out of memory");
    free(before);
    if (rc == PS_OK && st->fold && st->fold->flush(st->fold->arg, ps))
        rc = ps_errf(err, "replicas differ: lowered again without folding");
    return rc;
}
