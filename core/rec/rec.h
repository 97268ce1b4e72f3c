/* The recorder: the only module that talks to SQLite.
 *
 * Schema (PRAGMA user_version = REC_SCHEMA_VERSION), times in seconds,
 * ranks/stages/chunks/microbatches from 0:
 *   run(id, kind, name, schedule, stages, microbatches, virtual_stages, dp,
 *       makespan, bubble, closed_form_bubble, imbalance, peak_memory, p2p,
 *       params, status, error, created, fits, tp, sequence_parallel,
 *       recompute, sweep, point, point_index, tags, model, seq_length,
 *       micro_batch, global_batch, scenario, model_flops, hardware_flops,
 *       tokens, gpus, peak_flops, precision, model_tflops_per_gpu, mfu,
 *       hardware_tflops_per_gpu, tokens_per_s_per_gpu, efficiency_note,
 *       backend, simulated, folded)
 *       kind 'pipeline' | 'collective'; params is JSON of the inputs;
 *       status 'ok' | 'failed' (error holds the message); fits 1 when every
 *       rank's peak memory is within its device's capacity, 0 when one is
 *       not, NULL when a capacity is unknown (or for collectives).
 *       sweep: the ps.sweep's name, point its coordinates (JSON object),
 *       point_index its 0-based place in the sweep's point order (all NULL
 *       outside sweeps); tags the user's ps.run{ tags = ... } (JSON);
 *       model the preset's name, seq_length, micro_batch (sequences) and
 *       global_batch (micro_batch x microbatches x dp) when the layers come
 *       from ps.models (NULL otherwise); scenario the version of the script
 *       and -D arguments that made the run ("fnv1a64:..." of their text),
 *       which pipesim merge compares.
 *       Efficiency (version 8, issue 27 item 16; docs/efficiency.md):
 *       model_flops, hardware_flops (with recompute) and tokens per step,
 *       gpus, peak_flops (one GPU's dense peak at `precision`), and per
 *       GPU model_tflops_per_gpu, mfu, hardware_tflops_per_gpu,
 *       tokens_per_s_per_gpu (model figures over makespan x gpus);
 *       efficiency_note says why any of them is NULL.
 *       backend (version 9, issue 25) 'sim' (the engine) or 'tcp' (live
 *       mode, live/live.h: measured times), simulated the simulated
 *       twin's makespan of a live run (NULL otherwise).
 *       folded (version 11, issue 28; par/fold.h) 1 when the engine ran
 *       representatives of identical data-parallel replicas and the others
 *       took their times, 0 when it ran every replica (NULL for
 *       collectives).
 *   event(run, rank, kind, stage, chunk, mb, t_start, t_end, rowid)
 *       one row per compute op; kind 'F','B','W','R','OPT'.
 *   transfer(run, src, dst, bytes, t_start, t_end, kind, mb, tag, rowid)
 *       kind 'act' (forward activation), 'grad' (its gradient), 'coll'.
 *   memory(run, rank, t, bytes, rowid)   rank's total bytes after each
 *       change; the first row per rank is the static baseline at t = 0.
 *   These three are views (version 7): the rows are in event_row,
 *   transfer_row and memory_row (no run column, kind as a code of
 *   event_kind / transfer_kind), span(run, event_first, event_last, ...)
 *   holds each events-level run's rowid range in each; rowid is the row's
 *   id there (recording order). rec/schema.c has the layout and why.
 *   stage(run, stage, rank, chunk, first_layer, last_layer, fwd_flops,
 *         params, fwd_time, bwd_time, act_bytes, out_bytes, exposed_comm,
 *         tp_comm, tp_exposed)
 *       tp_comm: seconds of tensor-parallel collectives per microbatch in
 *       the stage's F, B and R; tp_exposed the part on the compute stream
 *   rank_stat(run, rank, busy, bubble, static_memory, peak_memory, t_peak,
 *             exposed_comm, capacity, fits, tp_comm, tp_exposed)
 *       tp_comm, tp_exposed: the same over the whole step on the rank
 *       written at every recording level, so the views work for summary runs;
 *       capacity is the device's memory in bytes (NULL: unknown), fits
 *       peak_memory <= capacity as 1/0 (NULL: unknown).
 *   collective(run, op, algorithm, ranks, bytes, time, algbw, busbw,
 *              protocol)
 *       one row per collective run, and per gradient-sync bucket of a
 *       pipeline run (its data-parallel group; time from its first op's
 *       start to its last op's end); protocol: NCCL's (ll, ll128, simple)
 *       or none
 *   link(run, src, dst, bandwidth, latency, bytes, busy)
 *   rank_member(run, rank, member, tp, cp, dp, pp)
 *       events level, pipeline runs: what each simulated rank (rank, as in
 *       event and rank_stat) stands for: one row per cluster rank of the
 *       layout (member) with its coordinates; a rank simulated once for
 *       its TP group has the group's t rows (core/par/sim.h). Version 9.
 * Views:
 *   bubble(run, rank, busy, makespan, fraction)
 *   memory_peak(run, rank, peak, t_peak)
 *
 * Durability and concurrency: every rec_write is one transaction (BEGIN
 * IMMEDIATE ... COMMIT), committed before it returns the run id, so an id a
 * script has printed is never reused for another run, even after kill -9;
 * except in batch mode (rec_set_batch, a sweep's runs: see there).
 * The database is in WAL mode with synchronous = NORMAL: a commit appends
 * to the log without fsync, which survives the process being killed at any
 * moment (the next opener replays the log) but may lose the last commits on
 * power loss or an OS crash, never leaving the file damaged. The write lock
 * is held only inside rec_write, never between runs, so any number of
 * processes may write one file; a writer that finds it locked retries with
 * jittered backoff for up to REC_BUSY_LIMIT_S seconds. A run that fails half
 * way (constraint, full disk) is rolled back whole: nothing of it remains.
 * A path that does not exist yet is made complete (schema, WAL mode) in a
 * scratch file beside it and linked into place (rec/schema.c), so no
 * process sees half a schema. The log is checkpointed at 1000 frames as
 * SQLite would, after a streamed run's commit on the writer thread's own
 * connection (rec/writer.c) rather than inside it; rec_close waits for it.
 *
 * Interrupts (SIGINT/SIGTERM): let a rec_write in progress return (do not
 * exit or longjmp from the handler), then rec_close. Nothing is pending
 * between rec_write calls, so every run whose id was returned is kept and a
 * run whose simulation was cut short, never passed to rec_write, leaves no
 * rows. A rec_write waiting for another process's lock keeps waiting
 * through a signal (its sleeps just end early); exiting from a second
 * signal's default action is safe: SQLite rolls the open transaction back
 * when the file is next opened.
 *
 * Version 5 added the sweep columns of run (sweep ... scenario), 6
 * collective.protocol; version 8 the efficiency columns, version 9
 * run.backend and run.simulated, 11 run.folded; version 7 moved the timeline
 * into rowid spans (same views, in-place upgrade). Version 2 added run.fits,
 * rank_stat.capacity and rank_stat.fits; rec_open upgrades a version 1 file in
 * place (old runs get NULL: unknown), readers ask for that upgrade. */
