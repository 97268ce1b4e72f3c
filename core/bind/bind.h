/* The Lua binding: the only code besides cli/main.c that includes lua.h.
 * It exposes the C core as the module "pipesim.core"; lua/pipesim/init.lua
 * wraps it into the user-facing `pipesim` module (argument checks, defaults,
 * partition helpers) and rethrows errors at the scenario's line. */
#ifndef PS_BIND_H
#define PS_BIND_H

#include <lauxlib.h>
#include <lua.h>

#include "base/err.h"
#include "rec/rec.h"
#include "sim/eng.h"

/* Session settings for one scenario run. */
typedef struct bind_session {
    const char *default_db;  /* where runs go unless ps.run{db=...} */
    const char *scenario;    /* the script's path, for messages */
    const char *const *defs; /* "key=value" from -D, ndefs of them */
    int ndefs;
    int jobs;             /* --jobs: worker processes for ps.sweep, >= 1 */
    int shard_k, shard_n; /* --shard K/N; shard_n 0: none */
} bind_session;

/* Prepares L: package.path gains luadir/?.lua and luadir/?/init.lua, and
 * require "pipesim.core" loads the binding. The strings in s must outlive
 * L. */
void bind_setup(lua_State *L, const char *luadir, const bind_session *s);

/* Restricts L's standard libraries for a scenario shared like a
 * configuration file (README "Safety and limits"): no os.execute, io.popen,
 * file writes, native modules, binary chunks or debug functions beyond
 * traceback; require, loadfile and dofile read Lua text from luadir and the
 * scenario's directory only; databases (ps.run{db = ...}) go to the working
 * directory, the scenario's or db's (the session's). A refused call raises
 * "x.lua:3: os.execute is not allowed in a sandboxed scenario (run with
 * --unsafe to allow it)". Call after luaL_openlibs and bind_setup; `--unsafe`
 * skips it. */
void bind_sandbox(lua_State *L, const char *luadir, const char *scenario,
                  const char *db);
/* Raises unless a sandboxed scenario may write the database at path (see
 * bind_sandbox: its directory must be the working directory, the
 * scenario's, db's, or below one of them); does nothing with --unsafe. */
void bind_sandbox_db(lua_State *L, const char *path);

/* Loads the scenario file like luaL_loadfile; sandboxed, as text only, with
 * a message naming --unsafe for a precompiled file. [-0, +1] */
int bind_load_scenario(lua_State *L, const char *path, int sandboxed);

/* A Lua state whose allocator charges the --max-memory budget (base/limit.h).
 * NULL when out of memory. */
lua_State *bind_newstate(void);

/* Starts the run's limits on L (limit_start: signals, the --timeout timer
 * when timeout > 0): a requested stop raises at L's next instruction, in
 * any coroutine, with "x.lua:2: time limit of 10 s reached". Functions
 * that report a core failure raise the stop instead (bind_raise).
 * bind_limits_end removes the hook and restores the signal actions. */
int bind_limits(lua_State *L, const char *luadir, double timeout, ps_err *err);
void bind_limits_end(lua_State *L);
/* Instead of bind_limits_end and lua_close: closes L with the limits
 * still on, so that finalizers run at exit (__gc metamethods) are bound
 * by them too, then ends the limits. */
void bind_limits_close(lua_State *L);
/* The first error raised in a __gc metamethod of a state made by
 * bind_newstate (Lua reports it as a warning and goes on), or NULL. */
const char *bind_gc_error(void);
/* Raises the stop's message (limit_message), noting the scenario line. */
int bind_raise_stop(lua_State *L);

/* [-0, +1] luaL_loadfilex(L, file, mode) for the module name (require's):
 * the bytecode built into pipesim when file has exactly the bytes it was
 * compiled from (bind/embed.c), else the file as luaL_loadfilex loads it.
 * Returns LUA_OK with the chunk pushed, or luaL_loadfilex's status and
 * message. */
