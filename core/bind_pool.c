/* core.sweep_map: a sweep's points evaluated by forked worker processes,
 * which inherit the Lua state (the scenario, its clusters and the run
 * function) and record into scratch databases; this process alone writes
 * the real ones, copying each chunk's runs in point order, so rows, run
 * ids and their order are those of --jobs 1. Chunks are handed out through
 * one pipe (4-byte reads are atomic), finished ones announced on another;
 * each chunk's results travel in a file next to its databases. */
#include "bind.h"

#include <dirent.h>
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

#include "limit.h"
#include "rec.h"

#define POOL_TYPE "pipesim.sweep_pool"
#define WORKER_KEY "pipesim.sweep_worker"
#define MAX_CHUNKS 4096 /* their ids fit in a pipe's 64 KiB buffer */
#define CHUNK_MAX 2048  /* points: big enough that a chunk's file is cheap */
#define MAX_DBS 16      /* databases one chunk may record into */
#define MAX_DEPTH 64    /* nesting of a result's tables */

/* ------------------------------------------------------------------ */
/* Results across processes                                            */
/* ------------------------------------------------------------------ */

/* A result file's bytes, built in memory and written at once (a stdio
 * call per value cost more than the value). oom: a grow failed. */
typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
    int oom;
    int seen;    /* stack index: the short strings written, to numbers */
    uint32_t ns; /* how many */
} wbuf;

static void put(wbuf *b, const void *v, size_t n)
{
    if (b->oom)
        return;
    if (n > b->cap - b->n) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap - b->n < n)
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, v, n);
    b->n += n;
}

static void put_tag(wbuf *b, char tag)
{
    put(b, &tag, 1);
}

/* Strings up to this length are sent once per file and then by their
 * number ('k'), the reader keeping each: the keys of a result, the same
 * in every result of a chunk, are most of its strings. */
#define SHORT_STRING 40

/* Writes the value at idx: nil, booleans, numbers, strings and tables of
 * them (a table inside itself is refused by MAX_DEPTH). Returns NULL, or
 * the name of the type it cannot write. */
static const char *put_value(wbuf *b, lua_State *L, int idx, int depth)
{
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TNIL: put_tag(b, 'n'); return NULL;
    case LUA_TBOOLEAN:
        put_tag(b, lua_toboolean(L, idx) ? 'T' : 'F');
        return NULL;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            int64_t v = lua_tointeger(L, idx);
            put_tag(b, 'i');
            put(b, &v, sizeof v);
        } else {
            double v = lua_tonumber(L, idx);
            put_tag(b, 'd');
            put(b, &v, sizeof v);
        }
        return NULL;
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        if (n <= SHORT_STRING) {
            lua_pushvalue(L, idx);
            if (lua_rawget(L, b->seen) == LUA_TNUMBER) {
                uint32_t k = (uint32_t)lua_tointeger(L, -1);
                lua_pop(L, 1);
                put_tag(b, 'k');
                put(b, &k, sizeof k);
                return NULL;
            }
            lua_pop(L, 1);
            /* numbered in order: the reader numbers them alike */
            lua_pushvalue(L, idx);
            lua_pushinteger(L, (lua_Integer)++b->ns);
            lua_rawset(L, b->seen);
        }
        uint64_t len = n;
        put_tag(b, 's');
        put(b, &len, sizeof len);
        put(b, s, n);
        return NULL;
    }
    case LUA_TTABLE:
        if (depth >= MAX_DEPTH)
            return "table nested too deep (or inside itself)";
        luaL_checkstack(L, 4, "sweep result");
        put_tag(b, 't');
        /* its sizes first, so that the reader makes the table in one go
         * (filled key by key it would rehash at every power of two) */
        {
            uint32_t size[2] = {0, 0}; /* list part, other entries */
            lua_Unsigned len = lua_rawlen(L, idx);
            size[0] = len < UINT32_MAX ? (uint32_t)len : UINT32_MAX;
            lua_pushnil(L);
            while (lua_next(L, idx)) {
                lua_pop(L, 1);
                if (size[1] < UINT32_MAX)
                    size[1]++;
            }
            size[1] = size[1] > size[0] ? size[1] - size[0] : 0;
            put(b, size, sizeof size);
        }
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            const char *bad = put_value(b, L, -2, depth + 1);
            if (!bad)
                bad = put_value(b, L, -1, depth + 1);
            if (bad) {
                lua_pop(L, 2);
                return bad;
            }
            lua_pop(L, 1);
        }
        put_tag(b, 'e');
        return NULL;
    default: return luaL_typename(L, idx);
    }
}

