/* Replica folding (par/fold.h): the checks that a step's instances are
 * identical up to a shift, and the representatives' programs. */
#include "par/fold_impl.h"

#include <stdlib.h>
#include <string.h>

/* Shifts tried at most: a shift fails at the first op that differs, but a
 * step whose replicas differ late would pay a pass over its ops each. */
#define FOLD_MAX_TRIES 6

int par_fold_grow(int32_t **a, int64_t n)
{
    int32_t *b = realloc(*a, (size_t)(n > 0 ? n : 1) * sizeof *b);
    if (!b)
        return -1;
    *a = b;
    return 0;
}

static int alloc_arrays(par_fold *f, const prog_set *full, const par_sim *sim,
                        int32_t nnodes)
{
    f->nranks = full->nranks;
    f->nlanes = full->nlanes;
    f->n = sim->n;
    f->nsignals = full->nsignals;
    f->nnodes = nnodes;
    if (!f->ps && !(f->ps = prog_new(full->nranks)))
        return -1;
    return par_fold_grow(&f->image, full->nranks) ||
                   par_fold_grow(&f->inst_of, full->nranks) ||
                   par_fold_grow(&f->lane_fold, full->nlanes) ||
                   par_fold_grow(&f->lane_seq, full->nlanes) ||
                   par_fold_grow(&f->inst_first, (int64_t)sim->n + 1) ||
                   par_fold_grow(&f->inst_lanes, full->nlanes) ||
                   par_fold_grow(&f->node_img, 2 * (int64_t)nnodes) ||
                   par_fold_grow(&f->sig_map, full->nsignals) ||
                   par_fold_grow(&f->sig_inst, full->nsignals) ||
                   par_fold_grow(&f->shift, full->nranks) ||
                   par_fold_grow(&f->msg_map, full->nmsgs)
               ? -1
               : 0;
}

/* inst_of: each cluster rank's simulated index (i p + r), -1 when not
 * simulated; the lanes of each instance in order; signals raised and
 * waited on inside one instance. 0 when a lane is on no simulated rank
 * or a signal crosses instances. */
static int index_lanes(par_fold *f, const prog_set *full, const par_sim *sim)
{
    int32_t p = sim->p, n = sim->n;
    for (int32_t x = 0; x < full->nranks; x++)
        f->inst_of[x] = -1;
    for (int32_t k = 0; k < n * p; k++)
        f->inst_of[sim->rank_of[k]] = k;
    memset(f->inst_first, 0, ((size_t)n + 1) * sizeof *f->inst_first);
    for (int32_t l = 0; l < full->nlanes; l++) {
        int32_t k = f->inst_of[full->lanes[l].rank];
        if (k < 0)
            return 0;
        f->lane_seq[l] = f->inst_first[k / p + 1]++;
    }
    for (int32_t i = 0; i < n; i++)
        f->inst_first[i + 1] += f->inst_first[i];
    for (int32_t l = 0; l < full->nlanes; l++) {
        int32_t i = f->inst_of[full->lanes[l].rank] / p;
        f->inst_lanes[f->inst_first[i] + f->lane_seq[l]] = l;
    }
    for (int32_t g = 0; g < full->nsignals; g++)
        f->sig_inst[g] = -1;
    for (int pass = 0; pass < 2; pass++)
        for (int32_t l = 0; l < full->nlanes; l++) {
            const prog_lane *ln = &full->lanes[l];
            int32_t i = f->inst_of[ln->rank] / p;
            for (int32_t t = 0; t < ln->n; t++) {
                const prog_op *o = &ln->ops[t];
                if (pass == 0 && o->type == PROG_SIGNAL)
                    f->sig_inst[o->msg] = i;
                else if (pass == 1 && o->type == PROG_WAIT &&
                         f->sig_inst[o->msg] != i)
                    return 0;
            }
        }
    return 1;
}

/* The cluster rank of simulated rank x's instance shifted by k, same
 * pipeline rank; -1 when x is not simulated. A shift by the one tried
 * (f->step) is a table lookup. */
int32_t par_fold_shifted(const par_fold *f, const par_sim *sim, int32_t x,
                         int32_t k)
{
    if (k == f->step)
        return f->shift[x];
    int32_t kx = f->inst_of[x];
    if (kx < 0)
        return -1;
    int32_t i = kx / sim->p, r = kx - i * sim->p;
    i += k < sim->n ? k : k % sim->n; /* one division: it is every peer's */
    if (i >= sim->n)
        i -= sim->n;
    return sim->rank_of[i * sim->p + r];
}