int bind_load_module(lua_State *L, const char *name, const char *file,
                     const char *mode);
/* 1 when bind_load_module(L, name, file, ...) takes the built-in bytecode
 * (PIPESIM_EMBED=0 turns it off: base/embed.h), else 0. */
int bind_embedded(const char *name, const char *file);
/* Makes package.searchers[2] Lua's file searcher through
 * bind_load_module (bind_setup; the sandbox installs its own). */
void bind_embed_setup(lua_State *L);

/* Commits and closes every database the scenario wrote to. Returns 0, or
 * PS_ERR with the first failure. *runs receives the runs recorded (those
 * in the files: a sweep's batch SQLite rolled back is not counted) and
 * *db_path the default database (or NULL when nothing was recorded). */
int bind_finish(lua_State *L, long *runs, const char **db_path, ps_err *err);
/* The runs in bind_finish's *db_path after its commits, counted before it
 * closed the file (earlier processes' runs included), or -1 when unknown
 * (nothing recorded there, a failed commit, no bind_finish yet). */
int64_t bind_finish_total(lua_State *L);

/* --- shared by the bind_*.c files --- */

/* The functions of each Lua-visible area of "pipesim.core", registered
 * by bind/open.c (the one file that knows every area). */
extern const luaL_Reg bind_core_funcs[];       /* bind/core.c: args, ... */
extern const luaL_Reg bind_cluster_funcs[];    /* cluster */
extern const luaL_Reg bind_run_funcs[];        /* run, check_run */
extern const luaL_Reg bind_run_memo_funcs[];   /* layers_snapshot, ... */
extern const luaL_Reg bind_collective_funcs[]; /* collective */
extern const luaL_Reg bind_report_funcs[];     /* report */
extern const luaL_Reg bind_check_funcs[];      /* check_fields, ... */
extern const luaL_Reg bind_sweep_funcs[];      /* sweep_info, ... */
extern const luaL_Reg bind_live_funcs[];       /* live_calibrate */
extern const luaL_Reg bind_layout_funcs[];     /* layout */

/* [-0, +0] An identity of the cluster userdata at idx that no other
 * cluster of the process shares (bind/layout.c): a number kept in a
 * weak-keyed registry table, so the cluster allocated at a collected one's
 * address gets a new one (pipe_config.net_id). */
uint64_t bind_cluster_id(lua_State *L, int idx);

/* Layer tables of core.run hold at most this many layers (int32 counts);
 * core.max_layers for the Lua side. */
#define BIND_MAX_LAYERS (1 << 24)
/* Raises unless every layer field core.run reads is in bind_fields_layer
 * (else a field could be read and still be reported as unknown). */
void bind_check_layer_fields(lua_State *L);

/* Raises "the scenario has ended: ..." once bind_finish has begun (a
 * __gc metamethod run at exit); bind_database, bind_setmetatable and
 * core.sweep_map call it. */
void bind_check_open(lua_State *L);
/* Marks the scenario ended (bind_finish does; a sweep worker before it
 * closes its state). */
void bind_session_end(lua_State *L);
/* Makes the session of bind_setup (registry state every area reads). */
void bind_session_new(lua_State *L, const bind_session *bs);

/* [-0, +0] Sets the metatable tname on the value on top, creating it
 * with the methods in meta (luaL_setfuncs) on first use. */
void bind_setmetatable(lua_State *L, const char *tname, const luaL_Reg *meta);

/* --- the checking vocabulary (core/bind/check.c) ---
 * Every table the binding reads is checked against the list of its known
 * fields in core/bind/fields.c (one list per table: a new field goes there,
 * or its table rejects it as unknown). Messages, relative to the call (the
 * Lua layer prefixes "file:line: ps.run: "):
 *   <table>: unknown field 'k' (did you mean 'x'?)
 *   <table>: missing field 'k'
 *   field '<name>' must be <what>, got <value>
 * A table's path is empty at the top, then "device", "devices[3]",
 * "links[2]", "layers[3]", "grad_sync"; a field's name is its table's path
 * and its key joined by '.' ("link.bandwidth", "layers[3].fwd_time"). The
 * readers below take such a name and read its last component from the
 * table at idx. Every reader raises (through luaL_error) on a bad value
 * and leaves the stack as it found it ([-0, +0]) unless it says
 * otherwise. */