typedef struct reader {
    const unsigned char *p, *end;
    int seen;    /* stack index of the short strings read, in order */
    uint32_t ns; /* how many */
} reader;

static int take(reader *r, void *out, size_t n)
{
    if ((size_t)(r->end - r->p) < n)
        return -1;
    memcpy(out, r->p, n);
    r->p += n;
    return 0;
}

/* [-0, +(0|1)] Pushes the next value and returns 0; -1 (nothing pushed) on
 * a damaged file. */
static int get_value(lua_State *L, reader *r, int depth)
{
    unsigned char tag;
    if (take(r, &tag, 1) || depth > MAX_DEPTH)
        return -1;
    luaL_checkstack(L, 4, "sweep result");
    switch (tag) {
    case 'n': lua_pushnil(L); return 0;
    case 'T': lua_pushboolean(L, 1); return 0;
    case 'F': lua_pushboolean(L, 0); return 0;
    case 'i': {
        int64_t v;
        if (take(r, &v, sizeof v))
            return -1;
        lua_pushinteger(L, (lua_Integer)v);
        return 0;
    }
    case 'd': {
        double v;
        if (take(r, &v, sizeof v))
            return -1;
        lua_pushnumber(L, v);
        return 0;
    }
    case 'k': {
        uint32_t k;
        if (take(r, &k, sizeof k) || k < 1 || k > r->ns)
            return -1;
        lua_rawgeti(L, r->seen, (lua_Integer)k);
        return 0;
    }
    case 's': {
        uint64_t len;
        if (take(r, &len, sizeof len) || len > (uint64_t)(r->end - r->p))
            return -1;
        lua_pushlstring(L, (const char *)r->p, (size_t)len);
        r->p += len;
        if (len <= SHORT_STRING) { /* numbered as the writer did */
            lua_pushvalue(L, -1);
            lua_rawseti(L, r->seen, (lua_Integer)++r->ns);
        }
        return 0;
    }
    case 't': {
        uint32_t size[2];
        if (take(r, size, sizeof size))
            return -1;
        /* sizes beyond what the file holds are damage, not a request */
        size_t left = (size_t)(r->end - r->p);
        if (size[0] > left || size[1] > left)
            return -1;
        lua_createtable(L, (int)(size[0] > INT32_MAX ? 0 : size[0]),
                        (int)(size[1] > INT32_MAX ? 0 : size[1]));
        for (;;) {
            if (r->p < r->end && *r->p == 'e') {
                r->p++;
                return 0;
            }
            if (get_value(L, r, depth + 1)) {
                lua_pop(L, 1);
                return -1;
            }
            if (get_value(L, r, depth + 1)) {
                lua_pop(L, 2);
                return -1;
            }
            if (lua_isnil(L, -2)) {
                lua_pop(L, 3);
                return -1;
            }
            lua_settable(L, -3);
        }
    }
    default: return -1;
    }
}

/* ------------------------------------------------------------------ */
/* The worker side                                                     */
/* ------------------------------------------------------------------ */

typedef struct wdb {
    char *path; /* as ps.run's db field gave it; NULL: the session's */
    char file[4200];
    rec_db *db;
} wdb;

/* 1 from the fork on in a worker process */
static int forked;

int bind_sweep_forked(void)
{
    return forked;
}

/* Set in a worker process only (the registry's WORKER_KEY points to it). */
typedef struct worker {
    const char *dir;
    int32_t chunk;
    wdb dbs[MAX_DBS];
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

/* [-0, +0] raises when the scratch database cannot be opened */
rec_db *bind_sweep_database(lua_State *L, const char *path)
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
    if (w->ndbs == MAX_DBS)
        luaL_error(L, "a sweep's chunk records into more than %d databases",
                   MAX_DBS);
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
    w->ndbs++;
    return d->db;
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
        if (user && lua_type(L, -1) == LUA_TSTRING) {
            luaL_gsub(L, lua_tostring(L, -1), w->dbs[i].file, user);
            lua_remove(L, -2);
        }
    }
}

/* Evaluates chunk c's points first..last (eval's indices) and writes
 * { results = {...}, error = msg, dbs = { { path =, file = }, ... } } to
 * DIR/cC.res. Returns 0, or -1 when a stop was requested. [-0, +(0|?)]
 * pushes nothing when it returns 0; -1 leaves what it pushed (the worker
 * exits). */
