/* The Lua binding: the only code besides main.c that includes lua.h.
 * It exposes the C core as the module "pipesim.core"; lua/pipesim/init.lua
 * wraps it into the user-facing `pipesim` module (argument checks, defaults,
 * partition helpers) and rethrows errors at the scenario's line. */
#ifndef PS_BIND_H
#define PS_BIND_H

#include <lua.h>

#include "err.h"

/* Session settings for one scenario run. */
typedef struct bind_session {
    const char *default_db;  /* where runs go unless ps.run{db=...} */
    const char *scenario;    /* the script's path, for messages */
    const char *const *defs; /* "key=value" from -D, ndefs of them */
    int ndefs;
} bind_session;

/* Prepares L: package.path gains luadir/?.lua and luadir/?/init.lua, and
 * require "pipesim.core" loads the binding. The strings in s must outlive
 * L. */
void bind_setup(lua_State *L, const char *luadir, const bind_session *s);

/* Restricts L's standard libraries for a scenario shared like a
 * configuration file (README "Safety and limits"): no os.execute, io.popen,
 * file writes, native modules, binary chunks or debug functions beyond
 * traceback; require, loadfile and dofile read Lua text from luadir and the
 * scenario's directory only. A refused call raises "x.lua:3: os.execute is
 * not allowed in a sandboxed scenario (run with --unsafe to allow it)".
 * Call after luaL_openlibs and bind_setup; `--unsafe` skips it. */
void bind_sandbox(lua_State *L, const char *luadir, const char *scenario);

/* Loads the scenario file like luaL_loadfile; sandboxed, as text only, with
 * a message naming --unsafe for a precompiled file. [-0, +1] */
int bind_load_scenario(lua_State *L, const char *path, int sandboxed);

/* Commits and closes every database the scenario wrote to. Returns 0, or
 * PS_ERR with the first failure. *runs receives the runs recorded and
 * *db_path the default database (or NULL when nothing was recorded). */
int bind_finish(lua_State *L, long *runs, const char **db_path, ps_err *err);

/* --- shared by the bind_*.c files --- */

/* Opens "pipesim.core": registers every binding area into the table at the
 * top of the stack. */
int bind_open_core(lua_State *L);
void bind_register_cluster(lua_State *L);
void bind_register_run(lua_State *L);
void bind_register_report(lua_State *L);
void bind_register_collective(lua_State *L);

/* Reads optional field `name` of the table at idx as a quantity with units
 * (a number in base units or a string such as "50 GB/s"); *out keeps its
 * value when the field is nil. Raises "field 'x': ..." on bad values. */
void bind_quantity(lua_State *L, int idx, const char *name, int kind,
                   double *out);
/* Same for a plain integer field; raises when not an integer. */
void bind_integer(lua_State *L, int idx, const char *name, long long *out);
/* Optional boolean field. */
void bind_boolean(lua_State *L, int idx, const char *name, int *out);
/* Optional string field; returns NULL when nil. The string stays valid while
 * the table is alive. */
const char *bind_string(lua_State *L, int idx, const char *name);

/* [-0, +1] Reads fields `faults` and `recv_timeout` of the table at idx
 * (bind_fault.c) into a fault plan for a cluster of nranks ranks and pushes
 * its userdata, which owns it: keep it on the stack while the plan is in
 * use. Pushes nil and returns NULL when neither field is set. compute = 0
 * (a collective) refuses `slow` faults. Raises "faults[2]: field 'slow'
 * must be in (0, 1], got 1.5" and the like on bad entries. */
struct fault_plan;
const struct fault_plan *bind_faults(lua_State *L, int idx, int32_t nranks,
                                     int compute);

/* Raises a Lua error whose message is err->msg (no position: the Lua layer
 * adds the scenario's). */
int bind_raise(lua_State *L, const ps_err *err);

/* The database for path (NULL: the session default), opened on first use
 * and kept until bind_finish. Raises on failure. */
struct rec_db *bind_database(lua_State *L, const char *path);
/* Counts a recorded run toward bind_finish's total. */
void bind_count_run(lua_State *L);
/* Called after every simulated run: may redraw the progress line. */
void bind_progress(lua_State *L);

#endif
