/* Snapshots of a run's layer list for the memo of a plain loop of ps.run
 * (issue 28; lua/pipesim/init.lua, loop_memo). A script may change a
 * layer table between two calls of ps.run, so the memo of the checked and
 * lowered layers is keyed by the list's contents, not only its identity:
 * core.layers_snapshot records every key and value of the list and of the
 * tables inside it (a shared `shape` table once), and
 * core.layers_unchanged walks the list again and compares, stopping at
 * the first difference. Comparing allocates nothing and reads each entry
 * once: cheaper than reading and checking every layer again
 * (core.check_run) and far cheaper than lowering a model again
 * (lua/pipesim/parallel.lua).
 *
 * What the walk cannot see makes a list unmemoizable (snapshot false): a
 * table with a metatable (its __index could answer anything), nesting
 * deeper than MEMO_DEPTH, or more than MEMO_ENTRIES entries. Any doubt
 * counts as a change, which only costs a new check: an integer where a
 * float was (4 and 4.0), a NaN (never equal to itself), the same entries
 * visited in another order. Strings compare by their bytes, other values
 * (tables, functions, userdata) by identity.
 *
 * Where this Lua's table layout is the one core/bind/table_bytes.c reads
 * (Debian's 5.4), the snapshot also copies the storage of every table it
 * walked, and core.layers_unchanged compares their slots with the copy
 * instead of walking: the same answer where nothing changed (a change it
 * cannot rule out counts as a change), at a few instructions a slot
 * rather than ~400 an entry. core.layers_unchanged(list, snap, true)
 * walks anyway (tests/lua/test_loop_memo.lua checks both). */
#include "base/vec.h"
#include "bind/bind.h"
#include "bind/table_bytes.h"

#include <stdlib.h>
#include <string.h>

#define MEMO_DEPTH 8
#define MEMO_ENTRIES (1 << 20)
#define SNAPSHOT_TYPE "pipesim.layers_snapshot"

/* One key or value as the walk saw it: its Lua type and what identifies
 * it (a string's or table's address, a number's bits). The strings and
 * tables are anchored in the snapshot's user value, so that an address
 * cannot be reused by a new object while the snapshot lives. */
typedef struct seen_value {
    int type; /* LUA_T*, or LUA_TNUMBER with isint */
    int isint;
    size_t len; /* a string's */
    union {
        lua_Integer i;
        lua_Number d;
        const void *p;
        int b;
    } u;
} seen_value;

/* An entry: its key and value, and after a table value whether its
 * entries follow (its first visit in the walk) or it was visited before.
 * The compare walk follows the same order as long as nothing differed,
 * so it visits a table where the snapshot did. A table's entries end
 * with an entry of key type LUA_TNONE. */
typedef struct seen_entry {
    seen_value k, v;
    int descend;
} seen_entry;

typedef struct snapshot {
    size_t n, cap;
    seen_entry *e; /* malloc'd, freed by __gc */
    /* the tables walked, in walk order, and their storage's bytes (raw:
     * table_bytes_usable said yes), both malloc'd and freed by __gc */
    size_t ntab, tcap;
    table_bytes *tab;
    unsigned char *bytes;
    int raw;
} snapshot;

typedef struct walk {
    lua_State *L;
    snapshot *s;
    int anchors; /* stack index of the anchor table (snapshot walk only) */
    int visited; /* stack index of the visited set (snapshot walk only) */
    size_t at;   /* next entry to compare */
    int ok;      /* 0: not memoizable (snapshot) or changed (compare) */
} walk;

