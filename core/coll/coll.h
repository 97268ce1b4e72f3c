/* Collectives: generators of per-rank programs for one collective over a
 * list of cluster ranks, run by the engine on the network, with cost models
 * for `auto` and an optional data-carrying mode that moves and reduces real
 * float32 values in the order the algorithm does and checks the result.
 *
 * Sizes follow nccl-tests (doc/PERFORMANCE.md): `bytes` is the whole array,
 * bytes / 4 float32 elements. allreduce, reduce and broadcast act on it;
 * reduce_scatter leaves shard i (element-granular, shards differ by at most
 * one element, the first n % N shards are larger) on the i-th listed rank;
 * allgather starts with shard i on the i-th rank and ends with the array on
 * all. busbw = algbw x 2(n-1)/n for allreduce, x (n-1)/n for reduce_scatter
 * and allgather, x 1 for broadcast and reduce (nccl-tests' "bus bandwidth").
 * alltoall and sendrecv are out of place, as in nccl-tests: alltoall's
 * `bytes` is each rank's send buffer, split into N equal blocks (it must
 * divide evenly), block j going to the j-th listed rank, which keeps it as
 * block i of its receive buffer (busbw factor (n-1)/n); sendrecv sends the
 * whole buffer to the next listed rank and receives the previous one's
 * (rank i + 1 and i - 1 mod N, src/sendrecv.cu; factor 1).
 *
 * Every algorithm is a sequence of global steps; each rank's SENDs and RECVs
 * of one step form one PROG_BATCH batch (tag = step, kind PROG_COLL), so a
 * rank enters step s+1 only when its step-s transfers are done, and no
 * schedule deadlocks under rendezvous: a message of step s is matched by
 * its peer's step-s batch. Ranks are not globally synchronised per step.
 *
 * Slots (spec.slots): NCCL keeps NCCL_STEPS = 8 chunks in flight per
 * channel and connection (src/include/device.h; the FIFO of
 * src/device/prims_simple.h), so a sender does not wait for its receiver
 * to reach the same step. With slots > 1 a step's SENDs are posted with
 * PROG_EARLY | PROG_NOWAIT (the receiver's slot is free) and a rank waits
 * only for its receives: a chunk pays the latency of each hop along its
 * path instead of every step waiting for the slowest hop of the ring.
 * NCCL's tree (slots > 1, off a mesh) runs each tree's reduction and
 * broadcast in lanes of their own (runTreeSplit, src/device/all_reduce.h,
 * NCCL 2.30.7); a step hands its chunk to every peer, each peer's chunks
 * leave in order on their own connection (one per lane and peer, as
 * prims_simple.h keeps a FIFO per peer; net_start_conn), at most slots
 * chunks ahead of the receiver, in NCCL's chunk size (coll/tree.c).
 * slots = 1 is the lockstep model (rendezvous per step). */
#ifndef PS_COLL_H
#define PS_COLL_H

#include <stdint.h>

#include "base/err.h"
#include "live/live.h"
#include "net/net.h"
#include "rec/row.h"
#include "sim/eng.h"
#include "sim/prog.h"

enum coll_op {
    COLL_ALLREDUCE,
    COLL_REDUCE_SCATTER,
    COLL_ALLGATHER,
    COLL_BROADCAST,
    COLL_REDUCE,
    COLL_ALLTOALL,
    COLL_SENDRECV,
    COLL_NOPS
};

enum coll_algo {
    COLL_RING,               /* allreduce, reduce_scatter, allgather */
    COLL_TREE,               /* allreduce: NCCL's tree (a chain inside each
                                node, a double binary tree across nodes,
                                chunked; coll_tree_build) */
    COLL_DOUBLE_BINARY_TREE, /* allreduce (NCCL's two trees over all
                                ranks, chunked) */
    COLL_HALVING_DOUBLING,   /* allreduce, reduce_scatter, allgather */
    COLL_DIRECT,             /* allreduce, reduce_scatter, allgather,
                                alltoall, sendrecv */
    COLL_HIERARCHICAL,       /* allreduce; needs ranks_per_node */
    COLL_PIPELINE,           /* broadcast: chunked chain */
    COLL_SCATTER_ALLGATHER,  /* broadcast */
    COLL_PAIRWISE,           /* alltoall: N-1 steps, one peer each */
    COLL_BINOMIAL_TREE,      /* allreduce, broadcast, reduce: binomial over
                                all ranks, whole array per step */
    COLL_NVLS,               /* allreduce on one NVSwitch node with NVLink
                                SHARP (the switch reduces) */
    COLL_NALGOS,
    COLL_AUTO = -1
};

