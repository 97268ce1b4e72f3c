/* A step run for real, its compute (step/pipe_live.c runs the rest): each
 * compute op of a worker's lanes is the MLP of live/mlp.h on one unit
 * (slot, microbatch): F forward through the stage's layers, R the
 * recompute under checkpointing, B the input gradient, W the weight
 * gradient (after its B, or inside B when the unit has no W), with the
 * activations they hold counted (held bytes and their peak). An op that
 * runs twice, before its input or before its forward is an error naming
 * it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step/pipe_live_impl.h"

size_t pipe_live_act_bytes(const plive *c, int32_t layer)
{
    return (size_t)c->model.rows * (size_t)c->model.width[layer] *
           sizeof(double);
}

double *pipe_live_alloc_held(plive *c, int32_t layer)
{
    double *p = malloc(pipe_live_act_bytes(c, layer) + 1);
    if (p) {
        c->held += (double)pipe_live_act_bytes(c, layer);
        if (c->held > c->held_peak)
            c->held_peak = c->held;
    }
    return p;
}

void pipe_live_free_held(plive *c, double **p, int32_t layer)
{
    if (*p)
        c->held -= (double)pipe_live_act_bytes(c, layer);
    free(*p);
    *p = NULL;
}

int pipe_live_wrong(const plive *c, const prog_op *op, const char *what,
                    ps_err *err)
{
    char a[64];
    prog_describe(op, a, sizeof a);
    int32_t rank = c->rank_of[c->j * c->cfg->p + c->r];
    return ps_errf(err, "rank %d: %s %s", (int)rank, a, what);
}

/* The unit's stage input: the batch's microbatch on stage 0, else what
 * arrived, or the neighbour stage's output on this rank. */
static int take_input(plive *c, slot *s, unit *u, int32_t mb)
{
    size_t n = pipe_live_act_bytes(c, s->first);
    if (s->stage == 0) {
        u->x = pipe_live_alloc_held(c, s->first);
        if (u->x)
            mlp_input(&c->model, c->j, mb, u->x);
        return u->x ? 0 : -1;
    }
    if (u->x)
        return 0;
    int32_t t = c->slot_of[(s->stage - 1) * c->cfg->m + mb];
    if (t < 0 || !c->s[t].u[mb].out)
        return 1;
    u->x = pipe_live_alloc_held(c, s->first);
    if (u->x)
        memcpy(u->x, c->s[t].u[mb].out, n);
    return u->x ? 0 : -1;
}

static int forward(plive *c, slot *s, int32_t mb, const prog_op *op,
                   ps_err *err)
{
    unit *u = &s->u[mb];
    if (u->f)
        return pipe_live_wrong(c, op, "runs twice", err);
    int in = take_input(c, s, u, mb);
    if (in > 0)
        return pipe_live_wrong(c, op, "runs before its input arrived", err);
    for (int32_t l = 0; in == 0 && l < s->count; l++) {
        u->a[l] = pipe_live_alloc_held(c, s->first + l + 1);
        if (!u->a[l])
            in = -1;
        else
            mlp_forward(&c->model, s->first + l, s->wt[l],
                        l ? u->a[l - 1] : u->x, u->a[l], c->model.rows);
    }
    int32_t last = s->first + s->count;
    u->out = in ? NULL : malloc(pipe_live_act_bytes(c, last) + 1);
    if (!u->out)
        return ps_errf(err, "out of memory");
    memcpy(u->out, u->a[s->count - 1], pipe_live_act_bytes(c, last));
    if (s->stage == c->S - 1) { /* the loss */
        double *y = malloc(pipe_live_act_bytes(c, last) + 1);
        u->gout = malloc(pipe_live_act_bytes(c, last) + 1);
        if (!y || !u->gout) {
            free(y);
            return ps_errf(err, "out of memory");
        }
        mlp_target(&c->model, c->j, mb, y);
        mlp_loss_grad(&c->model, u->out, y, u->gout, c->model.rows);
        free(y);
    }
    if (c->spec->checkpoint) /* the stage keeps its input alone */
        for (int32_t l = 0; l < s->count; l++)
            pipe_live_free_held(c, &u->a[l], s->first + l + 1);
    u->f = 1;
    return PS_OK;
}

static int recompute(plive *c, slot *s, int32_t mb, const prog_op *op,
                     ps_err *err)
{
    unit *u = &s->u[mb];
    if (!u->f || !u->x)
        return pipe_live_wrong(c, op, "runs before its forward", err);
    for (int32_t l = 0; l < s->count; l++) {
        if (!u->a[l] && !(u->a[l] = pipe_live_alloc_held(c, s->first + l + 1)))
            return ps_errf(err, "out of memory");
        mlp_forward(&c->model, s->first + l, s->wt[l], l ? u->a[l - 1] : u->x,
                    u->a[l], c->model.rows);
    }
    return PS_OK;
}

