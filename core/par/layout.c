/* The parallel layout: Megatron-LM's RankGenerator in C (par/layout.h).
 * Every query is arithmetic on the generators' sizes and strides: O(1)
 * per rank, O(group size) per group, nothing allocated. */
#include "par/layout.h"

#include <string.h>

/* The dimensions of each order, innermost first. */
static const int order_dims[2][PAR_NDIMS] = {
    [PAR_DP_INNER] = {PAR_TP, PAR_CP, PAR_EP, PAR_DP, PAR_PP},
    [PAR_PP_INNER] = {PAR_TP, PAR_CP, PAR_EP, PAR_PP, PAR_DP},
};

void par_sizes_init(par_sizes *s)
{
    *s = (par_sizes){.tp = 1, .cp = 1, .ep = 1, .dp = 1, .pp = 1, .vp = 1};
}

int64_t par_sizes_world(const par_sizes *s)
{
    return (int64_t)s->tp * s->cp * s->dp * s->pp;
}

/* A generator of the given sizes numbered in order (strides are the prefix
 * products along the order, as Megatron's prefix_product). */
static void make_gen(par_gen *g, const int32_t size[PAR_NDIMS],
                     enum par_order order)
{
    int32_t stride = 1;
    for (int k = 0; k < PAR_NDIMS; k++) {
        int d = order_dims[order][k];
        g->size[d] = size[d];
        g->stride[d] = stride;
        stride *= size[d];
    }
    g->world = stride;
}

int par_parse_order(const char *name, enum par_order *order, ps_err *err)
{
    if (strcmp(name, "dp_inner") == 0 || strcmp(name, "tp-cp-ep-dp-pp") == 0)
        *order = PAR_DP_INNER;
    else if (strcmp(name, "pp_inner") == 0 ||
             strcmp(name, "tp-cp-ep-pp-dp") == 0)
        *order = PAR_PP_INNER;
    else
        return ps_errf(err,
                       "unknown placement '%s' (expected dp_inner or "
                       "pp_inner)",
                       name);
    return PS_OK;
}

const char *par_order_name(enum par_order order)
{
    return order == PAR_PP_INNER ? "tp-cp-ep-pp-dp" : "tp-cp-ep-dp-pp";
}

int par_layout_init(par_layout *L, const par_sizes *s, enum par_order order,
                    const int32_t *ranks, ps_err *err)
{
    memset(L, 0, sizeof *L);
    L->s = *s;
    if (L->s.etp == 0)
        L->s.etp = s->tp;
    const int32_t dense[PAR_NDIMS] = {s->tp, s->cp, 1, s->dp, s->pp};
    const struct {
        const char *name;
        int32_t v;
    } all[] = {{"tp", s->tp}, {"cp", s->cp},     {"ep", s->ep},
               {"dp", s->dp}, {"pp", s->pp},     {"etp", L->s.etp},
               {"vp", s->vp}, {"shard_group", 1}};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i].v < 1)
            return ps_errf(err, "%s must be at least 1, got %d", all[i].name,
                           (int)all[i].v);
    if (s->shard < PAR_SHARD_NONE || s->shard > PAR_SHARD_PARAMS)
        return ps_errf(err, "the sharding level must be 0..3, got %d",
                       s->shard);
    int64_t world = 1;
    for (int d = 0; d < PAR_NDIMS && world <= PAR_MAX_RANKS; d++)
        world *= dense[d];
    if (world > PAR_MAX_RANKS)
        return ps_errf(err,
                       "tp %d x cp %d x dp %d x pp %d is %lld ranks, more "
                       "than the limit of %d",
                       (int)s->tp, (int)s->cp, (int)s->dp, (int)s->pp,
                       (long long)par_sizes_world(s), PAR_MAX_RANKS);
    /* a shard spans ranks of the dp-cp group (Megatron's
     * intra_partial_data_parallel_group_with_cp) */
    if (s->shard_group < 0 ||
        (s->shard_group > 0 && (s->dp * s->cp) % s->shard_group))
        return ps_errf(err,
                       "shard_group %d does not divide the data-parallel "
                       "size %d (dp x cp)",
                       (int)s->shard_group, (int)(s->dp * s->cp));
    int64_t expert = (int64_t)L->s.etp * s->ep * s->pp;
    if (world % expert)
        return ps_errf(err,
                       "etp %d x ep %d x pp %d (%lld ranks) does not divide "
                       "the world of %lld ranks",
                       (int)L->s.etp, (int)s->ep, (int)s->pp, (long long)expert,
                       (long long)world);
    L->world = (int32_t)world;
    L->edp = (int32_t)(world / expert);
    /* an explicit list numbers the ranks pp_inner (par/layout.h) */
    if (ranks)
        order = PAR_PP_INNER;
    /* initialize_model_parallel: "When not using pp-last rank ordering, the
     * data parallel size of the attention and moe layers must be the
     * same" */
    if (order == PAR_PP_INNER && s->pp > 1 && L->edp != s->dp)
        return ps_errf(err,
                       "placement pp_inner (and an explicit ranks list) needs "
                       "the expert data-parallel size (%d) to equal dp (%d), "
                       "as Megatron-LM asserts",
                       (int)L->edp, (int)s->dp);
    L->order = order;
    make_gen(&L->dense, dense, order);
    const int32_t ex[PAR_NDIMS] = {L->s.etp, 1, s->ep, L->edp, s->pp};
    make_gen(&L->expert, ex, order);
    L->ranks = ranks;
    return PS_OK;
}

