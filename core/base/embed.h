/* Data built into the pipesim binary (issue 12, the fixed cost of a
 * process): pipesim's own Lua library compiled to bytecode and the bytes
 * of a new, empty database. The Makefile makes it (build/embed_data.c,
 * written by core/cli/embed_tool.c from lua/ and rec/schema.c's SQL); it is
 * only ever a faster way to the same result, never a different one. */
#ifndef PS_EMBED_H
#define PS_EMBED_H

#include <stddef.h>

/* One module of lua/: its source file as compiled, and lua_dump's output
 * of that chunk (debug information kept). Within code, bytes
 * [name_at, name_end) hold the chunk's name as lua_dump encodes it
 * (lundump.c's loadString: a size, then the bytes), so that a loader can
 * give the chunk the name luaL_loadfilex would have given it. */
typedef struct embed_module {
    const char *name;         /* "pipesim.models" (require's name) */
    const unsigned char *src; /* the file's bytes */
    size_t src_len;
    const unsigned char *code; /* the precompiled chunk */
    size_t code_len;
    size_t name_at, name_end;
} embed_module;

extern const embed_module embed_modules[]; /* embed_nmodules of them */
extern const size_t embed_nmodules;

/* A new database: the file rec/schema.c's SQL makes (schema, user_version,
 * WAL mode) without the rows below; embed_schema_len 0: none. */
extern const unsigned char embed_schema[];
extern const size_t embed_schema_len;

/* The rows of sqlite_master that embed_schema leaves out: the schema's
 * views and triggers (nothing of them is in the file but these rows,
 * rootpage 0), in rowid order. A new database's connection then parses
 * only the tables and indexes until rec_schema_rest puts these back, as
 * they were, before anyone else sees the file (issue 12: the views and
 * triggers were 1.3 M of the 1.6 M instructions of a scratch's schema
 * parse). */
typedef struct embed_schema_row {
    long long rowid;
    const char *type, *name, *tbl_name, *sql;
} embed_schema_row;
extern const embed_schema_row embed_schema_rows[]; /* embed_schema_nrows */
extern const size_t embed_schema_nrows;

/* 0 when the environment turns the embedded data off (PIPESIM_EMBED=0,
 * the test mode that loads lua/ from its files and makes new databases
 * by SQL, as a build without embedded data does), else 1. */
int embed_enabled(void);

#endif
