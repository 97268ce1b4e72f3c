/* A pipeline-parallel training step, end to end: layers and a partition
 * become stage costs, the schedule generator lowers them to programs, the
 * engine runs them on the network, the memory ledger and the bubble are
 * computed, and the run is handed to a sink (rec/row.h) that the run layer
 * records. The Lua binding fills a pipe_config from a scenario table;
 * nothing here knows about Lua or the database. */
#ifndef PS_PIPE_H
#define PS_PIPE_H

#include <stdint.h>

#include "base/err.h"
#include "net/net.h"
#include "rec/row.h"
#include "sched/sched.h"
#include "step/pipe_types.h"

/* Sets every field to its default: what a scenario gets for a field it
 * leaves out (README, "ps.run"). Bytes per parameter 2 + 2 + 12 (bf16
 * weights and gradients, fp32 Adam state with master weights: ZeRO paper,
 * Rajbhandari et al. 2020, section 3.1); PyTorch DDP's buckets (25 MiB
 * bucket_cap_mb and 1 MiB dist._DEFAULT_FIRST_BUCKET_BYTES); NCCL's auto
 * algorithm; overlap on; p = v = m = dp = tp = cp = 1; 1F1B; Megatron's rank
 * order (PAR_DP_INNER). */
void pipe_config_init(pipe_config *cfg);

/* Fails with "dp 4 x 2 stages need 8 ranks but the cluster has 4" (tp > 1:
 * "tp 8 x stages 2 x dp 2 need 32 ranks but the cluster has 16"; cp > 1:
 * "tp 8 x cp 2 x stages 2 x dp 2 need 64 ranks ...") when the layout of
 * cfg (tp x cp x dp x p ranks) does not fit nranks. The one owner of
 * that message: the binding checks it before a run, pipe_run again. */
int pipe_check_world(const pipe_config *cfg, int32_t nranks, ps_err *err);

/* A context keeps the engine, programs and buffers across runs so that a
 * sweep allocates only when a run is bigger than every run before it
 * (typedef in step/pipe_types.h). pipe_ctx_free(NULL) is a no-op. */
pipe_ctx *pipe_ctx_new(void);
void pipe_ctx_free(pipe_ctx *ctx);

/* Runs one training step. nw must span the layout's world (tp x dp x p
 * ranks); sink may be NULL (nothing recorded; run/sink.h makes one that
 * records into a database). Result arrays stay valid until the next call
 * on ctx; res->id is the id sink->write gave the run. Any failure (bad
 * input, a schedule that does not check, a deadlock, a deadline) is handed
 * to the sink, when given, as a run row with status 'failed' and the
 * message, and the error returned; if recording it fails too, nothing of
 * the run remains and the message says so. A run cut short by a stop
 * (base/limit.h) is never written: its streamed rows are cancelled. */
int pipe_run(pipe_ctx *ctx, const pipe_config *cfg, net *nw,
             const rec_sink *sink, pipe_result *res, ps_err *err);

/* The closed-form bubble of a schedule with uniform stages and free
 * communication: (p-1)/(m+p-1), interleaved (p-1)/(v*m+p-1); NAN for custom
 * schedules. */
double pipe_closed_form_bubble(enum sched_kind kind, int32_t p, int32_t v,
                               int32_t m);

/* The same for split backwards, with f, b (input gradient) and w seconds
 * per stage: idle time t over m (f + b + w) + t, where t is
 * (p-1)(f+b) for 1F1B with W right after B, (p-1)(f+b-w) for ZB-H1 and
 * (p-1)f for ZB-H2 (ZB paper, section 3), the last two only where they
 * hold (H1: w <= f, w <= b, m >= p; H2: f = b = w, m >= 2p); NAN
 * elsewhere. */
double pipe_closed_form_split(enum sched_kind kind, int32_t p, int32_t m,
                              double f, double b, double w);

/* The same for DeepSeek's bidirectional schedules (dualpipe, dualpipev)
 * from the DeepSeek-V3 report's (PP/2 - 1)(F&B + B - 3W), with F&B taking
 * F + B (no overlap_fb or fb_interference given) and PP = p for DualPipe,
 * 2p for DualPipeV: idle t over busy + t, busy m (f + b + w) per rank
 * (DualPipeV: 2m (f + b + w), f a chunk's). Only where it is exact, f = b
 * = w and m >= 2p; NAN elsewhere and for other schedules. */
double pipe_closed_form_dual(enum sched_kind kind, int32_t p, int32_t m,
                             double f, double b, double w);

#endif
