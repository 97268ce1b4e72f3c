/* A sweep's worker processes and their scratch space, without Lua (issue
 * 27 item 7): what the writer process does so that nothing outlives it.
 * run/pool.c and bind/pool.c drive them; plain C, in the run layer
 * (sessions, sweeps, workers) below the binding.
 *
 * - Scratch directories ($TMPDIR/pipesim-sweep.PID.XXXXXX) carry a lock
 *   file that their maker holds (a POSIX record lock) until it removes
 *   them; one whose lock can be taken outlived its maker (kill -9) and is
 *   removed by the next proc_scratch_make in the same TMPDIR.
 * - A worker dies with the process that forked it (PR_SET_PDEATHSIG on
 *   Linux; elsewhere it notices at its next point, proc_orphaned).
 * - The writer watches its workers (proc_watch): one that ended before its
 *   points were done, or that stays stopped (SIGSTOP), fails the sweep
 *   instead of making it wait forever. */
#ifndef PS_PROC_H
#define PS_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "base/err.h"

/* A scratch directory and the descriptor of its lock (held while open). */
typedef struct proc_scratch {
    char dir[4096]; /* "" when none */
    int lock_fd;    /* -1 when none */
} proc_scratch;

/* Makes a new scratch directory under tmpdir (NULL or "": $TMPDIR, else
 * /tmp), locked by this process, after removing the ones whose makers
 * died. PS_ERR with "ps.sweep: cannot create a scratch directory in DIR:
 * why" (s->dir "") on failure. */
int proc_scratch_make(proc_scratch *s, const char *tmpdir, ps_err *err);
/* Removes the directory and every file in it, and drops the lock;
 * harmless on a scratch already removed (s->dir ""). */
void proc_scratch_remove(proc_scratch *s);
/* In a forked child: forgets s without touching the directory (the
 * parent's), closing the lock's descriptor. */
void proc_scratch_forget(proc_scratch *s);
/* Removes the scratch directories under tmpdir whose makers died;
 * returns how many. Called by proc_scratch_make. */
int proc_scratch_reclaim(const char *tmpdir);
/* When the filesystem holding scratch directory s has less than
 * PROC_SCRATCH_LOW bytes free, replaces err's message with one that says
 * TMPDIR is what is full, and what to do: a worker that cannot write its
 * scratch files dies with nothing to say, so its parent says it (issue 27 item
 * 15: a full TMPDIR must not read as a crash or as the output's disk). */
void proc_scratch_note(const proc_scratch *s, ps_err *err);
#define PROC_SCRATCH_LOW (1024 * 1024)

/* In a worker right after fork(): it gets SIGKILL when the writer (the
 * parent pid) dies; if the writer is already gone, it exits at once. From
 * then on proc_is_worker() is 1 in this process. */
void proc_child_init(pid_t parent);
/* 1 in a worker process from proc_child_init on, else 0: a worker leaves
 * the connections it inherited from the writer untouched (run/session.c). */
int proc_is_worker(void);
/* 1 when the writer that forked this worker has died (the check of
 * systems without PR_SET_PDEATHSIG). */
int proc_orphaned(pid_t parent);

/* How long a worker may stay stopped before proc_watch gives up on it;
 * PIPESIM_TEST_STOP_GRACE (seconds) overrides it for tests. */
#define PROC_STOP_GRACE_S 5.0

/* The watch of n workers, called while waiting for their results: reaps
 * none, reads their state (waitid with WNOWAIT). Returns 0 while every
 * worker runs (or ended with status 0: it had no points left); PS_ERR,
 * with "ps.sweep: worker process PID ...", when one ended with a failure
 * or a signal, or has been stopped for longer than the grace.
 * stopped_since: per worker, the monotonic time it was first seen
 * stopped (0: running), kept by the caller between calls. */
int proc_watch(const pid_t *pids, int n, double *stopped_since, ps_err *err);

#endif
