/* The scenario sandbox: scenarios are shared like configuration files, so
 * by default they run as Redis runs Lua: no process execution, native code,
 * binary chunks, file writes or debug access, and Lua files are loaded only
 * from the scenario's own directory and pipesim's lua/. `--unsafe` skips
 * bind_sandbox. A refused call raises at the calling line, naming the
 * function and --unsafe. */
/* realpath is XSI: ask for it before the first system header */
#if !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700
#endif
#include "bind/bind.h"

#include <lauxlib.h>
#include <limits.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/limit.h"
#include "run/version.h"

#define ALLOWED_KEY "pipesim.sandbox.dirs"   /* registry: array of real dirs */
#define DB_DIRS_KEY "pipesim.sandbox.dbdirs" /* where databases may go */
#define UNSAFE_HINT                                                            \
    "is not allowed in a sandboxed scenario (run with --unsafe to allow it)"

/* --- positions and refusals --- */

/* [-0, +1] pushes "src:line: " of the innermost Lua function on the stack
 * (the scenario line that called into C), or "" when there is none. */
static void where_lua(lua_State *L)
{
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
            lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
            return;
        }
    }
    lua_pushliteral(L, "");
}

/* [-0, +0] Raises "<where>what is not allowed in a sandboxed scenario ...". */
static int refuse_named(lua_State *L, const char *what)
{
    where_lua(L);
    lua_pushfstring(L, "%s " UNSAFE_HINT, what);
    lua_concat(L, 2);
    return lua_error(L);
}

/* [-0, +0] A refused function; upvalue 1 is its name ("os.execute"). */
static int refuse(lua_State *L)
{
    return refuse_named(L, lua_tostring(L, lua_upvalueindex(1)));
}

/* [-0, +0] sets t[key] (t at idx) to a refuser named prefix.key. */
static void refuse_field(lua_State *L, int idx, const char *prefix,
                         const char *key)
{
    idx = lua_absindex(L, idx);
    lua_pushfstring(L, "%s.%s", prefix, key);
    lua_pushcclosure(L, refuse, 1);
    lua_setfield(L, idx, key);
}

/* --- where Lua files may come from --- */

/* [-0, +0] 1 when real (a resolved path) lies inside one of the directories
 * listed under registry[key]. */
static int real_inside(lua_State *L, const char *real, const char *key)
{
    size_t rl = strlen(real);
    int ok = 0;
    lua_getfield(L, LUA_REGISTRYINDEX, key);
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; !ok && i <= n; i++) {
        lua_rawgeti(L, -1, i);
        size_t dl;
        const char *dir = lua_tolstring(L, -1, &dl);
        ok = dir && rl > dl && strncmp(real, dir, dl) == 0 &&
             (real[dl] == '/' || dir[dl - 1] == '/');
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return ok;
}

/* [-0, +0] 1 when path resolves (symlinks and ".." included) inside one of the
 * directories Lua files may come from. */
static int path_allowed(lua_State *L, const char *path)
{
    char real[PATH_MAX];
    return realpath(path, real) && real_inside(L, real, ALLOWED_KEY);
}

/* 1 when the file holds a precompiled chunk (after an optional first line
 * starting with '#', as luaL_loadfilex skips it). */
static int file_is_binary(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    int c = getc(f);
    if (c == '#') {
        while (c != EOF && c != '\n')
            c = getc(f);
        if (c == '\n')
            c = getc(f);
    }
    fclose(f);
    return c == LUA_SIGNATURE[0];
}

/* [-0, +0] Raises when fname holds a precompiled chunk (fn loads it). */
static void check_text(lua_State *L, const char *fn, const char *fname)
{
    if (file_is_binary(fname))
        refuse_named(
            L, lua_pushfstring(L, "%s of a binary chunk ('%s')", fn, fname));
}

/* [-0, +0] Raises unless fname (NULL: standard input) may be loaded as Lua by
 * fn. */
static void check_lua_file(lua_State *L, const char *fn, const char *fname)
{
    if (!fname)
        return;
    check_text(L, fn, fname);
    FILE *probe = fopen(fname, "r");
    if (!probe)
        return; /* luaL_loadfilex reports "cannot open" with the reason */
    fclose(probe);
    if (!path_allowed(L, fname))
        refuse_named(L, lua_pushfstring(L,
                                        "%s of '%s' (outside the scenario's "
                                        "directory and pipesim's lua/)",
                                        fn, fname));
}

/* [-n, +(1|2)] loadfile([filename [, mode [, env]]]): text chunks from allowed
 * files. */
