/* A Lua table's storage as bytes (issue 28): the loop memo
 * (core/bind/run_memo.c) must tell on every call of ps.run whether a
 * layer list and the tables inside it kept their contents. Walking them
 * with lua_next costs about 400 instructions an entry (lua_next finds
 * its key again before each step): 116 k of a 470 k run for Llama 2 7B's
 * 34 layers. Lua's C API has no cheaper way, so this file reads a
 * table's two parts directly and compares them with a copy taken with
 * the snapshot, slot by slot: a few instructions a slot.
 *
 * Why the comparison is exact in the direction that matters: a table's
 * contents are a function of its array part (alimit entries, or the
 * power of 2 above), its hash part (2^lsizenode nodes) and its
 * metatable. If the part pointers, sizes and metatable are those of the
 * copy and every slot of both parts (its tags, the values they tag, a
 * node's chain) is the copy's, the table holds the
 * same keys and values: a value names a string or table by address, and
 * the snapshot anchors every string and table it saw, so an address
 * cannot have been reused. The converse does not hold (a removed key's
 * node, a dead key the collector marked, the limit `#` moved, a table
 * resized to the same contents): those count as a change, which costs
 * the memo one new check and never a wrong result.
 *
 * The layout is Lua 5.4's (lobject.h: Value, TValue, Node, Table,
 * unchanged from 5.4.0 to 5.4.7; ltable.c's luaH_realasize). The binding
 * links Debian's liblua5.4 (5.4.4), but a Lua linked at run time could
 * differ, so table_bytes_usable checks the layout on tables made for the
 * purpose each time a snapshot is taken; where it fails, the memo walks
 * the entries through the C API as before. */
#include "bind/table_bytes.h"

#include <stdint.h>
#include <string.h>

#include <lauxlib.h>

/* Lua 5.4's lobject.h, mirrored: field for field, the same types. */
typedef union lua_value {
    void *gc;
    void *p;
    lua_CFunction f;
    lua_Integer i;
    lua_Number n;
} lua_value;

typedef struct lua_tvalue {
    lua_value value_;
    unsigned char tt_;
} lua_tvalue;

typedef union lua_node {
    struct lua_node_fields {
        lua_value value_;
        unsigned char tt_;
        unsigned char key_tt;
        int next;
        lua_value key_val;
    } u;
    lua_tvalue i_val;
} lua_node;

typedef struct lua_table {
    void *next; /* CommonHeader */
    unsigned char tt;
    unsigned char marked;
    unsigned char flags;
    unsigned char lsizenode;
    unsigned int alimit;
    lua_tvalue *array;
    lua_node *node;
    lua_node *lastfree;
    void *metatable;
    void *gclist;
} lua_table;

/* lobject.h's type tags: a variant in bits 4-5, collectable bit 6 */
#define TAG_NUMINT 3              /* LUA_VNUMINT */
#define TAG_SHRSTR (4 | (1 << 6)) /* ctb(LUA_VSHRSTR) */
#define TAG_TABLE 5               /* LUA_VTABLE, in a GC header */
#define BITRAS (1 << 7)           /* ltable.c: alimit is not the real size */

/* ltable.c's luaH_realasize: the array part's allocated entries */
static size_t real_asize(const lua_table *t)
{
    unsigned a = t->alimit;
    if (!(t->flags & BITRAS) || (a & (a - 1)) == 0)
        return a;
    a |= a >> 1;
    a |= a >> 2;
    a |= a >> 4;
    a |= a >> 8;
    a |= a >> 16;
    return (size_t)a + 1;
}

size_t table_bytes_describe(const void *t, table_bytes *tb)
{
    const lua_table *h = t;
    tb->t = t;
    tb->array = h->array;
    tb->node = h->node;
    tb->mt = h->metatable;
    tb->alimit = h->alimit;
    tb->lsizenode = h->lsizenode;
    tb->asize = real_asize(h) * sizeof(lua_tvalue);
    tb->nsize = ((size_t)1 << h->lsizenode) * sizeof(lua_node);
    return tb->asize + tb->nsize;
}

void table_bytes_take(const table_bytes *tb, unsigned char *buf)
{
    if (tb->asize)
        memcpy(buf + tb->off, tb->array, tb->asize);
    memcpy(buf + tb->off + tb->asize, tb->node, tb->nsize);
}

/* Whether a slot tagged tt (a value's tt_ or a node's key_tt) has a
 * value: nil, empty and the booleans are their tag alone, and Lua leaves
 * their value uninitialized (compared, it would only cost a change, but
 * valgrind rightly calls the branch undefined). A dead key keeps its
 * object's address. */