/* NCCL's protocols (src/include/device.h): LL (8-byte lines, a 4-byte flag
 * beside each 4 bytes of data), LL128 (128-byte lines, 8 bytes of flags)
 * and Simple (bulk data, then a flag after a memory fence). COLL_PROTO_NONE
 * is no protocol at all: transfers carry the payload and pay the links'
 * latency, the model of the textbook algorithms (and the default). See
 * coll/proto.c for how a protocol changes the simulated transfers. */
enum coll_proto {
    COLL_PROTO_NONE,
    COLL_LL,
    COLL_LL128,
    COLL_SIMPLE,
    COLL_NPROTOS,
    COLL_PROTO_AUTO = -1
};

/* NCCL_STEPS (src/include/device.h, NCCL 2.30): slots per connection. */
#define COLL_NCCL_STEPS 8

/* Data mode holds every rank's send and receive buffers at once: at most
 * this many float32 values (4 GB), so a typo in `bytes` fails with a
 * message instead of exhausting memory. */
#define COLL_DATA_MAX_FLOATS 1e9

/* The hardware NCCL's tuner reads beyond the links (ncclTopoTuneModel,
 * src/graph/tuning.cc, NCCL 2.30.7): the CPU (x86 vendor, or another
 * architecture) picks llMaxBw on several nodes and the network post
 * overhead of a ring step (getNetOverhead). */
enum coll_cpu {
    COLL_CPU_UNKNOWN, /* NCCL's default branch: as Intel */
    COLL_CPU_INTEL,
    COLL_CPU_AMD,
    COLL_CPU_ARM
};

/* A cluster's NCCL-relevant hardware (cluster fields nvls,
 * compute_capability, cpu_vendor, nccl_channels; coll/proto.c uses them). */
typedef struct coll_hw {
    int nvls;         /* 1: the node's NVSwitch has NVLink SHARP (nvls
                         applies) */
    int cc;           /* CUDA compute capability x 10 + minor (80 A100, 90
                         H100): picks the generation's bandwidth caps; 0
                         unknown, no caps */
    int cpu;          /* enum coll_cpu */
    int32_t channels; /* the channels NCCL's search finds on one node (the
                         per-channel caps' multiplier there; several nodes
                         use coll_ring_channels); 0 unknown */
} coll_hw;

enum coll_data {
    COLL_DATA_NONE,   /* timing only */
    COLL_DATA_RANDOM, /* uniform in [-1, 1) from `seed` */
    COLL_DATA_FN      /* data_fn(data_ctx, rank, i) */
};

/* One message of a data-mode run as live mode moves it (coll/live.c):
 * elements [lo, lo + cnt) of the sender's buffer land at dlo of the
 * receiver's, added (add = 1) or copied. */
typedef struct coll_move {
    int64_t lo, cnt, dlo;
    int32_t add;
} coll_move;

/* What every message coll_append added moves, by message id (live mode's
 * gradient sync, step/pipe_live.c): m holds cap entries, zero where no
 * collective wrote one. Zeroed before first use; free m when done. */
typedef struct coll_move_log {
    coll_move *m;
    int64_t cap;
} coll_move_log;