static int sb_loadfile(lua_State *L)
{
    const char *fname = luaL_optstring(L, 1, NULL);
    int env = !lua_isnone(L, 3) ? 3 : 0;
    check_lua_file(L, "loadfile", fname);
    if (luaL_loadfilex(L, fname, "t") != LUA_OK) {
        lua_pushnil(L);
        lua_insert(L, -2);
        return 2;
    }
    if (env) {
        lua_pushvalue(L, env);
        if (!lua_setupvalue(L, -2, 1))
            lua_pop(L, 1);
    }
    return 1;
}

/* [-n, +m] dofile([filename]) */
static int sb_dofile(lua_State *L)
{
    const char *fname = luaL_optstring(L, 1, NULL);
    lua_settop(L, 1);
    check_lua_file(L, "dofile", fname);
    if (luaL_loadfilex(L, fname, "t") != LUA_OK)
        return lua_error(L);
    lua_call(L, 0, LUA_MULTRET);
    return lua_gettop(L) - 1;
}

/* [-n, +m] load(chunk [, chunkname [, mode [, env]]]) with mode forced to "t":
 * Lua 5.4 does not verify bytecode, so a crafted chunk can crash pipesim.
 * Upvalue 1 is the original load. */
static int sb_load(lua_State *L)
{
    size_t len;
    const char *s =
        lua_type(L, 1) == LUA_TSTRING ? lua_tolstring(L, 1, &len) : NULL;
    if (s && len > 0 && s[0] == LUA_SIGNATURE[0])
        return refuse_named(L, "load of a binary chunk");
    int n = lua_gettop(L);
    if (n < 1)
        n = 1;
    lua_settop(L, n < 3 ? 3 : n);
    lua_pushliteral(L, "t");
    lua_replace(L, 3);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* [-n, +m] Walks the templates of package[field] for name, as
 * package.searchpath does. For each readable candidate calls found(L, file)
 * (file at the top of the stack), which returns >= 0 to end the search with
 * that many results. Otherwise returns 1 with "no file 'a'\n\tno file 'b'"
 * pushed, the message a searcher returns (require adds "\n\t" before it). */
static int search_path(lua_State *L, const char *name, const char *field,
                       int (*found)(lua_State *L, const char *file))
{
    enum { NAME = 1, PATH, MOD, TRIED, FILE_ };
    lua_settop(L, NAME);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, LUA_LOADLIBNAME);
    lua_getfield(L, -1, field);
    lua_replace(L, PATH);
    lua_settop(L, PATH);
    const char *path = lua_tostring(L, PATH);
    if (!path)
        return luaL_error(L, "'package.%s' must be a string", field);
    luaL_gsub(L, name, ".", LUA_DIRSEP); /* MOD */
    lua_pushliteral(L, "");              /* TRIED */
    for (const char *p = path; *p;) {
        const char *e = strchr(p, *LUA_PATH_SEP);
        size_t tl = e ? (size_t)(e - p) : strlen(p);
        lua_pushlstring(L, p, tl);
        p += tl + (e != NULL);
        if (tl == 0) {
            lua_settop(L, TRIED);
            continue;
        }
        luaL_gsub(L, lua_tostring(L, -1), LUA_PATH_MARK, lua_tostring(L, MOD));
        lua_replace(L, FILE_);
        lua_settop(L, FILE_);
        const char *file = lua_tostring(L, FILE_);
        FILE *f = fopen(file, "r");
        if (f) {
            fclose(f);
            int n = found(L, file);
            if (n >= 0)
                return n;
            lua_settop(L, FILE_);
        }
        lua_pushfstring(L, "%s\n\tno file '%s'", lua_tostring(L, TRIED), file);
        lua_replace(L, TRIED);
        lua_settop(L, TRIED);
    }
    const char *tried = lua_tostring(L, TRIED);
    lua_pushstring(L, tried[0] ? tried + 2 : tried);
    return 1;
}

/* [-0, +2] A Lua file found: load it when allowed; refuse it otherwise rather
 * than go on to a later template, so a module is never silently replaced. */
static int found_lua(lua_State *L, const char *file)
{
    const char *name = lua_tostring(L, 1);
    if (!path_allowed(L, file))
        return refuse_named(
            L, lua_pushfstring(L,
                               "require '%s' from '%s' (outside the "
                               "scenario's directory and pipesim's lua/)",
                               name, file));
    /* the searcher found the file and its path is allowed (one realpath):
     * only the binary check of check_lua_file is left */
    check_text(L, "require", file);
    if (bind_load_module(L, name, file, "t") != LUA_OK)
        return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s",
                          name, file, lua_tostring(L, -1));
    lua_pushstring(L, file); /* the loader, then its file */
    return 2;
}

