/* The engine: executes a sealed program set on a network.
 *
 * Each lane runs its ops in order. A COMPUTE op waits for its rank's device
 * (one compute op at a time per rank, lanes queue FIFO) and occupies it for
 * op.seconds. A batch of SEND/RECV ops (see sim/prog.h) is posted at once and
 * the lane continues when all of them are complete: rendezvous  a transfer
 * starts when both SEND and RECV are posted; both complete when its bytes have
 * arrived (NCCL send/recv, which Megatron-LM waits on). eager       a transfer
 * starts when the SEND is posted and the SEND completes at once (buffered); the
 * RECV completes when the bytes have arrived and it is posted. SIGNAL raises a
 * signal; WAIT blocks until it has been raised.
 *
 * Events are processed in (time, sequence) order; the engine writes
 * t_start/t_end into every op and nothing else. When the queue runs dry with
 * unfinished lanes the run fails with a deadlock report naming every blocked
 * rank, the op it waits on, its peer and its microbatch.
 *
 * With a fault plan (sim/fault.h, eng_set_faults) the engine applies stalls and
 * slow ranks when an op starts and failed links when a transfer starts or
 * arrives, and a lane blocked in a batch for longer than recv_timeout ends
 * the run with a deadline error; a deadlock report then names the faults in
 * effect. The timeout is an event in the same queue (pushed when a lane
 * blocks in a batch, stale once it moves on), so runs without a deadline
 * push none. */
#ifndef PS_ENG_H
#define PS_ENG_H

#include <stdint.h>

#include "base/err.h"
#include "net/net.h"
#include "sim/fault.h"
#include "sim/gen.h"
#include "sim/mem.h"
#include "sim/prog.h"

typedef struct eng_sim eng_sim;

enum eng_p2p { ENG_RENDEZVOUS, ENG_EAGER };

typedef struct eng_result {
    double makespan; /* latest op end, seconds */
    int64_t events;  /* events popped from the queue */
    int64_t ops;     /* ops executed */
    int64_t transfers;
} eng_result;

/* An engine keeps its buffers between runs so sweeps do not reallocate.
 * eng_new returns NULL when out of memory; eng_free(NULL) is a no-op. */
eng_sim *eng_new(void);
void eng_free(eng_sim *e);

/* Applies fp (borrowed; NULL: none, the default) to every following
 * eng_run until changed. */
void eng_set_faults(eng_sim *e, const fault_plan *fp);

/* The completion hook. The engine calls op_done once per op, when the op's
 * times are final, in the order that happens (event order, not lane
 * order):
 *   COMPUTE  when it ends;
 *   SEND     when its bytes have arrived (t_start: transfer start, t_end:
 *            arrival), also for eager and NOWAIT sends whose lane moved on;
 *   RECV     when it completes (t_start: post, t_end: completion);
 *   SIGNAL   when raised; WAIT when released.
 * A message lost on a failed link never completes and is not reported.
 * d and d->op are borrowed for the call only (a generated lane's op exists
 * only while it runs): copy what you keep. mem_change, when set, receives
 * every change of a rank's memory ledger as the engine applies it (see
 * eng_set_memory), in time order per rank, after each rank's baseline (its
 * static bytes at t = 0, ranks in order, before any op runs): the sequence
 * mem_ledger's visit gets, so a recorder writes memory rows from it. Both run
 * on the per-event path: no SQL, no Lua, no allocation per call (append to a
 * buffer that is flushed in batches). A failed run has reported the ops
 * completed before it failed. */
typedef struct eng_done {
    const prog_op *op; /* type, kind, stage/tag, mb, chunk, bytes, t_start,
                          t_end as in sim/prog.h */
    int64_t index;     /* its position in its lane (0, 1, ...) */
    int32_t lane;
    int32_t rank; /* the lane's rank; for SEND the source, op->peer the
                     destination; for RECV the destination */
} eng_done;

typedef struct eng_sink {
    void (*op_done)(void *ctx, const eng_done *d); /* or NULL */
    void (*mem_change)(void *ctx, int32_t rank, double t,
                       double bytes); /* or NULL */
    void *ctx;
} eng_sink;

/* Applies sink (copied; NULL: none, the default) to every following
 * eng_run until changed. */
void eng_set_sink(eng_sim *e, const eng_sink *sink);

/* Online statistics, kept by every run as ops complete (no second pass
 * over the executed programs):
 *   busy[lane]  seconds of the lane's COMPUTE ops, summed in lane order;
 *   mem[rank]   the memory ledger of sim/mem.h (static bytes from
 *               eng_set_memory, allocations when a COMPUTE op with mem > 0
 *               starts, frees when one with mem < 0 ends), exactly what
 *               mem_ledger computes when each rank's memory changes come
 *               from one lane;
 *   mem_merged  1 when some rank's changes came from more than one lane:
 *               mem_ledger then orders simultaneous changes its own way
 *               (frees first), so callers wanting its figures bit for bit
 *               call it instead.
 * Valid after eng_run until the next one; the arrays belong to e. */
typedef struct eng_stats {
    const double *busy;
    const mem_rank *mem;
    int mem_merged;
} eng_stats;

/* Static bytes per rank (borrowed, ps->nranks entries; NULL: 0) for the
 * ledger of the following eng_run calls. */
void eng_set_memory(eng_sim *e, const double *static_bytes);

void eng_stats_of(const eng_sim *e, eng_stats *out);

/* Test hook for issue 12's integer widths (2^40 ops): the following
 * eng_run_gen calls start as if base ops, transfers and events had
 * passed and base events had been pushed: eng_result's counts, every
 * lane's op indices (eng_done.index) and the queue's sequence numbers
 * start at base instead of 0, so a short run drives them past 2^40
 * (test_widths). Times and order are unchanged. 0, the default, for real
 * runs; eng_run (arrays) ignores it. */
void eng_set_count_base(eng_sim *e, int64_t base);

/* Runs ps (sealed with prog_seal) on nw, whose rank count must equal
 * ps->nranks. Writes op times into ps and a summary into *res. Fails on a
 * deadlock (message: "deadlock at t=...: rank 1 waits on recv B3 from rank 2
 * (microbatch 3); ..."), on a deadline ("deadline at t=12.000 ms: rank 4
 * waited 10 ms on recv F3 from rank 3 (microbatch 3); rank 3 stalled at 2
 * ms"), on a fault naming a rank without ops in ps, when memory runs out,
 * or when a stop is requested (base/limit.h; checked every few thousand
 * events). */
int eng_run(eng_sim *e, prog_set *ps, net *nw, enum eng_p2p p2p,
            eng_result *res, ps_err *err);

/* The cursor path: runs the generated program g (sim/gen.h) on nw, whose rank
 * count must equal g->nranks, with eng_run's semantics and event order, so
 * a generator and the array of the same program give the same times bit
 * for bit. Op times reach the caller only through the sink (eng_set_sink)
 * and the statistics (eng_stats_of); faults and recv_timeout do not apply
 * (run those as arrays). Fails on a deadlock, a generator that breaks
 * sim/gen.h's contract, out of memory or a stop, like eng_run. */
int eng_run_gen(eng_sim *e, const gen_prog *g, net *nw, enum eng_p2p p2p,
                eng_result *res, ps_err *err);

#endif