static int run_chunk(lua_State *L, int eval, worker *w, int32_t c,
                     lua_Integer first, lua_Integer last)
{
    w->chunk = c;
    w->ndbs = 0;
    lua_createtable(L, 0, 3);
    int out = lua_gettop(L);
    lua_createtable(L, (int)(last - first + 1), 0);
    for (lua_Integer j = first; j <= last; j++) {
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
        lua_rawseti(L, -2, i + 1);
        free(w->dbs[i].path);
    }
    lua_setfield(L, out, "dbs");
    char tmp[4200], final[4200];
    snprintf(tmp, sizeof tmp, "%s/c%d.tmp", w->dir, (int)c);
    snprintf(final, sizeof final, "%s/c%d.res", w->dir, (int)c);
    lua_newtable(L);
    wbuf b = {.seen = lua_gettop(L)};
    const char *bad = put_value(&b, L, out, 0);
    if (bad) {
        /* a result that cannot travel: say so as the chunk's error */
        b.n = 0;
        b.ns = 0;
        lua_pop(L, 1);
        lua_pushfstring(L,
                        "a result holds a %s, which a worker process cannot "
                        "send back (return plain data, or run with --jobs 1)",
                        bad);
        lua_setfield(L, out, "error");
        lua_pushnil(L);
        lua_setfield(L, out, "results");
        lua_newtable(L);
        b.seen = lua_gettop(L);
        put_value(&b, L, out, 0);
    }
    lua_pop(L, 1); /* the strings */
    FILE *f = b.oom ? NULL : fopen(tmp, "wb");
    int wrote = f && fwrite(b.p, 1, b.n, f) == b.n;
    free(b.p);
    if (!f || fclose(f) || !wrote || rename(tmp, final))
        return -1;
    lua_settop(L, out - 1);
    return 0;
}

static void write_all(int fd, const void *buf, size_t n)
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

typedef struct pool pool;
static void pool_forget(pool *p);

/* A worker's life: chunks from task_fd until it is empty, each announced
 * on done_fd; never returns. Its Lua state is closed before _exit, so
 * that the worker frees what it allocated (valgrind checks workers too,
 * tests/run.sh); the finalizers of what it inherited leave the writer's
 * resources alone: the writer's SQLite connections are not touched
 * (bind_core.c db_gc) and the pool p forgets the writer's other workers
 * and scratch directory. [-0, +0] (its worker record goes to the
 * registry) */
static void worker_main(lua_State *L, int eval, pool *p, const char *pdir,
                        int task_fd, int done_fd, lua_Integer n,
                        lua_Integer size)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", pdir);
    pool_forget(p);
    worker *w = lua_newuserdatauv(L, sizeof *w, 0);
    memset(w, 0, sizeof *w);
    w->dir = dir;
    lua_setfield(L, LUA_REGISTRYINDEX, WORKER_KEY);
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
        if (run_chunk(L, eval, w, c, first, last)) {
            status = 1;
            break;
        }
        write_all(done_fd, &c, sizeof c);
    }
    fflush(NULL); /* what the run functions printed */
    close(task_fd);
    close(done_fd);
    lua_close(L);
    _exit(status);
}

/* ------------------------------------------------------------------ */
/* The writer side                                                     */
/* ------------------------------------------------------------------ */

struct pool {
    pid_t pids[1024];
    int npids;
    int done_fd;
    char dir[4096];
};

/* In a new worker: the pool's pids (its elder siblings), pipe and
 * directory are the writer's, not for this process's pool_close (the
 * pool's __gc at lua_close). */
static void pool_forget(pool *p)
{
    p->npids = 0;
    if (p->done_fd >= 0)
        close(p->done_fd);
    p->done_fd = -1;
    p->dir[0] = '\0';
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
    if (p->dir[0]) {
        DIR *d = opendir(p->dir);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char f[8192];
            snprintf(f, sizeof f, "%s/%s", p->dir, e->d_name);
            unlink(f);
        }
        if (d)
            closedir(d);
        rmdir(p->dir);
        p->dir[0] = '\0';
    }
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

/* Copies chunk c's databases into the real ones and appends its results
 * (ids renumbered) to the table at results; next is the index of its
 * first point there. Returns 0; 1 when the chunk ends in a point's error
 * (its message pushed); -1 with err filled on any other failure.
 * [-0, +(0|1|?)] nothing left on 0, the message on 1; -1 leaves what it
 * pushed (the caller raises err). */