static void weight_grad(plive *c, slot *s, unit *u)
{
    for (int32_t l = 0; l < s->count; l++)
        mlp_backward_weight(&c->model, s->first + l, l ? u->a[l - 1] : u->x,
                            u->dz[l], s->grad[l], c->model.rows);
    for (int32_t l = 0; l < s->count; l++) {
        pipe_live_free_held(c, &u->dz[l], s->first + l + 1);
        pipe_live_free_held(c, &u->a[l], s->first + l + 1);
    }
    pipe_live_free_held(c, &u->x, s->first);
}

static int backward(plive *c, slot *s, int32_t mb, const prog_op *op,
                    ps_err *err)
{
    unit *u = &s->u[mb];
    if (!u->f || u->b)
        return pipe_live_wrong(
            c, op, u->b ? "runs twice" : "runs before its forward", err);
    for (int32_t l = 0; l < s->count; l++)
        if (!u->a[l])
            return pipe_live_wrong(c, op, "runs before its recompute", err);
    if (!u->gout) {
        int32_t t = s->stage + 1 < c->S
                        ? c->slot_of[(s->stage + 1) * c->cfg->m + mb]
                        : -1;
        if (t < 0 || !c->s[t].u[mb].gin)
            return pipe_live_wrong(c, op, "runs before its gradient arrived",
                                   err);
        size_t n = pipe_live_act_bytes(c, s->first + s->count);
        if (!(u->gout = malloc(n + 1)))
            return ps_errf(err, "out of memory");
        memcpy(u->gout, c->s[t].u[mb].gin, n);
    }
    double *da = u->gout;
    for (int32_t l = s->count - 1; l >= 0; l--) {
        int32_t layer = s->first + l;
        int keep_dx = l > 0 || s->stage > 0;
        double *dx = keep_dx ? malloc(pipe_live_act_bytes(c, layer) + 1) : NULL;
        u->dz[l] = pipe_live_alloc_held(c, layer + 1);
        if ((keep_dx && !dx) || !u->dz[l]) {
            free(dx);
            return ps_errf(err, "out of memory");
        }
        mlp_backward_input(&c->model, layer, s->wt[l], u->a[l], da, u->dz[l],
                           dx, c->model.rows);
        if (da != u->gout)
            free(da);
        da = dx;
    }
    u->gin = da; /* NULL on stage 0 */
    free(u->gout);
    free(u->out);
    u->gout = u->out = NULL;
    if (!s->has_w[mb]) /* the full backward */
        weight_grad(c, s, u);
    u->b = 1;
    return PS_OK;
}

int pipe_live_compute(void *ctx, int32_t rank, int32_t lane, int32_t index,
                      const prog_op *op, ps_err *err)
{
    plive *c = ctx;
    (void)rank, (void)index;
    if (op->kind == PROG_OPT || op->mb < 0)
        return PS_OK;
    /* dp_lower cuts a chunk's last backward into pieces at its buckets'
     * ready points: the first piece computes, the rest are its time */
    prog_op *prev = &c->prev[lane];
    int piece = prev->type == PROG_COMPUTE && prev->kind == op->kind &&
                prev->chunk == op->chunk && prev->mb == op->mb;
    *prev = *op;
    if (piece)
        return PS_OK;
    if (op->chunk < 0 || op->chunk >= c->nchunks || op->mb >= c->cfg->m)
        return pipe_live_wrong(c, op, "is not this rank's", err);
    slot *s = &c->s[op->chunk];
    switch (op->kind) {
    case PROG_F:
    case PROG_FB_F: return forward(c, s, op->mb, op, err);
    case PROG_B:
    case PROG_FB_B: return backward(c, s, op->mb, op, err);
    case PROG_R: {
        double t0 = live_clock();
        int rc = recompute(c, s, op->mb, op, err);
        c->recompute += live_clock() - t0;
        return rc;
    }
    case PROG_W:
        if (!s->u[op->mb].b) {
            char b[64];
            prog_op bop = *op;
            bop.kind = PROG_B;
            prog_describe(&bop, b, sizeof b);
            char why[96];
            snprintf(why, sizeof why, "runs before %s", b);
            return pipe_live_wrong(c, op, why, err);
        }
        if (s->u[op->mb].w)
            return pipe_live_wrong(c, op, "runs twice", err);
        weight_grad(c, s, &s->u[op->mb]);
        s->u[op->mb].w = 1;
        return PS_OK;
    default: return PS_OK;
    }
}
