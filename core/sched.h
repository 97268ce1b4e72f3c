/* Pipeline schedules: generators of per-rank programs.
 *
 * A schedule decides, per pipeline rank, the order of compute actions
 * (F, B, R for each model chunk and microbatch); sched_lower turns those
 * orders into programs by inserting the point-to-point transfers between
 * stages. Model stage s = chunk * p + rank (Megatron-LM's virtual pipeline
 * layout: rank r holds chunks r, r + p, r + 2p, ...).
 *
 * Transfers are inserted the way Megatron-LM's p2p_communication does it:
 * a rank's order is cut into steps (one action; for interleaved's steady
 * state one forward-backward pair, exchanged at once by
 * send_forward_backward_recv_forward_backward; an R joins the B after it).
 * Before each step one batch holds the sends of the previous step and the
 * receives of this one (batch_isend_irecv, then wait), so the built-in
 * schedules cannot deadlock under rendezvous semantics. GPipe's sends are
 * PROG_NOWAIT: PyTorch's ScheduleGPipe posts them with isend and waits only
 * at the end of each phase. */
#ifndef PS_SCHED_H
#define PS_SCHED_H

#include <stdint.h>

#include "err.h"
#include "prog.h"

enum sched_kind { SCHED_GPIPE, SCHED_1F1B, SCHED_INTERLEAVED, SCHED_CUSTOM };

typedef struct sched_action {
    uint8_t kind;  /* PROG_F, PROG_B, PROG_R */
    int16_t chunk; /* model chunk on the rank, 0 .. v-1 */
    int32_t mb;    /* microbatch, 0 .. m-1 */
} sched_action;

/* Costs of one model stage (one chunk of one rank) per microbatch. */
typedef struct sched_stage {
    double fwd, bwd;  /* seconds */
    double recompute; /* seconds of R under checkpointing (usually fwd) */
    double act_bytes; /* activations held from F until B frees them */
    double in_bytes;  /* the stage's input: all it keeps when checkpointed */
    double out_bytes; /* activation sent to the next stage; the gradient
                         sent back has the same size */
} sched_stage;

typedef struct sched_spec {
    enum sched_kind kind;
    int32_t p; /* pipeline ranks */
    int32_t v; /* model chunks per rank (virtual stages), >= 1 */
    int32_t m; /* microbatches */
    int checkpoint;
    const sched_stage *stages; /* p * v entries, by model stage */
    const int32_t *rank_of;    /* cluster rank of each pipeline rank; NULL:
                                  pipeline rank r is cluster rank r */
    /* SCHED_CUSTOM: the order per pipeline rank */
    const sched_action *const *custom;
    const int32_t *ncustom;
} sched_spec;

/* "gpipe" (alias "afab"), "1f1b", "interleaved". Fails naming the known
 * schedules. */
int sched_parse(const char *name, enum sched_kind *out, ps_err *err);
const char *sched_name(enum sched_kind kind);

/* Parses "F3", "B0", "R2", "F3.c1" (chunk 1) into *out, checking mb < m
 * and chunk < v. */
int sched_parse_action(const char *text, int32_t m, int32_t v,
                       sched_action *out, ps_err *err);

/* Checks the spec: p >= 1, m >= 1, v >= 1 (v > 1 only for interleaved and
 * custom), interleaved's m constraint, custom lists complete (every F and B
 * of every chunk and microbatch exactly once). */
int sched_check(const sched_spec *s, ps_err *err);

/* The compute order of pipeline rank `rank`: writes up to max actions to
 * out and their count to *n (the count is 2*m*v, or 3*m*v with
 * checkpointing, where R precedes each B). */
int sched_order(const sched_spec *s, int32_t rank, sched_action *out,
                int32_t max, int32_t *n, ps_err *err);

/* Appends one lane per pipeline rank to ps (whose nranks covers rank_of)
 * with the compute ops (durations and memory from stages) and transfers.
 * Does not seal. */
int sched_lower(const sched_spec *s, prog_set *ps, ps_err *err);

#endif
