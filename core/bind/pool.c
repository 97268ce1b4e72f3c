/* core.sweep_map: a sweep's points evaluated by forked worker processes,
 * which inherit the Lua state (the scenario, its clusters and the run
 * function) and record into scratch databases; this process alone writes
 * the real ones, copying each chunk's runs in point order, so rows, run
 * ids and their order are those of --jobs 1. Chunks are handed out through
 * one pipe (4-byte reads are atomic), finished ones announced on another;
 * each chunk's results travel in a file next to its databases. */
#include "bind/pool_impl.h"

#include <errno.h>
#include <lauxlib.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/limit.h"
#include "rec/rec.h"
#include "run/proc.h"

#define POOL_TYPE "pipesim.sweep_pool"
#define MAX_CHUNKS 4096 /* their ids fit in a pipe's 64 KiB buffer */
#define CHUNK_MAX 2048  /* points: big enough that a chunk's file is cheap */

typedef struct pool {
    pid_t pids[1024];
    double stopped_since[1024]; /* proc_watch's */
    int npids;
    int done_fd;
    proc_scratch scratch;
} pool;

/* In a new worker: the pool's pids (its elder siblings), pipe and
 * directory are the writer's, not for this process's pool_close (the
 * pool's __gc at lua_close). */
static void pool_forget(pool *p)
{
    p->npids = 0;
    if (p->done_fd >= 0)
        close(p->done_fd);
    p->done_fd = -1;
    proc_scratch_forget(&p->scratch);
}

/* Stops the workers still running (they are this process's children),
 * reaps them and removes the scratch directory. Calling it twice is
 * harmless; it is the pool's __gc too, for an error that unwinds past. */
static void pool_close(pool *p)
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

/* [-0, +0] the pool userdata's __gc */
static int pool_gc(lua_State *L)
{
    pool_close(luaL_checkudata(L, 1, POOL_TYPE));
    return 0;
}

/* bind_database in a protected call: [-0, +0] (pcall) */
static int open_target(lua_State *L)
{
    const char *path = lua_tostring(L, 1);
    lua_pushlightuserdata(L, bind_database(L, path));
    return 1;
}

/* Reads a file a worker left whole: 0 with *buf malloc'd (NULL when the
 * file is empty) and *size; -1 when it cannot be opened; 1 when it cannot
 * be read or memory runs out (*buf NULL). */
static int read_whole(const char *file, unsigned char **buf, size_t *size)
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

static void free_shipped(int64_t **shipped)
{
    for (int i = 0; i < POOL_MAX_DBS; i++)
        free(shipped[i]);
}

/* Records the k runs a worker shipped in file into db, as --jobs 1 records
 * them (rec_write in a sweep's batch, committed here); *ids: their run
 * ids, by number (malloc'd). */
static int take_shipped(rec_db *db, const char *file, lua_Integer k,
                        int64_t **ids, ps_err *err)
{
    unsigned char *buf = NULL;
    size_t size = 0;
    int got = k < 1 ? -1 : read_whole(file, &buf, &size);
    if (got < 0)
        return ps_errf(err, "ps.sweep: a worker's runs are missing");
    *ids = got == 0 && buf ? calloc((size_t)k, sizeof **ids) : NULL;
    if (!*ids) {
        free(buf);
        return ps_errf(err, "ps.sweep: a worker's runs are damaged (or out "
                            "of memory)");
    }
    rec_set_batch(db, 1);
    int rc = rec_ship_write(db, buf, size, *ids, (int64_t)k, err);
    rec_set_batch(db, 0);
    ps_err ce;
    if (rec_flush(db, rc ? &ce : err))
        rc = PS_ERR;
    free(buf);
    return rc;
}

/* What taking a chunk's databases learned, per database (by its number
 * in the chunk's dbs): how to renumber its runs' ids and how many of its
 * results not to count. */
typedef struct chunk_dbs {
    lua_Integer ndbs;
    int64_t offset[POOL_MAX_DBS];       /* copied: id shift */
    lua_Integer lost[POOL_MAX_DBS];     /* results not to count */
    int64_t *shipped[POOL_MAX_DBS];     /* shipped: ids by run number */
    lua_Integer nshipped[POOL_MAX_DBS]; /* shipped: runs */
} chunk_dbs;

/* Database i of the chunk (dbs is its list's stack index) into the real
 * one: its shipped runs recorded (take_shipped; its scratch file is then
 * empty), else its scratch database's runs copied in one transaction. The
 * worker's files are removed either way. [-0, +0] on success; on failure
 * leaves what it pushed (the caller raises err). */
