/* The worker side of core.sweep_map (bind/pool.c is the writer's): a
 * forked process that evaluates chunks of a sweep's points, records their
 * runs into scratch databases of its own (or ships them as bytes), and
 * hands each chunk's results to the writer in a file. */
#include "bind/pool_impl.h"

#include <errno.h>
#include <lauxlib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/limit.h"
#include "rec/rec.h"
#include "run/proc.h"

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

/* Test only (tests/cli_sweep.sh): PIPESIM_TEST_SCRATCH_SQL runs on each
 * new scratch database, so that a test can make SQLite roll back a
 * worker's batch (a trigger's RAISE(ROLLBACK), as a full disk or an I/O
 * error would) where no other process can reach the file. */
static int scratch_test_sql(rec_db *db, ps_err *err)
{
    const char *sql = getenv("PIPESIM_TEST_SCRATCH_SQL");
    if (!sql || !*sql)
        return PS_OK;
    rec_query *q = rec_query_new(db, sql, err);
    int rc = q ? rec_query_step(q, err) : PS_ERR;
    rec_query_free(q);
    return rc == PS_ERR ? PS_ERR : PS_OK;
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
    ps_err err;
    d->db = rec_open(d->file, &err);
    if (d->db && (rec_scratch(d->db, &err) || scratch_test_sql(d->db, &err))) {
        rec_close(d->db, NULL);
        d->db = NULL;
    }
    if (!d->db || (path && !d->path)) {
        free(d->path);
        rec_close(d->db, NULL);
        return bind_raise(L, &err), NULL;
    }
    /* runs below the events level go to the writer as bytes, recorded
     * there once (rec/ship.c), unless a test makes the scratch database
     * fail (it must then get every run) */
    const char *test_sql = getenv("PIPESIM_TEST_SCRATCH_SQL");
    d->ship = test_sql && *test_sql ? NULL : rec_ship_new();
    rec_set_shipper(d->db, d->ship);
    w->ndbs++;
    return d->db;
}

/* Writes db entry d's shipped runs to DIR/cC-I.ship and names the file in
 * the table on top (field ship, with nship runs). 0, or -1 when the file
 * cannot be written. [-0, +0] */
static int ship_out(lua_State *L, const worker *w, wdb *d, int i)
{
    size_t n;
    const void *bytes = rec_ship_bytes(d->ship, &n);
    int64_t runs = rec_ship_runs(d->ship);
    int rc = 0;
    if (runs > 0) {
        char file[4200];
        snprintf(file, sizeof file, "%s/c%d-%d.ship", w->dir, (int)w->chunk, i);
        FILE *f = fopen(file, "wb");
        int wrote = f && fwrite(bytes, 1, n, f) == n;
        if (!f || fclose(f) || !wrote)
            rc = -1;
        lua_pushstring(L, file);
        lua_setfield(L, -2, "ship");
        lua_pushinteger(L, (lua_Integer)runs);
        lua_setfield(L, -2, "nship");
    }
    rec_ship_free(d->ship);
    d->ship = NULL;
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
        /* the flush first, as bind_finish's: runs of a batch SQLite rolled
         * back (now or earlier in the chunk) are not in the file, and the
         * writer must not count their results */
        ps_err err, cerr;
        int failed = rec_flush(w->dbs[i].db, &err);
        lua_Integer lost = (lua_Integer)rec_lost_runs(w->dbs[i].db);
        if (rec_close(w->dbs[i].db, &cerr) && !failed) {
            failed = 1;
            err = cerr;
        }
        /* a point's error, when there is one, is the chunk's */
        if (failed && lua_getfield(L, out, "error") != LUA_TSTRING) {
            lua_pushstring(L, err.msg);
            user_names(L, w);
            lua_setfield(L, out, "error");
        }
        if (failed)
            lua_pop(L, 1);
        lua_createtable(L, 0, 3);
        lua_pushinteger(L, lost);
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
    FILE *f = bytes ? fopen(tmp, "wb") : NULL;
    int wrote = f && fwrite(bytes, 1, n, f) == n;
    free(bytes);
    if (!f || fclose(f) || !wrote || rename(tmp, final))
        return -1;
    lua_getfield(L, out, "nested");
    int nested = !lua_isnil(L, -1);
    lua_settop(L, out - 1);
    return nested;
}

void pool_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        p += k;
        n -= (size_t)k;
    }
}

/* [-0, +0] (its worker record goes to the registry) */
void pool_worker_main(lua_State *L, int eval, const char *pdir, pid_t writer,
                      int task_fd, int done_fd, lua_Integer n, lua_Integer size)
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
        ssize_t k = read(task_fd, &c, sizeof c);
        if (k < 0 && errno == EINTR && !limit_stopped())
            continue;
        if (k != (ssize_t)sizeof c)
            break;
        lua_Integer first = (lua_Integer)c * size + 1;
        lua_Integer last = first + size - 1 < n ? first + size - 1 : n;
        int rc = run_chunk(L, eval, w, c, first, last);
        if (rc < 0) {
            status = 1;
            break;
        }
        pool_write_all(done_fd, &c, sizeof c);
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
