/* Engine, cursor path: its records (sim/eng_cursor_state.h) sized for a
 * run, grown for the completion hook, and freed; and the memory stop's
 * note of what a generated run needs. Runs once per run or on a failure,
 * never per event (the loop is sim/eng_cursor.c). */
#include "sim/eng_cursor_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"

static void cursor_free(eng_sim *e)
{
    eng_cursor *c = e->cur;
    if (!c)
        return;
    limit_free(c->lane);
    limit_free(c->buf);
    limit_free(c->state);
    limit_free(c->chan);
    limit_free(c->msg);
    limit_free(c->sop);
    limit_free(c->sidx);
    limit_free(c->rslot);
    free(c);
    e->cur = NULL;
}

/* What the completion hook needs of a message beyond its record: cap
 * entries; -1 when out of memory (the old arrays stay). */
int eng_cursor_hook_grow_(eng_cursor *c, int32_t cap)
{
    prog_op *o = limit_realloc(c->sop, (size_t)cap * sizeof *o);
    if (!o)
        return -1;
    c->sop = o;
    int64_t *x = limit_realloc(c->sidx, (size_t)cap * sizeof *x);
    if (!x)
        return -1;
    c->sidx = x;
    int32_t *y = limit_realloc(c->rslot, (size_t)cap * sizeof *y);
    if (!y)
        return -1;
    c->rslot = y;
    c->sop_cap = cap;
    return 0;
}

/* For the memory stop's message (limit_note_need): what a generated run's
 * engine state takes (lanes, their buffers and cursor state, channels and
 * the link state of one rank pair each, which is exact for a ring and
 * an upper bound where channels share a pair, or of every link of a
 * network that is not a mesh (net_run_bytes), the first message pool,
 * the per-lane and per-rank statistics), before any growth of the
 * message pool, which grows with the messages in flight. Called where the run's
 * setup or a channel's first transfer ran out of memory. */
void eng_cursor_note_need_(const eng_sim *e, const gen_prog *g, int hook)
{
    if (limit_stopped() != LIMIT_MEMORY)
        return;
    double nl = g->nlanes, nr = g->nranks, nch = g->nchannels;
    double msgs = 2 * nch + 1024;
    double bytes =
        nl * (sizeof(clane) + (double)g->max_batch * sizeof(prog_op) +
              g->state_bytes + sizeof *e->ready + sizeof *e->busy) +
        nch * (sizeof(chan) + (double)net_pair_bytes(e->nw)) +
        (double)net_run_bytes(e->nw) + msgs * sizeof(cmsg) +
        (hook ? msgs * (sizeof(prog_op) + sizeof(int64_t) + sizeof(int32_t))
              : 0) +
        nr * (sizeof *e->device + sizeof *e->device_wait + sizeof *e->mem +
              sizeof *e->mem_lane);
    char b[64], line[200];
    snprintf(line, sizeof line,
             "the run's generated lanes and their links need about %s "
             "(%d lanes, %d channels; it grows with ranks, not ops)",
             limit_format_bytes((size_t)bytes, b, sizeof b), (int)g->nlanes,
             (int)g->nchannels);
    limit_note_need(line);
}

static int alloc_cursor(eng_sim *e, const gen_prog *g, int hook)
{
    if (!e->cur) {
        if (!(e->cur = calloc(1, sizeof *e->cur)))
            return -1;
        e->cur_free = cursor_free;
    }
    eng_cursor *c = e->cur;
    int64_t nb = (int64_t)g->nlanes * g->max_batch;
    size_t sb = (size_t)g->nlanes * g->state_bytes;
    if (eng_reserve_((void **)&c->lane, &c->lane_cap, g->nlanes,
                     sizeof *c->lane) ||
        eng_reserve_((void **)&c->chan, &c->chan_cap, g->nchannels,
                     sizeof *c->chan))
        return -1;
    if (nb >= INT32_MAX) /* eng_cursor.rslot */
        return -1;
    if (nb + 1 > c->buf_cap) {
        limit_free(c->buf);
        c->buf_cap = 0;
        c->buf = limit_malloc((size_t)(nb + 1) * sizeof *c->buf);
        if (!c->buf)
            return -1;
        c->buf_cap = nb + 1;
    }
    if (sb + 1 > c->state_cap) {
        limit_free(c->state);
        c->state_cap = 0;
        if (!(c->state = limit_malloc(sb + 1)))
            return -1;
        c->state_cap = sb + 1;
    }
    /* the channels' own records and a first pool (contents need not
     * survive) */
    if (g->nchannels > INT32_MAX / 4 - 1024)
        return -1;
    if (c->msg_cap < 2 * g->nchannels + 1024) {
        int32_t cap = 2 * g->nchannels + 1024;
        limit_free(c->msg);
        c->msg_cap = 0;
        if (!(c->msg = limit_malloc((size_t)cap * sizeof *c->msg)))
            return -1;
        c->msg_cap = cap;
    }
    if (hook && c->sop_cap < c->msg_cap && eng_cursor_hook_grow_(c, c->msg_cap))
        return -1;
    memset(c->state, 0, sb);
    /* sim/gen.h: a generator may update its previous batch in place, so the
     * buffer starts defined */
    memset(c->buf, 0, (size_t)nb * sizeof *c->buf);
    for (int32_t l = 0; l < g->nlanes; l++)
        c->lane[l] =
            (clane){e->count_base, g->rank(g, l), 0, -1, 0, 0, LANE_READY};
    for (int32_t k = 0; k < g->nchannels; k++)
        c->chan[k] = (chan){-1, -1, CHAN_NO_PAIR, -1, -1, 0, 0, 0};
    c->msg_used = 2 * g->nchannels;
    c->free_msg = -1;
    c->g = g;
    c->B = g->max_batch;
    c->nch = (uint32_t)g->nchannels;
    c->state_bytes = g->state_bytes;
    c->next = g->next;
    c->trusted = g->trusted;
    c->eager = e->p2p == ENG_EAGER;
    c->waits = c->eager ? 0 : CM_SEND_WAITS;
    c->starts = c->eager ? 0 : CM_STARTED;
    c->bad = 0;
    return eng_begin_stats_(e, g->nlanes, g->nranks);
}

/* alloc_cursor, and on a failure the memory stop's note of what the run
 * would need */
int eng_cursor_size_(eng_sim *e, const gen_prog *g, int hook)
{
    if (alloc_cursor(e, g, hook) == 0)
        return 0;
    eng_cursor_note_need_(e, g, hook);
    return -1;
}