#ifndef PS_REC_H
#define PS_REC_H

#include <stdint.h>

#include "base/err.h"
#include "net/net.h"
#include "rec/row.h"
#include "sim/prog.h"

#define REC_SCHEMA_VERSION 11
/* How long a writer waits for another process's lock before giving up.
 * Both waits can be shortened at build time (make fuzz does: a damaged
 * file must not cost each input seconds). */
#ifndef REC_BUSY_LIMIT_S
#define REC_BUSY_LIMIT_S 120
#endif
/* How long a reader waits for a writer to create an empty file's tables. */
#ifndef REC_CREATE_WAIT_S
#define REC_CREATE_WAIT_S 5
#endif

typedef struct rec_db rec_db;

/* Opens (creating if needed) a database for writing and makes sure the
 * schema is there (created in one transaction, so other processes see all
 * of it or none). Fails on a file that is not a pipesim database of this
 * schema version. rec_close commits what a batch holds (its error is
 * that commit's); rec_close(NULL) is a no-op. */
rec_db *rec_open(const char *path, ps_err *err);
int rec_close(rec_db *db, ps_err *err);
/* fork(): every fork of the process waits until the recorder's writer
 * threads are idle, outside SQLite (rec/writer.c, pthread_atfork), so the
 * child may open connections of its own; it must not use the ones it
 * inherited.
 * In a process forked while db was open (a sweep worker, which must not
 * use or close the writer's connection): gives back the memory SQLite can
 * free without touching the file (its cache of unchanged pages), so the
 * handle that stays until _exit holds little. */
void rec_forked_release(rec_db *db);

/* Byte counters as JSON Lines (bytes_log; rec/jsonl.c): one object per
 * message end, {"run", "iteration", "rank", "op": "send" | "recv",
 * "peer", "msg", "step", "mb", "kind", "bytes", "sent", "received", "t"},
 * sent and received being the rank's payload bytes so far in the
 * iteration, written by SQLite's json_object. rec_bytes_log writes rows
 * given (live mode's socket counts), rec_bytes_log_run a recorded run's
 * transfer rows (each transfer's end at both ranks). append 0 truncates
 * path first. Fail naming the file. */
