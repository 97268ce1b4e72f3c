/* core.report: renders a recorded run (summary line + ASCII Gantt) or the
 * table of all runs of a database as a string, for ps.show and friends. */
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>

#include "bind/bind.h"
#include "out/report.h"
#include "run/sink.h"

/* [-0, +1] pushes, as a string, what report_warnings (warnings != 0),
 * report_run (run > 0) or report_runs writes; raises its error. */
static void push_report(lua_State *L, rec_db *db, lua_Integer run, int width,
                        int warnings)
{
    char *buf = NULL;
    size_t len = 0;
    ps_err err;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        luaL_error(L, "out of memory");
    int rc = warnings  ? report_warnings(db, run, out, REPORT_WARN_RUNS, &err)
             : run > 0 ? report_run(db, run, out, width, &err)
                       : report_runs(db, out, 0, &err);
    fclose(out);
    if (rc) {
        free(buf);
        bind_raise(L, &err);
    }
    lua_pushlstring(L, buf, len);
    free(buf);
}

/* [-0, +2] core.report(db_path_or_nil, run_id_or_nil, width) -> text, warnings:
 * the report, and the memory warning lines of the run (or of every run,
 * at most REPORT_WARN_RUNS lines), "" when there are none */
static int core_report(lua_State *L)
{
    const char *path = luaL_optstring(L, 1, NULL);
    lua_Integer run = luaL_optinteger(L, 2, 0);
    lua_Integer width = REPORT_WIDTH;
    if (!lua_isnoneornil(L, 3)) { /* checked in 64 bits before it is an int */
        int ok;
        width = lua_tointegerx(L, 3, &ok);
        if (!ok || lua_type(L, 3) != LUA_TNUMBER || width < REPORT_MIN_WIDTH ||
            width > REPORT_MAX_WIDTH) {
            ps_err err;
            report_width_error(bind_show(L, 3), &err);
            return bind_raise(L, &err);
        }
    }
    rec_db *db = bind_database(L, path);
    ps_err err;
    if (run_flush(db, &err))
        return bind_raise(L, &err);
    push_report(L, db, run, (int)width, 0);
    push_report(L, db, run, (int)width, 1);
    return 2;
}

const luaL_Reg bind_report_funcs[] = {
    {"report", core_report},
    {NULL, NULL},
};
