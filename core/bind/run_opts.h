/* ps.run's step options (bind/run_opts.c) and result table
 * (bind/run_result.c), for core.run (bind/run.c).
 * Each raises a one-line Lua error naming the field on bad input. */
#ifndef PS_BIND_RUN_OPTS_H
#define PS_BIND_RUN_OPTS_H

#include <lua.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/sched.h"
#include "step/pipe.h"

/* [-0, +1] n zeroed elements of size bytes in a userdata left on the
 * stack: freed by the collector, so an error raised half way leaks
 * nothing. */
void *bind_run_scratch(lua_State *L, size_t n, size_t size);

/* [-0, +1] the schedule field into cfg: a name or a custom list of
 * actions per stage (its arrays in *orders and *counts, scratch). */
void bind_run_schedule(lua_State *L, pipe_config *cfg,
                       const sched_action ***orders, int32_t **counts);

/* [-0, +(0|1)] chunk_placement of the table at idx; a list leaves its
 * array (*place) as scratch on the stack. */
enum sched_placement bind_run_placement(lua_State *L, int idx,
                                        const pipe_config *cfg,
                                        const int32_t **place);

/* [-0, +0] overlap_fb, fb_interference and ep_comm_share into cfg. */
void bind_run_overlap(lua_State *L, pipe_config *cfg);

/* [-0, +0] memory = { weight_bytes, grad_bytes, optimizer_bytes }. */
void bind_run_memory(lua_State *L, pipe_config *cfg);

/* [-0, +1] partition: p * v layer counts, each in 1..nlayers, into
 * cfg->partition (scratch left on the stack). */
void bind_run_partition(lua_State *L, pipe_config *cfg);

/* [-0, +0] grad_sync, zero and its sharding fields, optimizer_time. */
void bind_run_grad_sync(lua_State *L, pipe_config *cfg);

/* [-0, +1] ps.run's result table from cfg and res (bind/run_result.c):
 * the run's figures, per-rank arrays, TP groups and memory fit; ps.run's
 * Lua side adds tp, recompute, ... */
void bind_run_push_result(lua_State *L, const pipe_config *cfg,
                          const pipe_result *res);

#endif
