/* Internal to the engine's cursor path (sim/eng_cursor.c, the per-event
 * loop; sim/eng_cursor_state.c, sizing and freeing): the records of a
 * generated run (lanes, channels, messages in flight) that the loop reads
 * directly. Not a public header. */
#ifndef PS_ENG_CURSOR_STATE_H
#define PS_ENG_CURSOR_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "net/net.h"
#include "sim/eng.h"
#include "sim/eng_impl.h"
#include "sim/gen.h"
#include "sim/prog.h"

#define CHAN_NO_PAIR INT32_MIN

enum cmsg_bits {
    CM_SEND_POSTED = 1,
    CM_RECV_POSTED = 2,
    CM_STARTED = 4,
    CM_ARRIVED = 8,
    CM_SEND_WAITS = 16 /* the SEND's lane waits for the arrival: rendezvous
                          and not NOWAIT, the array path's rule */
};

/* One message from its first post to its completion: what the transfer
 * and the arrival need of the SEND (an eager or NOWAIT send completes for
 * its lane, which moves on, before its bytes arrive) and where its RECV
 * sits. 24 bytes. With a completion hook the whole SEND, its index and
 * the RECV's buffer slot are kept too (eng_cursor.sop, sidx, rslot), out
 * of this record. Ids 0 .. 2 nch - 1
 * are the channels' own records (channel k's messages in flight take
 * records 2k and 2k + 1 first: a ring whose sends run one step ahead
 * never touches the free list), the pool follows. */
typedef struct cmsg {
    double bytes;
    int32_t send_lane;
    int32_t recv_lane;
    int32_t next; /* channel queue or free list */
    uint8_t st;   /* enum cmsg_bits */
} cmsg;

/* Posts of one channel not yet met by the other side, oldest first; all
 * of one side (a post of the other side meets the oldest). A channel
 * joins one rank to one other: its first SEND names them (src, dst), and
 * its link slot is looked up at its first transfer. */
typedef struct chan {
    int32_t head, tail;
    int32_t pair;     /* net_pair of (src, dst), CHAN_NO_PAIR before the
                         first transfer */
    int32_t src, dst; /* -1 before the first SEND */
    int32_t conn;     /* net_start_conn's state of its slotted sends */
    uint8_t sends;    /* 1: the queue holds SENDs, 0: RECVs */
    uint8_t own;      /* bit b: its own record 2k + b is in use */
} chan;

typedef struct clane {
    int64_t index; /* index of the first op in the buffer */
    int32_t rank;
    int32_t pending; /* incomplete ops of the current batch */
    int32_t next;    /* device wait list */
    int32_t nbuf;    /* ops of the current batch or compute op, 0: none */
    int32_t nops;    /* ops of the last batch fetched */
    uint8_t state;   /* enum lane_state */
} clane;

/* Integer widths (issue 12: 1 << 20 ranks, 2^40 ops; test_widths has the
 * public counters): what grows with ops is 64-bit, what grows with
 * ranks, channels or messages in flight is 32-bit. */
_Static_assert(sizeof(((clane *)0)->index) == 8,
               "clane.index: a lane's op count, 2^40 on one lane");
_Static_assert(sizeof(((eng_sim *)0)->ops) == 8 &&
                   sizeof(((eng_sim *)0)->transfers) == 8,
               "eng_sim.ops, transfers: the run's totals");
_Static_assert(sizeof(((cmsg *)0)->send_lane) == 4 &&
                   sizeof(((chan *)0)->src) == 4,
               "lanes and ranks: 32-bit, 1 << 20 and more");

struct eng_cursor {
    clane *lane;
    int32_t lane_cap;
    prog_op *buf; /* max_batch per lane */
    int64_t buf_cap;
    unsigned char *state;
    size_t state_cap;
    chan *chan;
    int32_t chan_cap;
    cmsg *msg;      /* msg_cap records: the channels' own, then the pool */
    prog_op *sop;   /* the SENDs, kept only with a hook */
    int64_t *sidx;  /* and their indices in their lanes */
    int32_t *rslot; /* and their RECVs' slots in their lanes' buffers */
    int32_t msg_cap, msg_used, free_msg;
    int32_t sop_cap; /* entries of sop and sidx */
    /* the run */
    const gen_prog *g;
    int32_t B;    /* max_batch */
    uint32_t nch; /* channels, unsigned for one comparison */
    size_t state_bytes;
    int (*next)(const gen_prog *g, int32_t lane, void *state, prog_op *ops);
    int trusted;    /* gen_prog.trusted: batches are not checked */
    int eager;      /* p2p == ENG_EAGER */
    uint8_t waits;  /* CM_SEND_WAITS under rendezvous, else 0 */
    uint8_t starts; /* CM_STARTED under rendezvous, else 0 */
    /* a FIFO mesh: transfers start inline (net_mesh_fifo) */
    int mesh;
    net_lstat *slots;
    double bw, lat;
    int ring_fast; /* advance_ring runs the lanes: their buffers unused */
    int bad;       /* the generator broke its contract: message in bad_msg */
    char bad_msg[160];
};

/* Sizes and resets e->cur for a run of g (a completion hook set: hook),
 * allocating it on first use, then the statistics (eng_begin_stats_); on a
 * failure notes what the run would need for the memory stop's message and
 * returns -1. Sets e->cur_free with e->cur. */
int eng_cursor_size_(eng_sim *e, const gen_prog *g, int hook);

/* What the completion hook needs of a message beyond its record: cap
 * entries; -1 when out of memory (the old arrays stay). */
int eng_cursor_hook_grow_(eng_cursor *c, int32_t cap);

/* For the memory stop's message (limit_note_need): what a generated run's
 * engine state takes; a no-op unless the stop was for memory. */
void eng_cursor_note_need_(const eng_sim *e, const gen_prog *g, int hook);

#endif
