/* Internal to step/pipe.c and step/pipe_cost.c: the stage-cost buffers a run
 * fills and the rank mappings both files use. Not a public interface
 * (step/pipe.h is). */
#ifndef PS_PIPE_IMPL_H
#define PS_PIPE_IMPL_H

#include <stdint.h>

#include "base/err.h"
#include "par/pass.h"
#include "rec/rec.h"
#include "sched/sched.h"
#include "step/pipe.h"

/* Where pipe_stage_costs writes; step/pipe.c sizes every array (pipe_ctx) and
 * keeps it across runs. */
typedef struct pipe_costs {
    sched_stage *stages;  /* p * v * n: instance i's stages at i * p * v */
    rec_stage *rows;      /* p * v: the stage rows, from instance 0 */
    int32_t *first;       /* p * v: each stage's first layer (0-based) */
    int32_t *count;       /* p * v: each stage's number of layers */
    double *layer_params; /* nlayers: parameters, for the gradient buckets */
    double *layer_bwd;    /* nlayers: backward seconds (B + W), ditto */
    double *layer_fwd;    /* nlayers: forward seconds (the ep pass's) */
    double *layer_shared; /* nlayers: parameters shared with the first */
    double *layer_static; /* nlayers: static bytes beyond its parameters' */
    double *layer_work;   /* nlayers: bytes held while it computes */
    int32_t *nshared;     /* out: layers that share parameters */
    double *stage_params; /* p * v: each stage's parameters */
    /* the simulated ranks (par/sim.h): n instances, instance i's
     * pipeline rank r on cluster rank rank_of[i * p + r] */
    int32_t n;
    const int32_t *rank_of;
} pipe_costs;

/* Fills out from cfg's layers and partition, each instance's compute times
 * on its own devices (cfg->device_rate). Fails with PS_ERR and a message
 * naming the stage or layer on a bad partition or an inconsistent split
 * backward; out is then partly written. */
int pipe_stage_costs(const pipe_config *cfg, const pipe_costs *out,
                     ps_err *err);

/* Runs the lowered, sealed programs ps of cfg (spec as lowered; stage s
 * holds layers first[s] .. first[s] + count[s] - 1; log the gradient
 * sync's collectives, each bucket of each rank; rank_of the cluster rank
 * of pipeline rank r of replica j at j * p + r) for real
 * (step/pipe_live.c): fills cfg->live, writes the median iteration's
 * measured times into ps and its makespan into *makespan. */
int pipe_live_run(const pipe_config *cfg, const sched_spec *spec, prog_set *ps,
                  const int32_t *first, const int32_t *count,
                  const par_log *log, const int32_t *rank_of, double *makespan,
                  ps_err *err);

/* The layout sizes of cfg (step/pipe_config.c). */
void pipe_sizes_of(const pipe_config *cfg, par_sizes *sz);

/* Pipeline rank of model stage s under the run's chunk placement. */
static inline int32_t pipe_stage_rank(const pipe_config *cfg, int32_t s)
{
    return sched_place_rank(cfg->placement, cfg->place, cfg->p, s);
}

#endif
