/* The stage costs of a training step (step/pipe_cost.c): each model
 * stage's forward, split backward, recompute and bytes from the layers and
 * the partition, on each instance's devices. Reads the step's records
 * (step/pipe_types.h) only, so it sits below the driver (step/pipe.c). */
#ifndef PS_PIPE_COST_H
#define PS_PIPE_COST_H

#include <stdint.h>

#include "base/err.h"
#include "rec/row.h"
#include "sched/sched.h"
#include "step/pipe_types.h"

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

#endif
