/* Pipeline schedules: generators of per-rank programs.
 *
 * A schedule decides, per pipeline rank, the order of compute actions
 * (F, B, W, R for each model chunk and microbatch); sched_lower turns those
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
 * at the end of each phase.
 *
 * Split backward (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR
 * 2024): a unit (chunk, microbatch) whose order holds a W has its backward
 * in two ops: B computes the input gradient (sent to the previous stage at
 * once) and W the weight gradient. Without a W, B is the full backward.
 * Schedules with W send asynchronously (PROG_NOWAIT, as the zero-bubble
 * runtimes' isends), so a rank never blocks on a send. */
#ifndef PS_SCHED_H
#define PS_SCHED_H

#include <stdint.h>

#include "base/err.h"
#include "sim/prog.h"

enum sched_kind {
    SCHED_GPIPE,
    SCHED_1F1B,
    SCHED_INTERLEAVED,
    SCHED_CUSTOM,
    SCHED_ZB_H1, /* zero-bubble handcrafted, 1F1B's activation memory */
    SCHED_ZB_H2, /* zero-bubble handcrafted, twice that, no bubble */
    /* PyTorch torch.distributed.pipelining (sched/pt.c) */
    SCHED_LOOPED_BFS,     /* ScheduleLoopedBFS */
    SCHED_INTERLEAVED_PT, /* ScheduleInterleaved1F1B: m need not divide */
    SCHED_INTERLEAVED_ZB, /* ScheduleInterleavedZeroBubble (ZB1P) */
    SCHED_ZBV,            /* ScheduleZBVZeroBubble, V placement */
    SCHED_FORWARD_ONLY,   /* inference: forwards only */
    SCHED_DUALPIPEV,      /* ScheduleDualPipeV (DeepSeek), V placement */
    SCHED_DUALPIPE        /* DeepSeek's bidirectional DualPipe (sched/ds.c) */
};

/* Where chunk c of rank r sits in the model: SCHED_LOOP (Megatron-LM,
 * PyTorch's default "loop" style) stage c * p + r; SCHED_V (PyTorch's
 * style="v", ZB-V, DualPipeV; 2 chunks) chunk 0 is stage r and chunk 1
 * stage 2p - 1 - r, so the last stage sits on rank 0 next to the first.
 * SCHED_LIST: any one-to-one map of the p * v stages onto (rank, chunk)
 * pairs (sched_place_*). The inline rules below are LOOP's and V's. */
enum sched_placement {
    SCHED_LOOP,
    SCHED_V,
    SCHED_LIST, /* sched_spec.place: an explicit map of every stage */
    SCHED_DUAL  /* DualPipe: p stages, each on two ranks: chunk 0 of rank
                   r is stage r (the pipeline from rank 0), chunk 1 stage
                   p - 1 - r (the one from rank p - 1) */
};

/* Chunks per rank the schedule runs with v model chunks per rank:
 * DualPipe's ranks hold two copies of one stage (v is 1), others v. */
static inline int32_t sched_chunks(enum sched_kind kind, int32_t v)
{
    return kind == SCHED_DUALPIPE ? 2 : v;
}

/* Model stages (entries of sched_spec.stages): p for SCHED_DUAL, whose
 * chunks are copies, else p * v. */
static inline int32_t sched_nstages(enum sched_placement pl, int32_t p,
                                    int32_t v)
{
    return pl == SCHED_DUAL ? p : p * v;
}

static inline int32_t sched_stage_of(enum sched_placement pl, int32_t p,
                                     int32_t chunk, int32_t rank)
{
    return pl == SCHED_V && (chunk & 1) ? (chunk + 1) * p - 1 - rank
                                        : chunk * p + rank;
}

/* The pipeline rank holding model stage s. */
static inline int32_t sched_rank_of(enum sched_placement pl, int32_t p,
                                    int32_t s)
{
    return pl == SCHED_V && ((s / p) & 1) ? p - 1 - s % p : s % p;
}

/* The placement of stage s (rank at place[2s], chunk at place[2s + 1] for
 * SCHED_LIST, place unused otherwise), p ranks, v chunks per rank: the
 * rank and chunk of stage s (SCHED_DUAL: of its copy in chunk 0), and the
 * stage at (chunk, rank); -1 when there is none. */
int32_t sched_place_rank(enum sched_placement pl, const int32_t *place,
                         int32_t p, int32_t s);
int32_t sched_place_chunk(enum sched_placement pl, const int32_t *place,
                          int32_t p, int32_t s);
int32_t sched_place_stage(enum sched_placement pl, const int32_t *place,
                          int32_t p, int32_t v, int32_t chunk, int32_t rank);

/* Checks an explicit list (every stage 0 .. p*v-1 on a rank 0..p-1 and
 * chunk 0..v-1, no (rank, chunk) twice) and says which rule it is:
 * SCHED_LOOP or SCHED_V when it equals one, else SCHED_LIST. Messages
 * count stages from 0. */
int sched_place_check(const int32_t *place, int32_t p, int32_t v,
                      enum sched_placement *rule, ps_err *err);

/* kind SCHED_FB is an overlapped forward-backward (DeepSeek's DualPipe
 * "F&B", PyTorch's OVERLAP_F_B): the forward of (chunk, mb) and the
 * backward of (bchunk, bmb) run at once on the rank. Its duration is
 * sched_spec.overlap_fb, or max(F, B) + fb_interference * min(F, B); it
 * allocates what the F allocates when it starts and frees what the B frees
 * when it ends. Other kinds leave bchunk and bmb 0. */
