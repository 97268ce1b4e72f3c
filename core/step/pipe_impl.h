/* Internal to step/pipe.c and step/pipe_cost.c: the stage-cost buffers a run
 * fills and the rank mappings both files use. Not a public interface
 * (step/pipe.h is). */
#ifndef PS_PIPE_IMPL_H
#define PS_PIPE_IMPL_H

#include <stdint.h>

#include "base/err.h"
#include "par/ep.h"
#include "par/fold.h"
#include "par/pass.h"
#include "par/sim.h"
#include "rec/rec.h"
#include "sched/sched.h"
#include "sim/mem.h"
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

/* The context of pipe_run (step/pipe.c): the engine, the programs and
 * every per-run buffer, grown geometrically and kept between runs. */
struct pipe_ctx {
    eng_sim *eng;
    prog_set *ps;
    /* per run buffers */
    sched_stage *stages;
    rec_stage *stage_rows;
    int32_t stages_cap;
    double *stage_bubble, *peak, *t_peak, *static_mem, *busy, *exposed,
        *capacity, *exposed_a2a, *exposed_a2a_pairs;
    int32_t *ranks;
    rec_rank *rank_rows;
    /* per layer, for the gradient buckets and the tied embedding */
    double *layer_params, *layer_bwd, *layer_shared, *layer_static;
    double *layer_work;
    double *layer_fwd; /* and for the ep pass, with its MoE layers */
    par_moe *moe;
    int has_moe;           /* some layer of the last run is a MoE layer */
    par_ep_state ep_state; /* the ep pass's lanes between its entries */
    int32_t *stage_first, *stage_count;
    double *stage_params;
    int32_t nshared; /* layers of the last run that share parameters */
    int32_t layers_cap;
    int32_t ranks_cap;
    double *rank_static; /* by cluster rank */
    mem_rank *ledger;    /* by cluster rank */
    int32_t cluster_cap;
    par_sim sim;         /* the simulated ranks of the last run */
    par_layout layout;   /* its layout (borrowing the run's ranks list) */
    uint64_t sim_net;    /* the net_id sim was built for; 0: none */
    rec_member *members; /* the rank_member rows of the last record */
    int32_t members_cap;
    par_log log; /* the collectives the passes appended in the last run */
    /* the last fold decision (par_fold_exact) and what it was for: a
     * sweep over one cluster and layout asks once */
    uint64_t fold_net; /* cfg->net_id of the decision; 0: none */
    par_sizes fold_sizes;
    enum par_order fold_order;
    int fold_tp;
    par_fold replicas; /* the last run's replica folding (par/fold.h) */
};

/* step/pipe_report.c: is the run uniform (every stage the same times,
 * every boundary free), so the bubble's closed form applies? */
int pipe_is_uniform(const pipe_ctx *ctx, const pipe_config *cfg,
                    const par_step *st, const net *nw);

/* step/pipe_report.c: each rank's statistics into res, from the engine's. */
void pipe_fill_stats(pipe_ctx *ctx, const pipe_config *cfg, const par_step *st,
                     pipe_result *res);

/* step/pipe_report.c: writes the run; error != NULL records it as failed
 * (summary level, no rank rows; stage rows only when with_stages). */
int pipe_record(pipe_ctx *ctx, const pipe_config *cfg, const net *nw,
                rec_db *db, pipe_result *res, const char *error,
                int with_stages, ps_err *err);

#endif
