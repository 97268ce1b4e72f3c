/* Generators of the built-in pipeline schedules (sim/gen.h): GPipe, 1F1B and
 * interleaved 1F1B, op for op what sched_lower makes of them (the same
 * steps, batches, flags, times and memory), computed from a lane's
 * position in its order, so a step needs O(p) memory instead of O(p m v).
 * step/pipe.c uses them for runs without data parallelism or faults. */
#ifndef PS_GEN_PIPE_H
#define PS_GEN_PIPE_H

#include "base/err.h"
#include "net/net.h"
#include "sched/sched.h"
#include "sim/eng.h"

/* 1 when s (checked) runs as a generator: gpipe, 1f1b or interleaved with
 * the loop placement, no split backward, no checkpointing, Megatron's p2p
 * (not pytorch_p2p); never in the test mode gen_force_array. */
int gen_pipe_applies(const sched_spec *s);

/* Runs s on eng (lane r is pipeline rank r on rank s->rank_of[r], or r),
 * filling *res; the sink and statistics of sim/eng.h carry the op times.
 * Fails as sched_lower does on a bad rank mapping, else like
 * eng_run_gen. */
int gen_pipe_run(const sched_spec *s, net *nw, enum eng_p2p p2p, eng_sim *eng,
                 eng_result *res, ps_err *err);

/* gen_pipe_run with the optimizer step of one replica: with
 * optimizer_seconds > 0 every lane ends with the PROG_OPT op the dp pass
 * (par/dp.h) appends when dp is 1 (stage = pipeline rank, mb -1, no memory), so
 * a training step of one pipeline streams too. */
int gen_pipe_run_step(const sched_spec *s, double optimizer_seconds, net *nw,
                      enum eng_p2p p2p, eng_sim *eng, eng_result *res,
                      ps_err *err);

#endif
