/* Limits on the Lua side: the counting allocator that puts Lua's heap in
 * the --max-memory budget, the hook that stops a running scenario (signal,
 * --timeout, memory) at its next instruction, and the scenario line the
 * stop message names. No hook runs until a stop is requested: the signal
 * handler arms it, as lua.c does for Ctrl-C. */
/* realpath is XSI: ask for it before the first system header */
#if !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700
#endif
#include "bind/bind.h"

#include <lauxlib.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"

/* A request this large is never a Lua stack reallocation (at most
 * LUAI_MAXSTACK = 1e6 slots of 16 bytes), during which the stack could not
 * be walked: the allocator may read the position before refusing it. */
#define BIG_REQUEST ((size_t)32 << 20)
/* Smaller requests past the budget are granted up to this much more, so
 * that the hook raises the error at the next instruction, with the line
 * (Lua does not call a message handler for a memory error). */
#define OVERDRAFT ((size_t)64 << 20)

static lua_State *main_L;             /* NULL outside bind_limits..end */
static lua_State *volatile running_L; /* the coroutine resumed, if any */
static char luadir_real[PATH_MAX];

/* --- positions --- */

/* 1 when a chunk's source ("@path") is a file of pipesim's lua/. */
static int in_luadir(const char *source)
{
    char real[PATH_MAX];
    if (source[0] != '@' || !luadir_real[0] || !realpath(source + 1, real))
        return 0;
    size_t n = strlen(luadir_real);
    return strncmp(real, luadir_real, n) == 0 && real[n] == '/';
}

/* [-0, +0] "src:line: " of the innermost Lua line outside pipesim's own lua/
 * (the scenario's), else of the innermost Lua line, else "". Reads the stack
 * only: safe inside the allocator (see BIG_REQUEST). */
static void where_scenario(lua_State *L, char *buf, size_t size)
{
    lua_Debug ar;
    buf[0] = '\0';
    for (int level = 0; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0)
            continue;
        int lib = in_luadir(ar.source);
        if (!lib || !buf[0])
            snprintf(buf, size, "%s:%d: ", ar.short_src, ar.currentline);
        if (!lib)
            return;
    }
}

/* [-0, +0] */
static void note_where(lua_State *L)
{
    if (L && !limit_has_where()) {
        char pos[256];
        where_scenario(L, pos, sizeof pos);
        limit_note_where(pos);
    }
}

/* [-0, +1] raises the message it pushes */
int bind_raise_stop(lua_State *L)
{
    char msg[512];
    note_where(L);
    lua_pushstring(L, limit_message(msg, sizeof msg));
    return lua_error(L);
}

/* --- the stop hook --- */

/* [-0, +0] raises once stopped */
static void stop_hook(lua_State *L, lua_Debug *ar)
{
    if (!limit_stopped())
        return;
    /* a C function runs to its end (the next Lua instruction raises):
     * pipesim's own finalizers still free what they hold */
    if (ar->event == LUA_HOOKCALL && lua_getinfo(L, "S", ar) &&
        ar->what[0] == 'C')
        return;
    bind_raise_stop(L);
}

/* limit's on_stop: async-signal-safe (Lua documents lua_sethook as safe to
 * call from a signal handler). Every instruction then raises, so a
 * scenario's pcall cannot carry on past a limit. */
static void arm(void)
{
    lua_State *m = main_L, *r = running_L;
    if (m)
        lua_sethook(m, stop_hook, LUA_MASKCALL | LUA_MASKCOUNT, 1);
    if (r)
        lua_sethook(r, stop_hook, LUA_MASKCALL | LUA_MASKCOUNT, 1);
}

/* [-n, +m] coroutine.resume and the functions of coroutine.wrap, through which
 * the running coroutine is known to arm(). Upvalue 1 is the original, upvalue
 * 2 (wrap) the coroutine. */
static int resume_with(lua_State *L, lua_State *co, int wrapped)
{
    lua_State *prev = running_L;
    if (co) {
        running_L = co;
        if (limit_stopped())
            arm();
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    int status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    running_L = prev;
    if (status != LUA_OK) {
        /* as coroutine.wrap does: prefix the caller's position, which the
         * original found us at instead */
        if (wrapped && status != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
            luaL_where(L, 1);
            lua_insert(L, -2);
            lua_concat(L, 2);
        }
        return lua_error(L);
    }
    return lua_gettop(L);
}

/* [-n, +m] as coroutine.resume */
static int co_resume(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTHREAD);
    return resume_with(L, lua_tothread(L, 1), 0);
}

/* [-n, +m] as the function coroutine.wrap returns */
static int co_wrapped(lua_State *L)
{
    return resume_with(L, lua_tothread(L, lua_upvalueindex(2)), 1);
}