static int has_value(unsigned char tt)
{
    return (tt & 0x0F) >= 2; /* LUA_TLIGHTUSERDATA and above */
}

static int same_value(const lua_value *a, const lua_value *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

static int same_array(const lua_tvalue *a, const lua_tvalue *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].tt_ != b[i].tt_ ||
            (has_value(a[i].tt_) && !same_value(&a[i].value_, &b[i].value_)))
            return 0;
    return 1;
}

/* The node's key, value and chain; not the padding between them. */
static int same_nodes(const lua_node *a, const lua_node *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct lua_node_fields *x = &a[i].u, *y = &b[i].u;
        if (x->tt_ != y->tt_ || x->key_tt != y->key_tt || x->next != y->next ||
            (has_value(x->tt_) && !same_value(&x->value_, &y->value_)) ||
            (has_value(x->key_tt) && !same_value(&x->key_val, &y->key_val)))
            return 0;
    }
    return 1;
}

int table_bytes_same(const table_bytes *tb, const unsigned char *buf)
{
    const lua_table *h = tb->t;
    if (h->array != tb->array || h->node != tb->node ||
        h->metatable != tb->mt || h->alimit != tb->alimit ||
        h->lsizenode != tb->lsizenode)
        return 0;
    /* the same alimit, but the flag that says whether it is the size */
    if (real_asize(h) * sizeof(lua_tvalue) != tb->asize)
        return 0;
    const unsigned char *at = buf + tb->off;
    return same_array(h->array, (const lua_tvalue *)at,
                      tb->asize / sizeof(lua_tvalue)) &&
           same_nodes(h->node, (const lua_node *)(at + tb->asize),
                      tb->nsize / sizeof(lua_node));
}

/* Whether the table at -1, made by table_bytes_usable, reads as it was
 * made: array {7, 14, 21, 28}, keys "a".."d" to 1..4. */
static int reads_as_made(lua_State *L, const lua_table *h)
{
    if (h->tt != TAG_TABLE || h->alimit != 4 || (h->flags & BITRAS) ||
        h->lsizenode != 2 || h->metatable || !h->array || !h->node)
        return 0;
    for (int i = 0; i < 4; i++)
        if (h->array[i].tt_ != TAG_NUMINT ||
            h->array[i].value_.i != 7 * (i + 1))
            return 0;
    static const char *const keys[] = {"a", "b", "c", "d"};
    int found = 0;
    for (int i = 0; i < 4; i++) {
        lua_pushstring(L, keys[i]);
        const void *k = lua_topointer(L, -1);
        lua_pop(L, 1); /* the table's key keeps the string */
        for (int j = 0; j < 4; j++) {
            const lua_node *n = &h->node[j];
            if (n->u.key_tt == TAG_SHRSTR && n->u.key_val.gc == k &&
                n->u.tt_ == TAG_NUMINT && n->u.value_.i == i + 1)
                found++;
        }
    }
    return found == 4;
}

int table_bytes_usable(lua_State *L)
{
#if LUA_VERSION_NUM != 504
    (void)L;
    return 0;
#else
    luaL_checkstack(L, 3, "table layout check");
    lua_createtable(L, 4, 4);
    static const char *const keys[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        lua_pushinteger(L, 7 * (i + 1));
        lua_rawseti(L, -2, i + 1);
        lua_pushinteger(L, i + 1);
        lua_setfield(L, -2, keys[i]);
    }
    const lua_table *h = lua_topointer(L, -1);
    int ok = reads_as_made(L, h);
    if (ok) { /* a change is seen, and its undoing; a metatable too */
        unsigned char buf[4 * sizeof(lua_tvalue) + 4 * sizeof(lua_node)];
        table_bytes tb;
        ok = table_bytes_describe(h, &tb) == sizeof buf;
        tb.off = 0;
        if (ok) {
            table_bytes_take(&tb, buf);
            lua_pushinteger(L, 99);
            lua_setfield(L, -2, "c");
            ok = !table_bytes_same(&tb, buf);
            lua_pushinteger(L, 3);
            lua_setfield(L, -2, "c");
            ok = ok && table_bytes_same(&tb, buf);
            lua_newtable(L);
            const void *mt = lua_topointer(L, -1);
            lua_setmetatable(L, -2);
            ok = ok && h->metatable == mt && !table_bytes_same(&tb, buf);
        }
    }
    lua_pop(L, 1);
    return ok;
#endif
}
