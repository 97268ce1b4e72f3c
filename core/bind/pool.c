/* core.sweep_map: a sweep's points evaluated by forked worker processes,
 * which inherit the Lua state (the scenario, its clusters and the run
 * function) and record into scratch databases of their own (or ship their
 * runs as bytes); this process alone writes the real ones, copying each
 * chunk's runs in point order, so rows, run ids and their order are those
 * of --jobs 1. Chunks are handed out through one pipe (4-byte reads are
 * atomic), finished ones announced on another; each chunk's results
 * travel in a file next to its databases. The processes, the pipes, the
 * scratch databases and the recording of a chunk's runs are the run
 * layer's (run/pool.c, run/pool_worker.c); this file evaluates the points
 * in Lua (the worker's side, first) and reads the chunks' results back
 * into Lua (the writer's). */
#include <lauxlib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/limit.h"
#include "bind/bind.h"
#include "rec/rec.h"
#include "run/pool.h"
#include "run/proc.h"

/* Databases one chunk may record into. */
#define POOL_MAX_DBS 16

#define WORKER_KEY "pipesim.sweep_worker"

typedef struct wdb {
    char *path; /* as ps.run's db field gave it; NULL: the session's */
    char file[4200];
    rec_db *db;
    rec_ship *ship; /* its runs below the events level (rec/ship.c) */
} wdb;

/* Set in a worker process only (the registry's WORKER_KEY points to it). */
typedef struct worker {
    const char *dir;
    pid_t writer; /* the process that forked this one */
    int32_t chunk;
    wdb dbs[POOL_MAX_DBS];
    int ndbs;
} worker;

/* [-0, +0] */
static worker *get_worker(lua_State *L)
{
    return bind_registry_ptr(L, WORKER_KEY);
}

int bind_sweep_worker(lua_State *L)
{
    return get_worker(L) != NULL;
}

/* [-0, +0] raises when the scratch database cannot be opened; the
 * session's database hook in a worker (bind_set_database_hook) */
static rec_db *worker_database(lua_State *L, const char *path)
{
    worker *w = get_worker(L);
    if (!w)
        return NULL;
    if (path)
        bind_sandbox_db(L, path); /* the same refusal as --jobs 1 */
    for (int i = 0; i < w->ndbs; i++)
        if ((!path && !w->dbs[i].path) ||
            (path && w->dbs[i].path && strcmp(path, w->dbs[i].path) == 0))
            return w->dbs[i].db;
    if (w->ndbs == POOL_MAX_DBS)
        luaL_error(L, "a sweep's chunk records into more than %d databases",
                   POOL_MAX_DBS);
    wdb *d = &w->dbs[w->ndbs];
    snprintf(d->file, sizeof d->file, "%s/c%d-%d.db", w->dir, (int)w->chunk,
             w->ndbs);
    d->path = path ? strdup(path) : NULL;
    if (path && !d->path)
        luaL_error(L, "out of memory");
    ps_err err;
    d->db = run_scratch_open(d->file, &d->ship, &err);
    if (!d->db) {
        free(d->path);
        return bind_raise(L, &err), NULL;
    }
    w->ndbs++;
    return d->db;
}

/* Writes db entry d's shipped runs to DIR/cC-I.ship and names the file in
 * the table on top (field ship, with nship runs). 0, or -1 when the file
 * cannot be written. [-0, +0] */
static int ship_out(lua_State *L, const worker *w, wdb *d, int i)
{
    char file[4200];
    snprintf(file, sizeof file, "%s/c%d-%d.ship", w->dir, (int)w->chunk, i);
    int64_t runs;
    int rc = run_ship_save(d->ship, file, &runs);
    d->ship = NULL;
    if (runs > 0) {
        lua_pushstring(L, file);
        lua_setfield(L, -2, "ship");
        lua_pushinteger(L, (lua_Integer)runs);
        lua_setfield(L, -2, "nship");
    }
    return rc;
}

/* The message on top, naming the databases the user gave (ps.run's db,
 * or the session's) where it names the scratch files the worker records
 * them in: a --jobs failure reads as the --jobs 1 one. [-1, +1] */