int par_fold_note_side(par_fold *f, int32_t a, int send, int32_t img)
{
    uint32_t s = f->side[a];
    if (s == FOLD_SIDE_NONE) {
        f->side[a] = (uint32_t)img * 2u + (send ? 1u : 0u);
        return 1;
    }
    if (s == FOLD_SIDE_DONE || (int)(s & 1u) == send)
        return 0; /* a side seen twice */
    int32_t other = (int32_t)(s >> 1);
    int32_t si = send ? img : other, ri = send ? other : img;
    if (f->pair[si] < 0 && f->rpair[ri] < 0) {
        f->pair[si] = ri;
        f->rpair[ri] = si;
    } else if (f->pair[si] != ri || f->rpair[ri] != si) {
        return 0;
    }
    f->side[a] = FOLD_SIDE_DONE;
    return 1;
}

/* 1 when op a of an instance shifted by k from its representative is the
 * image of the representative's op b. */
static int same_op(par_fold *f, const par_sim *sim, const prog_op *a,
                   const prog_op *b, int32_t k)
{
    /* inside a batch the order and which op is last may differ (a ring's
     * position 0 sends first, the others receive first: coll/algo.c) */
    unsigned mask = ~(unsigned)PROG_BATCH;
    if (a->type != b->type || a->kind != b->kind ||
        (a->flags & mask) != (b->flags & mask) || a->mb != b->mb ||
        a->chunk != b->chunk)
        return 0;
    switch (a->type) {
    case PROG_COMPUTE:
        return a->seconds == b->seconds && a->mem == b->mem &&
               a->stage == b->stage;
    case PROG_DELAY: return a->seconds == b->seconds && a->tag == b->tag;
    case PROG_SIGNAL:
    case PROG_WAIT:
        if (f->replay)
            return 1;
        if (f->stream_mode) { /* a signal stays inside its instance */
            if (f->sig_inst[a->msg] < 0)
                f->sig_inst[a->msg] = f->cur;
            else if (f->sig_inst[a->msg] != f->cur)
                return 0;
        }
        if (f->sig_map[a->msg] < 0)
            f->sig_map[a->msg] = b->msg;
        return f->sig_map[a->msg] == b->msg;
    default: /* SEND, RECV */
        if (a->bytes != b->bytes || a->tag != b->tag ||
            a->peer != par_fold_shifted(f, sim, b->peer, k))
            return 0;
        if (f->replay)
            return 1;
        if (f->stream_mode)
            return par_fold_note_side(f, a->msg, a->type == PROG_SEND, b->msg);
        /* the message: the shift maps messages to messages (each the
         * same on both its sides, which are checked in turn) */
        if (f->msg_map[a->msg] < 0)
            f->msg_map[a->msg] = b->msg;
        return f->msg_map[a->msg] == b->msg;
    }
}

/* 1 when shifting instances by s maps ranks on one node to ranks on one
 * node and ranks on different nodes to different nodes, and keeps every
 * simulated rank's static bytes. */
int par_fold_net_symmetric(par_fold *f, const par_sim *sim, const net *nw,
                           const double *st, int32_t s)
{
    int32_t *img = f->node_img, *pre = f->node_img + f->nnodes, p = sim->p;
    for (int32_t u = 0; u < 2 * f->nnodes; u++)
        f->node_img[u] = -1;
    f->step = 0;
    for (int32_t x = 0; x < f->nranks; x++)
        f->shift[x] = par_fold_shifted(f, sim, x, s);
    f->step = s;
    for (int32_t k = 0; k < sim->n * p; k++) {
        int32_t x = sim->rank_of[k], y = f->shift[x];
        int32_t rep = sim->rank_of[(k / p % s) * p + k % p];
        if (st && st[x] != st[rep])
            return 0;
        int32_t a = net_node_of(nw, x), b = net_node_of(nw, y);
        if (img[a] < 0 && pre[b] < 0) {
            img[a] = b;
            pre[b] = a;
        } else if (img[a] != b || pre[b] != a) {
            return 0;
        }
    }
    return 1;
}

/* The end of the batch op t opens (sim/prog.h: PROG_BATCH ops and the one
 * after them), t itself for an op posted alone. */
static int32_t batch_end(const prog_lane *l, int32_t t)
{
    while (t + 1 < l->n && (l->ops[t].flags & PROG_BATCH))
        t++;
    return t;
}

/* Matches lane a of an instance shifted by k with its representative's
 * lane b op by op, a batch's ops in any order; 1 when every op is the
 * image of one. With to (lane b of the folded programs) given, out (a's
 * ops) receives the times of each op's match. */
