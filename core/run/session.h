/* A session's state without Lua (issue 26): the databases a scenario
 * writes to, one connection per path, open from first use until
 * run_session_finish; the runs counted; and the progress line on stderr.
 * The binding keeps one per Lua state (bind/core.c) and answers the
 * scenario's calls with it. */
#ifndef PS_RUN_SESSION_H
#define PS_RUN_SESSION_H

#include <stdint.h>

#include "base/err.h"
#include "rec/rec.h"

typedef struct run_session run_session;

/* A session whose default database is default_db (kept as a pointer: it
 * outlives the session); its progress line on when stderr is a terminal.
 * NULL when out of memory. */
run_session *run_session_new(const char *default_db);
/* Closes what is still open (a session ended by an error) and frees s;
 * in a forked sweep worker (proc_is_worker) the connections it inherited
 * are left untouched instead: SQLite forbids using a connection across
 * fork(), and closing one is a use (it may roll back, checkpoint or delete
 * the log under the writer), so they stay reachable until _exit.
 * run_session_free(NULL) is a no-op. */
void run_session_free(run_session *s);

/* The database for path (NULL: the default one, then marked used), opened
 * on first use (rec_open) and kept; NULL with err on failure. */
rec_db *run_session_db(run_session *s, const char *path, ps_err *err);

/* Counts a recorded run toward run_session_finish's total. */
void run_session_count(run_session *s);
/* The runs counted so far, in this process. */
long run_session_runs(const run_session *s);

/* Called after every simulated run: "pipesim: 1200 runs, 9800 runs/s",
 * redrawn at most 5 times a second once the session has run for a
 * second, while no sweep's line is up; only with the progress line on. */
void run_session_progress(run_session *s);
/* A sweep's line: "pipesim: 1200/20000 points, 9800 points/s, 2 s left",
 * the rate over the sweep so far, redrawn as run_session_progress's;
 * done 0 (or a new total) starts it, total 0 ends it. */
void run_session_progress_sweep(run_session *s, long done, long total);
/* Turns the progress line on (when stderr is a terminal) or off. */
void run_session_set_progress(run_session *s, int on);

/* Batches (rec_set_batch: a sweep's or ps.batch's runs commit together):
 * sets db's batch mode to on and returns it; with track, a database
 * batched is listed for run_session_flush_batched (at most
 * RUN_SESSION_BATCHED of them: beyond, each run commits alone, and 0 is
 * returned). A worker's scratch databases are not tracked (closing them
 * commits). */
#define RUN_SESSION_BATCHED 16
int run_session_batch(run_session *s, rec_db *db, int on, int track);
/* Turns the batch mode of every listed database off and commits what
 * each batch holds (rec_flush), before ids are shown to anyone; PS_ERR
 * with the first commit's error, every one flushed either way. */
int run_session_flush_batched(run_session *s, ps_err *err);

/* --shard K/N (rec/shard.c): records sh, a sweep of this process's
 * shard, in db (committed at once), sh->session being the session's
 * token (made on first use: the pid and a hash of the clocks), and keeps
 * db for run_session_shard_end. */
int run_session_shard_begin(run_session *s, rec_db *db, rec_shard *sh,
                            ps_err *err);
/* Marks every sweep of the session finished in the database of
 * run_session_shard_begin (nothing without one): the scenario ended
 * without an error. */
int run_session_shard_end(run_session *s, ps_err *err);

/* Ends the session's recording: the progress line's last newline, then
 * every database flushed (a batch's runs committed) and closed. *runs:
 * the runs counted less those a batch's failure took back
 * (rec_lost_runs); *db_path: the default database if it was used, else
 * NULL; *total: the runs in it after the commits, counted before the
 * close (earlier processes' included), -1 when unknown. Returns 0, or
 * PS_ERR with the first failure; every database is closed either way. */
int run_session_finish(run_session *s, long *runs, const char **db_path,
                       int64_t *total, ps_err *err);

#endif