typedef struct coll_spec {
    enum coll_op op;
    int algorithm;          /* enum coll_algo, or COLL_AUTO */
    unsigned candidates;    /* auto: bit 1u << algo per algorithm to consider;
                               0 = every algorithm of the op that applies */
    int64_t bytes;          /* whole array; a multiple of 4 */
    const int32_t *ranks;   /* cluster ranks taking part, in algorithm order;
                               NULL = 0 .. net_ranks - 1 */
    int32_t nranks;         /* entries in ranks (ignored when ranks is NULL) */
    int32_t root;           /* broadcast, reduce: a cluster rank in ranks */
    int32_t ranks_per_node; /* hierarchical: consecutive listed ranks that
                               share a node; 0 = unknown */
    int32_t chunks;         /* pipeline, double_binary_tree: 0 = the count
                               that minimises the cost model */
    int32_t slots;          /* chunks in flight per connection: 1 lockstep,
                               > 1 pipelined (see above); 0 = the default,
                               COLL_NCCL_STEPS for NCCL's algorithms (ring,
                               and tree off a mesh), 1 for the others */
    coll_hw hw;             /* the cluster's NCCL hardware (nvls, caps) */
    int protocol;           /* enum coll_proto, or COLL_PROTO_AUTO: with
                               algorithm auto, the (algorithm, protocol)
                               pair of lowest predicted time over NCCL's
                               algorithms (ring, tree, nvls) */
    enum eng_p2p p2p;
    enum coll_data data;
    double (*data_fn)(void *ctx, int32_t rank, int64_t i);
    void *data_ctx;
    uint64_t seed;
    const fault_plan *faults; /* coll_run only (sim/fault.h); NULL: none */
    coll_move_log *moves;     /* coll_append only: NULL, or where it notes
                                 what each message it adds moves */
    int stream; /* coll_run: 1 when the caller reads no programs back from
                   ps (no event rows): the ring then runs as a generator
                   (coll/gen_coll.h) in O(ranks) memory and ps is left empty */
} coll_spec;

typedef struct coll_result {
    int algorithm;    /* the one that ran (auto's choice) */
    int protocol;     /* the protocol it ran with (auto's choice) */
    int32_t chunks;   /* pipeline / double_binary_tree chunk count, else 1 */
    int32_t channels; /* ring: rings run side by side (NCCL's channels, see
                         coll_predict), else 1 */
    int32_t slots;    /* the slots it ran with (spec's, or the default) */
    double predicted; /* its cost-model time, seconds */
    double time;      /* simulated makespan, seconds */
    double algbw;     /* bytes / time (0 when time is 0), B/s */
    double busbw;     /* algbw x the op's factor */
    int32_t nranks;
    double *bytes_sent; /* per listed rank (index i is spec ranks[i]) */
    int64_t transfers;
    int64_t steps;
    /* data mode only (else NULL): the meaningful output of listed rank i is
     * outputs[i][0 .. out_count[i]); reduce_scatter: its shard; reduce: the
     * root's array, 0 elements elsewhere; others: the whole array */
    float **outputs;
    int64_t *out_count;
    float *store_; /* owns the output buffers */
    /* data mode only (else NULL): every message's move, by message id of
     * the programs coll_run left in ps (nmoves = ps->nmsgs) */
    coll_move *moves;
    int64_t nmoves;
} coll_result;

/* Runs one collective. ps is reset and refilled with the generated programs
 * (kept for the caller: transfers' times are in it); eng and nw are borrowed.
 * On success fills *res, which the caller releases with coll_result_free.
 * Fails, with nothing to free, on bad input (named in the message), a run
 * failure, or a wrong result in data mode ("rank 2 element 17: got 3.5,
 * expected 4"). */
int coll_run(const coll_spec *spec, net *nw, eng_sim *eng, prog_set *ps,
             coll_result *res, ps_err *err);

/* What coll_run would run, without running it: checks spec, makes auto's
 * choice and fills res's algorithm, protocol, chunks, channels, slots,
 * nranks and predicted (the cost model's time, coll_predict); time, algbw,
 * busbw, transfers and steps stay 0 and nothing is allocated (no
 * coll_result_free needed). O(the cost model), no engine: what a scan of
 * auto's choice over sizes needs (tests/lua/test_nccl_crossover.lua). */
int coll_choose(const coll_spec *spec, const net *nw, coll_result *res,
                ps_err *err);

/* --- a collective run for real (coll/live.c) --- */

/* Live mode's settings and what it measured (live/live.h). */
typedef struct coll_live {
    int iterations, warmup; /* measured and dropped iterations */
    double watchdog;        /* live_cfg.watchdog; 0: the default */
    live_inject inject;     /* test only */
    /* out */
    double simulated; /* the same collective simulated on the cluster */
    live_result run;  /* times, socket bytes, message counts */
} coll_live;

