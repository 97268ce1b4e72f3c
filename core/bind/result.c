/* A sweep worker's results across processes (core/bind/pool.c): Lua
 * values (nil, booleans, numbers, strings and tables of them) as bytes,
 * built in memory and read back into tables of the same shape and sizes.
 * Short strings (a result's keys) go once per buffer and then by number. */
#include "bind/bind.h"

#include <lauxlib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"

#define MAX_DEPTH 64 /* nesting of a result's tables */

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
    if (!b->oom && vec_append_bytes(&b->p, &b->n, &b->cap, v, n))
        b->oom = 1;
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

const char *bind_result_put(lua_State *L, int idx, unsigned char **bytes,
                            size_t *n)
{
    idx = lua_absindex(L, idx);
    lua_newtable(L);
    wbuf b = {.seen = lua_gettop(L)};
    const char *bad = put_value(&b, L, idx, 0);
    lua_pop(L, 1);
    if (bad || b.oom) {
        free(b.p);
        *bytes = NULL;
        *n = 0;
        return bad ? bad : "out of memory";
    }
    *bytes = b.p;
    *n = b.n;
    return NULL;
}

int bind_result_get(lua_State *L, const unsigned char *bytes, size_t n)
{
    lua_newtable(L);
    reader r = {bytes, bytes + n, lua_gettop(L), 0};
    int ok = get_value(L, &r, 0) == 0;
    if (ok)
        lua_remove(L, -2); /* the strings */
    else
        lua_pop(L, 1);
    return ok ? 0 : -1;
}