static void user_names(lua_State *L, const worker *w)
{
    const bind_session *s = bind_get_session(L);
    for (int i = 0; i < w->ndbs; i++) {
        const char *user = w->dbs[i].path ? w->dbs[i].path
                           : s            ? s->default_db
                                          : NULL;
        if (!user || lua_type(L, -1) != LUA_TSTRING)
            continue;
        const char *msg = lua_tostring(L, -1);
        if (strstr(msg, w->dbs[i].file) &&
            strstr(msg, "database or disk is full")) {
            /* the scratch file is in TMPDIR, not beside the user's
             * database: that is what is full (issue 27 item 15) */
            const char *slash = strrchr(w->dir, '/');
            char root[4096];
            snprintf(root, sizeof root, "%.*s",
                     slash ? (int)(slash - w->dir) : (int)strlen(w->dir),
                     w->dir);
            lua_pushfstring(L,
                            "%s (the scratch space of --jobs, in TMPDIR=%s, "
                            "is full, not %s's disk: free space there, set "
                            "TMPDIR to a directory with room, or run with "
                            "--jobs 1)",
                            msg, root, user);
            luaL_gsub(L, lua_tostring(L, -1), w->dbs[i].file,
                      "a --jobs scratch database");
            lua_remove(L, -2);
            lua_remove(L, -2);
            continue;
        }
        luaL_gsub(L, msg, w->dbs[i].file, user);
        lua_remove(L, -2);
    }
}

/* 1 when the point just evaluated (its result on top) recorded more runs
 * than its own, which its result's id names: its run function called
 * ps.run or ps.collective itself, and those calls returned ids of this
 * worker's scratch database, which the writer renumbers. Only the writer
 * can give such a call the id its run will have. [-0, +0] */
static int records_itself(lua_State *L, long before)
{
    long own = 0;
    if (lua_istable(L, -1)) {
        own = lua_getfield(L, -1, "id") == LUA_TNUMBER;
        lua_pop(L, 1);
    }
    return bind_runs_recorded(L) - before > own;
}

/* Evaluates chunk c's points first..last (eval's indices) and writes
 * { results = {...}, error = msg, nested = j, dbs = { { path =, file = },
 * ... } } to DIR/cC.res (nested: point j recorded runs of its own, see
 * records_itself; the results stop before it). Returns 0; 1 when nested
 * is set (the worker has nothing more to do); -1 when a stop was
 * requested or the writer died. [-0, +(0|?)] pushes nothing when it
 * returns 0 or 1; -1 leaves what it pushed (the worker exits). */
