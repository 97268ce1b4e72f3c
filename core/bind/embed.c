/* pipesim's own Lua modules from the bytecode built into the binary
 * (base/embed.h; issue 12: parsing lua/ was 17 M of the 31 M instructions a
 * 2-rank run cost before it simulated). A module's bytecode stands in for
 * its file only when the file require found has exactly the bytes it was
 * compiled from, and it gets the chunk name luaL_loadfilex gives ("@" and
 * the path), so positions, messages and tracebacks are the file's: an
 * edited lua/, $PIPESIM_LUA elsewhere or a changed package.path load the
 * files they name, as before. Scenarios and every other file still load
 * as text under the sandbox; the only binary chunks are the binary's
 * own (core/README.md says why that keeps the sandbox's guarantee). */
#include "bind/bind.h"

#include <fcntl.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/embed.h"

/* The module compiled from exactly the bytes of file, or NULL. */
static const embed_module *same_module(const char *name, const char *file)
{
    const embed_module *m = NULL;
    for (size_t i = 0; i < embed_nmodules && !m; i++)
        if (strcmp(embed_modules[i].name, name) == 0)
            m = &embed_modules[i];
    if (!m || !embed_enabled())
        return NULL;
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    unsigned char *buf = NULL;
    int same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
               (size_t)st.st_size == m->src_len &&
               (buf = malloc(m->src_len + 1)) != NULL;
    size_t got = 0;
    while (same && got <= m->src_len) {
        /* one byte more than expected: a file that grew is not the same */
        ssize_t n = read(fd, buf + got, m->src_len + 1 - got);
        if (n <= 0) {
            same = n == 0;
            break;
        }
        got += (size_t)n;
    }
    same = same && got == m->src_len && memcmp(buf, m->src, got) == 0;
    free(buf);
    close(fd);
    return same ? m : NULL;
}

/* lua_load's reader over the three pieces of a renamed chunk. */
typedef struct pieces {
    const char *p[3];
    size_t n[3];
    int next;
} pieces;

static const char *read_pieces(lua_State *L, void *ud, size_t *size)
{
    (void)L;
    pieces *s = ud;
    while (s->next < 3 && s->n[s->next] == 0)
        s->next++;
    if (s->next == 3) {
        *size = 0;
        return NULL;
    }
    *size = s->n[s->next];
    return s->p[s->next++];
}

/* [-0, +(0|1)] the module's chunk named "@file", pushed; 0 on success, -1
 * with nothing pushed when the bytecode is unusable (another Lua release's
 * format: lua_load checks the header) or not named as expected. */
static int load_code(lua_State *L, const embed_module *m, const char *file)
{
    /* the chunk name as dumpString writes it: size + 1 in 7-bit groups,
     * most significant first, the last one marked with 0x80; then the
     * bytes (lua_dump's format, checked at build time by embed_tool) */
    size_t len = strlen(file) + 1; /* "@" + file */
    unsigned char size[16];
    int n = 0;
    for (size_t x = len + 1; n == 0 || x != 0; x >>= 7)
        size[sizeof size - ++n] = (unsigned char)(x & 0x7f);
    size[sizeof size - 1] |= 0x80;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, (const char *)size + sizeof size - n, (size_t)n);
    luaL_addchar(&b, '@');
    luaL_addstring(&b, file);
    luaL_pushresult(&b);
    size_t name_len;
    const char *name = lua_tolstring(L, -1, &name_len);
    pieces s = {
        {(const char *)m->code, name, (const char *)m->code + m->name_end},
        {m->name_at, name_len, m->code_len - m->name_end},
        0};
    if (lua_load(L, read_pieces, &s, "=(embedded)", "b") != LUA_OK) {
        lua_pop(L, 2);
        return -1;
    }
    lua_remove(L, -2);
    lua_Debug ar;
    lua_pushvalue(L, -1);
    if (!lua_getinfo(L, ">S", &ar) || ar.source[0] != '@' ||
        strcmp(ar.source + 1, file) != 0) {
        lua_pop(L, 1);
        return -1;
    }
    return 0;
}

int bind_embedded(const char *name, const char *file)
{
    return same_module(name, file) != NULL;
}

/* [-0, +1] */
int bind_load_module(lua_State *L, const char *name, const char *file,
                     const char *mode)
{
    const embed_module *m = same_module(name, file);
    if (m && load_code(L, m, file) == 0)
        return LUA_OK;
    return luaL_loadfilex(L, file, mode);
}

/* [-n, +(1|2)] package.searchers[2] outside the sandbox: Lua's own
 * searcher_Lua (loadlib.c), the file found by the original
 * package.searchpath (upvalue 2) on package.path of the package table
 * (upvalue 1), loaded through bind_load_module. */
static int search_lua(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    lua_getfield(L, lua_upvalueindex(1), "path");
    const char *path = lua_tostring(L, -1);
    if (!path)
        return luaL_error(L, "'package.%s' must be a string", "path");
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_pushvalue(L, 1);
    lua_pushvalue(L, -3);
    lua_call(L, 2, 2); /* file, or fail and the message */
    if (lua_isnil(L, -2))
        return 1; /* "no file '...'\n\tno file '...'" */
    lua_pop(L, 1);
    const char *file = lua_tostring(L, -1);
    if (bind_load_module(L, name, file, NULL) != LUA_OK)
        return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s",
                          name, file, lua_tostring(L, -1));
    lua_pushstring(L, file); /* the loader, then its file */
    return 2;
}

/* [-0, +0] */
void bind_embed_setup(lua_State *L)
{
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, LUA_LOADLIBNAME);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 2);
        return;
    }
    lua_getfield(L, -1, "searchers");
    lua_pushvalue(L, -2);
    lua_getfield(L, -1, "searchpath");
    if (!lua_istable(L, -3) || !lua_isfunction(L, -1)) {
        lua_pop(L, 5);
        return;
    }
    lua_pushcclosure(L, search_lua, 2);
    lua_rawseti(L, -2, 2);
    lua_pop(L, 3);
}
