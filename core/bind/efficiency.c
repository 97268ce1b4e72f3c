/* meta.efficiency of a ps.run (lua/pipesim/efficiency.lua's figures of the
 * step, issue 27 item 16) into a rec_eff: the recorder writes them and the
 * rates over the simulated step (rec/eff.c). The table is init.lua's, not
 * the user's, but it is checked like any other: every figure is a finite
 * number >= 0, gpus a positive integer, precision and note strings. */
#include <lauxlib.h>
#include <math.h>
#include <string.h>

#include "bind/bind.h"
#include "rec/rec.h"

/* [-0, +0] field key of the table at t, a finite number >= 0, or 0 */
static double figure(lua_State *L, int t, const char *key)
{
    double v = 0;
    if (lua_getfield(L, t, key) != LUA_TNIL) {
        int isnum;
        v = lua_tonumberx(L, -1, &isnum);
        if (!isnum || lua_type(L, -1) != LUA_TNUMBER || !isfinite(v) || v < 0)
            bind_field_error(L, lua_pushfstring(L, "meta.efficiency.%s", key),
                             "must be a finite number >= 0", -2);
    }
    lua_pop(L, 1);
    return v;
}

/* [-0, +0] */
void bind_efficiency(lua_State *L, int idx, struct rec_eff *e)
{
    memset(e, 0, sizeof *e);
    if (!bind_table(L, idx, "efficiency", NULL))
        return;
    int t = lua_gettop(L);
    bind_check_fields(L, t, "meta.efficiency", bind_fields_efficiency);
    e->model_flops = figure(L, t, "model_flops");
    e->hardware_flops = figure(L, t, "hardware_flops");
    e->tokens = figure(L, t, "tokens");
    e->peak_flops = figure(L, t, "peak_flops");
    long long g = 0;
    if (bind_int(L, t, "meta.efficiency.gpus", 1, 1LL << 40, &g))
        e->gpus = g;
    e->precision = bind_string_in(L, t, "meta.efficiency", "precision");
    e->note = bind_string_in(L, t, "meta.efficiency", "note");
    lua_pop(L, 1); /* the strings stay alive in the meta table */
}
