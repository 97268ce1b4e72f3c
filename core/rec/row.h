/* The recorded rows as plain C structs, and the sink a front end hands
 * them to (pipe_run, coll_exec): no database here, no SQLite. A front end
 * describes its run in these rows and the run layer records them
 * (run/sink.h adapts a rec_db: rec_stream_begin, rec_write); the schema
 * the rows fill is rec/rec.h's. */
#ifndef PS_REC_ROW_H
#define PS_REC_ROW_H

#include <stdint.h>

#include "base/err.h"
#include "net/net.h"
#include "sim/prog.h"

enum rec_level { REC_SUMMARY, REC_EVENTS };

/* A memory verdict; 0 (the zero of a struct) is unknown, stored as NULL. */
enum rec_fits { REC_FITS_UNKNOWN = 0, REC_FITS_YES, REC_FITS_NO };

/* A run's place in a sweep and its descriptive columns; NULL strings and
 * counts <= 0 are stored as NULL. point_index counts only when point is
 * set. */
/* A training step's efficiency inputs (issue 27 item 16; the figures'
 * definitions are lua/pipesim/efficiency.lua's and docs/efficiency.md's):
 * per step, for the whole job. Values <= 0 (and NULL strings) are unknown
 * and stored as NULL; so are the rates that need them. */
typedef struct rec_eff {
    double model_flops;    /* Megatron-LM's model FLOPs of the global batch */
    double hardware_flops; /* the same with the recomputed forwards */
    double tokens;         /* sequences x sequence length */
    double peak_flops;     /* one GPU's dense peak at `precision`, FLOP/s */
    int64_t gpus;          /* GPUs the step runs on (tp x cp x pp x dp) */
    const char *precision; /* "bf16", "fp16", "fp8", ... */
    const char *note;      /* why figures are missing, or NULL */
} rec_eff;

typedef struct rec_meta {
    const char *sweep, *point, *tags, *model, *scenario;
    int64_t point_index;
    int64_t seq_length, micro_batch, global_batch;
    rec_eff eff; /* a pipeline's efficiency inputs (zero: none) */
} rec_meta;

typedef struct rec_run {
    const char *kind; /* "pipeline" or "collective" */
    const char *name;
    const char *schedule; /* NULL for collectives */
    const char *p2p;      /* "rendezvous" or "eager" */
    int32_t stages, microbatches, virtual_stages, dp;
    /* tensor parallelism: tp >= 1 for pipelines (0: a collective, NULL
     * columns), sequence_parallel 0 or 1, recompute "none" | "selective" |
     * "full" */
    int32_t tp, sequence_parallel;
    const char *recompute;
    double makespan, bubble;
    double closed_form_bubble; /* NAN when the run is not uniform */
    double imbalance;          /* NAN when not meaningful */
    double peak_memory;        /* max over ranks */
    const char *params_json;   /* may be NULL */
    const char *status;        /* "ok" or "failed" */
    const char *error;         /* NULL unless failed */
    enum rec_fits fits;        /* every rank within its device's memory */
    rec_meta meta;             /* sweep, point, tags, model ... */
    const char *backend;       /* NULL: "sim"; "tcp": live mode */
    int32_t folded;   /* pipelines: 1 replicas folded (par/fold.h), 0 not */
    double simulated; /* live mode: the simulated twin's makespan;
                         stored only with backend "tcp" */
} rec_run;

typedef struct rec_stage {
    int32_t stage, rank, chunk, first_layer, last_layer;
    double fwd_flops, params, fwd_time, bwd_time, act_bytes, out_bytes;
    double exposed_comm; /* gradient sync wait after compute; NAN: none */
    /* tensor-parallel collectives per microbatch in this stage's F, B and
     * R, seconds, and the part on the compute stream (all of it unless
     * tp_overlap); 0 without TP */
    double tp_comm, tp_exposed;
} rec_stage;

typedef struct rec_rank {
    int32_t rank;
    double busy, bubble, static_memory, peak_memory, t_peak;
    double exposed_comm; /* NAN when the run has no gradient sync */
    double capacity;     /* device memory in bytes; 0 or NAN: unknown */
    enum rec_fits fits;  /* peak_memory <= capacity */
    /* tensor-parallel collectives in the step on this rank (all
     * microbatches and chunks), seconds, and the part on the compute
     * stream */
    double tp_comm, tp_exposed;
} rec_rank;

typedef struct rec_collective {
    const char *op, *algorithm;
    int32_t ranks;
    double bytes, time, algbw, busbw;
    const char *protocol; /* NULL: none recorded */
} rec_collective;

/* What one run contributes; NULL/0 fields are skipped. */
/* A rank_member row: cluster rank member, simulated by rank, at the
 * layout's coordinates (core/par/layout.h's tp, cp, dp, pp). */
typedef struct rec_member {
    int32_t rank, member;
    int32_t tp, cp, dp, pp;
} rec_member;

typedef struct rec_payload {
    const rec_run *run;
    const rec_stage *stages;
    int32_t nstages;
    const rec_rank *ranks;
    int32_t nranks;
    const rec_collective *collective; /* ncollectives rows */
    int32_t ncollectives;             /* 0 with collective set: 1 */
    /* REC_EVENTS only, for a run that was not streamed (rec_stream_begin):
     * the executed programs and each rank's static memory (indexed by
     * rank), whose timeline rows are read back from them; and the network
     * for link rows */
    const prog_set *progs;
    const double *static_memory;
    const net *network;
    /* REC_EVENTS only: the rank_member rows, nmembers of them, or NULL */
    const rec_member *members;
    int32_t nmembers;
} rec_payload;

/* Where a front end hands out its run: what it used to write into a
 * database itself. A front end given no sink (NULL) records nothing.
 * The durability contract is the recorder's (rec/rec.h): write commits
 * the run before it returns its id, and a failed write leaves nothing of
 * the run. */
struct eng_sink;
typedef struct rec_sink {
    void *ctx;
    /* REC_EVENTS, before the engine runs: opens the run and fills *hook
     * for eng_set_sink, the timeline's rows as ops complete
     * (rec_stream_begin) */
    int (*stream_begin)(void *ctx, struct eng_sink *hook, ps_err *err);
    /* a run cut short by a stop (base/limit.h) after stream_begin: its
     * rows are dropped, none remain (rec_stream_cancel) */
    void (*stream_cancel)(void *ctx);
    /* the run, ok or failed (a failed run at REC_SUMMARY, status
     * 'failed' and its message), at level; *id its run id, 0 when it
     * fails (rec_write) */
    int (*write)(void *ctx, const rec_payload *p, enum rec_level level,
                 int64_t *id, ps_err *err);
} rec_sink;

#endif