static int take_db(lua_State *L, int dbs, lua_Integer i, chunk_dbs *d,
                   ps_err *err)
{
    lua_rawgeti(L, dbs, i);
    lua_getfield(L, -1, "lost");
    d->lost[i - 1] = lua_tointeger(L, -1);
    lua_pop(L, 1);
    lua_pushcfunction(L, open_target);
    lua_getfield(L, -2, "path");
    if (lua_pcall(L, 1, 1, 0) != LUA_OK)
        return ps_errf(err, "%s", lua_tostring(L, -1));
    rec_db *db = lua_touserdata(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, -1, "file");
    const char *src = lua_tostring(L, -1);
    lua_getfield(L, -2, "ship");
    if (lua_isstring(L, -1)) {
        lua_getfield(L, -3, "nship");
        lua_Integer k = lua_tointeger(L, -1);
        lua_pop(L, 1);
        int rc =
            take_shipped(db, lua_tostring(L, -1), k, &d->shipped[i - 1], err);
        d->nshipped[i - 1] = k;
        unlink(lua_tostring(L, -1));
        unlink(src);
        lua_pop(L, 3);
        return rc ? PS_ERR : PS_OK;
    }
    lua_pop(L, 1);
    rec_copy *cp = rec_copy_new(db, src, err);
    if (!cp)
        return PS_ERR;
    int rc = rec_begin(db, err) ||
             rec_copy_runs(cp, 1, INT64_MAX, &d->offset[i - 1], err) ||
             rec_commit(db, err);
    if (rc)
        rec_rollback(db);
    rec_copy_free(cp);
    unlink(src);
    lua_pop(L, 2);
    return rc ? PS_ERR : PS_OK;
}

/* Appends the chunk's results (res) to the table at results from index
 * next, each id as the real database numbered it, and counts the runs
 * that were not rolled back in the worker. [-0, +0] */