#define SCHED_FB PROG_FB_F

typedef struct sched_action {
    uint8_t kind;   /* PROG_F, PROG_B, PROG_W, PROG_R or SCHED_FB */
    int16_t chunk;  /* model chunk on the rank, 0 .. v-1 */
    int32_t mb;     /* microbatch, 0 .. m-1 */
    int16_t bchunk; /* SCHED_FB: the backward's chunk and microbatch */
    int32_t bmb;
} sched_action;

/* Costs of one model stage (one chunk of one rank) per microbatch. */
typedef struct sched_stage {
    double fwd;       /* seconds */
    double bwd;       /* seconds of B: the input-gradient backward; a unit
                         without W runs bwd + wgt */
    double recompute; /* seconds of R under checkpointing (usually fwd) */
    double act_bytes; /* activations held from F until B frees them */
    double in_bytes;  /* the stage's input: all it keeps when checkpointed */
    double out_bytes; /* activation sent to the next stage; the gradient
                         sent back has the same size */
    double wgt;       /* seconds of W, the weight-gradient backward */
    double w_bytes;   /* of what F allocated, what W still needs (inputs
                         of the GEMMs, output gradients): B frees the rest,
                         W frees this (the ZB paper's M_W); clamped to
                         what is held */
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
    /* built-in schedules other than the zero-bubble ones: 1 runs every
     * backward as B then W right after it (the zero-bubble ones always
     * split; custom lists split the units that have a W) */
    int split;
    enum sched_placement placement;
    /* the explicit chunk_placement list (2 p v entries, see
     * sched_place_rank) when one was given, also when it equals LOOP or V
     * (placement then says which): a schedule that needs another
     * placement names the first stage that differs */
    const int32_t *place;
    /* post communication as PyTorch's _PipelineScheduleRuntime does:
     * sends are isends nobody waits on, receives are posted ahead (the
     * transfer starts when the send is posted) and waited on right before
     * the compute that needs them. Also implied by W (see above). */
    int pytorch_p2p;
    /* overlapped FB actions (SCHED_FB): seconds of each, or 0 to take
     * max(F, B) + fb_interference * min(F, B). fb_interference is in
     * [0, 1]; 1 (no gain) when the spec leaves fb_given 0. */
    double overlap_fb;
    double fb_interference;
    int fb_given; /* overlap_fb or fb_interference set by the user */
} sched_spec;

/* "gpipe" (alias "afab"), "1f1b", "interleaved", "zb_h1", "zb_h2",
 * "looped_bfs", "interleaved_pytorch", "interleaved_zb", "zbv",
 * "forward_only", and PyTorch's class names case-insensitively
 * (ScheduleGPipe, Schedule1F1B, ScheduleInterleaved1F1B, ...). Fails
 * naming the known schedules. */
int sched_parse(const char *name, enum sched_kind *out, ps_err *err);
const char *sched_name(enum sched_kind kind);

/* The placement a schedule needs: SCHED_V for zbv and dualpipev,
 * SCHED_LOOP otherwise. */
enum sched_placement sched_default_placement(enum sched_kind kind);

/* Does the schedule post communication the PyTorch way (pytorch_p2p, W
 * actions, or a PyTorch schedule)? */
int sched_async(const sched_spec *s);

/* Parses "F3", "B0", "W0", "R2", "F3.c1" (chunk 1) and the overlapped
 * "FB3/1" (forward of 3 with the backward of 1; "FB3.c1/1.c0" with
 * chunks) into *out, checking mb < m and chunk < v. */
int sched_parse_action(const char *text, int32_t m, int32_t v,
                       sched_action *out, ps_err *err);

/* Checks the spec: p >= 1, m >= 1, v >= 1 (v > 1 only for interleaved and
 * custom), interleaved's m constraint, custom lists complete (every F and B
 * of every chunk and microbatch exactly once, a W at most once and after
 * its B). */
int sched_check(const sched_spec *s, ps_err *err);

/* Does the schedule run overlapped FB actions (dualpipev, custom lists
 * holding an FB)? */
int sched_overlaps(const sched_spec *s);

/* Seconds of an overlapped FB whose forward takes f and backward b. */
double sched_fb_time(const sched_spec *s, double f, double b);

/* Does the schedule split its backwards (W actions somewhere)? */
int sched_splits(const sched_spec *s);

/* The compute order of pipeline rank `rank`: writes up to max actions to
 * out and their count to *n (the count is 2*m*v, plus m*v with
 * checkpointing, where R precedes each B, plus m*v with W, less one per
 * FB; at most 4*m*v). */
int sched_order(const sched_spec *s, int32_t rank, sched_action *out,
                int32_t max, int32_t *n, ps_err *err);

/* Appends one lane per pipeline rank to ps (whose nranks covers rank_of)
 * with the compute ops (durations and memory from stages) and transfers.
 * Does not seal. */
int sched_lower(const sched_spec *s, prog_set *ps, ps_err *err);

/* The messages sched_lower adds for s (2 (S - 1) m, S the model stages;
 * none on one rank), ids base .. base + count - 1 from ps->nmsgs on; and
 * what the one at base + rel carries: backward 0 the activation, 1 its
 * gradient, across the boundary between stages *boundary and *boundary
 * + 1, of microbatch *mb (live mode's payloads, step/pipe_live.c). */
int64_t sched_msg_count(const sched_spec *s);
void sched_msg_decode(const sched_spec *s, int32_t rel, int *backward,
                      int32_t *boundary, int32_t *mb);

#endif
