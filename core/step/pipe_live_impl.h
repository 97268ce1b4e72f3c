/* Internal to step/pipe_live.c and step/pipe_live_unit.c: one worker's
 * state of a step run for real (plive: its units, held activations and
 * gradients), which the live callbacks of both files act on. Not a public
 * interface (step/pipe_impl.h's pipe_live_run is). */
#ifndef PS_STEP_PIPE_LIVE_IMPL_H
#define PS_STEP_PIPE_LIVE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "live/mlp.h"
#include "step/pipe_impl.h"

/* One unit (slot, microbatch) on a worker. */
typedef struct unit {
    double *x;    /* the stage's input (kept from F to B, or W) */
    double **a;   /* each layer's output (NULL: not held) */
    double **dz;  /* each layer's dZ, B to W */
    double *out;  /* the stage's output, to send */
    double *gout; /* the gradient at the stage's output */
    double *gin;  /* the gradient at its input, to send */
    int f, b, w;  /* done */
} unit;

typedef struct slot {
    int32_t stage, first, count; /* layers first .. first + count - 1 */
    double **wt, **grad;         /* per layer */
    unit *u;                     /* m */
    uint8_t *has_w;              /* m: the lane runs a W of the unit */
} slot;

typedef struct plive {
    const pipe_config *cfg;
    const sched_spec *spec;
    const int32_t *first, *count; /* per model stage */
    int32_t S, nchunks;
    int64_t nmsg; /* per replica */
    mlp model;
    const prog_set *ps;
    const par_log *log; /* the gradient sync's collectives */
    const coll_move_log *moves;
    const int32_t *rank_of; /* cluster rank of pipeline rank r of replica j
                               at j * p + r (the layout's simulated ranks) */
    /* in the worker */
    int32_t r, j; /* pipeline rank and replica */
    slot *s;
    double *gbuf; /* every gradient of the rank, in dp's bucket order */
    int64_t ngbuf;
    int64_t *boff; /* bucket k (the tag of its ops) -> offset in gbuf */
    int32_t nbuckets;
    prog_op *prev;    /* per lane: its last compute op (pieces of one) */
    int backward;     /* the rank's lanes run backwards (not inference) */
    int32_t *slot_of; /* stage * m + mb -> slot running its F, -1 */
    double held, held_peak, recompute;
    double *result;
    size_t result_len;
} plive;

/* Bytes of one microbatch's activation at the input of layer `layer`. */
size_t pipe_live_act_bytes(const plive *c, int32_t layer);
/* An activation buffer counted in the worker's held bytes (and their
 * peak), and its release; NULL when out of memory. */
double *pipe_live_alloc_held(plive *c, int32_t layer);
void pipe_live_free_held(plive *c, double **p, int32_t layer);
/* The error naming the worker's rank and op: "rank 3: F2.c0 runs twice". */
int pipe_live_wrong(const plive *c, const prog_op *op, const char *what,
                    ps_err *err);
/* live_ops.compute (step/pipe_live_unit.c): F, R, B and W of one unit on
 * the MLP, in the order the lane runs them, checked (an op that runs
 * twice or before its input is an error naming it). */
int pipe_live_compute(void *ctx, int32_t rank, int32_t lane, int32_t index,
                      const prog_op *op, ps_err *err);

#endif
