/* A sweep's pool, the writer's side (run/pool.h): forked workers handed
 * chunks through one pipe, finished ones read back from another while
 * the workers are watched, and each chunk's runs recorded into the real
 * databases, shipped runs as --jobs 1 records them, scratch databases
 * copied, so that rows, run ids and their order are those of --jobs 1. */
#include "run/pool.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void run_pool_init(run_pool *p)
{
    memset(p, 0, sizeof *p);
    p->done_fd = -1;
    p->scratch.lock_fd = -1;
}

int run_pool_scratch(run_pool *p, ps_err *err)
{
    return proc_scratch_make(&p->scratch, NULL, err);
}

void run_pool_forget(run_pool *p)
{
    p->npids = 0;
    if (p->done_fd >= 0)
        close(p->done_fd);
    p->done_fd = -1;
    proc_scratch_forget(&p->scratch);
}

void run_pool_close(run_pool *p)
{
    for (int i = 0; i < p->npids; i++)
        if (p->pids[i] > 0)
            kill(p->pids[i], SIGKILL);
    for (int i = 0; i < p->npids; i++)
        if (p->pids[i] > 0)
            while (waitpid(p->pids[i], NULL, 0) < 0 && errno == EINTR)
                ;
    p->npids = 0;
    if (p->done_fd >= 0)
        close(p->done_fd);
    p->done_fd = -1;
    proc_scratch_remove(&p->scratch);
}

int run_pool_start(run_pool *p, int32_t nchunks, int64_t jobs,
                   run_pool_worker worker, void *arg, ps_err *err)
{
    int task[2], done[2];
    if (pipe(task))
        return ps_errf(err, "ps.sweep: pipe: %s", strerror(errno));
    if (pipe(done)) {
        int e = errno;
        close(task[0]);
        close(task[1]);
        return ps_errf(err, "ps.sweep: pipe: %s", strerror(e));
    }
    p->done_fd = done[0];
    for (int32_t c = 0; c < nchunks; c++)
        run_pool_write_all(task[1], &c, sizeof c);
    close(task[1]);
    fflush(NULL); /* or the children print it again */
    pid_t writer = getpid();
    if (jobs > RUN_POOL_MAX)
        jobs = RUN_POOL_MAX;
    for (int64_t k = 0; k < jobs; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            /* the pool's pids, pipe and directory are the writer's, not
             * for this process's run_pool_close */
            char dir[sizeof p->scratch.dir];
            snprintf(dir, sizeof dir, "%s", p->scratch.dir);
            run_pool_forget(p);
            worker(arg, dir, writer, task[0], done[1]);
            _exit(1); /* not reached: a worker never returns */
        }
        if (pid < 0)
            break;
        p->pids[p->npids++] = pid;
    }
    int e = errno;
    close(task[0]);
    close(done[1]);
    if (p->npids == 0) {
        run_pool_close(p);
        return ps_errf(err, "ps.sweep: cannot start a worker process: %s",
                       strerror(e));
    }
    return PS_OK;
}

int run_pool_wait(run_pool *p, int32_t nchunks, int32_t *c, ps_err *err)
{
    struct pollfd pf = {.fd = p->done_fd, .events = POLLIN};
    int pr = poll(&pf, 1, 200);
    if (pr <= 0) {
        /* a signal, or a wake-up to check for a stop and on the workers:
         * one that died or stays stopped ends the wait */
        if (pr == 0 && proc_watch(p->pids, p->npids, p->stopped_since, err)) {
            proc_scratch_note(&p->scratch, err);
            return PS_ERR;
        }
        return 0;
    }
    ssize_t k = read(p->done_fd, c, sizeof *c);
    if (k < 0 && errno == EINTR)
        return 0;
    if (k != (ssize_t)sizeof *c || *c < 0 || *c >= nchunks) {
        if (!proc_watch(p->pids, p->npids, p->stopped_since, err))
            ps_errf(err, "ps.sweep: a worker process ended before its "
                         "points were done (killed, or out of memory?)");
        proc_scratch_note(&p->scratch, err);
        return PS_ERR;
    }
    return 1;
}

int run_pool_reap(run_pool *p, ps_err *err)
{
    int rc = PS_OK;
    for (int i = 0; i < p->npids; i++) {
        int st = 0;
        while (waitpid(p->pids[i], &st, 0) < 0 && errno == EINTR)
            ;
        p->pids[i] = 0;
        if (rc == PS_OK && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            rc = ps_errf(err,
                         "ps.sweep: a worker process ended with %s %d after "
                         "its points were done",
                         WIFEXITED(st) ? "status" : "signal",
                         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
    return rc;
}

int run_read_whole(const char *file, unsigned char **buf, size_t *size)
{
    *buf = NULL;
    *size = 0;
    FILE *f = fopen(file, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *b = n > 0 ? malloc((size_t)n) : NULL;
    int got = b && fread(b, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    if (!got) {
        free(b);
        return n == 0 ? 0 : 1;
    }
    *buf = b;
    *size = (size_t)n;
    return 0;
}

int run_take_shipped(rec_db *db, const char *file, int64_t k, int64_t **ids,
                     ps_err *err)
{
    unsigned char *buf = NULL;
    size_t size = 0;
    int got = k < 1 ? -1 : run_read_whole(file, &buf, &size);
    if (got < 0)
        return ps_errf(err, "ps.sweep: a worker's runs are missing");
    *ids = got == 0 && buf ? calloc((size_t)k, sizeof **ids) : NULL;
    if (!*ids) {
        free(buf);
        return ps_errf(err, "ps.sweep: a worker's runs are damaged (or out "
                            "of memory)");
    }
    rec_set_batch(db, 1);
    int rc = rec_ship_write(db, buf, size, *ids, k, err);
    rec_set_batch(db, 0);
    ps_err ce;
    if (rec_flush(db, rc ? &ce : err))
        rc = PS_ERR;
    free(buf);
    return rc;
}

int run_take_copied(rec_db *db, const char *src, int64_t *offset, ps_err *err)
{
    rec_copy *cp = rec_copy_new(db, src, err);
    if (!cp)
        return PS_ERR;
    int rc = rec_begin(db, err) ||
             rec_copy_runs(cp, 1, INT64_MAX, offset, err) ||
             rec_commit(db, err);
    if (rc)
        rec_rollback(db);
    rec_copy_free(cp);
    return rc ? PS_ERR : PS_OK;
}