typedef struct rec_bytes_row {
    int64_t run;
    int32_t iteration, rank, peer, msg, step, mb; /* msg, step, mb < 0:
                                                      null */
    int send;
    const char *kind; /* "act", "grad", "coll" */
    double bytes, sent, received, t;
} rec_bytes_row;
int rec_bytes_log(const char *path, int append, const rec_bytes_row *rows,
                  int64_t n, ps_err *err);
int rec_bytes_log_run(rec_db *db, int64_t run, const char *path, int append,
                      ps_err *err);

/* Writes and commits one run at the given level; sets *run_id (0 on
 * failure). On failure nothing of the run remains and the message is one
 * short line naming the database ("DB: run not recorded: database or disk
 * is full (runs recorded before are kept)"); in batch mode a failure that
 * took the batch's earlier runs with it says "(the sweep's last N runs are
 * lost)" instead (rec_lost_runs). */
int rec_write(rec_db *db, const rec_payload *p, enum rec_level level,
              int64_t *run_id, ps_err *err);

/* Shipped runs (rec/ship.c, --jobs): a sweep worker's runs below the
 * events level as bytes for the writer, which records them with rec_write
 * (rather than copying rows the worker wrote into its scratch database).
 * With a shipper set on db, rec_write appends such a run to it instead of
 * writing it, and sets *run_id to its number in the shipper (1, 2, ...);
 * before anything else is written to db (a run at the events level, a
 * streamed timeline: rec_ship_unload), the shipped runs are written into
 * db first, in order, as runs 1, 2, ... of a new database, and the shipper
 * is dropped. rec_ship_write: the runs of a shipper's bytes written into
 * db with rec_write, in order, ids[k] the k-th's run id (at most max). */
typedef struct rec_ship rec_ship;
rec_ship *rec_ship_new(void);
void rec_ship_free(rec_ship *s);
int rec_ship_add(rec_ship *s, const rec_payload *p, enum rec_level level,
                 ps_err *err);
int64_t rec_ship_runs(const rec_ship *s);
const void *rec_ship_bytes(const rec_ship *s, size_t *n);
void rec_set_shipper(rec_db *db, rec_ship *s);
int rec_ship_unload(rec_db *db, ps_err *err);
int rec_ship_write(rec_db *db, const void *bytes, size_t n, int64_t *ids,
                   int64_t max, ps_err *err);

/* Batch mode (ps.sweep's own runs, core/bind/sweep.c): while on, each
 * rec_write is a SAVEPOINT inside one transaction that commits every 1000
 * runs or 0.1 s, at rec_flush and at rec_close, and before any rec_write
 * made with the mode off (or a copy's rec_begin). A run is still all or
 * nothing, and a failed run leaves the batch's earlier runs committed; a
 * process killed inside a batch loses the runs since its last commit, so
 * the caller must flush before it lets anyone see their ids. The write
 * lock is held between the batch's runs (at most 0.1 s plus one run). */
void rec_set_batch(rec_db *db, int on);

/* Makes a new database a scratch file: its journal in memory, no fsync
 * (a crash leaves it damaged; a sweep worker's files, which the writer
 * copies only once their worker has closed them). */
int rec_scratch(rec_db *db, ps_err *err);

/* Streaming the timeline (issue 12): rows written as the engine reports
 * ops complete instead of read back from stored programs. rec_stream_begin
 * opens the next run's transaction (the write lock is held from here to
 * that run's rec_write) and fills *sink for eng_set_sink: each COMPUTE op
 * becomes an event row and each SEND a transfer row, in completion order,
 * and each change of the engine's memory ledger a memory row (each rank's
 * baseline first), REC_ROWS to an INSERT (no SQL per op; the engine's
 * thread copies each row into a block that a writer thread inserts,
 * rec/writer.c; PIPESIM_REC_THREAD=0 inserts them on the caller's thread,
 * the test mode that compares both). The payload's
 * programs are then not read. The following rec_write at REC_EVENTS of an
 * ok run writes the rest (run, summary, links, the spans) and commits; for a
 * failed run or another level it drops the streamed rows first.
 * rec_stream_cancel drops them (a run cut short; nothing happens without an
 * open stream). A row that fails to insert stops the stream and fails that
 * rec_write with its message. */
struct eng_sink;
int rec_stream_begin(rec_db *db, struct eng_sink *sink, ps_err *err);
void rec_stream_cancel(rec_db *db);

/* The writer thread's work since the handle started it (rec_bench: the
 * recorder's critical path): *rows inserted and *cpu, the thread's CPU
 * seconds (user and system: the b-tree and the WAL pages it writes) when
 * the last streamed run's rows were all in, before its commit (which runs
 * on the caller's thread) and any checkpoint after it. 0 and 0 when no
 * writer thread ran. */
void rec_writer_usage(const rec_db *db, int64_t *rows, double *cpu);

