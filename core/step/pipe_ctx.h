/* The context of a training step (struct pipe_ctx): what step/pipe.c keeps
 * between runs and step/pipe_report.c reads after one. A header alone, below
 * both, so that neither file includes the other's. */
#ifndef PS_PIPE_CTX_H
#define PS_PIPE_CTX_H

#include <stdint.h>

#include "par/ep.h"
#include "par/fold.h"
#include "par/pass.h"
#include "par/sim.h"
#include "rec/row.h"
#include "sched/sched.h"
#include "sim/eng.h"
#include "sim/mem.h"
#include "sim/prog.h"
#include "step/pipe_types.h"

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

#endif