static int take_chunk(lua_State *L, pool *p, int32_t c, int results,
                      lua_Integer next, ps_err *err)
{
    char file[4200];
    snprintf(file, sizeof file, "%s/c%d.res", p->dir, (int)c);
    FILE *f = fopen(file, "rb");
    if (!f)
        return ps_errf(err, "ps.sweep: a worker's results are missing");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    unsigned char *buf = size > 0 ? malloc((size_t)size) : NULL;
    int got = buf && fread(buf, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    lua_newtable(L);
    reader r = {buf, buf + (got ? size : 0), lua_gettop(L), 0};
    int ok = got && get_value(L, &r, 0) == 0;
    if (ok)
        lua_remove(L, -2); /* the strings */
    else
        lua_pop(L, 1);
    int bad = !ok || !lua_istable(L, -1);
    free(buf);
    unlink(file);
    if (bad)
        return ps_errf(err, "ps.sweep: a worker's results are damaged");
    int chunk = lua_gettop(L);
    lua_getfield(L, chunk, "dbs");
    int dbs = lua_gettop(L);
    lua_getfield(L, chunk, "results");
    int res = lua_gettop(L);
    lua_Integer ndbs = (lua_Integer)lua_rawlen(L, dbs);
    int64_t offset[MAX_DBS] = {0};
    lua_Integer lost[MAX_DBS] = {0}; /* results not to count, per database */
    for (lua_Integer i = 1; i <= ndbs && i <= MAX_DBS; i++) {
        lua_rawgeti(L, dbs, i);
        lua_getfield(L, -1, "lost");
        lost[i - 1] = lua_tointeger(L, -1);
        lua_pop(L, 1);
        lua_pushcfunction(L, open_target);
        lua_getfield(L, -2, "path");
        if (lua_pcall(L, 1, 1, 0) != LUA_OK)
            return ps_errf(err, "%s", lua_tostring(L, -1));
        rec_db *db = lua_touserdata(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, -1, "file");
        const char *src = lua_tostring(L, -1);
        rec_copy *cp = rec_copy_new(db, src, err);
        if (!cp)
            return PS_ERR;
        int rc = rec_begin(db, err) ||
                 rec_copy_runs(cp, 1, INT64_MAX, &offset[i - 1], err) ||
                 rec_commit(db, err);
        if (rc)
            rec_rollback(db);
        rec_copy_free(cp);
        unlink(src);
        lua_pop(L, 2);
        if (rc)
            return PS_ERR;
    }
    /* results: ids as the real database numbered them */
    lua_Integer nres =
        lua_istable(L, res) ? (lua_Integer)lua_rawlen(L, res) : 0;
    for (lua_Integer j = 1; j <= nres; j++) {
        lua_rawgeti(L, res, j);
        if (lua_getfield(L, -1, "id") == LUA_TNUMBER) {
            lua_Integer id = lua_tointeger(L, -1);
            lua_getfield(L, -2, "db");
            const char *path = lua_tostring(L, -1);
            for (lua_Integer i = 1; i <= ndbs && i <= MAX_DBS; i++) {
                lua_rawgeti(L, dbs, i);
                lua_getfield(L, -1, "path");
                const char *dp = lua_tostring(L, -1);
                int same = (!path && !dp) || (path && dp && !strcmp(path, dp));
                lua_pop(L, 2);
                if (same) {
                    lua_pushinteger(L, id + offset[i - 1]);
                    lua_setfield(L, -4, "id");
                    if (lost[i - 1] > 0)
                        lost[i - 1]--; /* rolled back in the worker */
                    else
                        bind_count_run(L);
                    break;
                }
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        lua_rawseti(L, results, next + j - 1);
    }
    lua_getfield(L, chunk, "error");
    if (lua_isstring(L, -1)) {
        lua_replace(L, chunk);
        lua_settop(L, chunk);
        return 1;
    }
    lua_settop(L, chunk - 1);
    return 0;
}

/* core.sweep_map(n, jobs, eval) -> { eval(1), ..., eval(n) }, evaluated
 * by jobs worker processes; raises the first failing point's error after
 * recording the runs before it, as --jobs 1 does. [-0, +1] returns the
 * results table */
int bind_sweep_map(lua_State *L)
{
    lua_Integer n = luaL_checkinteger(L, 1);
    lua_Integer jobs = luaL_checkinteger(L, 2);
    luaL_checktype(L, 3, LUA_TFUNCTION);
    lua_settop(L, 3);
    /* chunks of at most CHUNK_MAX points, about 8 per worker */
    lua_Integer size = (n + jobs * 8 - 1) / (jobs * 8);
    if (size > CHUNK_MAX)
        size = CHUNK_MAX;
    if (size < (n + MAX_CHUNKS - 1) / MAX_CHUNKS)
        size = (n + MAX_CHUNKS - 1) / MAX_CHUNKS;
    if (size < 1)
        size = 1;
    int32_t nchunks = (int32_t)((n + size - 1) / size);
    if (jobs > nchunks)
        jobs = nchunks;

    pool *p = lua_newuserdatauv(L, sizeof *p, 0); /* 4 */
    memset(p, 0, sizeof *p);
    p->done_fd = -1;
    if (luaL_newmetatable(L, POOL_TYPE)) {
        lua_pushcfunction(L, pool_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    const char *tmp = getenv("TMPDIR");
    snprintf(p->dir, sizeof p->dir, "%s/pipesim-sweep.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(p->dir)) {
        p->dir[0] = '\0';
        return luaL_error(L, "ps.sweep: cannot create a scratch directory: %s",
                          strerror(errno));
    }
    int task[2], done[2];
    if (pipe(task))
        return luaL_error(L, "ps.sweep: pipe: %s", strerror(errno));
    if (pipe(done)) {
        close(task[0]);
        close(task[1]);
        return luaL_error(L, "ps.sweep: pipe: %s", strerror(errno));
    }
    p->done_fd = done[0];
    for (int32_t c = 0; c < nchunks; c++)
        write_all(task[1], &c, sizeof c);
    close(task[1]);
    lua_createtable(L, (int)n, 0); /* 5: the results */
    bind_progress_sweep(L, 0, (long)n);
    fflush(NULL); /* or the children print it again */
    for (lua_Integer k = 0; k < jobs; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            forked = 1;
            worker_main(L, 3, p, p->dir, task[0], done[1], n, size);
        }
        if (pid < 0)
            break;
        p->pids[p->npids++] = pid;
    }
    close(task[0]);
    close(done[1]);
    if (p->npids == 0) {
        pool_close(p);
        return luaL_error(L, "ps.sweep: cannot start a worker process: %s",
                          strerror(errno));
    }

    unsigned char *ready = calloc((size_t)nchunks, 1);
    if (!ready) {
        pool_close(p);
        return luaL_error(L, "ps.sweep: out of memory");
    }
    ps_err err = {0};
    int failed = 0; /* 1: a point's error is on the stack; -1: err */
    int32_t next = 0;
    while (next < nchunks && !failed) {
        if (limit_stopped())
            break;
        struct pollfd pf = {.fd = p->done_fd, .events = POLLIN};
        int pr = poll(&pf, 1, 200);
        if (pr <= 0)
            continue; /* a signal, or a wake-up to check for a stop */
        int32_t c;
        ssize_t k = read(p->done_fd, &c, sizeof c);
        if (k < 0 && errno == EINTR)
            continue;
        if (k != (ssize_t)sizeof c || c < 0 || c >= nchunks) {
            ps_errf(&err, "ps.sweep: a worker process ended before its "
                          "points were done (killed, or out of memory?)");
            failed = -1;
            break;
        }
        ready[c] = 1;
        while (next < nchunks && ready[next] && !failed) {
            int rc =
                take_chunk(L, p, next, 5, (lua_Integer)next * size + 1, &err);
            failed = rc > 0 ? 1 : rc < 0 ? -1 : 0;
            next++;
            lua_Integer doneb = (lua_Integer)next * size;
            bind_progress_sweep(L, (long)(doneb < n ? doneb : n), (long)n);
        }
    }
    free(ready);
    if (next == nchunks && !failed) {
        /* every worker has read its last task and exits, with status 0:
         * anything else (a crash at its end, valgrind's --error-exitcode
         * for a leak, tests/run.sh) is reported, after its runs are in */
        for (int i = 0; i < p->npids; i++) {
            int st = 0;
            while (waitpid(p->pids[i], &st, 0) < 0 && errno == EINTR)
                ;
            p->pids[i] = 0;
            if (!failed && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
                ps_errf(&err,
                        "ps.sweep: a worker process ended with %s %d after "
                        "its points were done",
                        WIFEXITED(st) ? "status" : "signal",
                        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
                failed = -1;
            }
        }
    }
    pool_close(p);
    bind_progress_sweep(L, 0, 0);
    if (limit_stopped())
        return bind_raise_stop(L);
    if (failed > 0)
        return lua_error(L); /* the point's message, on top */
    if (failed < 0)
        return bind_raise(L, &err);
    lua_settop(L, 5);
    return 1;
}