/* *n = the number of runs in the database (committed: after a batch's
 * rec_flush). */
int rec_run_count(rec_db *db, int64_t *n, ps_err *err);

/* Commits what a batch holds (nothing to do otherwise): everything so
 * far is visible to other connections. */
int rec_flush(rec_db *db, ps_err *err);

/* The runs rec_write gave an id (succeeded) that a batch's failure took
 * back since the handle was opened: SQLite rolled the whole batch back (a
 * full disk, an I/O error) or its commit failed. A caller counting
 * recorded runs subtracts it after rec_flush; 0 without batches. */
int64_t rec_lost_runs(const rec_db *db);

/* --- copying runs between databases (rec/copy.c; rec_copy_new and
 * rec_begin, which publish a new file and commit a batch first, in
 * rec/txn.c): a sweep's workers hand their runs to the one writer this
 * way, and pipesim merge is made of it */

typedef struct rec_copy rec_copy;

/* Attaches the pipesim database at path to db (outside a transaction) and
 * prepares the copy of every table with a run column; fails when the file
 * cannot be read or is not of this schema version. rec_copy_free detaches
 * it; rec_copy_free(NULL) is a no-op. */
rec_copy *rec_copy_new(rec_db *db, const char *path, ps_err *err);
void rec_copy_free(rec_copy *c);
/* Copies the source's runs with ids first..last, in id order, and all
 * their rows (in the source's row order) into db, as new runs whose ids
 * follow db's last one: *offset = new id - old id for each. Run it inside
 * rec_begin ... rec_commit; ids in first..last should be consecutive, or
 * the gaps are kept. */
int rec_copy_runs(rec_copy *c, int64_t first, int64_t last, int64_t *offset,
                  ps_err *err);
/* A write transaction for copies (BEGIN IMMEDIATE, waiting for another
 * writer as rec_write does); rec_commit rolls back when it fails;
 * rec_rollback is harmless outside a transaction. */
int rec_begin(rec_db *db, ps_err *err);
int rec_commit(rec_db *db, ps_err *err);
void rec_rollback(rec_db *db);

/* 0 when path is a regular file, 1 when it does not exist, PS_ERR ("DB
 * is a directory, not a database file", "DB is not a regular file (a
 * FIFO)") otherwise: SQLite would block on a FIFO forever and fail on a
 * directory with "disk I/O error". Every open of a database checks it. */
int rec_check_path(const char *path, ps_err *err);

/* --- shards (rec/shard.c): what pipesim run --shard K/N records about
 * itself, for pipesim merge's checks (issue 27 item 6). Table
 *   shard(id, session, scenario, k, n, sweep, points, points_hash, host,
 *         pid, started, finished)
 * one row per sweep of a sharded process, made by the first sharded run
 * of a file (other files have no such table). */
typedef struct rec_shard {
    const char *session;     /* the process's token */
    const char *scenario;    /* run.scenario's version */
    int32_t k, n;            /* --shard K/N */
    const char *sweep;       /* the sweep's name; NULL: a ps.search */
    int64_t points;          /* its points, all shards together; -1 unknown */
    const char *points_hash; /* "fnv1a64:..." of their JSON; may be NULL */
    const char *host;
    int64_t pid;
} rec_shard;
/* Records a sweep of the shard (committed at once, after what a batch
 * holds; a new file is published, empty when no run is in yet). */
int rec_shard_begin(rec_db *db, const rec_shard *s, ps_err *err);
/* Marks every sweep of session finished: the scenario ended without an
 * error, so the shard holds every run of its points. */
int rec_shard_end(rec_db *db, const char *session, ps_err *err);

/* --- reading, for report and export --- */

/* Opens an existing database read-only; fails with "DB: no such file" or
 * "DB: not a pipesim database". An empty database (a writer has created the
 * file and not yet its tables) is waited for up to REC_CREATE_WAIT_S. */
rec_db *rec_open_read(const char *path, ps_err *err);

/* The path the database was opened with, for messages; owned by db. */
const char *rec_path(const rec_db *db);

typedef struct rec_query rec_query;

/* Prepares sql; the message on failure names the database and gives
 * SQLite's error (not the SQL). */
rec_query *rec_query_new(rec_db *db, const char *sql, ps_err *err);
int rec_query_bind_int(rec_query *q, int index, int64_t value);
int rec_query_bind_text(rec_query *q, int index, const char *value);
/* 1: a row is ready; 0: done; PS_ERR: failed (message in err). */
int rec_query_step(rec_query *q, ps_err *err);
int rec_query_isnull(rec_query *q, int col);
int64_t rec_query_int(rec_query *q, int col);
double rec_query_double(rec_query *q, int col);
const char *rec_query_text(rec_query *q, int col); /* "" for NULL */
void rec_query_free(rec_query *q);

#endif
