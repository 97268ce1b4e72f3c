/* Replica folding's streaming check (par/fold.h): the passes lower every
 * instance, but the ops of instances 1 .. n - 1 on their communication
 * lanes (the gradient sync's rings, O(dp) ops a rank) are compared with
 * instance 0's, shifted, as soon as instance 0 has them, and dropped, so
 * memory grows with one replica's communication and every replica's
 * compute lanes (which the passes read back), not with every replica's
 * rings.
 *
 * Why it is as exact as par_fold_build. Instance i's ops are checked to be
 * instance 0's shifted by i (peers shifted, the same fields, a batch in any
 * order), its signals to stay inside it, and every message's two sides to
 * be images of instance-0 messages m1 (its send) and m2 (its receive) with
 * m1 -> m2 one to one (par_fold_note_side). Then the shift by one maps the
 * programs onto themselves: the message after a (its sides shifted by
 * one) has the same m1, hence the same m2, so its receive is the image of
 * a's shifted, and sigma^n is the identity. That is par_fold_build's
 * condition with s = 1, checked with the same network and static-memory
 * test; the folded run pairs instance 0's send m1 with its receive m2,
 * which is image_msg's pairing. */
#include "par/fold_impl.h"

#include <stdlib.h>
#include <string.h>

/* Instance of lane l, -1 when its rank is not simulated. */
static int32_t lane_inst(const par_fold *f, const prog_set *ps, int32_t l)
{
    int32_t k = f->inst_of[ps->lanes[l].rank];
    return k < 0 ? -1 : k / f->p;
}

/* Grows *a (cap entries) to at least n, the new entries set to fill. */
static int grow_fill(int32_t **a, int32_t cap, int32_t n, int32_t fill)
{
    if (par_fold_grow(a, n))
        return -1;
    for (int32_t x = cap; x < n; x++)
        (*a)[x] = fill;
    return 0;
}

static int32_t next_cap(int32_t cap, int32_t n)
{
    int64_t c = cap ? cap : 64;
    while (c < n)
        c *= 2;
    return c > INT32_MAX ? INT32_MAX : (int32_t)c;
}

/* Room for ps's messages and signals so far; -1 when out of memory. */
static int ensure_ids(par_fold *f, const prog_set *ps)
{
    if (ps->nmsgs > f->msg_cap) {
        int32_t c = next_cap(f->msg_cap, ps->nmsgs);
        uint32_t *s = realloc(f->side, (size_t)c * sizeof *s);
        if (!s)
            return -1;
        f->side = s;
        for (int32_t x = f->msg_cap; x < c; x++)
            s[x] = FOLD_SIDE_NONE;
        if (grow_fill(&f->pair, f->msg_cap, c, -1) ||
            grow_fill(&f->rpair, f->msg_cap, c, -1))
            return -1;
        f->msg_cap = c;
    }
    if (ps->nsignals > f->sig_cap) {
        int32_t c = next_cap(f->sig_cap, ps->nsignals);
        if (grow_fill(&f->sig_map, f->sig_cap, c, -1) ||
            grow_fill(&f->sig_inst, f->sig_cap, c, -1))
            return -1;
        f->sig_cap = c;
    }
    return 0;
}

/* Each new lane's place in its instance (lanes are added in the same
 * order in every instance: the shift maps lane q to lane q). */
static int index_new_lanes(par_fold *f, const prog_set *ps)
{
    if (ps->nlanes > f->lane_cap) {
        int32_t c = next_cap(f->lane_cap, ps->nlanes);
        if (par_fold_grow(&f->lane_seq, c) || par_fold_grow(&f->dropped, c) ||
            par_fold_grow(&f->lane_fold, c))
            return -1;
        f->lane_cap = c;
    }
    for (; f->indexed < ps->nlanes; f->indexed++) {
        int32_t l = f->indexed, i = lane_inst(f, ps, l);
        if (i < 0)
            return 1; /* a lane on no simulated rank: not a replica's */
        f->lane_seq[l] = f->inst_count[i]++;
        f->dropped[l] = 0;
        if (i > 0)
            continue;
        if (f->nrep == f->rep_cap) {
            int32_t c = next_cap(f->rep_cap, f->nrep + 1);
            if (par_fold_grow(&f->rep_lanes, c))
                return -1;
            f->rep_cap = c;
        }
        f->rep_lanes[f->nrep++] = l;
    }
    return 0;
}

/* Compares the complete batches lane l (of instance i >= 1) holds with
 * instance 0's ops at the same place, as far as those exist, and drops
 * them; 0 when they differ. */
