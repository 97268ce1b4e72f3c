/* core.layout: the parallel layout (par/layout.h) seen from Lua, for
 * ps.layout{...} (lua/pipesim/parallel.lua builds the view) and for the
 * Lua side of ps.run (the TP group a TP collective is costed on, each
 * stage's rank for partition = "time"). Translates and does nothing else:
 * groups, coordinates and spans come from par/. */
#include <lauxlib.h>
#include <math.h>
#include <string.h>

#include "bind/bind.h"
#include "bind/cluster.h"
#include "coll/coll.h"
#include "par/dp.h"
#include "par/layout.h"

/* [-0, +1] The ranks list field of the table at 1 as a scratch array of
 * world entries (TP rank innermost, then context, stage, replica), or
 * NULL (nothing pushed but nil) when absent. nranks bounds each entry
 * (0: no cluster, any rank up to the limit). */
static const int32_t *read_ranks(lua_State *L, const par_sizes *s,
                                 int64_t world, int32_t nranks)
{
    if (!bind_table(L, 1, "ranks", "of cluster ranks such as { 0, 1, 2, 3 }")) {
        lua_pushnil(L);
        return NULL;
    }
    lua_Integer len = bind_list_len(L, -1, "ranks");
    if (len != world && s->cp > 1)
        luaL_error(L,
                   "field 'ranks' must list %d cluster ranks (tp %d x cp %d x "
                   "stages %d x dp %d, TP rank innermost), got %d",
                   (int)world, (int)s->tp, (int)s->cp, (int)s->pp, (int)s->dp,
                   (int)len);
    if (len != world) /* core.run's words (core/bind/run.c) */
        luaL_error(L,
                   "field 'ranks' must list %d cluster ranks (tp %d x stages "
                   "%d x dp %d, TP rank innermost), got %d",
                   (int)world, (int)s->tp, (int)s->pp, (int)s->dp, (int)len);
    int32_t *r = lua_newuserdatauv(L, (size_t)world * sizeof *r + 1, 0);
    lua_rotate(L, -2, 1);
    for (int64_t k = 0; k < world; k++) {
        lua_geti(L, -1, k + 1);
        long long x;
        int at = lua_gettop(L);
        bind_check_int(L, at, lua_pushfstring(L, "ranks[%d]", (int)k + 1), 0,
                       nranks > 0 ? nranks - 1 : PAR_MAX_RANKS - 1, &x);
        lua_pop(L, 2);
        r[k] = (int32_t)x;
    }
    lua_pop(L, 1); /* the list; the scratch stays */
    return r;
}

/* The world the table at 1 sets (cluster or world) or 0, and the cluster
 * (pushed, or nil). */
static int32_t read_world(lua_State *L, bind_cluster **cl)
{
    *cl = NULL;
    long long world = 0;
    if (lua_getfield(L, 1, "cluster") != LUA_TNIL) {
        *cl = bind_check_cluster(L, -1);
        world = (*cl)->nranks;
        if (lua_getfield(L, 1, "world") != LUA_TNIL)
            luaL_error(L, "give 'cluster' or 'world', not both");
        lua_pop(L, 1);
    } else {
        bind_int(L, 1, "world", 1, PAR_MAX_RANKS, &world);
    }
    return (int32_t)world;
}

/* [-0, +2] Reads the table at 1 into L (pushes the ranks scratch or nil,
 * and the cluster or nil). dp, when absent, is the world's remainder. */
