/* A sweep's pool of forked workers without Lua (issue 26): the writer's
 * side (the processes, the wait for finished chunks, the recording of a
 * chunk's runs into the real databases) and the worker's (its scratch
 * databases, its shipped runs, the files it hands back). The binding
 * (bind/pool.c) evaluates the points in Lua and calls these; the
 * processes' lifetime and scratch space are run/proc.h's.
 *
 * A chunk is a range of points, numbered 0 .. nchunks - 1; the task pipe
 * hands them out (4-byte writes and reads are atomic), the done pipe
 * announces the finished ones. A chunk's files are in the scratch
 * directory: its results DIR/cC.res, its database i DIR/cC-I.db (runs at
 * the events level, copied) and DIR/cC-I.ship (runs below it, shipped as
 * bytes, rec/ship.c). */
#ifndef PS_RUN_POOL_H
#define PS_RUN_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "rec/rec.h"
#include "run/proc.h"

#define RUN_POOL_MAX 1024 /* workers */

typedef struct run_pool {
    pid_t pids[RUN_POOL_MAX];
    double stopped_since[RUN_POOL_MAX]; /* proc_watch's */
    int npids;
    int done_fd;
    proc_scratch scratch;
} run_pool;

/* What a worker runs right after fork(): chunks from task_fd until it is
 * empty, each announced on done_fd (run_pool_next_task,
 * run_pool_write_all), its files in dir; writer is the parent. Never
 * returns. */
typedef void (*run_pool_worker)(void *arg, const char *dir, pid_t writer,
                                int task_fd, int done_fd);

/* An empty pool (no workers, no scratch) that run_pool_close leaves as
 * it is. */
void run_pool_init(run_pool *p);
/* Makes the pool's scratch directory (proc_scratch_make). */
int run_pool_scratch(run_pool *p, ps_err *err);
/* Queues chunks 0 .. nchunks - 1 and forks up to jobs workers, each
 * running worker(arg, ...); fails ("ps.sweep: pipe: ...", "ps.sweep:
 * cannot start a worker process: ...") only when none can start. */
int run_pool_start(run_pool *p, int32_t nchunks, int64_t jobs,
                   run_pool_worker worker, void *arg, ps_err *err);
/* Waits up to 0.2 s for the next chunk a worker finished: 1 with *c; 0
 * when none came (a signal, a timeout: the caller checks for a stop and
 * calls again); PS_ERR when a worker died or stays stopped, or the done
 * pipe broke, the message saying so (and that TMPDIR is full, when it
 * is). */
int run_pool_wait(run_pool *p, int32_t nchunks, int32_t *c, ps_err *err);
/* After every chunk is taken: waits for each worker, which exits with
 * status 0; PS_ERR naming the status or signal of one that did not (a
 * crash at its end, valgrind's --error-exitcode). */
int run_pool_reap(run_pool *p, ps_err *err);
/* Stops the workers still running (this process's children), reaps them
 * and removes the scratch directory; harmless twice. */
void run_pool_close(run_pool *p);
/* In a new worker: the pool's pids (its elder siblings), pipe and
 * directory are the writer's, not for this process's run_pool_close. */
void run_pool_forget(run_pool *p);

/* --- the writer's side of a chunk's runs --- */

/* Reads a file a worker left whole: 0 with *buf malloc'd (NULL when the
 * file is empty) and *size; -1 when it cannot be opened; 1 when it cannot
 * be read or memory runs out (*buf NULL). */
int run_read_whole(const char *file, unsigned char **buf, size_t *size);
/* Records the k runs a worker shipped in file into db, as --jobs 1
 * records them (rec_write in a sweep's batch, committed here); *ids:
 * their run ids, by number (malloc'd, the caller frees it; NULL on
 * failure). */
int run_take_shipped(rec_db *db, const char *file, int64_t k, int64_t **ids,
                     ps_err *err);
/* Copies the runs of the worker's scratch database src into db in one
 * transaction; *offset: the id shift (new id - old id). */
int run_take_copied(rec_db *db, const char *src, int64_t *offset, ps_err *err);

/* --- the worker's side --- */

/* Writes n bytes to fd (a pipe), retrying interrupted writes; gives up
 * quietly when the pipe is gone (the reader notices the missing bytes). */
void run_pool_write_all(int fd, const void *buf, size_t n);
/* The next chunk from the task pipe: 1 with *c, 0 when the pipe is empty
 * or a stop was requested (base/limit.h). */
int run_pool_next_task(int task_fd, int32_t *c);
/* Opens a worker's scratch database at file (rec_scratch: no journal on
 * disk, no fsync) and sets *ship, the shipper its runs below the events
 * level go to (rec_set_shipper), unless PIPESIM_TEST_SCRATCH_SQL is set:
 * that test-only SQL runs on the new database (tests/cli_sweep.sh makes
 * SQLite roll a batch back where no other process can reach the file),
 * which then gets every run. NULL with err on failure. */
rec_db *run_scratch_open(const char *file, rec_ship **ship, ps_err *err);
/* Ends a chunk's scratch database: flushed (runs of a batch SQLite
 * rolled back are not in the file: *lost of them, whose results the
 * writer must not count) and closed. PS_ERR with the first failure; db is
 * closed either way. */
int run_scratch_close(rec_db *db, int64_t *lost, ps_err *err);
/* Writes ship's runs to file when there are any (*runs of them; 0: no
 * file written) and frees ship. -1 when the file cannot be written. */
int run_ship_save(rec_ship *ship, const char *file, int64_t *runs);
/* Writes n bytes to tmp and renames it to final, so that the writer
 * never reads a part of it. -1 on failure. */
int run_file_publish(const char *tmp, const char *final,
                     const unsigned char *bytes, size_t n);

#endif