static int flush_lane(par_fold *f, prog_set *ps, int32_t l, int32_t i)
{
    prog_lane *a = &ps->lanes[l];
    int32_t q = f->lane_seq[l];
    if (a->n == 0 || q >= f->nrep)
        return 1; /* nothing, or instance 0 has no such lane yet */
    const prog_lane *b = &ps->lanes[f->rep_lanes[q]];
    if (a->rank != par_fold_shifted(f, f->sim, b->rank, i))
        return 0;
    int32_t done = f->dropped[l], c = a->n;
    if (c > b->n - done)
        c = b->n - done;
    while (c > 0 && (a->ops[c - 1].flags & PROG_BATCH))
        c--; /* a batch still open */
    if (c <= 0)
        return 1;
    if (b->ops[done + c - 1].flags & PROG_BATCH)
        return 0;
    prog_lane va = {.rank = a->rank, .n = c, .ops = a->ops};
    prog_lane vb = {.rank = b->rank, .n = c, .ops = b->ops + done};
    f->cur = i;
    if (!par_fold_match_lane(f, f->sim, &va, &vb, i, NULL, NULL))
        return 0;
    prog_drop_front(ps, l, c);
    f->dropped[l] += c;
    return 1;
}

/* Flushes every communication lane of instances 1 .. n - 1. */
static void flush_all(par_fold *f, prog_set *ps)
{
    if (f->broken)
        return;
    int rc = ensure_ids(f, ps) ? -1 : index_new_lanes(f, ps);
    if (rc) {
        f->broken = 1; /* out of memory: every replica, as without */
        return;
    }
    for (int32_t l = f->ncompute; l < ps->nlanes && !f->broken; l++) {
        int32_t i = lane_inst(f, ps, l);
        if (i > 0 && !flush_lane(f, ps, l, i))
            f->broken = 1;
    }
}

static int hook_flush(void *arg, prog_set *ps)
{
    flush_all(arg, ps);
    return ((par_fold *)arg)->broken;
}

static int32_t hook_dropped(const void *arg, int32_t lane)
{
    const par_fold *f = arg;
    return lane < f->indexed ? f->dropped[lane] : 0;
}

int par_fold_stream_begin(par_fold *f, const prog_set *full, const par_sim *sim,
                          const net *nw, int want, ps_err *err)
{
    f->prebuilt = f->broken = f->stream_mode = f->replay = 0;
    if (!want || sim->n < 2 || !net_foldable(nw))
        return 0;
    int32_t nranks = full->nranks;
    f->nnodes = net_node_of(nw, nranks - 1) + 1;
    if (!f->ps && !(f->ps = prog_new(nranks)))
        return ps_errf(err, "out of memory folding replicas");
    if (par_fold_grow(&f->inst_of, nranks) ||
        par_fold_grow(&f->inst_count, sim->n) ||
        par_fold_grow(&f->shift, nranks) || par_fold_grow(&f->image, nranks) ||
        par_fold_grow(&f->node_img, 2 * (int64_t)f->nnodes))
        return ps_errf(err, "out of memory folding replicas");
    for (int32_t x = 0; x < nranks; x++)
        f->inst_of[x] = -1;
    for (int32_t k = 0; k < sim->n * sim->p; k++)
        f->inst_of[sim->rank_of[k]] = k;
    memset(f->inst_count, 0, (size_t)sim->n * sizeof *f->inst_count);
    f->nranks = nranks;
    f->n = sim->n;
    f->p = sim->p;
    f->sim = sim;
    /* a shift by one replica that maps no node onto a node (a replica is
     * one GPU, tp 1) fails the check at the end whatever the programs:
     * lowering twice would be wasted */
    if (!par_fold_net_symmetric(f, sim, nw, NULL, 1))
        return 0;
    f->ncompute = sim->n * sim->p;
    f->indexed = f->nrep = 0;
    /* the arrays par_fold_build sizes exactly: grown anew here */
    f->lane_cap = f->rep_cap = f->msg_cap = f->sig_cap = 0;
    f->step = -1; /* no shift table yet: shifts are computed */
    f->stream_mode = 1;
    f->hook = (par_fold_hook){hook_flush, hook_dropped, f};
    return 1;
}

/* The lanes of instances 1 .. n - 1 against instance 0's: every op
 * compared (the communication lanes' dropped as lowered, the rest now),
 * as many ops and lanes; instance 0's own messages and signals noted as
 * their own images. 0 when they differ. */