/* [-0, +0] raises */
static int found_native(lua_State *L, const char *file)
{
    return refuse_named(L, lua_pushfstring(L,
                                           "require of native module '%s' "
                                           "('%s')",
                                           lua_tostring(L, 1), file));
}

/* [-n, +m] package.searchers[2]: Lua files from package.path (found_lua). */
static int sb_search_lua(lua_State *L)
{
    return search_path(L, luaL_checkstring(L, 1), "path", found_lua);
}

/* [-n, +m] package.searchers[3]: a native module found on package.cpath is
 * refused by name instead of reported missing. */
static int sb_search_native(lua_State *L)
{
    return search_path(L, luaL_checkstring(L, 1), "cpath", found_native);
}

/* --- files: read-only --- */

/* [-n, +m] io.open(name [, mode]) for reading only; upvalue 1 is the
 * original. */
static int sb_io_open(lua_State *L)
{
    const char *mode = luaL_optstring(L, 2, "r");
    if (strcmp(mode, "r") != 0 && strcmp(mode, "rb") != 0)
        return refuse_named(L,
                            lua_pushfstring(L, "io.open with mode '%s'", mode));
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* [-n, +m] io.output([file]): a file name would open it for writing; an open
 * file (io.stdout) is fine. Upvalue 1 is the original. */
static int sb_io_output(lua_State *L)
{
    if (lua_type(L, 1) == LUA_TSTRING)
        return refuse_named(L, "io.output to a file name");
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* [-n, +m] os.setlocale(locale [, category]): changing it would change how the
 * C core prints numbers into the database; querying is fine. */
static int sb_setlocale(lua_State *L)
{
    if (!lua_isnoneornil(L, 1))
        return refuse_named(L, "os.setlocale with a locale");
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* [-0, +0] replaces lib.name (lib at idx) by fn, with the original as
 * upvalue 1. */
static void wrap_field(lua_State *L, int idx, const char *name,
                       lua_CFunction fn)
{
    idx = lua_absindex(L, idx);
    lua_getfield(L, idx, name);
    lua_pushcclosure(L, fn, 1);
    lua_setfield(L, idx, name);
}

/* [-0, +0] A database path of ps.run{db = ...}: it must resolve inside the
 * working directory, the scenario's or the session database's (or below one).
 * Raises, without a position (the Lua layer adds the scenario's). */
void bind_sandbox_db(lua_State *L, const char *path)
{
    lua_getfield(L, LUA_REGISTRYINDEX, DB_DIRS_KEY);
    int sandboxed = lua_istable(L, -1);
    lua_pop(L, 1);
    if (!sandboxed)
        return;
    char real[PATH_MAX];
    struct stat st;
    int ok;
    if (realpath(path, real)) {
        ok = real_inside(L, real, DB_DIRS_KEY); /* symlinks resolved */
    } else if (lstat(path, &st) == 0) {
        ok = 0; /* a dangling symlink: SQLite would create its target */
    } else {
        const char *slash = strrchr(path, '/');
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path + 1) : 1,
                 slash ? path : ".");
        if (!realpath(dir, real))
            return; /* a missing directory: rec_open says so */
        size_t n = strlen(real);
        if (n + 1 < sizeof real && real[n - 1] != '/') {
            real[n] = '/'; /* the directory itself is inside itself */
            real[n + 1] = '\0';
        }
        ok = real_inside(L, real, DB_DIRS_KEY);
    }
    if (!ok) {
        lua_pushfstring(
            L,
            "db '%s' (outside the working directory and the "
            "scenario's and -o database's directories) " UNSAFE_HINT,
            path);
        lua_error(L);
    }
}

/* [-0, +0] appends the real path of dir to the list under key. */
static void allow_in(lua_State *L, const char *key, const char *dir)
{
    char real[PATH_MAX];
    if (!realpath(dir, real))
        return;
    lua_getfield(L, LUA_REGISTRYINDEX, key);
    lua_pushstring(L, real);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
}

/* [-0, +0] */
static void allow_dir(lua_State *L, const char *dir)
{
    allow_in(L, ALLOWED_KEY, dir);
}

/* [-0, +0] the directory part of path ("." without one) */
static void allow_parent(lua_State *L, const char *key, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        allow_in(L, key, ".");
        return;
    }
    lua_pushlstring(L, path, (size_t)(slash - path + 1));
    allow_in(L, key, lua_tostring(L, -1));
    lua_pop(L, 1);
}

