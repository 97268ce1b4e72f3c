/* The engine: executes a sealed program set on a network.
 *
 * Each lane runs its ops in order. A COMPUTE op waits for its rank's device
 * (one compute op at a time per rank, lanes queue FIFO) and occupies it for
 * op.seconds. A batch of SEND/RECV ops (see prog.h) is posted at once and the
 * lane continues when all of them are complete:
 *   rendezvous  a transfer starts when both SEND and RECV are posted; both
 *               complete when its bytes have arrived (NCCL send/recv, which
 *               Megatron-LM waits on).
 *   eager       a transfer starts when the SEND is posted and the SEND
 *               completes at once (buffered); the RECV completes when the
 *               bytes have arrived and it is posted.
 * SIGNAL raises a signal; WAIT blocks until it has been raised.
 *
 * Events are processed in (time, sequence) order; the engine writes
 * t_start/t_end into every op and nothing else. When the queue runs dry with
 * unfinished lanes the run fails with a deadlock report naming every blocked
 * rank, the op it waits on, its peer and its microbatch.
 *
 * With a fault plan (fault.h, eng_set_faults) the engine applies stalls and
 * slow ranks when an op starts and failed links when a transfer starts or
 * arrives, and a lane blocked in a batch for longer than recv_timeout ends
 * the run with a deadline error; a deadlock report then names the faults in
 * effect. The timeout is an event in the same queue (pushed when a lane
 * blocks in a batch, stale once it moves on), so runs without a deadline
 * push none. */
#ifndef PS_ENG_H
#define PS_ENG_H

#include <stdint.h>

#include "err.h"
#include "fault.h"
#include "net.h"
#include "prog.h"

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

/* Runs ps (sealed with prog_seal) on nw, whose rank count must equal
 * ps->nranks. Writes op times into ps and a summary into *res. Fails on a
 * deadlock (message: "deadlock at t=...: rank 1 waits on recv B3 from rank 2
 * (microbatch 3); ..."), on a deadline ("deadline at t=12.000 ms: rank 4
 * waited 10 ms on recv F3 from rank 3 (microbatch 3); rank 3 stalled at 2
 * ms"), on a fault naming a rank without ops in ps, when memory runs out,
 * or when a stop is requested (limit.h; checked every few thousand
 * events). */
int eng_run(eng_sim *e, prog_set *ps, net *nw, enum eng_p2p p2p,
            eng_result *res, ps_err *err);

#endif