static int check_rest(par_fold *f, const prog_set *ps)
{
    for (int32_t i = 1; i < f->n; i++)
        if (f->inst_count[i] != f->nrep)
            return 0;
    for (int32_t l = 0; l < ps->nlanes; l++) {
        const prog_lane *a = &ps->lanes[l];
        int32_t i = lane_inst(f, ps, l);
        const prog_lane *b = &ps->lanes[f->rep_lanes[f->lane_seq[l]]];
        f->cur = i;
        if (i > 0 && a->rank != par_fold_shifted(f, f->sim, b->rank, i))
            return 0;
        if (i > 0 && l >= f->ncompute && (a->n || f->dropped[l] != b->n))
            return 0; /* left over, or fewer ops than instance 0's */
        if (i > 0 && l < f->ncompute &&
            !par_fold_match_lane(f, f->sim, a, b, i, NULL, NULL))
            return 0;
        for (int32_t t = 0; i == 0 && t < a->n; t++) {
            const prog_op *o = &a->ops[t];
            if (o->type == PROG_SEND || o->type == PROG_RECV) {
                if (!par_fold_note_side(f, o->msg, o->type == PROG_SEND,
                                        o->msg))
                    return 0;
            } else if (o->type == PROG_SIGNAL || o->type == PROG_WAIT) {
                if ((f->sig_inst[o->msg] >= 0 && f->sig_inst[o->msg] != 0) ||
                    (f->sig_map[o->msg] >= 0 && f->sig_map[o->msg] != o->msg))
                    return 0;
                f->sig_inst[o->msg] = 0;
                f->sig_map[o->msg] = o->msg;
            }
        }
    }
    for (int32_t m = 0; m < ps->nmsgs; m++)
        if (f->side[m] != FOLD_SIDE_DONE)
            return 0; /* a side missing: par_fold_build's path says why */
    return 1;
}

/* Instance 0's lanes as the folded programs: its send of m1 pairs with
 * its receive of pair[m1], renumbered in order. */
static int build_streamed(par_fold *f, const prog_set *full, const par_sim *sim,
                          ps_err *err)
{
    prog_set *ps = f->ps;
    prog_reset(ps, full->nranks);
    for (int32_t q = 0; q < f->nrep; q++) {
        const prog_lane *src = &full->lanes[f->rep_lanes[q]];
        int32_t fl = prog_add_lane(ps, src->rank);
        if (fl < 0 || prog_grow(ps, fl, src->n))
            return ps_errf(err, "out of memory folding replicas");
        memcpy(ps->lanes[fl].ops, src->ops, (size_t)src->n * sizeof *src->ops);
        ps->lanes[fl].n = src->n;
    }
    for (int32_t l = 0; l < full->nlanes; l++)
        f->lane_fold[l] = f->lane_seq[l];
    int32_t q = 0; /* side[] is free now: each send's new id */
    for (int32_t fl = 0; fl < ps->nlanes; fl++)
        for (int32_t t = 0; t < ps->lanes[fl].n; t++) {
            prog_op *o = &ps->lanes[fl].ops[t];
            if (o->type == PROG_SEND) {
                f->side[o->msg] = (uint32_t)q;
                o->msg = q++;
            }
        }
    for (int32_t fl = 0; fl < ps->nlanes; fl++)
        for (int32_t t = 0; t < ps->lanes[fl].n; t++) {
            prog_op *o = &ps->lanes[fl].ops[t];
            if (o->type == PROG_RECV)
                o->msg = (int32_t)f->side[f->rpair[o->msg]];
        }
    ps->nmsgs = q;
    ps->nsignals = full->nsignals;
    for (int32_t x = 0; x < full->nranks; x++)
        f->image[x] = x;
    for (int32_t k = 0; k < sim->n * sim->p; k++)
        f->image[sim->rank_of[k]] = sim->rank_of[k % sim->p];
    ps->image = f->image;
    return prog_seal(ps, err);
}

int par_fold_stream_end(par_fold *f, prog_set *full, const par_sim *sim,
                        const net *nw, const double *static_bytes, ps_err *err)
{
    flush_all(f, full);
    f->s = 0;
    int ok = !f->broken && check_rest(f, full) &&
             par_fold_net_symmetric(f, sim, nw, static_bytes, 1);
    f->stream_mode = 0;
    if (!ok)
        return 0;
    f->s = 1;
    f->streamed = 1;
    f->nlanes = full->nlanes;
    if (build_streamed(f, full, sim, err)) {
        f->s = 0;
        return PS_ERR;
    }
    f->prebuilt = 1;
    return 1;
}

void par_fold_unfold(par_fold *f, prog_set *full, const par_sim *sim)
{
    if (!f->streamed) {
        par_fold_unfold_shifted(f, full, sim);
        return;
    }
    for (int32_t q = 0; q < f->nrep; q++) { /* instance 0: as it ran */
        prog_lane *a = &full->lanes[f->rep_lanes[q]];
        const prog_lane *to = &f->ps->lanes[q];
        for (int32_t t = 0; t < a->n; t++) {
            a->ops[t].t_start = to->ops[t].t_start;
            a->ops[t].t_end = to->ops[t].t_end;
        }
    }
    f->replay = 1;
    for (int32_t l = 0; l < full->nlanes; l++) {
        int32_t i = lane_inst(f, full, l);
        prog_lane *b = &full->lanes[f->rep_lanes[f->lane_seq[l]]];
        if (i <= 0)
            continue;
        if (l < f->ncompute) /* its ops, matched as they were checked */
            par_fold_match_lane(f, sim, &full->lanes[l], b, i, b,
                                full->lanes[l].ops);
        else /* dropped: a view of instance 0's (the same times, a
                batch's in its order) */
            prog_alias_lane(full, l, b->ops, b->n);
    }
    f->replay = 0;
}
