/* The data built into pipesim (core/base/embed.h, issue 12): every module of
 * lua/ is used from its bytecode when its file is unchanged, and that
 * chunk is the one luaL_loadfilex makes of the file (same bytecode, same
 * chunk name); a changed file or PIPESIM_EMBED=0 loads the file; a new
 * database is the embedded image and rows, the schema rec/schema.c's SQL
 * makes today. */
#include <lauxlib.h>
#include <lualib.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/embed.h"
#include "bind/bind.h"
#include "harness.h"
#include "rec/rec.h"

typedef struct buf {
    char *p;
    size_t n;
} buf;

static int writer(lua_State *L, const void *p, size_t n, void *ud)
{
    (void)L;
    buf *b = ud;
    char *q = realloc(b->p, b->n + n);
    if (!q)
        return 1;
    memcpy(q + b->n, p, n);
    b->p = q;
    b->n += n;
    return 0;
}

/* [-1, +0] the dump of the function on top, popped */
static buf dump_top(lua_State *L)
{
    buf b = {NULL, 0};
    lua_dump(L, writer, &b, 0);
    lua_pop(L, 1);
    return b;
}

static buf slurp(const char *path)
{
    buf b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    char chunk[4096];
    size_t n;
    while (f && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        writer(NULL, chunk, n, &b);
    if (f)
        fclose(f);
    return b;
}

/* the checkout's lua/: ../../lua next to build/tests/test_embed */
static void find_luadir(char *out, size_t size)
{
    char exe[2048];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, size, "%s/../../lua", exe);
}

/* "pipesim.models" -> LUADIR/pipesim/models.lua or .../models/init.lua */
static void module_file(const char *luadir, const char *name, char *out,
                        size_t size)
{
    char rel[512];
    snprintf(rel, sizeof rel, "%s", name);
    for (char *c = rel; *c; c++)
        if (*c == '.')
            *c = '/';
    snprintf(out, size, "%s/%s.lua", luadir, rel);
    if (access(out, R_OK) != 0)
        snprintf(out, size, "%s/%s/init.lua", luadir, rel);
}

static void test_modules(const char *luadir)
{
    lua_State *L = luaL_newstate();
    CHECK(embed_nmodules >= 10); /* init, argcheck, partition, ... */
    int have_init = 0;
    for (size_t i = 0; i < embed_nmodules; i++) {
        const embed_module *m = &embed_modules[i];
        char file[4096];
        module_file(luadir, m->name, file, sizeof file);
        have_init += strcmp(m->name, "pipesim") == 0;
        int same = bind_embedded(m->name, file);
        CHECK_MSG(same, "%s: the built-in %s is not the file's", file, m->name);
        if (!same)
            continue;
        CHECK_INT(bind_load_module(L, m->name, file, "t"), LUA_OK);
        buf got = dump_top(L);
        CHECK_INT(luaL_loadfilex(L, file, "t"), LUA_OK);
        buf want = dump_top(L);
        CHECK(got.n == want.n && memcmp(got.p, want.p, got.n) == 0);
        free(got.p);
        free(want.p);
    }
    CHECK_INT(have_init, 1);
    lua_close(L);
}