/* Rejects any key of the table at idx that is not in known (a
 * NULL-terminated list; list entries are spelt "[1]", "[2]"). Reports the
 * first unknown key in sorted order with the closest known name. known
 * must be a static list: its address keys a set of its names kept in the
 * registry. */
void bind_check_fields(lua_State *L, int idx, const char *path,
                       const char *const *known);
/* Writes into buf the name of field key of the table at path: "bandwidth"
 * at the top (path "" or NULL), "link.bandwidth" below; returns buf. */
const char *bind_join(char *buf, size_t n, const char *path, const char *key);
/* The closest name in known to word, or NULL when none is close. */
const char *bind_suggest(const char *word, const char *const *known);
/* The length of the list (a table) at idx; raises when it has holes or
 * keys other than 1..n. name is the list's field name. */
lua_Integer bind_list_len(lua_State *L, int idx, const char *name);
/* Pushes field `name` of the table at idx and returns 1 when it is a table;
 * returns 0 (nothing pushed) when it is nil; raises "field 'x' must be a
 * table <hint>, got ..." otherwise. hint may be NULL. [-0, +(0|1)] */
int bind_table(lua_State *L, int idx, const char *name, const char *hint);
/* Pushes a value for messages: 'text' quoted (NUL and control bytes
 * escaped), numbers as Lua prints them, "a table" for the rest. [-0, +1] */
const char *bind_show(lua_State *L, int idx);
/* Raises "field 'name' <what>", with ", got <value>" when value (a stack
 * index) is not 0. */
void bind_field_error(lua_State *L, const char *name, const char *what,
                      int value);

/* Optional quantity with units (a number in base units or a string such
 * as "50 GB/s"); *out keeps its value when the field is nil. */
void bind_quantity(lua_State *L, int idx, const char *name, int kind,
                   double *out);
/* Same, and when present it must be > min (strict) or >= min. Returns 1
 * when the field was present. */
int bind_quantity_min(lua_State *L, int idx, const char *name, int kind,
                      double min, int strict, double *out);
/* The same for field key of the table at path (NULL or "" at the top),
 * the name built only for a message: for readers of many fields. */
int bind_quantity_in(lua_State *L, int idx, const char *path, const char *key,
                     int kind, double min, int strict, double *out);
/* The same for the value at the top of the stack (not nil), field key of
 * the table at path; the value stays. */
void bind_quantity_top(lua_State *L, const char *path, const char *key,
                       int kind, double min, int strict, double *out);
/* Optional string field key of the table at path (NULL when nil). */
const char *bind_string_in(lua_State *L, int idx, const char *path,
                           const char *key);
/* Parses the string at idx (its whole Lua length: an embedded NUL is an
 * error) as a quantity of kind. Returns 0 or PS_ERR with err set. */
int bind_parse_quantity(lua_State *L, int idx, int kind, double *out,
                        ps_err *err);
/* Optional integer field in 64 bits, any value. */
void bind_integer(lua_State *L, int idx, const char *name, long long *out);
/* Optional integer field that must lie in lo..hi, checked in 64 bits
 * before the caller narrows it (2^32 + 8 is out of an int32 range, not 8).
 * Returns 1 when the field was present. */
int bind_int(lua_State *L, int idx, const char *name, long long lo,
             long long hi, long long *out);
/* The same check for the value at idx (a list entry). */
void bind_check_int(lua_State *L, int idx, const char *name, long long lo,
                    long long hi, long long *out);
