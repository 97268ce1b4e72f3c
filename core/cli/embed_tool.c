/* A build-time program, not part of pipesim: writes build/embed_data.c
 * (base/embed.h) from the Lua files named on its command line and from the
 * database rec_open makes for a new path. It is linked with the core but
 * with nothing embedded (the definitions below), so that database comes
 * from rec/schema.c's SQL. Like cli/main.c it includes lua.h: it compiles
 * lua/ with the Lua library pipesim links, so the bytecode's format is
 * that loader's by construction (luac5.4 is a separate Debian package).
 * Usage: embed_tool OUT.c LUADIR FILE.lua... (FILE under LUADIR) */
#include <lauxlib.h>
#include <lua.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/embed.h"
#include "base/err.h"
#include "base/vec.h"
#include "rec/rec.h"

/* this program's own view: nothing embedded yet */
const embed_module embed_modules[1] = {{NULL, NULL, 0, NULL, 0, 0, 0}};
const size_t embed_nmodules = 0;
const unsigned char embed_schema[1] = {0};
const size_t embed_schema_len = 0;
const embed_schema_row embed_schema_rows[1] = {{0, NULL, NULL, NULL, NULL}};
const size_t embed_schema_nrows = 0;

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
} buf;

static int put(buf *b, const void *p, size_t n)
{
    return vec_append_bytes(&b->p, &b->n, &b->cap, p, n);
}

static int writer(lua_State *L, const void *p, size_t n, void *ud)
{
    (void)L;
    return put(ud, p, n);
}