/* [-0, +0] The value at idx as seen_value; anchors strings and tables. */
static void see(walk *w, int idx, seen_value *sv)
{
    lua_State *L = w->L;
    memset(sv, 0, sizeof *sv);
    sv->type = lua_type(L, idx);
    switch (sv->type) {
    case LUA_TNUMBER:
        sv->isint = lua_isinteger(L, idx);
        if (sv->isint)
            sv->u.i = lua_tointeger(L, idx);
        else
            sv->u.d = lua_tonumber(L, idx);
        return;
    case LUA_TBOOLEAN: sv->u.b = lua_toboolean(L, idx); return;
    case LUA_TSTRING: sv->u.p = lua_tolstring(L, idx, &sv->len); break;
    case LUA_TNIL: return;
    default: sv->u.p = lua_topointer(L, idx); break;
    }
    if (w->anchors) { /* anchors[value] = true */
        lua_pushvalue(L, idx);
        lua_pushboolean(L, 1);
        lua_rawset(L, w->anchors);
    }
}

/* Whether the value at idx is sv. A long string (not interned by Lua) of
 * the same bytes at another address is the same value. */
static int same(lua_State *L, int idx, const seen_value *sv)
{
    int t = lua_type(L, idx);
    if (t != sv->type)
        return 0;
    switch (t) {
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            return sv->isint && lua_tointeger(L, idx) == sv->u.i;
        return !sv->isint && lua_tonumber(L, idx) == sv->u.d;
    case LUA_TBOOLEAN: return lua_toboolean(L, idx) == sv->u.b;
    case LUA_TSTRING: {
        size_t n;
        const char *p = lua_tolstring(L, idx, &n);
        return p == sv->u.p || (n == sv->len && memcmp(p, sv->u.p, n) == 0);
    }
    case LUA_TNIL: return 1;
    default: return lua_topointer(L, idx) == sv->u.p;
    }
}

static seen_entry *add(walk *w)
{
    snapshot *s = w->s;
    if (VEC_RESERVE(s->e, s->cap, s->n + 1))
        luaL_error(w->L, "out of memory");
    return &s->e[s->n++]; /* zeroed by VEC_RESERVE */
}

/* Appends the table at idx to the snapshot's tables. */
static void note_table(walk *w, int idx)
{
    snapshot *s = w->s;
    if (VEC_RESERVE(s->tab, s->tcap, s->ntab + 1))
        luaL_error(w->L, "out of memory");
    s->tab[s->ntab++].t = lua_topointer(w->L, idx);
}

/* Copies the storage of every table walked (snapshot.raw). */
static void take_bytes(lua_State *L, snapshot *s)
{
    size_t total = 0;
    for (size_t i = 0; i < s->ntab; i++) {
        s->tab[i].off = total;
        total += table_bytes_describe(s->tab[i].t, &s->tab[i]);
    }
    s->bytes = malloc(total ? total : 1);
    if (!s->bytes)
        luaL_error(L, "out of memory");
    for (size_t i = 0; i < s->ntab; i++)
        table_bytes_take(&s->tab[i], s->bytes);
    s->raw = 1;
}

/* Whether every table walked has the bytes take_bytes copied. */
static int same_bytes(const snapshot *s)
{
    for (size_t i = 0; i < s->ntab; i++)
        if (!table_bytes_same(&s->tab[i], s->bytes))
            return 0;
    return 1;
}

/* [-0, +0] Appends the table at idx's entries to the snapshot. */
static void record(walk *w, int idx, int depth)
{
    lua_State *L = w->L;
    if (depth > MEMO_DEPTH || lua_getmetatable(L, idx)) {
        if (depth <= MEMO_DEPTH)
            lua_pop(L, 1);
        w->ok = 0;
        return;
    }
    note_table(w, idx);
    luaL_checkstack(L, 4, "layers snapshot");
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (w->s->n > MEMO_ENTRIES) {
            w->ok = 0;
            lua_pop(L, 2);
            return;
        }
        seen_entry *e = add(w);
        see(w, -2, &e->k);
        see(w, -1, &e->v);
        if (lua_type(L, -1) == LUA_TTABLE) {
            lua_pushvalue(L, -1);
            if (lua_rawget(L, w->visited) == LUA_TNIL) {
                lua_pushvalue(L, -2);
                lua_pushboolean(L, 1);
                lua_rawset(L, w->visited);
                e->descend = 1;
                lua_pop(L, 1);
                record(w, lua_gettop(L), depth + 1);
                if (!w->ok) {
                    lua_pop(L, 2);
                    return;
                }
            } else {
                lua_pop(L, 1);
            }
        }
        lua_pop(L, 1);
    }
    add(w)->k.type = LUA_TNONE;
}