/* Optional boolean field. */
void bind_boolean(lua_State *L, int idx, const char *name, int *out);
/* Optional string field; returns NULL when nil. The string stays valid while
 * the table is alive. */
const char *bind_string(lua_State *L, int idx, const char *name);

/* [-0, +1] Reads fields `faults` and `recv_timeout` of the table at idx
 * (bind/fault.c) into a fault plan for a cluster of nranks ranks and pushes
 * its userdata, which owns it: keep it on the stack while the plan is in
 * use. Pushes nil and returns NULL when neither field is set. compute = 0
 * (a collective) refuses `slow` faults. Raises "field 'faults[2].slow'
 * must be in (0, 1], got 1.5" and the like on bad entries. */
struct fault_plan;
const struct fault_plan *bind_faults(lua_State *L, int idx, int32_t nranks,
                                     int compute);

/* Field `p2p` of the table at idx: "rendezvous" (nil) or "eager"; with
 * pytorch non-NULL also "pytorch" (rendezvous transfers posted the way
 * PyTorch's _PipelineScheduleRuntime posts them, sched_spec.pytorch_p2p),
 * which sets *pytorch. Raises "field 'p2p': unknown mode 'x' (expected
 * ...)". */
enum eng_p2p bind_p2p(lua_State *L, int idx, int *pytorch);
/* Field `record` of the table at idx: "events" (nil) or "summary" into
 * *level and returns 1; "none" returns 0 (no database at all). Raises on
 * any other value. */
int bind_record(lua_State *L, int idx, enum rec_level *level);

/* The object kept in the registry slot key, made by make() on first use
 * (and again after its __gc was called by hand); the slot's userdata frees
 * it with drop() when the state closes. Raises on out of memory. */
void *bind_context(lua_State *L, const char *key, void *(*make)(void),
                   void (*drop)(void *));

/* [-0, +0] The (light or full) userdata pointer kept in the registry slot
 * key, or NULL when the slot holds none. */
void *bind_registry_ptr(lua_State *L, const char *key);

/* Field params_json of the table at idx: a string, or a function (the Lua
 * layer's, called once every field is checked) whose result is stored
 * back into the table. NULL when absent. */
const char *bind_params_json(lua_State *L, int idx);

/* Field meta of the table at idx (init.lua's: sweep, point JSON, tags
 * JSON, model, batch shape; core/bind/sweep.c) into *m, with the session's
 * scenario version; *m is zeroed when the field is absent. The strings
 * stay valid while the table is alive. */
struct rec_meta;
void bind_meta(lua_State *L, int idx, struct rec_meta *m);

/* A command's call into Lua (bind/command.c): status LUA_OK gives 0;
 * otherwise the error object on top is printed as the one `pipesim: ...`
 * line, popped, and 1 is returned (the exit status). */
int bind_command_status(lua_State *L, int status);

/* Field efficiency of the meta table at idx (lua/pipesim/efficiency.lua's
 * figures of a training step; core/bind/efficiency.c) into *e, zeroed
 * when absent. The strings stay valid while the table is alive. */
struct rec_eff;
void bind_efficiency(lua_State *L, int idx, struct rec_eff *e);

/* The known fields of each table (core/bind/fields.c). */
extern const char *const bind_fields_run[];
extern const char *const bind_fields_memory[];
extern const char *const bind_fields_grad_sync[];
extern const char *const bind_fields_tp_comm[];
extern const char *const bind_fields_layout[];
extern const char *const bind_fields_layer[];
extern const char *const bind_fields_cluster[];
extern const char *const bind_fields_device[];
extern const char *const bind_fields_link[];
extern const char *const bind_fields_links_entry[];
extern const char *const bind_fields_collective[];
extern const char *const bind_fields_fault[];
extern const char *const bind_fields_meta[];
extern const char *const bind_fields_efficiency[];
/* Pushes { run = {names...}, device = {...}, ... }: the lists above for
 * the Lua modules (core.fields). [-0, +1] */
