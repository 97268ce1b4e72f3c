/* The entry point of the binding: bind_setup prepares a Lua state and
 * bind_open_core opens "pipesim.core" from every area's luaL_Reg table.
 * The only file that knows every area, so that no area depends on
 * another's registration (bind/core.c provides the readers and knows
 * none). */
#include "bind/bind.h"

#include <lualib.h>

/* [-0, +1] require "pipesim.core": the table of every area's functions
 * and the constants the Lua side reads. */
static int bind_open_core(lua_State *L)
{
    static const luaL_Reg *const areas[] = {
        bind_core_funcs,       bind_cluster_funcs, bind_run_funcs,
        bind_collective_funcs, bind_report_funcs,  bind_check_funcs,
        bind_sweep_funcs,      bind_layout_funcs,  bind_live_funcs,
        bind_run_memo_funcs,
    };
    bind_check_layer_fields(L);
    lua_createtable(L, 0, 24);
    for (size_t i = 0; i < sizeof areas / sizeof areas[0]; i++)
        luaL_setfuncs(L, areas[i], 0);
    lua_pushstring(L, PS_VERSION);
    lua_setfield(L, -2, "version");
    lua_pushinteger(L, BIND_MAX_LAYERS);
    lua_setfield(L, -2, "max_layers");
    bind_push_fields(L);
    lua_setfield(L, -2, "fields");
    bind_push_field_roles(L);
    lua_setfield(L, -2, "field_roles");
    return 1;
}

/* [-0, +0] */
void bind_setup(lua_State *L, const char *luadir, const bind_session *bs)
{
    bind_session_new(L, bs);

    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, bind_open_core);
    lua_setfield(L, -2, "pipesim.core");
    lua_pop(L, 1);

    lua_getglobal(L, "package");
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", luadir, luadir);
    lua_getfield(L, -2, "path");
    lua_concat(L, 2);
    lua_setfield(L, -2, "path");
    lua_pop(L, 1);
    bind_embed_setup(L); /* lua/ from the bytecode built in */
}