static bind_cluster *read_layout(lua_State *L, par_layout *lay)
{
    bind_check_fields(L, 1, "", bind_fields_layout);
    par_sizes s;
    par_sizes_init(&s);
    long long v[8] = {1, 1, 1, 0, 1, 1, 0, 0};
    static const char *const names[8] = {"tp", "cp", "ep",  "dp",
                                         "pp", "vp", "etp", "shard_group"};
    for (int i = 0; i < 8; i++)
        bind_int(L, 1, names[i], i >= 6 ? 0 : 1, PAR_MAX_RANKS, &v[i]);
    long long shard = 0;
    bind_int(L, 1, "shard", 0, PAR_SHARD_PARAMS, &shard);
    s.tp = (int32_t)v[0], s.cp = (int32_t)v[1], s.ep = (int32_t)v[2];
    s.pp = (int32_t)v[4], s.vp = (int32_t)v[5], s.etp = (int32_t)v[6];
    s.shard_group = (int32_t)v[7], s.shard = (int)shard;
    bind_cluster *cl;
    int32_t world = read_world(L, &cl);
    int64_t model = (int64_t)s.tp * s.cp * s.pp;
    if (v[3] == 0 && world == 0)
        v[3] = 1;
    if (v[3] == 0 && world % model)
        luaL_error(L,
                   "the world of %d ranks is not divisible by tp %d x cp %d "
                   "x pp %d (%I ranks)",
                   (int)world, (int)s.tp, (int)s.cp, (int)s.pp,
                   (lua_Integer)model);
    s.dp = v[3] ? (int32_t)v[3] : (int32_t)(world / model);
    if (world && par_sizes_world(&s) != world)
        luaL_error(L, "tp %d x cp %d x dp %d x pp %d is %I ranks but %s has %d",
                   (int)s.tp, (int)s.cp, (int)s.dp, (int)s.pp,
                   (lua_Integer)par_sizes_world(&s),
                   cl ? "the cluster" : "the world", (int)world);
    enum par_order order = PAR_DP_INNER;
    const char *placement = bind_string(L, 1, "placement");
    ps_err err;
    if (placement && par_parse_order(placement, &order, &err))
        luaL_error(L, "field 'placement': %s", err.msg);
    /* the world is checked by par_layout_init; a list is read after */
    if (par_layout_init(lay, &s, order, NULL, &err))
        luaL_error(L, "%s", err.msg);
    const int32_t *ranks =
        read_ranks(L, &s, par_world(lay), cl ? cl->nranks : 0);
    if (ranks && par_layout_init(lay, &s, order, ranks, &err))
        luaL_error(L, "%s", err.msg);
    lua_insert(L, -2); /* the cluster on top */
    return cl;
}

/* The mask of a Megatron token such as "dp-cp", "tp" or "ep-etp"; the
 * expert side's when it names ep, etp or edp (etp and edp are the expert
 * generator's tp and dp). Raises on anything else. */
static unsigned token_mask(lua_State *L, const char *token)
{
    static const struct {
        const char *name;
        int dim;
        int expert;
    } known[] = {{"tp", PAR_TP, 0},  {"cp", PAR_CP, 0}, {"dp", PAR_DP, 0},
                 {"pp", PAR_PP, -1}, {"ep", PAR_EP, 1}, {"etp", PAR_TP, 1},
                 {"edp", PAR_DP, 1}};
    unsigned mask = 0;
    int dense = 0, expert = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", token);
    for (char *t = strtok(buf, "-"); t; t = strtok(NULL, "-")) {
        size_t i = 0, n = sizeof known / sizeof known[0];
        while (i < n && strcmp(known[i].name, t) != 0)
            i++;
        if (i == n)
            luaL_error(L,
                       "unknown group '%s' (expected dimensions tp, cp, dp, "
                       "pp, ep, etp or edp joined by '-', such as 'dp-cp')",
                       token);
        mask |= PAR_BIT(known[i].dim);
        dense |= known[i].expert == 0;
        expert |= known[i].expert == 1;
    }
    if (dense && expert)
        luaL_error(L,
                   "group '%s' mixes the dense side (tp, cp, dp) and the "
                   "expert side (ep, etp, edp)",
                   token);
    return mask | (expert ? PAR_EXPERT : 0);
}

/* [-0, +1] The groups of mask as a list of lists of cluster ranks. */
static void push_groups(lua_State *L, const par_layout *lay, unsigned mask)
{
    int32_t ng = par_group_count(lay, mask), size = par_group_size(lay, mask);
    int32_t *g = lua_newuserdatauv(L, (size_t)size * sizeof *g, 0);
    lua_createtable(L, ng, 0);
    for (int32_t i = 0; i < ng; i++) {
        par_group(lay, mask, i, g);
        lua_createtable(L, size, 0);
        for (int32_t m = 0; m < size; m++) {
            lua_pushinteger(L, g[m]);
            lua_rawseti(L, -2, m + 1);
        }
        lua_rawseti(L, -2, i + 1);
    }
    lua_remove(L, -2);
}

/* [-0, +1] Megatron's embedding groups (parallel_state.py
 * default_embedding_ranks): the first and the last rank of each pipeline
 * group, or its one rank when pp = 1. */