int32_t par_cluster(const par_layout *L, int32_t i)
{
    return L->ranks ? L->ranks[i] : i;
}

int32_t par_rank(const par_layout *L, const int32_t c[PAR_NDIMS])
{
    int32_t i = 0;
    for (int d = 0; d < PAR_NDIMS; d++)
        if (d != PAR_EP)
            i += c[d] * L->dense.stride[d];
    return par_cluster(L, i);
}

void par_coords(const par_layout *L, int32_t i, int expert,
                int32_t c[PAR_NDIMS])
{
    const par_gen *g = expert ? &L->expert : &L->dense;
    for (int d = 0; d < PAR_NDIMS; d++)
        c[d] = i / g->stride[d] % g->size[d];
}

int32_t par_group_size(const par_layout *L, unsigned mask)
{
    const par_gen *g = mask & PAR_EXPERT ? &L->expert : &L->dense;
    int32_t n = 1;
    for (int d = 0; d < PAR_NDIMS; d++)
        if (mask & PAR_BIT(d))
            n *= g->size[d];
    return n;
}

int32_t par_group_count(const par_layout *L, unsigned mask)
{
    return L->world / par_group_size(L, mask);
}

/* generate_masked_orthogonal_rank_groups: group g's index decomposed over
 * the unmasked dimensions and member m's over the masked ones, each in the
 * order's sequence (innermost first), give the layout rank
 * sum(index x global stride). */
int32_t par_group(const par_layout *L, unsigned mask, int32_t g, int32_t *out)
{
    const par_gen *gen = mask & PAR_EXPERT ? &L->expert : &L->dense;
    const int *ord = order_dims[L->order];
    int32_t base = 0, rest = g;
    for (int k = 0; k < PAR_NDIMS; k++) {
        int d = ord[k];
        if (mask & PAR_BIT(d))
            continue;
        base += rest % gen->size[d] * gen->stride[d];
        rest /= gen->size[d];
    }
    int32_t n = par_group_size(L, mask);
    for (int32_t m = 0; m < n; m++) {
        int32_t i = base, left = m;
        for (int k = 0; k < PAR_NDIMS; k++) {
            int d = ord[k];
            if (!(mask & PAR_BIT(d)))
                continue;
            i += left % gen->size[d] * gen->stride[d];
            left /= gen->size[d];
        }
        out[m] = par_cluster(L, i);
    }
    return n;
}

int32_t par_group_of(const par_layout *L, unsigned mask, int32_t i)
{
    const par_gen *gen = mask & PAR_EXPERT ? &L->expert : &L->dense;
    const int *ord = order_dims[L->order];
    int32_t g = 0, scale = 1;
    for (int k = 0; k < PAR_NDIMS; k++) {
        int d = ord[k];
        if (mask & PAR_BIT(d))
            continue;
        g += i / gen->stride[d] % gen->size[d] * scale;
        scale *= gen->size[d];
    }
    return g;
}

/* The NIC of cluster rank r, or -1 when unknown. */
static int32_t nic_of(int32_t r, int32_t gpn, int32_t nics)
{
    return nics > 0 ? r % gpn * nics / gpn : -1;
}

void par_span_of(const int32_t *ranks, int32_t n, int32_t gpus_per_node,
                 int32_t nics_per_node, par_span *out)
{
    int32_t gpn = gpus_per_node < 1 ? 1 : gpus_per_node;
    int32_t nics = gpus_per_node >= 1 ? nics_per_node : 0;
    *out = (par_span){0, 0, 0};
    int ascending = 1;
    for (int32_t a = 1; a < n && ascending; a++)
        ascending = ranks[a] > ranks[a - 1];
    if (ascending) { /* a node's ranks are one run, a NIC's one inside it */
        int32_t node = -1, nic = -1, on_node = 0, on_nic = 0;
        for (int32_t a = 0; a < n; a++) {
            int32_t d = ranks[a] / gpn, q = nic_of(ranks[a], gpn, nics);
            on_node = d == node ? on_node + 1 : 1;
            on_nic = d == node && q == nic ? on_nic + 1 : 1;
            out->nodes += d != node;
            node = d;
            nic = q;
            if (on_node > out->per_node)
                out->per_node = on_node;
            if (nics > 0 && on_nic > out->per_nic)
                out->per_nic = on_nic;
        }
        return;
    }
    for (int32_t a = 0; a < n; a++) { /* any order: O(n^2) */
        int32_t d = ranks[a] / gpn, q = nic_of(ranks[a], gpn, nics);
        int32_t on_node = 0, on_nic = 0, first = 1;
        for (int32_t b = 0; b < n; b++) {
            if (ranks[b] / gpn != d)
                continue;
            first &= b >= a;
            on_node++;
            on_nic += nics > 0 && nic_of(ranks[b], gpn, nics) == q;
        }
        out->nodes += first;
        if (on_node > out->per_node)
            out->per_node = on_node;
        if (on_nic > out->per_nic)
            out->per_nic = on_nic;
    }
}
