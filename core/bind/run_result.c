/* ps.run's result table from a run's pipe_config and pipe_result (for
 * core.run, bind/run.c): its fields written once each in tables with their
 * slots, the per-rank arrays, the TP groups and the memory fit. */
#include <lauxlib.h>
#include <math.h>
#include <stddef.h>

#include "bind/live.h"
#include "bind/run_opts.h"
#include "step/pipe.h"

/* [-0, +1] pushes the list */
static void push_ints(lua_State *L, const int32_t *v, int32_t n)
{
    lua_createtable(L, n, 0);
    for (int32_t i = 0; i < n; i++) {
        lua_pushinteger(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

/* [-0, +1] pushes the list */
static void push_array(lua_State *L, const double *v, int32_t n)
{
    lua_createtable(L, n, 0);
    for (int32_t i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

/* [-0, +0] With tensor parallelism, on the result table on top: r.stands_for
 * (per simulated rank, the cluster ranks it stands for: its TP group when
 * TP is simulated once, else itself) and r.tp_groups (per simulated rank,
 * its TP group). With TP simulated once each simulated rank's two lists
 * are one table. */
static void push_groups(lua_State *L, const pipe_result *res, int32_t tp)
{
    lua_createtable(L, res->n, 0); /* stands_for */
    lua_createtable(L, res->n, 0); /* tp_groups */
    for (int32_t k = 0; k < res->n; k++) {
        push_ints(L, res->member + (size_t)k * res->per, res->per);
        if (res->tp_unfolded == 1) {
            lua_pushvalue(L, -1);
        } else { /* instances i = j tp + tp rank: the group's are adjacent */
            int32_t p = res->n / res->ninstances, i = k / p, r = k % p;
            lua_createtable(L, tp, 0);
            for (int32_t x = 0; x < tp; x++) {
                lua_pushinteger(L, res->rank[(i / tp * tp + x) * p + r]);
                lua_rawseti(L, -2, x + 1);
            }
        }
        lua_rawseti(L, -3, k + 1);
        lua_rawseti(L, -3, k + 1);
    }
    lua_setfield(L, -3, "tp_groups");
    lua_setfield(L, -2, "stands_for");
}

/* [-0, +0] t[k] = v (nothing for NaN), t on top */
static void set_number(lua_State *L, const char *k, double v)
{
    if (isnan(v))
        return;
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

/* [-0, +0] Sets r.fits (nil when a capacity is unknown) and, when some
 * entries exceed their device's memory, r.over_capacity (their 1-based
 * indices into the per-rank arrays) and r.over_capacity_ranks (their
 * cluster rank numbers, from 0 as in the database) on the table on top. */
static void push_fits(lua_State *L, const pipe_result *res)
{
    if (res->fits != REC_FITS_UNKNOWN) {
        lua_pushboolean(L, res->fits == REC_FITS_YES);
        lua_setfield(L, -2, "fits");
    }
    if (res->nover == 0)
        return;
    lua_createtable(L, res->nover, 0);
    lua_createtable(L, res->nover, 0);
    for (int32_t k = 0, i = 0; k < res->n; k++) {
        if (!(res->capacity[k] > 0 && res->peak_memory[k] > res->capacity[k]))
            continue;
        i++;
        lua_pushinteger(L, k + 1);
        lua_rawseti(L, -3, i);
        lua_pushinteger(L, res->rank[k]);
        lua_rawseti(L, -2, i);
    }
    lua_setfield(L, -3, "over_capacity_ranks");
    lua_setfield(L, -2, "over_capacity");
}

/* The result's fields, each written once with its slot: ps.run's result
 * table (push_result) in this order. The per-rank arrays are r.<key>[k]
 * over the simulated ranks; ep_only ones are there with ep > 1. */
static const struct result_int {
    const char *key;
    size_t off; /* int32_t in pipe_config */
} result_ints[] = {
    {"stages", offsetof(pipe_config, p)},
    {"microbatches", offsetof(pipe_config, m)},
    {"virtual_stages", offsetof(pipe_config, v)},
};

static const struct result_number {
    const char *key;
    size_t off; /* double in pipe_result; nil when NaN */
} result_numbers[] = {
    {"makespan", offsetof(pipe_result, makespan)},
    {"bubble", offsetof(pipe_result, bubble)},
    {"closed_form_bubble", offsetof(pipe_result, closed_form_bubble)},
    {"imbalance", offsetof(pipe_result, imbalance)},
};

static const struct result_array {
    const char *key;
    size_t off; /* double * in pipe_result, res->n entries */
    int ep_only;
} result_arrays[] = {
    {"stage_bubble", offsetof(pipe_result, stage_bubble), 0},
    {"peak_memory", offsetof(pipe_result, peak_memory), 0},
    {"peak_time", offsetof(pipe_result, t_peak), 0},
    {"static_memory", offsetof(pipe_result, static_memory), 0},
    {"exposed_comm", offsetof(pipe_result, exposed_comm), 0},
    {"exposed_a2a", offsetof(pipe_result, exposed_a2a), 1},
    {"exposed_a2a_overlapped", offsetof(pipe_result, exposed_a2a_pairs), 1},
};

#define NRESULT(a) (sizeof(a) / sizeof(a)[0])

/* [-0, +0] the per-rank arrays of result_arrays (those with ep_only ==
 * ep) on the table on top */
static void push_result_arrays(lua_State *L, const pipe_result *res, int ep)
{
    for (size_t i = 0; i < NRESULT(result_arrays); i++) {
        if (result_arrays[i].ep_only != ep)
            continue;
        const double *v =
            *(double *const *)((const char *)res + result_arrays[i].off);
        push_array(L, v, res->n);
        lua_setfield(L, -2, result_arrays[i].key);
    }
}

void bind_run_push_result(lua_State *L, const pipe_config *cfg,
                          const pipe_result *res)
{
    /* the 21 fields below and ps.run's (tp, recompute, point, ...) */
    lua_createtable(L, 0, 27);
    if (res->id > 0) {
        lua_pushinteger(L, res->id);
        lua_setfield(L, -2, "id");
    }
    if (cfg->name) {
        lua_pushstring(L, cfg->name);
        lua_setfield(L, -2, "name");
    }
    lua_pushstring(L, cfg->schedule_name);
    lua_setfield(L, -2, "schedule");
    for (size_t i = 0; i < NRESULT(result_ints); i++) {
        lua_pushinteger(
            L, *(const int32_t *)((const char *)cfg + result_ints[i].off));
        lua_setfield(L, -2, result_ints[i].key);
    }
    for (size_t i = 0; i < NRESULT(result_numbers); i++)
        set_number(
            L, result_numbers[i].key,
            *(const double *)((const char *)res + result_numbers[i].off));
    lua_pushboolean(L, res->folded);
    lua_setfield(L, -2, "folded");
    lua_pushinteger(L, cfg->dp);
    lua_setfield(L, -2, "dp");
    push_ints(L, res->rank, res->n);
    lua_setfield(L, -2, "rank");
    push_result_arrays(L, res, 0);
    if (cfg->ep > 1) {
        push_result_arrays(L, res, 1);
        lua_pushinteger(L, cfg->ep);
        lua_setfield(L, -2, "ep");
    }
    push_fits(L, res);
    lua_pushinteger(L, res->eng.events);
    lua_setfield(L, -2, "events");
    if (cfg->tp > 1)
        push_groups(L, res, cfg->tp);
    if (cfg->live)
        bind_live_pipe_push(L, cfg->live, res->rank, res->n);
}
