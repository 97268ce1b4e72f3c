/* Live mode's fields and results in the binding (bind/live.c), shared by
 * ps.collective (bind/collective.c) and ps.run (bind/run.c). */
#ifndef PS_BIND_LIVE_H
#define PS_BIND_LIVE_H

#include <lua.h>
#include <stdint.h>

#include "live/live.h"
#include "rec/rec.h"
#include "step/pipe.h"

typedef struct bind_live {
    int tcp; /* backend = "tcp" */
    int iterations, warmup;
    double watchdog;       /* seconds; 0: live mode's default */
    live_inject inject;    /* tests of the calibration */
    const char *bytes_log; /* NULL: none */
} bind_live;

/* Reads backend, iterations, warmup, watchdog, inject and bytes_log of the
 * table at idx into *out; iterations and warmup default to the given
 * values. Raises on a bad value, and on a live-mode field without backend
 * = "tcp". */
void bind_live_read(lua_State *L, int idx, int iterations, int warmup,
                    bind_live *out);

/* [-0, +0] Adds live mode's fields to the result table at the top:
 * backend, simulated, times, median_iteration, clock_error, and per listed
 * rank (ranks[i], or i when ranks is NULL; n of them) bytes_sent,
 * bytes_received and header_bytes as the sockets counted them. */
void bind_live_push(lua_State *L, const live_result *r, double simulated,
                    const int32_t *ranks, int32_t n);

/* Writes lv->bytes_log, when set, for run id: live mode's socket counts
 * (r), or a simulated run's transfer rows (r NULL: needs events, the run
 * recorded at the events level, and db). Returns 0, or PS_ERR with err
 * set (the caller frees what it holds, then raises). */
int bind_live_bytes_log(lua_State *L, const bind_live *lv, rec_db *db,
                        int64_t id, int events, const live_result *r,
                        ps_err *err);

/* [-0, +1] ps.run's field compute (the MLP) into a pipe_live, pushed as
 * a userdata that owns it (keep it on the stack while pipe_run runs), for
 * cfg's layers, which it replaces by a copy whose params, out_bytes and
 * act_bytes are the MLP's where the scenario left them out (and refused
 * where they differ); pushes nil and returns NULL without backend =
 * "tcp". Raises on a bad field, or without compute in live mode. */
pipe_live *bind_live_pipe(lua_State *L, int idx, const bind_live *lv,
                          pipe_config *cfg);

/* [-0, +0] Live mode's fields of a pipeline's result table at the top:
 * bind_live_push's, grad_error, held_activations and recompute_time (per
 * entry of the result's rank list, n of them). */
void bind_live_pipe_push(lua_State *L, const pipe_live *pl,
                         const int32_t *ranks, int32_t n);

/* pipesim calibrate (argv[0] "calibrate"): ps.calibrate from the command
 * line, the cluster file to -o (default results/calibrated_cluster.lua)
 * and with --layers the profile to --profile. Returns the exit status. */
int bind_live_calibrate_main(int argc, char **argv, const char *luadir);

/* pipesim worker --rendezvous HOST:PORT: joins a coordinator (waiting up
 * to timeout seconds for it), runs the scenario it sends, sandboxed and
 * recording nothing, serving each live run as the rank it is given.
 * Returns the exit status. */
int bind_live_worker_main(const char *hostport, double timeout,
                          const char *luadir);

/* pipesim run --rendezvous HOST:PORT --workers W: waits (up to timeout
 * seconds) for W workers and sends them the scenario's text and -D
 * arguments; the scenario's live runs then use them. _end closes the
 * session. */
int bind_live_rendezvous(const char *hostport, int workers, double timeout,
                         const char *scenario, const char *const *defs,
                         int ndefs, ps_err *err);
void bind_live_rendezvous_end(void);

/* --bytes-log: the file of runs that name none (borrowed; NULL: none). */
void bind_live_set_bytes_log(const char *path);

#endif