int par_fold_match_lane(par_fold *f, const par_sim *sim, const prog_lane *a,
                        const prog_lane *b, int32_t k, const prog_lane *to,
                        prog_op *out)
{
    if (a->n != b->n)
        return 0;
    for (int32_t t = 0; t < a->n;) {
        int32_t e = batch_end(a, t), len = e - t + 1;
        if (batch_end(b, t) != e)
            return 0;
        if (len > f->used_cap) {
            int32_t *u = realloc(f->used, (size_t)len * sizeof *u);
            if (!u)
                return 0; /* not folded: the caller runs every replica */
            f->used = u;
            f->used_cap = len;
        }
        for (int32_t v = 0; v < len; v++)
            f->used[v] = 0;
        for (int32_t u = t; u <= e; u++) {
            /* in order first: no search where the orders agree */
            int32_t v = f->used[u - t] == 0 &&
                                same_op(f, sim, &a->ops[u], &b->ops[u], k)
                            ? u
                            : -1;
            for (int32_t w = t; v < 0 && w <= e; w++)
                if (!f->used[w - t] &&
                    same_op(f, sim, &a->ops[u], &b->ops[w], k))
                    v = w;
            if (v < 0)
                return 0;
            f->used[v - t] = 1;
            if (to) {
                out[u].t_start = to->ops[v].t_start;
                out[u].t_end = to->ops[v].t_end;
            }
        }
        t = e + 1;
    }
    return 1;
}

/* 1 when instance i runs the image of instance i mod s for every i. The
 * caller has checked the shift's network with par_fold_net_symmetric, which
 * also filled f->shift for s. */
static int check_shift(par_fold *f, const prog_set *full, const par_sim *sim,
                       int32_t s)
{
    for (int32_t g = 0; g < full->nsignals; g++)
        f->sig_map[g] = -1;
    for (int32_t m = 0; m < full->nmsgs; m++)
        f->msg_map[m] = -1;
    /* every instance i against i - s (the first against the last): each
     * op, message and signal has its image, and every message is checked
     * from both its sides; neighbours mostly order a batch alike (a
     * ring's positions but 0) */
    const int32_t *first = f->inst_first;
    for (int32_t i = 0; i < sim->n; i++) {
        int32_t j = (i - s + sim->n) % sim->n, nl = first[i + 1] - first[i];
        if (nl != first[j + 1] - first[j])
            return 0;
        for (int32_t q = 0; q < nl; q++) {
            const prog_lane *a = &full->lanes[f->inst_lanes[first[i] + q]];
            const prog_lane *b = &full->lanes[f->inst_lanes[first[j] + q]];
            if (a->n != b->n || a->rank != f->shift[b->rank] ||
                !par_fold_match_lane(f, sim, a, b, s, NULL, NULL))
                return 0;
        }
    }
    return 1;
}

/* The message that is m's image with its receive in a representative:
 * msg_map shifts a message back by s instances at a time. */
static int32_t image_msg(const par_fold *f, const prog_set *full,
                         const par_sim *sim, int32_t m)
{
    while (f->inst_of[full->lanes[full->msgs[m].recv_lane].rank] / sim->p >=
           f->s)
        m = f->msg_map[m];
    return m;
}

/* The representatives' lanes, their messages renumbered: a send to
 * instance b pairs with its image's receive in representative b mod s. */
static int build_folded(par_fold *f, const prog_set *full, const par_sim *sim,
                        int32_t s, ps_err *err)
{
    prog_set *ps = f->ps;
    int32_t p = sim->p;
    f->s = s;
    prog_reset(ps, full->nranks);
    for (int32_t l = 0; l < full->nlanes; l++) {
        const prog_lane *src = &full->lanes[l];
        if (f->inst_of[src->rank] / p >= s)
            continue;
        int32_t fl = prog_add_lane(ps, src->rank);
        if (fl < 0 || prog_grow(ps, fl, src->n))
            return ps_errf(err, "out of memory folding replicas");
        memcpy(ps->lanes[fl].ops, src->ops, (size_t)src->n * sizeof *src->ops);
        ps->lanes[fl].n = src->n;
        f->lane_fold[l] = fl;
    }
    for (int32_t l = 0; l < full->nlanes; l++) {
        int32_t i = f->inst_of[full->lanes[l].rank] / p;
        if (i >= s)
            f->lane_fold[l] = f->lane_fold[f->inst_lanes[f->inst_first[i % s] +
                                                         f->lane_seq[l]]];
    }
    for (int32_t fl = 0; fl < ps->nlanes; fl++)
        for (int32_t t = 0; t < ps->lanes[fl].n; t++)
            if (ps->lanes[fl].ops[t].type == PROG_RECV)
                ps->lanes[fl].ops[t].msg = -1;
    int32_t q = 0;
    for (int32_t fl = 0; fl < ps->nlanes; fl++)
        for (int32_t t = 0; t < ps->lanes[fl].n; t++) {
            prog_op *o = &ps->lanes[fl].ops[t];
            if (o->type != PROG_SEND)
                continue;
            const prog_msg *m = &full->msgs[image_msg(f, full, sim, o->msg)];
            ps->lanes[f->lane_fold[m->recv_lane]].ops[m->recv_op].msg = q;
            o->msg = q++;
        }
    ps->nmsgs = q;
    ps->nsignals = full->nsignals;
    for (int32_t x = 0; x < full->nranks; x++)
        f->image[x] = x;
    for (int32_t k = 0; k < sim->n * p; k++)
        f->image[sim->rank_of[k]] = sim->rank_of[(k / p % s) * p + k % p];
    ps->image = f->image;
    return prog_seal(ps, err);
}

