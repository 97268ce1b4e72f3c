/* What the commands that run pipesim's Lua library outside a scenario
 * share (`pipesim nccl-tests`, bind/nccl_tests.c; `pipesim calibrate`,
 * bind/calibrate.c): a failed call's message as the one error line. */
#include <lauxlib.h>

#include "base/err.h"
#include "bind/bind.h"

/* [-(0|1), +0] */
int bind_command_status(lua_State *L, int status)
{
    if (status == LUA_OK)
        return 0;
    const char *msg = lua_tostring(L, -1);
    ps_print_error(msg ? msg : "(error object is not a string)");
    lua_pop(L, 1);
    return 1;
}