/* Runs spec for real: the data-mode simulation first (its programs, its
 * outputs and its time, the twin), then the programs on one process per
 * listed rank (live_run), whose outputs must equal data mode's bit for
 * bit. res as coll_run's, with time the median measured time, algbw and
 * busbw from it, and bytes_sent counted at the sockets; ps holds the
 * programs with the median iteration's measured times. Fails like
 * coll_run and live_run, or naming the first output that differs. */
int coll_live_run(const coll_spec *spec, net *nw, eng_sim *eng, prog_set *ps,
                  coll_live *lv, coll_result *res, ps_err *err);

/* Frees what coll_live_run left in lv; harmless twice. */
void coll_live_free(coll_live *lv);

/* --- a collective as a recorded run (coll/exec.c) --- */

/* A context keeps the engine and the program set across collectives, so
 * that a sweep of them allocates only when a run is bigger than every run
 * before it. coll_ctx_free(NULL) is a no-op. */
typedef struct coll_ctx coll_ctx;
coll_ctx *coll_ctx_new(void);
void coll_ctx_free(coll_ctx *ctx);

/* How coll_exec records a run, and what it tells back. */
typedef struct coll_rec {
    const char *name;        /* NULL: "<op> <algorithm>" */
    const char *params_json; /* run.params, may be NULL */
    const rec_sink *sink;    /* NULL: nothing recorded (run/sink.h) */
    enum rec_level level;
    rec_meta meta; /* sweep, point, tags ... (rec/row.h) */
    /* When set, called once coll_run has returned: a failure of the data
     * function (data_fn cannot fail coll_run) as PS_ERR with err set; it
     * replaces coll_run's own outcome. */
    int (*data_error)(void *data_ctx, ps_err *err);
    /* NULL: simulate; else run it for real (coll_live_run) and record it
     * with backend 'tcp' and the simulated time beside */
    coll_live *live;
    /* out: the run id (0: not recorded) and the name used */
    int64_t id;
    const char *used_name;
    char name_buf[64];
} coll_rec;

/* Runs one collective on ctx's engine and programs (coll_run) as a run of
 * kind 'collective': when rc->sink is given, its run row and collective
 * row are handed to it (at REC_EVENTS also its transfers and links). Any
 * failure once the spec is read (bad input, a run failure, a wrong result,
 * the data function's) is handed to rc->sink, when given, as a run row with
 * status 'failed' and the message, and returned; if recording it fails too, the
 * message says so. A run cut short by a stop (base/limit.h) leaves no rows.
 * Fails without running, and without rows, when ctx is already inside coll_exec
 * (a data function that runs a collective). res as coll_run. */
int coll_exec(coll_ctx *ctx, const coll_spec *spec, net *nw, coll_rec *rc,
              coll_result *res, ps_err *err);

/* The lanes coll_append forked from its callers' lanes, kept for the next
 * collective on the same lane: a lane runs one collective at a time (it
 * waits for its forks' ends before it goes on), so the next one reuses
 * them and lanes do not grow with collectives. Zeroed before first use;
 * coll_forks_free releases it (harmless twice). */
typedef struct coll_forks {
    size_t cap;     /* owner lanes covered: indices below cap */
    int32_t *n;     /* owner lane -> forks it has */
    int32_t **lane; /* owner lane -> its forks, in slot order */
} coll_forks;

void coll_forks_free(coll_forks *f);

/* Appends the collective described by spec to existing lanes of ps
 * (lanes[i] runs on the i-th listed rank) instead of running it: the
 * gradient sync of a training step is a collective inside larger programs.
 * Where coll_run gives a position several lanes (a pipelined ring's
 * channels, the split tree's up and down lanes) they are forked from
 * lanes[i]: lanes of ps on the position's rank, taken from forks (added
 * to ps and to forks when it has too few; forks NULL: always added).
 * lanes[i] raises a start signal per fork, in slot order, each fork waits
 * on its own, and lanes[i] then waits for each fork's end signal (signal
 * ids after those ps has handed out), so the collective runs as alone
 * from when lanes[i] reaches it. Every op appended carries `tag`.
 * Message ids come after those ps has handed out; data mode is ignored.
 * *used receives the algorithm (auto's choice) and *proto, when not NULL,
 * the protocol. Fails like coll_run on bad input. */
int coll_append(prog_set *ps, const net *nw, const coll_spec *spec,
                const int32_t *lanes, coll_forks *forks, int32_t tag, int *used,
                int *proto, ps_err *err);

