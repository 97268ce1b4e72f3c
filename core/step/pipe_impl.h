/* Internal to step/pipe.c and step/pipe_cost.c: the stage-cost buffers a run
 * fills and the rank mappings both files use. Not a public interface
 * (step/pipe.h is). */
#ifndef PS_PIPE_IMPL_H
#define PS_PIPE_IMPL_H

#include <stdint.h>

#include "base/err.h"
#include "rec/rec.h"
#include "sched/sched.h"
#include "step/dp.h"
#include "step/pipe.h"

/* Where pipe_stage_costs writes; step/pipe.c sizes every array (pipe_ctx) and
 * keeps it across runs. */
typedef struct pipe_costs {
    sched_stage *stages;  /* p * v * dp: replica j's stages at j * p * v */
    rec_stage *rows;      /* p * v: the stage rows, from replica 0 */
    int32_t *first;       /* p * v: each stage's first layer (0-based) */
    int32_t *count;       /* p * v: each stage's number of layers */
    double *layer_params; /* nlayers: parameters, for the gradient buckets */
    double *layer_bwd;    /* nlayers: backward seconds (B + W), ditto */
} pipe_costs;

/* Fills out from cfg's layers and partition, each replica's compute times
 * on its own devices (cfg->device_rate). Fails with PS_ERR and a message
 * naming the stage or layer on a bad partition or an inconsistent split
 * backward; out is then partly written. */
int pipe_stage_costs(const pipe_config *cfg, const pipe_costs *out,
                     ps_err *err);

/* Runs the lowered, sealed programs ps of cfg (spec as lowered; stage s
 * holds layers first[s] .. first[s] + count[s] - 1; log the gradient
 * sync's collectives, each bucket of each rank) for real
 * (step/pipe_live.c): fills cfg->live, writes the median iteration's
 * measured times into ps and its makespan into *makespan. */
int pipe_live_run(const pipe_config *cfg, const sched_spec *spec, prog_set *ps,
                  const int32_t *first, const int32_t *count, const dp_log *log,
                  double *makespan, ps_err *err);

/* Cluster rank of pipeline rank r in replica j. */
static inline int32_t pipe_cluster_rank(const pipe_config *cfg, int32_t r,
                                        int32_t j)
{
    int32_t k = j * cfg->p + r;
    return cfg->rank_of ? cfg->rank_of[k] : k;
}

/* Pipeline rank of model stage s under the run's chunk placement. */
static inline int32_t pipe_stage_rank(const pipe_config *cfg, int32_t s)
{
    return sched_place_rank(cfg->placement, cfg->place, cfg->p, s);
}

#endif