/* [-0, +0] */
void bind_sandbox(lua_State *L, const char *luadir, const char *scenario,
                  const char *db)
{
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, ALLOWED_KEY);
    allow_dir(L, luadir);
    allow_parent(L, ALLOWED_KEY, scenario);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, DB_DIRS_KEY);
    allow_in(L, DB_DIRS_KEY, ".");
    allow_parent(L, DB_DIRS_KEY, scenario);
    allow_parent(L, DB_DIRS_KEY, db);

    lua_pushglobaltable(L);
    wrap_field(L, -1, "load", sb_load);
    lua_pushcfunction(L, sb_loadfile);
    lua_setfield(L, -2, "loadfile");
    lua_pushcfunction(L, sb_dofile);
    lua_setfield(L, -2, "dofile");

    lua_getfield(L, -1, "os");
    static const char *const os_refused[] = {"execute", "remove", "rename",
                                             "tmpname", "exit",   NULL};
    for (const char *const *k = os_refused; *k; k++)
        refuse_field(L, -1, "os", *k);
    wrap_field(L, -1, "setlocale", sb_setlocale);
    lua_pop(L, 1);

    lua_getfield(L, -1, "io");
    refuse_field(L, -1, "io", "popen");
    refuse_field(L, -1, "io", "tmpfile");
    wrap_field(L, -1, "open", sb_io_open);
    wrap_field(L, -1, "output", sb_io_output);
    lua_pop(L, 1);

    /* debug: traceback only; every other function refuses by name */
    lua_getfield(L, -1, "debug");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING &&
            strcmp(lua_tostring(L, -1), "traceback") != 0)
            refuse_field(L, -2, "debug", lua_tostring(L, -1));
    }
    lua_pop(L, 1);

    /* package: no native code; Lua files through sb_searcher */
    lua_getfield(L, -1, "package");
    refuse_field(L, -1, "package", "loadlib");
    lua_getfield(L, -1, "searchers");
    lua_rawgeti(L, -1, 1); /* the preload searcher: pipesim.core */
    lua_createtable(L, 3, 0);
    lua_insert(L, -2);
    lua_rawseti(L, -2, 1);
    lua_pushcfunction(L, sb_search_lua);
    lua_rawseti(L, -2, 2);
    lua_pushcfunction(L, sb_search_native);
    lua_rawseti(L, -2, 3);
    lua_setfield(L, -3, "searchers");
    lua_pop(L, 3);
}

/* The chunk in bytes as luaL_loadfilex would see the file: a UTF-8 byte
 * order mark skipped, a first line starting with '#' (a "#!" line)
 * replaced by its newline, so that line numbers stay the file's.
 * Returns where the chunk starts (*line: 1 when that newline must be
 * given first). */
static const char *chunk_start(const char *b, size_t n, int *line)
{
    const char *p = b, *end = b + n;
    *line = 0;
    if (n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    if (p < end && *p == '#') {
        while (p < end && *p != '\n')
            p++;
        *line = 1; /* the newline, kept by the caller */
    }
    return p;
}

/* [-0, +1] pushes the chunk or the message, as luaL_loadfilex; the
 * scenario is read once, whole (a pipe or /dev/stdin can be read only
 * once, a FIFO waits for its writer until a stop), and its bytes are the
 * scenario's version (their hash under BIND_SOURCE_HASH_KEY) */
int bind_load_scenario(lua_State *L, const char *path, int sandboxed)
{
    char *bytes;
    size_t n;
    ps_err err;
    if (limit_read_file(path, &bytes, &n, &err)) {
        lua_pushstring(L, err.msg);
        return LUA_ERRFILE;
    }
    /* the scenario's version (bind/sweep.c, run/version.h) */
    lua_pushinteger(L, (lua_Integer)run_fnv1a(RUN_FNV1A_BASIS, bytes, n));
    lua_setfield(L, LUA_REGISTRYINDEX, BIND_SOURCE_HASH_KEY);
    int line;
    const char *p = chunk_start(bytes, n, &line), *end = bytes + n;
    /* a binary chunk starts after the '#' line's newline, text keeps it */
    const char *code = line && p < end ? p + 1 : p;
    if (code < end && *code == LUA_SIGNATURE[0]) {
        if (sandboxed) {
            limit_free(bytes);
            lua_pushfstring(L,
                            "%s: a precompiled (binary) chunk " UNSAFE_HINT
                            ": run its source",
                            path);
            return LUA_ERRSYNTAX;
        }
        p = code;
    }
    size_t rest = (size_t)(end - p);
    lua_pushfstring(L, "@%s", path);
    int status = luaL_loadbufferx(L, p, rest, lua_tostring(L, -1),
                                  sandboxed ? "t" : "bt");
    lua_remove(L, -2);
    limit_free(bytes);
    return status;
}