/* [-0, +0] Compares the table at idx's entries with the snapshot's from
 * w->at on; clears w->ok at the first difference. */
static void compare(walk *w, int idx)
{
    lua_State *L = w->L;
    if (lua_getmetatable(L, idx)) { /* given one since the snapshot */
        lua_pop(L, 1);
        w->ok = 0;
        return;
    }
    luaL_checkstack(L, 4, "layers snapshot");
    const seen_entry *e = w->s->e;
    size_t n = w->s->n;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (w->at >= n || !same(L, -2, &e[w->at].k) ||
            !same(L, -1, &e[w->at].v)) {
            lua_pop(L, 2);
            w->ok = 0;
            return;
        }
        if (e[w->at++].descend) {
            compare(w, lua_gettop(L));
            if (!w->ok) {
                lua_pop(L, 2);
                return;
            }
        }
        lua_pop(L, 1);
    }
    /* no entry left here: neither may the snapshot have one */
    if (w->at >= n || e[w->at++].k.type != LUA_TNONE)
        w->ok = 0;
}

static int snapshot_gc(lua_State *L)
{
    snapshot *s = luaL_checkudata(L, 1, SNAPSHOT_TYPE);
    free(s->e);
    free(s->tab);
    free(s->bytes);
    s->e = NULL;
    s->tab = NULL;
    s->bytes = NULL;
    s->n = s->cap = s->ntab = s->tcap = 0;
    s->raw = 0;
    return 0;
}

/* [-0, +1] core.layers_snapshot(list): a snapshot of the list's contents
 * for core.layers_unchanged, or false when the list cannot be memoized
 * (a metatable, too deep or too large: see above). */
static int core_layers_snapshot(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    snapshot *s = lua_newuserdatauv(L, sizeof *s, 1); /* 2 */
    memset(s, 0, sizeof *s);
    static const luaL_Reg meta[] = {{"__gc", snapshot_gc}, {NULL, NULL}};
    bind_setmetatable(L, SNAPSHOT_TYPE, meta);
    lua_newtable(L); /* 3: the anchors, the snapshot's user value */
    lua_pushvalue(L, 3);
    lua_setiuservalue(L, 2, 1);
    lua_newtable(L); /* 4: visited */
    lua_pushvalue(L, 1);
    lua_pushboolean(L, 1);
    lua_rawset(L, 4);
    walk w = {L, s, 3, 4, 0, 1};
    record(&w, 1, 1);
    if (!w.ok) {
        lua_pushboolean(L, 0);
        return 1;
    }
    if (table_bytes_usable(L))
        take_bytes(L, s);
    lua_settop(L, 2);
    return 1;
}

/* [-0, +1] core.layers_unchanged(list, snapshot[, walk]): whether the
 * list holds what it held when the snapshot was taken (the same tables
 * inside it, with the same keys and values); by the tables' slots where
 * the snapshot has their copy, unless walk is true. */
static int core_layers_unchanged(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    snapshot *s = luaL_checkudata(L, 2, SNAPSHOT_TYPE);
    if (s->raw && !lua_toboolean(L, 3)) {
        lua_pushboolean(L, s->ntab && s->tab[0].t == lua_topointer(L, 1) &&
                               same_bytes(s));
        return 1;
    }
    lua_settop(L, 2);
    walk w = {L, s, 0, 0, 0, 1};
    compare(&w, 1);
    lua_pushboolean(L, w.ok && w.at == s->n);
    return 1;
}

const luaL_Reg bind_run_memo_funcs[] = {
    {"layers_snapshot", core_layers_snapshot},
    {"layers_unchanged", core_layers_unchanged},
    {NULL, NULL},
};
