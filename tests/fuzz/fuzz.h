/* Shared by the libFuzzer targets in tests/fuzz/: a reader that turns the
 * fuzzer's bytes into choices, temporary files, and a Lua state with the
 * pipesim library loaded as `pipesim run` loads it (no sandbox: the
 * targets run no script of the fuzzer's, only library calls on its data).
 * `make fuzz` builds each target with clang -fsanitize=fuzzer,address,
 * undefined; a crash, a leak or a hang is a failure. */
#ifndef PS_FUZZ_H
#define PS_FUZZ_H

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bind/bind.h"

/* The fuzzer's bytes, consumed front to back; 0 once they run out, so
 * every input decodes to something. */
typedef struct fuzz_in {
    const uint8_t *p;
    size_t n;
} fuzz_in;

static inline unsigned fuzz_byte(fuzz_in *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

/* A NUL-terminated malloc'd copy of data (the parsers take C strings);
 * NULL when out of memory. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s) {
        memcpy(s, data, size);
        s[size] = '\0';
    }
    return s;
}

/* The directory for temporary files: /dev/shm when there is one (the
 * targets write a file per input; memory is much faster than a disk), else
 * $TMPDIR or /tmp. */
static inline const char *fuzz_tmpdir(void)
{
    if (access("/dev/shm", W_OK) == 0)
        return "/dev/shm";
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

/* A per-process temporary path named after tag (static storage). */
static inline const char *fuzz_path(const char *tag)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/pipesim-fuzz-%ld-%s", fuzz_tmpdir(),
             (long)getpid(), tag);
    return path;
}

/* Writes data to fuzz_path(tag) and returns that path, or NULL on
 * failure. */
static inline const char *fuzz_file(const char *tag, const uint8_t *data,
                                    size_t size)
{
    const char *path = fuzz_path(tag);
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    int ok = fwrite(data, 1, size, f) == size;
    ok = fclose(f) == 0 && ok;
    return ok ? path : NULL;
}

/* Removes path and SQLite's -wal / -shm / -journal files beside it. */
static inline void fuzz_unlink_db(const char *path)
{
    static const char *const ext[] = {"", "-wal", "-shm", "-journal"};
    char p[300];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", path, ext[i]);
        unlink(p);
    }
}

/* Gives up on Lua code that runs too long (none should: the targets run
 * only library code on bounded data). */
static void fuzz_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    luaL_error(L, "fuzz: instruction budget exhausted");
}

/* A Lua state with the standard libraries and `ps = require "pipesim"`,
 * recording into db_path; the library directory is $PIPESIM_LUA or
 * ./lua (make fuzz runs from the checkout). Aborts when the library does
 * not load: every input would be wasted. */
static inline lua_State *fuzz_lua(const char *db_path)
{
    static bind_session s;
    const char *luadir = getenv("PIPESIM_LUA");
    s.default_db = db_path;
    s.scenario = "fuzz";
    lua_State *L = luaL_newstate();
    if (!L)
        abort();
    luaL_openlibs(L);
    bind_setup(L, luadir && *luadir ? luadir : "lua", &s);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "pipesim");
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        fprintf(stderr, "fuzz: require \"pipesim\": %s\n", lua_tostring(L, -1));
        abort();
    }
    lua_setglobal(L, "ps");
    /* 200 million instructions: far more than any input needs */
    lua_sethook(L, fuzz_hook, LUA_MASKCOUNT, 200000000);
    return L;
}

/* A Lua state kept for up to `uses` inputs, holding the function that
 * the chunk `driver` returns; making a state (require "pipesim") costs
 * more than most inputs, so it is reused, and remade often enough that a
 * crash found after a few inputs reproduces from its input alone. */
typedef struct fuzz_state {
    lua_State *L;
    int used, uses;
    char db[256]; /* the state's default database, removed with it */
} fuzz_state;

static inline void fuzz_lua_close(lua_State *L);
static inline void fuzz_unlink_db(const char *path);

static fuzz_state *fuzz_current; /* one per target */

static void fuzz_state_exit(void)
{
    if (fuzz_current && fuzz_current->L) {
        fuzz_lua_close(fuzz_current->L);
        fuzz_unlink_db(fuzz_current->db);
        fuzz_current->L = NULL;
    }
}

/* [-0, +1] pushes the driver function of a state ready for one more
 * input. */
static inline lua_State *fuzz_state_get(fuzz_state *fs, const char *tag,
                                        const char *driver)
{
    if (fs->L && fs->used >= fs->uses) {
        fuzz_lua_close(fs->L);
        fuzz_unlink_db(fs->db);
        fs->L = NULL;
    }
    if (!fs->L) {
        static int registered;
        if (!registered) /* the last state's database goes at exit */
            registered = atexit(fuzz_state_exit) == 0;
        fuzz_current = fs;
        snprintf(fs->db, sizeof fs->db, "%s", fuzz_path(tag));
        fs->L = fuzz_lua(fs->db);
        fs->used = 0;
        if (luaL_loadstring(fs->L, driver) != LUA_OK ||
            lua_pcall(fs->L, 0, 1, 0) != LUA_OK) {
            fprintf(stderr, "driver: %s\n", lua_tostring(fs->L, -1));
            abort();
        }
        lua_setfield(fs->L, LUA_REGISTRYINDEX, "fuzz.driver");
    }
    fs->used++;
    lua_getfield(fs->L, LUA_REGISTRYINDEX, "fuzz.driver");
    return fs->L;
}

/* After an input: a full collection, so that the input's memory is freed
 * before it ends (libFuzzer scans for leaks after an input that allocated
 * more than it freed, and that scan costs more than the input). */
static inline void fuzz_state_done(fuzz_state *fs)
{
    lua_settop(fs->L, 0);
    lua_gc(fs->L, LUA_GCCOLLECT, 0);
}

/* Commits and closes what the state opened, then the state. */
static inline void fuzz_lua_close(lua_State *L)
{
    long runs;
    const char *db;
    ps_err err;
    bind_finish(L, &runs, &db, &err);
    lua_close(L);
}

#endif