static int run_chunk(lua_State *L, int eval, worker *w, int32_t c,
                     lua_Integer first, lua_Integer last)
{
    w->chunk = c;
    w->ndbs = 0;
    lua_createtable(L, 0, 3);
    int out = lua_gettop(L);
    lua_createtable(L, (int)(last - first + 1), 0);
    for (lua_Integer j = first; j <= last; j++) {
        if (proc_orphaned(w->writer))
            return -1; /* the writer died: nobody takes the results */
        long before = bind_runs_recorded(L);
        lua_pushvalue(L, eval);
        lua_pushinteger(L, j);
        if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
            if (limit_stopped())
                return -1;
            if (!lua_isstring(L, -1)) {
                lua_pop(L, 1);
                lua_pushstring(L, "(error object is not a string)");
            }
            user_names(L, w);
            lua_setfield(L, out, "error");
            break;
        }
        if (records_itself(L, before)) {
            /* its runs' ids are this process's: the writer evaluates the
             * sweep from this point on itself (take_chunk) */
            lua_pop(L, 1);
            lua_pushinteger(L, j);
            lua_setfield(L, out, "nested");
            break;
        }
        lua_rawseti(L, -2, j - first + 1);
    }
    lua_setfield(L, out, "results");
    lua_createtable(L, w->ndbs, 0);
    for (int i = 0; i < w->ndbs; i++) {
        /* runs of a batch SQLite rolled back (now or earlier in the
         * chunk) are not in the file, and the writer must not count their
         * results */
        ps_err err;
        int64_t lost;
        int failed = run_scratch_close(w->dbs[i].db, &lost, &err);
        /* a point's error, when there is one, is the chunk's */
        if (failed && lua_getfield(L, out, "error") != LUA_TSTRING) {
            lua_pushstring(L, err.msg);
            user_names(L, w);
            lua_setfield(L, out, "error");
        }
        if (failed)
            lua_pop(L, 1);
        lua_createtable(L, 0, 3);
        lua_pushinteger(L, (lua_Integer)lost);
        lua_setfield(L, -2, "lost");
        if (w->dbs[i].path) {
            lua_pushstring(L, w->dbs[i].path);
            lua_setfield(L, -2, "path");
        }
        lua_pushstring(L, w->dbs[i].file);
        lua_setfield(L, -2, "file");
        if (ship_out(L, w, &w->dbs[i], i))
            return -1;
        lua_rawseti(L, -2, i + 1);
        free(w->dbs[i].path);
    }
    lua_setfield(L, out, "dbs");
    char tmp[4200], final[4200];
    snprintf(tmp, sizeof tmp, "%s/c%d.tmp", w->dir, (int)c);
    snprintf(final, sizeof final, "%s/c%d.res", w->dir, (int)c);
    unsigned char *bytes;
    size_t n;
    const char *bad = bind_result_put(L, out, &bytes, &n);
    if (bad) {
        /* a result that cannot travel: say so as the chunk's error */
        lua_pushfstring(L,
                        "a result holds a %s, which a worker process cannot "
                        "send back (return plain data, or run with --jobs 1)",
                        bad);
        lua_setfield(L, out, "error");
        lua_pushnil(L);
        lua_setfield(L, out, "results");
        bind_result_put(L, out, &bytes, &n);
    }
    int published = run_file_publish(tmp, final, bytes, n);
    free(bytes);
    if (published)
        return -1;
    lua_getfield(L, out, "nested");
    int nested = !lua_isnil(L, -1);
    lua_settop(L, out - 1);
    return nested;
}

/* A worker's life, in the child right after fork(): chunks from task_fd
 * until it is empty (points (c - 1) * size + 1 ... of n, evaluated by the
 * function at stack index eval), each announced on done_fd, results and
 * scratch databases in dir; writer is the parent. Never returns. Its Lua
 * state is closed before _exit, so that the worker frees what it
 * allocated (valgrind checks workers too, tests/run.sh); the finalizers
 * of what it inherited leave the writer's resources alone: the writer's
 * SQLite connections are not touched (run/session.c), and run_pool_start
 * made the pool forget the writer's other workers and directory. [-0, +0]
 * (its worker record goes to the registry) */
static _Noreturn void pool_worker_main(lua_State *L, int eval, const char *pdir,
                                       pid_t writer, int task_fd, int done_fd,
                                       lua_Integer n, lua_Integer size)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", pdir);
    proc_child_init(writer);
    worker *w = lua_newuserdatauv(L, sizeof *w, 0);
    memset(w, 0, sizeof *w);
    w->dir = dir;
    w->writer = writer;
    lua_setfield(L, LUA_REGISTRYINDEX, WORKER_KEY);
    bind_set_database_hook(L, worker_database);
    int status = 0;
    for (;;) {
        int32_t c;
        if (!run_pool_next_task(task_fd, &c))
            break;
        lua_Integer first = (lua_Integer)c * size + 1;
        lua_Integer last = first + size - 1 < n ? first + size - 1 : n;
        int rc = run_chunk(L, eval, w, c, first, last);
        if (rc < 0) {
            status = 1;
            break;
        }
        run_pool_write_all(done_fd, &c, sizeof c);
        if (rc > 0)
            break; /* the writer takes the sweep over from here */
    }
    fflush(NULL); /* what the run functions printed */
    close(task_fd);
    close(done_fd);
    /* finalizers at the worker's exit record nothing (bind_check_open) */
    bind_session_end(L);
    lua_close(L);
    _exit(status);
}

/* --- the writer --- */