/* Frees what coll_run allocated in res; harmless on a zeroed or freed res. */
void coll_result_free(coll_result *res);

/* The cost model: predicted seconds of algo for spec on nw, and the chunk
 * count it implies. On a mesh the closed forms (alpha-beta); elsewhere ring
 * (with its channels), tree and double_binary_tree are costed step by step
 * from the flows each step runs (route latency, share of each link), the
 * others with the worst latency and bottleneck bandwidth over the pairs
 * they use; see coll/cost.c. Fails when algo does not apply (wrong op, missing
 * ranks_per_node) or spec is bad, or when out of memory. */
int coll_predict(const coll_spec *spec, const net *nw, int algo,
                 double *seconds, int32_t *chunks, ps_err *err);

/* Names: "allreduce", ...; "ring", "double_binary_tree", "auto", ... */
const char *coll_op_name(enum coll_op op);
const char *coll_algo_name(int algo);

/* Parses an op name; nccl-tests' names (all_reduce, reduce_scatter,
 * all_gather, broadcast, reduce: the binaries' names without _perf) are
 * accepted too. Fails with "unknown collective op 'allreduc' (expected
 * allreduce, reduce_scatter, allgather, broadcast, reduce, alltoall,
 * sendrecv)". */
int coll_parse_op(const char *name, enum coll_op *op, ps_err *err);

/* "none", "ll", "ll128", "simple", "auto". */
const char *coll_proto_name(int proto);

/* Parses a protocol name. Fails with "unknown protocol 'l' (expected ll,
 * ll128, simple, auto, none)". */
int coll_parse_proto(const char *name, int *proto, ps_err *err);

/* 1 when algo runs with NCCL's protocols (ring, tree, nvls; nvls with
 * simple only). */
int coll_algo_has_proto(int algo);

/* The protocol a collective runs with when its caller names none (issue 27
 * item 11: one rule for every front end). On a cluster that carries NCCL's
 * constants (hw->cc > 0: the presets' compute_capability) a collective
 * behaves as NCCL does: COLL_PROTO_AUTO, the (algorithm, protocol) pair
 * NCCL's tuner would pick, for algo ring, tree or nvls, and for algo auto
 * unless `candidates` (bits 1u << algo; 0 = not named by the caller) names
 * an algorithm that has no protocol, which asks for the textbook models.
 * Everywhere else (textbook links, an op none of whose algorithms has
 * protocols: broadcast, reduce, alltoall, sendrecv; a fixed textbook
 * algorithm) COLL_PROTO_NONE, the plain alpha-beta model that the closed
 * forms of DESIGN.md test. Pure; hw NULL is textbook. */
int coll_default_protocol(enum coll_op op, int algo, unsigned candidates,
                          const coll_hw *hw);

/* Parses an algorithm name for op ("auto" gives COLL_AUTO). Fails with
 * "unknown allreduce algorithm 'rign' (expected ring, tree, ..., auto)". */
int coll_parse_algo(enum coll_op op, const char *name, int *algo, ps_err *err);

/* The algorithms `auto` chooses from when the caller names none: for
 * allreduce ring and tree, the pair NCCL's tuner picks between
 * (ncclTopoTuneModel, src/graph/tuning.cc); 0 (every algorithm of the op
 * that applies) for the others. */
unsigned coll_default_candidates(enum coll_op op);

/* ranks_per_node for node-aware collectives (ring channels, hierarchical)
 * when the caller gives none: k when the n listed ranks (NULL: every rank
 * of the cluster, k = gpus_per_node) are blocks of k >= 2 consecutive
 * entries, each block on its own node (whole nodes, or the k GPUs of a
 * data-parallel group on each node under tensor parallelism); else 0 (does
 * not apply: one rank per node, or nodes interleaved in the list). */
int32_t coll_ranks_per_node(int32_t gpus_per_node, const int32_t *ranks,
                            int32_t n);

/* The slots algo runs with when spec asks for 0 (the default). */
int32_t coll_default_slots(int algo);

/* 1 when algo is one of op's algorithms. */
int coll_algo_applies(enum coll_op op, int algo);

/* nccl-tests' bus bandwidth factor for op on n ranks. */
double coll_busbw_factor(enum coll_op op, int32_t n);

#endif