static void renumber_results(lua_State *L, int dbs, int res, int results,
                             lua_Integer next, chunk_dbs *d)
{
    lua_Integer nres =
        lua_istable(L, res) ? (lua_Integer)lua_rawlen(L, res) : 0;
    for (lua_Integer j = 1; j <= nres; j++) {
        lua_rawgeti(L, res, j);
        if (lua_getfield(L, -1, "id") == LUA_TNUMBER) {
            lua_Integer id = lua_tointeger(L, -1);
            lua_getfield(L, -2, "db");
            const char *path = lua_tostring(L, -1);
            for (lua_Integer i = 1; i <= d->ndbs && i <= POOL_MAX_DBS; i++) {
                lua_rawgeti(L, dbs, i);
                lua_getfield(L, -1, "path");
                const char *dp = lua_tostring(L, -1);
                int same = (!path && !dp) || (path && dp && !strcmp(path, dp));
                lua_pop(L, 2);
                if (!same)
                    continue;
                if (d->shipped[i - 1])
                    id = id >= 1 && id <= d->nshipped[i - 1]
                             ? d->shipped[i - 1][id - 1]
                             : 0;
                else
                    id += d->offset[i - 1];
                lua_pushinteger(L, id);
                lua_setfield(L, -4, "id");
                if (d->lost[i - 1] > 0)
                    d->lost[i - 1]--; /* rolled back in the worker */
                else
                    bind_count_run(L);
                break;
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        lua_rawseti(L, results, next + j - 1);
    }
}

/* Copies chunk c's databases into the real ones and appends its results
 * (ids renumbered) to the table at results; next is the index of its
 * first point there. Returns 0; 1 when the chunk ends in a point's error
 * (its message pushed); 2 when a point of the chunk recorded runs of its
 * own (records_itself: nothing of the chunk is taken, the writer
 * evaluates the sweep from the chunk's first point on); -1 with err
 * filled on any other failure. [-0, +(0|1|?)] nothing left on 0 and 2,
 * the message on 1; -1 leaves what it pushed (the caller raises err). */
static int take_chunk(lua_State *L, pool *p, int32_t c, int results,
                      lua_Integer next, ps_err *err)
{
    char file[4200];
    snprintf(file, sizeof file, "%s/c%d.res", p->scratch.dir, (int)c);
    unsigned char *buf;
    size_t size;
    if (read_whole(file, &buf, &size) < 0)
        return ps_errf(err, "ps.sweep: a worker's results are missing");
    int ok = buf && bind_result_get(L, buf, size) == 0;
    int bad = !ok || !lua_istable(L, -1);
    free(buf);
    unlink(file);
    if (bad)
        return ps_errf(err, "ps.sweep: a worker's results are damaged");
    int chunk = lua_gettop(L);
    if (lua_getfield(L, chunk, "nested") != LUA_TNIL) {
        lua_settop(L, chunk - 1); /* its scratch goes with the pool's */
        return 2;
    }
    lua_pop(L, 1);
    lua_getfield(L, chunk, "dbs");
    int dbs = lua_gettop(L);
    lua_getfield(L, chunk, "results");
    int res = lua_gettop(L);
    chunk_dbs d = {.ndbs = (lua_Integer)lua_rawlen(L, dbs)};
    for (lua_Integer i = 1; i <= d.ndbs && i <= POOL_MAX_DBS; i++)
        if (take_db(L, dbs, i, &d, err)) {
            free_shipped(d.shipped);
            return PS_ERR;
        }
    renumber_results(L, dbs, res, results, next, &d);
    free_shipped(d.shipped);
    lua_getfield(L, chunk, "error");
    if (lua_isstring(L, -1)) {
        lua_replace(L, chunk);
        lua_settop(L, chunk);
        return 1;
    }
    lua_settop(L, chunk - 1);
    return 0;
}

/* A sweep's evaluation by the pool: sizes, then the state of its
 * collection (bind_sweep_map). */
typedef struct sweep_run {
    lua_Integer n, size; /* points, points per chunk */
    int32_t nchunks;
    int eval;         /* stack index of the function of a point */
    int results;      /* stack index of the results table */
    int32_t next;     /* the first chunk not taken */
    int failed;       /* 1: a point's error is on the stack; -1: err */
    lua_Integer here; /* > 0: the points from here on run in this
                         process (take_chunk's 2) */
    ps_err err;
} sweep_run;

/* [-0, +1] the pool's userdata, with its __gc (which ends the workers and
 * removes the scratch), and its scratch directory; raises on failure */
static pool *pool_new(lua_State *L)
{
    pool *p = lua_newuserdatauv(L, sizeof *p, 0);
    memset(p, 0, sizeof *p);
    p->done_fd = -1;
    p->scratch.lock_fd = -1;
    if (luaL_newmetatable(L, POOL_TYPE)) {
        lua_pushcfunction(L, pool_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    ps_err err;
    if (proc_scratch_make(&p->scratch, NULL, &err))
        bind_raise(L, &err);
    return p;
}

/* Forks up to jobs workers, each handed the task pipe's chunks; raises
 * when none can start. [-0, +0] */
static void pool_start(lua_State *L, pool *p, const sweep_run *sr,
                       lua_Integer jobs)
{
    int task[2], done[2];
    if (pipe(task))
        luaL_error(L, "ps.sweep: pipe: %s", strerror(errno));
    if (pipe(done)) {
        close(task[0]);
        close(task[1]);
        luaL_error(L, "ps.sweep: pipe: %s", strerror(errno));
    }
    p->done_fd = done[0];
    for (int32_t c = 0; c < sr->nchunks; c++)
        pool_write_all(task[1], &c, sizeof c);
    close(task[1]);
    fflush(NULL); /* or the children print it again */
    pid_t writer = getpid();
    for (lua_Integer k = 0; k < jobs; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            /* the pool's pids, pipe and directory are the writer's, not
             * for this process's pool_close (the pool's __gc) */
            char dir[4096];
            snprintf(dir, sizeof dir, "%s", p->scratch.dir);
            pool_forget(p);
            pool_worker_main(L, sr->eval, dir, writer, task[0], done[1], sr->n,
                             sr->size);
        }
        if (pid < 0)
            break;
        p->pids[p->npids++] = pid;
    }
    int e = errno;
    close(task[0]);
    close(done[1]);
    if (p->npids == 0) {
        pool_close(p);
        luaL_error(L, "ps.sweep: cannot start a worker process: %s",
                   strerror(e));
    }
}

/* Takes the chunks in order as the workers finish them, until all are
 * in, a point fails, a chunk hands the sweep back (sr->here), a worker
 * fails or a stop is requested. [-0, +(0|1)] a point's error stays on
 * top (sr->failed 1) */
static void pool_collect(lua_State *L, pool *p, sweep_run *sr)
{
    unsigned char *ready = calloc((size_t)sr->nchunks, 1);
    if (!ready) {
        ps_errf(&sr->err, "ps.sweep: out of memory");
        sr->failed = -1;
        return;
    }
    while (sr->next < sr->nchunks && !sr->failed && !sr->here) {
        if (limit_stopped())
            break;
        struct pollfd pf = {.fd = p->done_fd, .events = POLLIN};
        int pr = poll(&pf, 1, 200);
        if (pr <= 0) {
            /* a signal, or a wake-up to check for a stop and on the
             * workers: one that died or stays stopped ends the wait */
            if (pr == 0 &&
                proc_watch(p->pids, p->npids, p->stopped_since, &sr->err)) {
                proc_scratch_note(&p->scratch, &sr->err);
                sr->failed = -1;
            }
            continue;
        }
        int32_t c;
        ssize_t k = read(p->done_fd, &c, sizeof c);
        if (k < 0 && errno == EINTR)
            continue;
        if (k != (ssize_t)sizeof c || c < 0 || c >= sr->nchunks) {
            if (!proc_watch(p->pids, p->npids, p->stopped_since, &sr->err))
                ps_errf(&sr->err, "ps.sweep: a worker process ended before "
                                  "its points were done (killed, or out of "
                                  "memory?)");
            proc_scratch_note(&p->scratch, &sr->err);
            sr->failed = -1;
            break;
        }
        ready[c] = 1;
        while (sr->next < sr->nchunks && ready[sr->next] && !sr->failed) {
            lua_Integer first = (lua_Integer)sr->next * sr->size + 1;
            int rc = take_chunk(L, p, sr->next, sr->results, first, &sr->err);
            if (rc == 2) {
                sr->here = first;
                break;
            }
            sr->failed = rc > 0 ? 1 : rc < 0 ? -1 : 0;
            sr->next++;
            lua_Integer doneb = (lua_Integer)sr->next * sr->size;
            bind_progress_sweep(L, (long)(doneb < sr->n ? doneb : sr->n),
                                (long)sr->n);
        }
    }
    free(ready);
}

/* After every chunk is taken: each worker has read its last task and
 * exits with status 0; anything else (a crash at its end, valgrind's
 * --error-exitcode for a leak, tests/run.sh) is reported, after its runs
 * are in. */
static void pool_reap(pool *p, sweep_run *sr)
{
    for (int i = 0; i < p->npids; i++) {
        int st = 0;
        while (waitpid(p->pids[i], &st, 0) < 0 && errno == EINTR)
            ;
        p->pids[i] = 0;
        if (!sr->failed && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            ps_errf(&sr->err,
                    "ps.sweep: a worker process ended with %s %d after "
                    "its points were done",
                    WIFEXITED(st) ? "status" : "signal",
                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            sr->failed = -1;
        }
    }
}

/* The points from sr->here on, evaluated in this process as --jobs 1
 * does (a point's run function records runs of its own, whose ids only
 * this process can give). [-0, +(0|1)] a point's error stays on top
 * (sr->failed 1) */
static void run_here(lua_State *L, sweep_run *sr)
{
    bind_progress_sweep(L, 0, 0);
    fprintf(stderr,
            "pipesim: note: a ps.sweep's run function records runs itself "
            "(ps.run inside it), whose ids only this process can give: its "
            "points from the %lld-th on run here, one at a time\n",
            (long long)sr->here);
    for (lua_Integer j = sr->here; j <= sr->n; j++) {
        lua_pushvalue(L, sr->eval);
        lua_pushinteger(L, j);
        if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
            sr->failed = 1;
            return;
        }
        lua_rawseti(L, sr->results, j);
        bind_progress_sweep(L, (long)j, (long)sr->n);
    }
}

/* core.sweep_map(n, jobs, eval) -> { eval(1), ..., eval(n) }, evaluated
 * by jobs worker processes; raises the first failing point's error after
 * recording the runs before it, as --jobs 1 does. A point whose run
 * function records runs itself hands the rest of the sweep to this
 * process (run_here), so that every id returned is the id stored.
 * [-0, +1] returns the results table */
int bind_sweep_map(lua_State *L)
{
    sweep_run sr = {0};
    bind_check_open(L);
    sr.n = luaL_checkinteger(L, 1);
    lua_Integer jobs = luaL_checkinteger(L, 2);
    luaL_checktype(L, 3, LUA_TFUNCTION);
    lua_settop(L, 3);
    sr.eval = 3;
    /* chunks of at most CHUNK_MAX points, about 8 per worker */
    lua_Integer size = (sr.n + jobs * 8 - 1) / (jobs * 8);
    if (size > CHUNK_MAX)
        size = CHUNK_MAX;
    if (size < (sr.n + MAX_CHUNKS - 1) / MAX_CHUNKS)
        size = (sr.n + MAX_CHUNKS - 1) / MAX_CHUNKS;
    sr.size = size < 1 ? 1 : size;
    sr.nchunks = (int32_t)((sr.n + sr.size - 1) / sr.size);
    if (jobs > sr.nchunks)
        jobs = sr.nchunks;

    pool *p = pool_new(L);            /* 4 */
    lua_createtable(L, (int)sr.n, 0); /* 5: the results */
    sr.results = 5;
    bind_progress_sweep(L, 0, (long)sr.n);
    pool_start(L, p, &sr, jobs);
    pool_collect(L, p, &sr);
    if (sr.next == sr.nchunks && !sr.failed)
        pool_reap(p, &sr);
    pool_close(p);
    if (sr.here && !limit_stopped())
        run_here(L, &sr);
    bind_progress_sweep(L, 0, 0);
    if (limit_stopped())
        return bind_raise_stop(L);
    if (sr.failed > 0)
        return lua_error(L); /* the point's message, on top */
    if (sr.failed < 0)
        return bind_raise(L, &sr.err);
    lua_settop(L, 5);
    return 1;
}