/* a file that differs by one byte, or the test mode, loads the file */
static void test_changed(const char *luadir)
{
    lua_State *L = luaL_newstate();
    char file[4096];
    module_file(luadir, "pipesim.argcheck", file, sizeof file);
    buf src = slurp(file);
    CHECK(src.n > 0);
    const char *copy = "argcheck.lua";
    FILE *f = fopen(copy, "wb");
    fwrite(src.p, 1, src.n, f);
    fclose(f);
    CHECK(bind_embedded("pipesim.argcheck", copy));
    CHECK(!bind_embedded("pipesim.nosuch", copy));
    f = fopen(copy, "ab");
    fputs("\nreturn 42\n", f); /* after the module's own return: an error */
    fclose(f);
    CHECK(!bind_embedded("pipesim.argcheck", copy));
    CHECK(bind_load_module(L, "pipesim.argcheck", copy, "t") != LUA_OK);
    CHECK_HAS(lua_tostring(L, -1), "argcheck.lua:");
    lua_pop(L, 1);
    f = fopen(copy, "wb");
    fputs("return 42\n", f);
    fclose(f);
    CHECK_INT(bind_load_module(L, "pipesim.argcheck", copy, "t"), LUA_OK);
    lua_call(L, 0, 1);
    CHECK_INT(lua_tointeger(L, -1), 42);
    lua_pop(L, 1);
    remove(copy);

    setenv("PIPESIM_EMBED", "0", 1);
    CHECK(!embed_enabled());
    CHECK(!bind_embedded("pipesim.argcheck", file));
    unsetenv("PIPESIM_EMBED");
    CHECK(bind_embedded("pipesim.argcheck", file));
    free(src.p);
    lua_close(L);
}

/* the schema of the file at path as text: every row of sqlite_master
 * (rowid first), then schema_version and user_version */
static buf schema_text(const char *path)
{
    buf b = {NULL, 0};
    sqlite3 *c = NULL;
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    CHECK(sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(
              c,
              "SELECT rowid || '|' || type || '|' || name || '|' || tbl_name "
              "|| '|' || rootpage || '|' || ifnull(sql, '') FROM sqlite_master "
              "UNION ALL SELECT 'v|' || schema_version FROM "
              "pragma_schema_version "
              "UNION ALL SELECT 'u|' || user_version FROM pragma_user_version",
              -1, &st, NULL) == SQLITE_OK);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        size_t n = strlen(t);
        if (b.n + n + 2 > cap) {
            cap = 2 * (b.n + n + 2);
            b.p = realloc(b.p, cap);
        }
        memcpy(b.p + b.n, t, n);
        b.n += n;
        b.p[b.n++] = '\n';
        b.p[b.n] = '\0';
    }
    sqlite3_finalize(st);
    sqlite3_close(c);
    return b;
}

/* a new database is the image with its views and triggers put back
 * (embed_schema_rows); the SQL (PIPESIM_EMBED=0) makes the same schema,
 * row for row and rowid for rowid, so neither part is stale */
static void test_schema(void)
{
    CHECK(embed_schema_len > 0);
    CHECK(embed_schema_nrows > 0);
    ps_err err;
    const char *paths[2] = {"embed_image.db", "embed_sql.db"};
    buf text[2];
    for (int i = 0; i < 2; i++) {
        remove(paths[i]);
        if (i == 1)
            setenv("PIPESIM_EMBED", "0", 1);
        rec_db *db = rec_open(paths[i], &err);
        CHECK(db != NULL);
        CHECK_INT(rec_close(db, &err), 0);
        unsetenv("PIPESIM_EMBED");
        text[i] = schema_text(paths[i]);
        CHECK(text[i].n > 0);
        /* and it takes a run (the schema works) */
        db = rec_open(paths[i], &err);
        int64_t runs = -1;
        CHECK(db && rec_run_count(db, &runs, &err) == 0);
        CHECK_INT(runs, 0);
        rec_close(db, NULL);
        remove(paths[i]);
    }
    CHECK(text[0].n == text[1].n && text[0].p && text[1].p &&
          strcmp(text[0].p, text[1].p) == 0);
    if (text[0].p && text[1].p && strcmp(text[0].p, text[1].p) != 0)
        fprintf(stderr, "image:\n%s\nSQL:\n%s\n", text[0].p, text[1].p);
    /* the rows put back are views and triggers alone (no pages) */
    for (size_t i = 0; i < embed_schema_nrows; i++)
        CHECK(strcmp(embed_schema_rows[i].type, "view") == 0 ||
              strcmp(embed_schema_rows[i].type, "trigger") == 0);
    free(text[0].p);
    free(text[1].p);
}

int main(void)
{
    char luadir[2200];
    find_luadir(luadir, sizeof luadir);
    test_modules(luadir);
    test_changed(luadir);
    test_schema();
    return harness_done();
}
