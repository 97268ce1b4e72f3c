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
    (void)ar;
    if (limit_stopped())
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

lua_State *bind_newstate(void)
{
    lua_State *L = lua_newstate(l_alloc, NULL);
    if (L)
        lua_atpanic(L, panic);
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

/* [-0, +0] */
void bind_limits_end(lua_State *L)
{
    limit_end();
    main_L = NULL;
    running_L = NULL;
    lua_sethook(L, NULL, 0, 0);
}