/* [-n, +1] as coroutine.wrap */
static int co_wrap(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1); /* the original wrapper function */
    if (!lua_getupvalue(L, -1, 1))     /* its coroutine */
        lua_pushnil(L);
    lua_pushcclosure(L, co_wrapped, 2);
    return 1;
}

/* --- the allocator --- */

static void *l_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    size_t old = ptr ? osize : 0; /* without ptr, osize is a type tag */
    if (nsize == 0) {
        free(ptr);
        limit_uncharge(old);
        return NULL;
    }
    if (nsize > old && limit_charge(nsize - old)) {
        size_t grow = nsize - old, budget = limit_memory();
        if (grow >= BIG_REQUEST) {
            note_where(running_L ? running_L : main_L);
            return NULL;
        }
        if (limit_used() + grow > budget + OVERDRAFT)
            return NULL; /* the hook had its chance: Lua's own error */
        limit_force(grow);
    }
    void *q = realloc(ptr, nsize);
    if (!q) {
        if (nsize > old)
            limit_uncharge(nsize - old);
        return NULL;
    }
    if (nsize < old)
        limit_uncharge(old - nsize);
    return q;
}

/* [-0, +0] */
static int panic(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "pipesim: unprotected Lua error: %s\n",
            msg ? msg : "(not a string)");
    return 0;
}

/* --- warnings: errors in finalizers --- */

/* Lua reports an error in a __gc metamethod as a warning, "error in __gc
 * (msg)", in pieces, and goes on; with no warning function (lua_newstate
 * sets none) it is lost. The first such error is kept for the command
 * line, which fails the run with it (bind_gc_error); other warnings
 * (warn() of a script) are printed once a script turns them on with
 * warn("@on"), as lua.c does. */
static char warn_buf[1024];
static size_t warn_len;
static int warn_on;
static char gc_error[512];

static void warnf(void *ud, const char *msg, int tocont)
{
    (void)ud;
    size_t n = strlen(msg);
    if (warn_len + n >= sizeof warn_buf)
        n = sizeof warn_buf - 1 - warn_len;
    memcpy(warn_buf + warn_len, msg, n);
    warn_len += n;
    warn_buf[warn_len] = '\0';
    if (tocont)
        return;
    static const char gc[] = "error in __gc (";
    size_t len = warn_len;
    warn_len = 0;
    if (strcmp(warn_buf, "@on") == 0 || strcmp(warn_buf, "@off") == 0) {
        warn_on = warn_buf[2] == 'n';
    } else if (strncmp(warn_buf, gc, sizeof gc - 1) == 0) {
        if (!gc_error[0]) /* the message inside the parentheses */
            snprintf(gc_error, sizeof gc_error, "%.*s",
                     (int)(len - (sizeof gc - 1) - 1),
                     warn_buf + sizeof gc - 1);
    } else if (warn_on) {
        fprintf(stderr, "Lua warning: %s\n", warn_buf);
    }
}

const char *bind_gc_error(void)
{
    return gc_error[0] ? gc_error : NULL;
}

lua_State *bind_newstate(void)
{
    lua_State *L = lua_newstate(l_alloc, NULL);
    if (L) {
        lua_atpanic(L, panic);
        lua_setwarnf(L, warnf, NULL);
    }
    return L;
}

/* [-0, +0] */
int bind_limits(lua_State *L, const char *luadir, double timeout, ps_err *err)
{
    if (!realpath(luadir, luadir_real))
        luadir_real[0] = '\0';
    lua_getglobal(L, "coroutine");
    if (lua_istable(L, -1)) {
        lua_getfield(L, -1, "resume");
        lua_pushcclosure(L, co_resume, 1);
        lua_setfield(L, -2, "resume");
        lua_getfield(L, -1, "wrap");
        lua_pushcclosure(L, co_wrap, 1);
        lua_setfield(L, -2, "wrap");
    }
    lua_pop(L, 1);
    main_L = L;
    running_L = NULL;
    return limit_start(timeout, arm, err);
}

/* Closes L under the limits (issue 27 item 3): the finalizers lua_close
 * runs are script code, bound by --timeout, --max-memory and signals as
 * the scenario was. Lua runs no hook inside a __gc metamethod, so a stop
 * there ends the process (limit_final: the runs are committed by now);
 * between finalizers a count hook raises it (the signal handlers no
 * longer touch L, which is being freed). Memory past the budget fails the
 * allocation, an error Lua reports as a warning (warnf). Then the limits
 * end. */
void bind_limits_close(lua_State *L)
{
    main_L = NULL;
    running_L = NULL;
    lua_sethook(L, stop_hook, LUA_MASKCALL | LUA_MASKCOUNT, 1000);
    limit_final(); /* a finalizer runs without hooks: a stop ends it */
    lua_close(L);
    limit_end();
}

/* [-0, +0] */
void bind_limits_end(lua_State *L)
{
    limit_end();
    main_L = NULL;
    running_L = NULL;
    lua_sethook(L, NULL, 0, 0);
}