static int read_file(const char *path, buf *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char chunk[65536];
    size_t n;
    int rc = 0;
    while (rc == 0 && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = put(b, chunk, n);
    if (ferror(f))
        rc = -1;
    fclose(f);
    return rc;
}

/* name as lua_dump's dumpString writes it (bind/embed.c's load_code
 * writes a name the same way) */
static void encode_name(const char *name, buf *out)
{
    size_t len = strlen(name);
    unsigned char size[16];
    int n = 0;
    for (size_t x = len + 1; n == 0 || x != 0; x >>= 7)
        size[sizeof size - ++n] = (unsigned char)(x & 0x7f);
    size[sizeof size - 1] |= 0x80;
    out->n = 0;
    put(out, size + sizeof size - n, (size_t)n);
    put(out, name, len);
}

/* lua_dump of file loaded as luaL_loadfilex(L, file, "t") does */
static int dump_file(lua_State *L, const char *file, buf *out)
{
    if (luaL_loadfilex(L, file, "t") != LUA_OK) {
        fprintf(stderr, "embed_tool: %s\n", lua_tostring(L, -1));
        return -1;
    }
    int rc = lua_dump(L, writer, out, 0);
    lua_pop(L, 1);
    return rc;
}

/* decl: "static const unsigned char x" or an extern name of base/embed.h */
static void emit_bytes(FILE *o, const char *decl, const unsigned char *p,
                       size_t n)
{
    fprintf(o, "%s[%zu] = {", decl, n ? n : 1);
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%s%u,", i % 24 ? "" : "\n", p[i]);
    fprintf(o, "%s};\n", n ? "\n" : "0");
}

/* "LUADIR/pipesim/models/init.lua" -> "pipesim.models" */
static int module_name(const char *luadir, const char *file, char *out,
                       size_t size)
{
    size_t dl = strlen(luadir), fl = strlen(file);
    if (strncmp(file, luadir, dl) != 0 || file[dl] != '/' || fl < dl + 5 ||
        strcmp(file + fl - 4, ".lua") != 0 || fl - dl >= size)
        return -1;
    snprintf(out, size, "%.*s", (int)(fl - dl - 5), file + dl + 1);
    for (char *c = out; *c; c++)
        if (*c == '/')
            *c = '.';
    size_t n = strlen(out);
    if (n > 5 && strcmp(out + n - 5, ".init") == 0)
        out[n - 5] = '\0';
    return 0;
}

/* One module: the bytes of its file, its dump and where the chunk name is
 * in it, found by dumping it under two names (file and "./file") and
 * checking that the dumps differ only there. */
static int one_module(FILE *o, lua_State *L, int i, const char *luadir,
                      const char *file)
{
    char name[512], alias[4096], var[64];
    buf src = {0}, a = {0}, b = {0}, ea = {0}, eb = {0};
    int rc = -1;
    size_t at = 0;
    if (module_name(luadir, file, name, sizeof name)) {
        fprintf(stderr, "embed_tool: %s: not a .lua file under %s\n", file,
                luadir);
        goto out;
    }
    snprintf(alias, sizeof alias, "./%s", file);
    if (read_file(file, &src) || dump_file(L, file, &a) ||
        dump_file(L, alias, &b)) {
        fprintf(stderr, "embed_tool: %s: cannot read or compile it\n", file);
        goto out;
    }
    snprintf(alias, sizeof alias, "@%s", file);
    encode_name(alias, &ea);
    snprintf(alias, sizeof alias, "@./%s", file);
    encode_name(alias, &eb);
    for (at = 0; at + ea.n <= a.n; at++)
        if (memcmp(a.p + at, ea.p, ea.n) == 0)
            break;
    if (at + ea.n > a.n || b.n != a.n - ea.n + eb.n ||
        memcmp(a.p, b.p, at) != 0 || memcmp(b.p + at, eb.p, eb.n) != 0 ||
        memcmp(a.p + at + ea.n, b.p + at + eb.n, a.n - at - ea.n) != 0) {
        fprintf(stderr,
                "embed_tool: %s: lua_dump's chunk name is not where "
                "expected (another Lua version's format?)\n",
                file);
        goto out;
    }
    snprintf(var, sizeof var, "static const unsigned char src%d", i);
    emit_bytes(o, var, src.p, src.n);
    snprintf(var, sizeof var, "static const unsigned char code%d", i);
    emit_bytes(o, var, a.p, a.n);
    fprintf(o, "#define M%d {\"%s\", src%d, %zu, code%d, %zu, %zu, %zu}\n", i,
            name, i, src.n, i, a.n, at, at + ea.n);
    rc = 0;
out:
    free(src.p);
    free(a.p);
    free(b.p);
    free(ea.p);
    free(eb.p);
    return rc;
}

/* The new database's views and triggers (rootpage 0, nothing in the file
 * but their sqlite_master rows), emitted as embed_schema_rows and taken
 * out of the file at path, which keeps its tables and indexes (rowids
 * and the rest unchanged): a scratch made from it parses only those
 * (rec/schema.c, rec_schema_rest). */
static int split_schema(FILE *o, const char *path)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *st = NULL;
    int rc =
        sqlite3_open_v2(path, &c, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
                sqlite3_prepare_v2(c,
                                   "SELECT rowid, type, name, tbl_name, sql "
                                   "FROM sqlite_master WHERE type IN "
                                   "('view', 'trigger') ORDER BY rowid",
                                   -1, &st, NULL) == SQLITE_OK
            ? 0
            : -1;
    int n = 0;
    buf rows = {0};
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        char var[64], line[512];
        const char *f[3];
        for (int k = 0; k < 3; k++) {
            f[k] = (const char *)sqlite3_column_text(st, 1 + k);
            /* plain names only: they are written as C string literals */
            if (!f[k] || !*f[k] ||
                strspn(f[k], "abcdefghijklmnopqrstuvwxyz"
                             "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "0123456789_") != strlen(f[k]))
                rc = -1;
        }
        const unsigned char *sql = sqlite3_column_text(st, 4);
        if (rc || !sql)
            break;
        snprintf(var, sizeof var, "static const unsigned char row_sql%d", n);
        /* the text and its NUL */
        emit_bytes(o, var, sql, (size_t)sqlite3_column_bytes(st, 4) + 1);
        int len = snprintf(line, sizeof line,
                           "    {%lld, \"%s\", \"%s\", \"%s\", "
                           "(const char *)row_sql%d},\n",
                           (long long)sqlite3_column_int64(st, 0), f[0], f[1],
                           f[2], n);
        if (len < 0 || (size_t)len >= sizeof line ||
            put(&rows, line, (size_t)len))
            rc = -1;
        n++;
    }
    sqlite3_finalize(st);
    if (rc == 0)
        rc = sqlite3_exec(c,
                          "PRAGMA writable_schema = ON; DELETE FROM "
                          "sqlite_master WHERE type IN ('view', 'trigger'); "
                          "PRAGMA writable_schema = OFF",
                          NULL, NULL, NULL) == SQLITE_OK
                 ? 0
                 : -1;
    if (sqlite3_close(c) != SQLITE_OK)
        rc = -1;
    if (rc == 0) {
        fprintf(o, "const embed_schema_row embed_schema_rows[%d] = {\n",
                n ? n : 1);
        if (n)
            fwrite(rows.p, 1, rows.n, o);
        else
            fprintf(o, "    {0, NULL, NULL, NULL, NULL},\n");
        fprintf(o, "};\nconst size_t embed_schema_nrows = %d;\n\n", n);
    }
    free(rows.p);
    return rc;
}

/* the file rec_open makes for a new path, read back without its views
 * and triggers (emitted to o as embed_schema_rows) */
static int schema_image(FILE *o, const char *out, buf *img)
{
    char path[4096];
    snprintf(path, sizeof path, "%s.tmp.db", out);
    remove(path);
    ps_err err;
    rec_db *db = rec_open(path, &err);
    if (!db || rec_close(db, &err)) {
        fprintf(stderr, "embed_tool: %s\n", err.msg);
        return -1;
    }
    int rc = split_schema(o, path) == 0 ? read_file(path, img) : -1;
    remove(path);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: embed_tool OUT.c LUADIR FILE.lua...\n");
        return 2;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *o = fopen(tmp, "w");
    lua_State *L = luaL_newstate();
    buf img = {0};
    int rc = o && L ? 0 : -1;
    if (rc == 0)
        fprintf(
            o,
            "/* Made by core/cli/embed_tool.c at build time (base/embed.h): do "
            "not edit. */\n#include \"base/embed.h\"\n\n");
    int n = 0;
    for (int i = 3; rc == 0 && i < argc; i++, n++)
        rc = one_module(o, L, n, argv[2], argv[i]);
    if (rc == 0) {
        fprintf(o, "const embed_module embed_modules[%d] = {\n", n ? n : 1);
        for (int i = 0; i < n; i++)
            fprintf(o, "    M%d,\n", i);
        fprintf(o, "};\nconst size_t embed_nmodules = %d;\n\n", n);
        rc = schema_image(o, argv[1], &img);
    }
    if (rc == 0) {
        emit_bytes(o, "const unsigned char embed_schema", img.p, img.n);
        fprintf(o, "const size_t embed_schema_len = %zu;\n", img.n);
    }
    if (L)
        lua_close(L);
    free(img.p);
    if (o && fclose(o) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, argv[1]) != 0)
        rc = -1;
    if (rc != 0) {
        remove(tmp);
        fprintf(stderr, "embed_tool: cannot write %s\n", argv[1]);
        return 1;
    }
    return 0;
}