void bind_push_fields(lua_State *L);

/* [-0, +1] Pushes core.field_roles: { run = {...}, layer = {...} }, each
 * field with a role in the Lua front end as { role = true } (fields.c) */
void bind_push_field_roles(lua_State *L);

/* Raises a Lua error whose message is err->msg (no position: the Lua layer
 * adds the scenario's); once a stop is requested (base/limit.h), the stop's
 * message instead, since the failure is its consequence. */
int bind_raise(lua_State *L, const ps_err *err);

/* The database for path (NULL: the session default), opened on first use
 * and kept until bind_finish; in a sweep's worker, the hook's (below).
 * Raises on failure. */
struct rec_db *bind_database(lua_State *L, const char *path);
/* In a sweep's worker process (bind/pool.c): hook answers bind_database
 * instead of the session's databases, with the database the worker
 * records path's runs in (path NULL: the session's), which the writer
 * copies from; it raises as bind_database does. Set on the session, so
 * that the session (bind/core.c) never calls the worker. */
typedef struct rec_db *(*bind_database_hook)(lua_State *L, const char *path);
void bind_set_database_hook(lua_State *L, bind_database_hook hook);
/* Counts a recorded run toward bind_finish's total. */
void bind_count_run(lua_State *L);
/* The runs counted so far (bind_count_run), in this process. */
long bind_runs_recorded(lua_State *L);
/* Called after every simulated run: may redraw the progress line. */
void bind_progress(lua_State *L);
/* A sweep's progress: done of total points, with the rate and the time
 * left (drawn as bind_progress is); total 0 ends the sweep's line. */
void bind_progress_sweep(lua_State *L, long done, long total);
/* The session's state in the run layer (run/session.h: databases,
 * counts, batches, shards, the progress line). */
struct run_session *bind_run_session(lua_State *L);
/* The session bind_setup was given (NULL before it). */
const bind_session *bind_get_session(lua_State *L);

/* --- sweeps (core/bind/sweep.c; the worker pool in core/bind/pool.c) --- */
/* core.sweep_map(n, jobs, eval) (bind/pool.c). */
int bind_sweep_map(lua_State *L);
/* The registry key of the hash of the scenario's bytes as
 * bind_load_scenario read them (run_fnv1a, an integer): with the -D
 * arguments they make the scenario's version (run.scenario, bind/sweep.c),
 * which pipesim merge compares. */
#define BIND_SOURCE_HASH_KEY "pipesim.source_hash"
/* Under --shard K/N: marks this process's shard rows finished (the
 * scenario ended without an error: the shard holds every run of its
 * points, rec_shard_end); PS_OK when it recorded none. */
int bind_sweep_shard_end(lua_State *L, ps_err *err);
/* 1 when the scenario has called ps.sweep (--shard needs one). */
int bind_sweeps_run(lua_State *L);
/* Puts db in batch mode (rec_set_batch) for a run of the sweep in progress
 * (sweep: the run's meta.sweep, NULL for a run outside one), off for any
 * other; the sweep's end (core.sweep_batch(false)) commits what the
 * batches hold. 1 when the run is batched. */
int bind_sweep_batch(lua_State *L, struct rec_db *db, const char *sweep);
/* A sweep worker's results as bytes (bind/result.c): nil, booleans,
 * numbers, strings and tables of them. bind_result_put: the value at idx
 * into *bytes (malloc'd, *n long), NULL; or the name of what it cannot
 * write (nothing made). bind_result_get: pushes the value the bytes hold
 * and returns 0; -1, nothing pushed, when they are damaged. */
const char *bind_result_put(lua_State *L, int idx, unsigned char **bytes,
                            size_t *n);
int bind_result_get(lua_State *L, const unsigned char *bytes, size_t n);
/* 1 in a sweep's worker process (bind/pool.c). */
int bind_sweep_worker(lua_State *L);

#endif