static void push_embedding(lua_State *L, const par_layout *lay)
{
    unsigned mask = PAR_BIT(PAR_PP);
    int32_t ng = par_group_count(lay, mask), p = lay->s.pp;
    int32_t *g = lua_newuserdatauv(L, (size_t)p * sizeof *g, 0);
    lua_createtable(L, ng, 0);
    for (int32_t i = 0; i < ng; i++) {
        par_group(lay, mask, i, g);
        lua_createtable(L, p > 1 ? 2 : 1, 0);
        lua_pushinteger(L, g[0]);
        lua_rawseti(L, -2, 1);
        if (p > 1) {
            lua_pushinteger(L, g[p - 1]);
            lua_rawseti(L, -2, 2);
        }
        lua_rawseti(L, -2, i + 1);
    }
    lua_remove(L, -2);
}

/* [-0, +1] { nodes, per_node, per_nic }: the largest over the groups of
 * mask on the cluster's nodes. */
static void push_span(lua_State *L, const par_layout *lay, unsigned mask,
                      const bind_cluster *cl)
{
    int32_t ng = par_group_count(lay, mask), size = par_group_size(lay, mask);
    int32_t *g = lua_newuserdatauv(L, (size_t)size * sizeof *g, 0);
    par_span most = {0, 0, 0};
    for (int32_t i = 0; i < ng; i++) {
        par_span sp;
        par_group(lay, mask, i, g);
        par_span_of(g, size, cl->gpus_per_node, cl->nics_per_node, &sp);
        most.nodes = sp.nodes > most.nodes ? sp.nodes : most.nodes;
        most.per_node =
            sp.per_node > most.per_node ? sp.per_node : most.per_node;
        most.per_nic = sp.per_nic > most.per_nic ? sp.per_nic : most.per_nic;
    }
    lua_pop(L, 1);
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, most.nodes);
    lua_setfield(L, -2, "nodes");
    lua_pushinteger(L, most.per_node);
    lua_setfield(L, -2, "per_node");
    if (cl->nics_per_node > 0) {
        lua_pushinteger(L, most.per_nic);
        lua_setfield(L, -2, "per_nic");
    }
}

/* [-0, +1] coords[r + 1] = { tp, cp, dp, pp, ep, etp, edp } of every
 * cluster rank r of the layout. */
static void push_coords(lua_State *L, const par_layout *lay)
{
    static const char *const dense[PAR_NDIMS] = {"tp", "cp", NULL, "dp", "pp"};
    static const char *const ex[PAR_NDIMS] = {"etp", NULL, "ep", "edp", NULL};
    lua_createtable(L, par_world(lay), 0);
    for (int32_t i = 0; i < par_world(lay); i++) {
        int32_t c[PAR_NDIMS], e[PAR_NDIMS];
        par_coords(lay, i, 0, c);
        par_coords(lay, i, 1, e);
        lua_createtable(L, 0, 7);
        for (int d = 0; d < PAR_NDIMS; d++) {
            if (dense[d]) {
                lua_pushinteger(L, c[d]);
                lua_setfield(L, -2, dense[d]);
            }
            if (ex[d]) {
                lua_pushinteger(L, e[d]);
                lua_setfield(L, -2, ex[d]);
            }
        }
        lua_rawseti(L, -2, par_cluster(lay, i) + 1);
    }
}

/* [-0, +1] rank_of[j p + r + 1]: the cluster rank of TP rank 0 (context 0)
 * of stage r in replica j, the rank one program per TP group runs on. */
static void push_rank_of(lua_State *L, const par_layout *lay)
{
    int32_t p = lay->s.pp, dp = lay->s.dp;
    lua_createtable(L, p * dp, 0);
    for (int32_t j = 0; j < dp; j++)
        for (int32_t r = 0; r < p; r++) {
            const int32_t c[PAR_NDIMS] = {0, 0, 0, j, r};
            lua_pushinteger(L, par_rank(lay, c));
            lua_rawseti(L, -2, j * p + r + 1);
        }
}

/* [-0, +1] core.layout(spec [, token]): with a token (Megatron's get_ranks
 * names: "tp", "dp-cp", "ep", "etp", "edp", ...) the list of its groups;
 * else the view: world, the sizes, edp, order, rank_of, coords, and with
 * a cluster span = { tp = {...}, dp = ..., pp = ..., ... }. */