#define POOL_TYPE "pipesim.sweep_pool"
#define MAX_CHUNKS 4096 /* their ids fit in a pipe's 64 KiB buffer */
#define CHUNK_MAX 2048  /* points: big enough that a chunk's file is cheap */

/* [-0, +0] the pool userdata's __gc */
static int pool_gc(lua_State *L)
{
    run_pool_close(luaL_checkudata(L, 1, POOL_TYPE));
    return 0;
}

/* bind_database in a protected call: [-0, +0] (pcall) */
static int open_target(lua_State *L)
{
    const char *path = lua_tostring(L, 1);
    lua_pushlightuserdata(L, bind_database(L, path));
    return 1;
}

static void free_shipped(int64_t **shipped)
{
    for (int i = 0; i < POOL_MAX_DBS; i++)
        free(shipped[i]);
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
 * one: its shipped runs recorded (run_take_shipped; its scratch file is then
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
        int rc = run_take_shipped(db, lua_tostring(L, -1), (int64_t)k,
                                  &d->shipped[i - 1], err);
        d->nshipped[i - 1] = k;
        unlink(lua_tostring(L, -1));
        unlink(src);
        lua_pop(L, 3);
        return rc ? PS_ERR : PS_OK;
    }
    lua_pop(L, 1);
    int rc = run_take_copied(db, src, &d->offset[i - 1], err);
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
static int take_chunk(lua_State *L, run_pool *p, int32_t c, int results,
                      lua_Integer next, ps_err *err)
{
    char file[4200];
    snprintf(file, sizeof file, "%s/c%d.res", p->scratch.dir, (int)c);
    unsigned char *buf;
    size_t size;
    if (run_read_whole(file, &buf, &size) < 0)
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
static run_pool *pool_new(lua_State *L)
{
    run_pool *p = lua_newuserdatauv(L, sizeof *p, 0);
    run_pool_init(p);
    if (luaL_newmetatable(L, POOL_TYPE)) {
        lua_pushcfunction(L, pool_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    ps_err err;
    if (run_pool_scratch(p, &err))
        bind_raise(L, &err);
    return p;
}

/* What a forked worker runs (run_pool_start's worker): the Lua state it
 * inherited evaluates its chunks. */
typedef struct worker_arg {
    lua_State *L;
    const sweep_run *sr;
} worker_arg;

static void start_worker(void *arg, const char *dir, pid_t writer, int task_fd,
                         int done_fd)
{
    const worker_arg *w = arg;
    pool_worker_main(w->L, w->sr->eval, dir, writer, task_fd, done_fd, w->sr->n,
                     w->sr->size);
}

/* Forks up to jobs workers, each handed the task pipe's chunks; raises
 * when none can start. [-0, +0] */
static void pool_start(lua_State *L, run_pool *p, const sweep_run *sr,
                       lua_Integer jobs)
{
    worker_arg w = {L, sr};
    ps_err err;
    if (run_pool_start(p, sr->nchunks, (int64_t)jobs, start_worker, &w, &err))
        bind_raise(L, &err);
}

/* Takes the chunks in order as the workers finish them, until all are
 * in, a point fails, a chunk hands the sweep back (sr->here), a worker
 * fails or a stop is requested. [-0, +(0|1)] a point's error stays on
 * top (sr->failed 1) */
static void pool_collect(lua_State *L, run_pool *p, sweep_run *sr)
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
        int32_t c;
        int got = run_pool_wait(p, sr->nchunks, &c, &sr->err);
        if (got < 0)
            sr->failed = -1;
        if (got <= 0)
            continue;
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

    run_pool *p = pool_new(L);        /* 4 */
    lua_createtable(L, (int)sr.n, 0); /* 5: the results */
    sr.results = 5;
    bind_progress_sweep(L, 0, (long)sr.n);
    pool_start(L, p, &sr, jobs);
    pool_collect(L, p, &sr);
    /* each worker has read its last task and exits with status 0 */
    if (sr.next == sr.nchunks && !sr.failed && run_pool_reap(p, &sr.err))
        sr.failed = -1;
    run_pool_close(p);
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
