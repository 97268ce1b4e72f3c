/* A Lua table's storage as bytes, for the loop memo's check that a layer
 * list kept its contents (core/bind/run_memo.c, issue 28). See
 * table_bytes.c for why and for what makes it safe. */
#ifndef PS_BIND_TABLE_BYTES_H
#define PS_BIND_TABLE_BYTES_H

#include <stddef.h>

#include <lua.h>

/* Where one table's storage was when it was copied: a change of any of
 * these (a resize, a metatable) counts as a change of its contents. */
typedef struct table_bytes {
    const void *t;     /* the table (lua_topointer) */
    const void *array; /* its array part */
    const void *node;  /* its hash part */
    const void *mt;    /* its metatable */
    unsigned alimit;
    unsigned char lsizenode;
    size_t asize, nsize; /* bytes of the two parts */
    size_t off;          /* where the copies start in the byte buffer */
} table_bytes;

/* Whether this Lua's tables have the layout table_bytes.c reads: checked
 * on tables made for the purpose, so a Lua of another layout (another
 * version, linked at run time) gets 0 and the memo walks the entries. */
int table_bytes_usable(lua_State *L);

/* The bytes table_bytes_take will copy of t (from lua_topointer of a
 * table) and fills tb's description of it, tb->off left to the caller. */
size_t table_bytes_describe(const void *t, table_bytes *tb);

/* Copies the storage tb describes to buf + tb->off. */
void table_bytes_take(const table_bytes *tb, unsigned char *buf);

/* Whether tb's table still has the storage, and the bytes in it, that
 * table_bytes_take copied to buf + tb->off. */
int table_bytes_same(const table_bytes *tb, const unsigned char *buf);

#endif