static int core_layout(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    const char *token = luaL_optstring(L, 2, NULL);
    lua_settop(L, 1);
    par_layout lay;
    bind_cluster *cl = read_layout(L, &lay);
    if (token && strcmp(token, "embedding") == 0) {
        push_embedding(L, &lay);
        return 1;
    }
    if (token) {
        push_groups(L, &lay, token_mask(L, token));
        return 1;
    }
    lua_createtable(L, 0, 16);
    const struct {
        const char *k;
        int32_t v;
    } f[] = {{"world", par_world(&lay)},
             {"tp", lay.s.tp},
             {"cp", lay.s.cp},
             {"ep", lay.s.ep},
             {"etp", lay.s.etp},
             {"dp", lay.s.dp},
             {"edp", lay.edp},
             {"pp", lay.s.pp},
             {"vp", lay.s.vp},
             {"shard", lay.s.shard},
             {"shard_group", lay.s.shard_group}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        lua_pushinteger(L, f[i].v);
        lua_setfield(L, -2, f[i].k);
    }
    lua_pushstring(L, par_order_name(lay.order));
    lua_setfield(L, -2, "order");
    push_rank_of(L, &lay);
    lua_setfield(L, -2, "rank_of");
    push_coords(L, &lay);
    lua_setfield(L, -2, "coords");
    if (cl) {
        static const char *const tokens[] = {"tp",    "cp", "dp",  "pp",
                                             "dp-cp", "ep", "etp", "edp"};
        lua_createtable(L, 0, 8);
        for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
            push_span(L, &lay, token_mask(L, tokens[i]), cl);
            lua_setfield(L, -2, tokens[i]);
        }
        lua_setfield(L, -2, "span");
    }
    return 1;
}

/* [-0, +1] core.collective_rule(cluster): the protocol a step's
 * collectives take when the scenario names none, "auto" or "none"
 * (coll_default_protocol: NCCL's choice on NCCL's hardware), for the TP
 * collectives lua/pipesim/init.lua costs. */
static int core_collective_rule(lua_State *L)
{
    bind_cluster *cl = bind_check_cluster(L, 1);
    lua_pushstring(L, coll_proto_name(coll_default_protocol(
                          COLL_ALLREDUCE, COLL_AUTO, 0, &cl->hw)));
    return 1;
}

/* [-0, +0] An identity of the cluster userdata at idx that no other
 * cluster of the process shares, kept in a weak-keyed registry table: a
 * collected cluster takes its entry along, and the one allocated at its
 * address gets a new number (pipe_config.net_id). */
uint64_t bind_cluster_id(lua_State *L, int idx)
{
    static const char key = 0;
    static uint64_t last = 0;
    idx = lua_absindex(L, idx);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &key) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &key);
    }
    lua_pushvalue(L, idx);
    lua_rawget(L, -2);
    uint64_t id = (uint64_t)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (!id) {
        id = ++last;
        lua_pushvalue(L, idx);
        lua_pushinteger(L, (lua_Integer)id);
        lua_rawset(L, -3);
    }
    lua_pop(L, 1);
    return id;
}

/* The number argument at idx: finite and at least 0, or above 0 with
 * positive. */
static double check_amount(lua_State *L, int idx, const char *name,
                           int positive)
{
    double x = luaL_checknumber(L, idx);
    if (!isfinite(x) || x < 0 || (positive && x == 0))
        luaL_error(L, "core.dp_pad: %s must be a finite number %s 0, got %s",
                   name, positive ? "above" : "at least",
                   luaL_tolstring(L, idx, NULL));
    return x;
}

/* [-0, +1] core.dp_pad(params, shard, cut, grad_bytes, first_bucket,
 * bucket): the elements the distributed optimizer pads a model chunk
 * with (par_dp_pad_elements), for ps.search's closed-form memory
 * (lua/pipesim/search_cost.lua), so that Megatron's padding rule is
 * written once, in par/. */
static int core_dp_pad(lua_State *L)
{
    double params = check_amount(L, 1, "params", 0);
    long long shard;
    bind_check_int(L, 2, "shard", 1, PAR_MAX_RANKS, &shard);
    int cut = lua_toboolean(L, 3);
    double gb = check_amount(L, 4, "grad_bytes", 1);
    double first = check_amount(L, 5, "first_bucket", 1);
    double bucket = check_amount(L, 6, "bucket", 1);
    lua_pushnumber(
        L, par_dp_pad_elements(params, (int32_t)shard, cut, gb, first, bucket));
    return 1;
}

const luaL_Reg bind_layout_funcs[] = {
    {"layout", core_layout},
    {"collective_rule", core_collective_rule},
    {"dp_pad", core_dp_pad},
    {NULL, NULL},
};