int par_fold_build(par_fold *f, const prog_set *full, const par_sim *sim,
                   const net *nw, const double *static_bytes, ps_err *err)
{
    if (f->prebuilt) { /* the streaming check built it as the passes ran */
        f->prebuilt = 0;
        return 1;
    }
    f->s = 0;
    f->streamed = 0;
    if (sim->n < 2 || !net_foldable(nw))
        return 0;
    int32_t nnodes = net_node_of(nw, full->nranks - 1) + 1;
    if (alloc_arrays(f, full, sim, nnodes))
        return ps_errf(err, "out of memory folding replicas");
    if (!index_lanes(f, full, sim))
        return 0;
    for (int32_t s = 1, tries = 0; s < sim->n && tries < FOLD_MAX_TRIES; s++) {
        if (sim->n % s)
            continue;
        /* a shift that moves ranks across nodes fails in O(ranks) and
         * costs no try: where an instance is one GPU (tp 1), every shift
         * below a node's GPUs does. The smallest s then maps nodes onto
         * nodes and every group of the step onto a group: for expert
         * parallelism nested in the data-parallel dimension (Megatron's
         * expert order tp-ep-dp-pp: an EP group is ep consecutive
         * replicas) that is the EP group's span, the shift between the
         * replicas of the expert-data-parallel group (DeepSeek-V3's EP 64
         * in DP 128: s = 64, the 7th divisor). */
        if (!par_fold_net_symmetric(f, sim, nw, static_bytes, s))
            continue;
        tries++;
        if (!check_shift(f, full, sim, s))
            continue;
        if (build_folded(f, full, sim, s, err)) {
            f->s = 0;
            return PS_ERR;
        }
        return 1;
    }
    return 0;
}

void par_fold_unfold_shifted(par_fold *f, prog_set *full, const par_sim *sim)
{
    const int32_t *first = f->inst_first;
    for (int32_t i = 0; i < f->s; i++) /* the representatives: as they ran */
        for (int32_t q = first[i]; q < first[i + 1]; q++) {
            prog_lane *a = &full->lanes[f->inst_lanes[q]];
            const prog_lane *to = &f->ps->lanes[f->lane_fold[f->inst_lanes[q]]];
            for (int32_t t = 0; t < a->n; t++) {
                a->ops[t].t_start = to->ops[t].t_start;
                a->ops[t].t_end = to->ops[t].t_end;
            }
        }
    /* instance i after i - s, matched as par_fold_build checked them */
    f->step = f->s;
    for (int32_t i = f->s; i < sim->n; i++)
        for (int32_t q = 0; q < first[i + 1] - first[i]; q++) {
            prog_lane *a = &full->lanes[f->inst_lanes[first[i] + q]];
            const prog_lane *b =
                &full->lanes[f->inst_lanes[first[i - f->s] + q]];
            par_fold_match_lane(f, sim, a, b, f->s, b, a->ops);
        }
}

void par_fold_free(par_fold *f)
{
    prog_free(f->ps);
    free(f->image);
    free(f->lane_fold);
    free(f->inst_of);
    free(f->lane_seq);
    free(f->inst_first);
    free(f->inst_lanes);
    free(f->node_img);
    free(f->sig_map);
    free(f->sig_inst);
    free(f->used);
    free(f->shift);
    free(f->msg_map);
    free(f->side);
    free(f->pair);
    free(f->rpair);
    free(f->dropped);
    free(f->rep_lanes);
    free(f->inst_count);
    memset(f, 0, sizeof *f);
}
