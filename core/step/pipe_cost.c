/* Stage costs of a pipeline run: each stage's forward, backward (split
 * into input and weight gradients), recompute and activation bytes, from
 * the model's layers and the partition, timed on each replica's devices;
 * and the stage rows the recorder stores. */
#include "step/pipe_cost.h"

#include <math.h>

static double layer_fwd(const pipe_layer *l, double rate)
{
    return l->fwd_time >= 0 ? l->fwd_time : l->fwd_flops / rate;
}

static double layer_bwd(const pipe_layer *l, double rate)
{
    if (l->bwd_time >= 0)
        return l->bwd_time;
    if (l->bwd_input_time >= 0 && l->bwd_weight_time >= 0)
        return l->bwd_input_time + l->bwd_weight_time;
    if (l->bwd_flops >= 0 && l->fwd_time < 0)
        return l->bwd_flops / rate;
    return 2 * layer_fwd(l, rate); /* the usual 2x: dgrad + wgrad */
}

/* One part of the split backward in seconds, or -1 when not given. */
static double split_part(double time, double flops, const pipe_layer *l,
                         double rate)
{
    if (time >= 0)
        return time;
    if (flops >= 0 && l->fwd_time < 0)
        return flops / rate;
    return -1;
}

/* B (input gradient) and W (weight gradient) seconds of layer i (0-based). */
static int layer_split(const pipe_layer *l, int32_t i, double rate, double *b,
                       double *w, ps_err *err)
{
    double in = split_part(l->bwd_input_time, l->bwd_input_flops, l, rate);
    double wg = split_part(l->bwd_weight_time, l->bwd_weight_flops, l, rate);
    int total_given =
        l->bwd_time >= 0 || (l->bwd_flops >= 0 && l->fwd_time < 0);
    double total = layer_bwd(l, rate);
    if (in >= 0 && wg >= 0) {
        if (total_given && fabs(in + wg - total) > 1e-9 * fmax(total, 1e-300))
            return ps_errf(err,
                           "layers[%d]: backward %g s differs from its input "
                           "part %g s + weight part %g s",
                           (int)i + 1, total, in, wg);
    } else if (in >= 0 || wg >= 0) {
        double given = in >= 0 ? in : wg, rest = total - given;
        if (rest < 0)
            return ps_errf(
                err, "layers[%d]: %s (%g s) exceeds the backward (%g s)",
                (int)i + 1,
                in >= 0 ? "bwd_input_time/flops" : "bwd_weight_time/flops",
                given, total);
        if (in >= 0)
            wg = rest;
        else
            in = rest;
    } else {
        in = wg = total / 2;
    }
    *b = in;
    *w = wg;
    return PS_OK;
}

/* Recompute seconds and kept bytes of layers [first, first + count) under
 * checkpointing (pipe_layer.recompute_time, kept_bytes); *kept < 0 when no
 * layer gives kept_bytes (the stage keeps its input). A layer with
 * kept_bytes > 0 starts a recompute unit (Megatron's checkpointed chunk),
 * the layers after it with kept_bytes 0 join it; *unit is the largest
 * unit's activations beyond what it keeps: what the backward restores at a
 * time, since each unit is recomputed right before its own backward. */
static void stage_recompute(const pipe_config *cfg, int32_t first,
                            int32_t count, double rate, double *recompute,
                            double *kept, double *unit)
{
    double r = 0, k = 0, cur = 0, most = 0;
    int any = 0;
    for (int32_t i = first; i < first + count; i++) {
        const pipe_layer *l = &cfg->layers[i];
        r += l->recompute_time >= 0 ? l->recompute_time : layer_fwd(l, rate);
        any |= l->kept_bytes >= 0;
        double kb = l->kept_bytes >= 0 ? l->kept_bytes : l->act_bytes;
        if (kb > 0)
            cur = 0; /* a new unit */
        cur += l->act_bytes > kb ? l->act_bytes - kb : 0;
        most = fmax(most, cur);
        k += kb;
    }
    *recompute = r;
    *kept = any ? k : -1;
    *unit = most;
}

/* Adds layers [first, first + count) of a stage, timed at rate, to its
 * schedule costs st and its recorded row, and fills out's per-layer
 * figures; *experts gains the parameters the experts' own sync takes
 * (apart), *nshared the layers with shared parameters. */
static int stage_layers(const pipe_config *cfg, const pipe_costs *out,
                        int32_t first, int32_t count, double rate, int apart,
                        sched_stage *st, rec_stage *row, double *experts,
                        int32_t *nshared, ps_err *err)
{
    for (int32_t i = first; i < first + count; i++) {
        const pipe_layer *l = &cfg->layers[i];
        double b = 0, w = 0;
        if (layer_split(l, i, rate, &b, &w, err))
            return PS_ERR;
        /* the dp pass's: without the experts' own sync's parameters */
        out->layer_params[i] = l->params - (apart ? l->moe_expert_params : 0);
        out->layer_bwd[i] = b + w;
        out->layer_fwd[i] = layer_fwd(l, rate);
        out->layer_shared[i] = l->shared_params;
        out->layer_static[i] = l->static_bytes;
        out->layer_work[i] = l->work_bytes;
        *nshared += l->shared_params > 0;
        st->fwd += layer_fwd(l, rate);
        st->bwd += b;
        st->wgt += w;
        st->act_bytes += l->act_bytes;
        st->w_bytes +=
            l->bwd_weight_bytes >= 0 ? l->bwd_weight_bytes : l->act_bytes;
        if (l->moe_expert_params > l->params)
            return ps_errf(err,
                           "layers[%d]: moe_expert_params (%.0f) is more "
                           "than its params (%.0f)",
                           (int)i + 1, l->moe_expert_params, l->params);
        row->params += l->params;
        *experts += apart ? l->moe_expert_params : 0;
        row->tp_comm += l->tp_comm_time > 0 ? l->tp_comm_time : 0;
        row->tp_exposed += l->tp_exposed_time > 0 ? l->tp_exposed_time : 0;
        row->fwd_flops += l->fwd_flops >= 0 ? l->fwd_flops : 0;
    }
    return PS_OK;
}

/* Times every instance but the first: instance j's stages at j * nstages
 * hold the same layers timed on its own devices, so a straggler in any
 * replica slows its copy (and, through the gradient sync, the step). */
static int time_instances(const pipe_config *cfg, const pipe_costs *out,
                          int32_t nstages, ps_err *err)
{
    for (int32_t j = 1; j < out->n; j++)
        for (int32_t s = 0; s < nstages; s++) {
            double rate =
                cfg->device_rate[out->rank_of[j * cfg->p +
                                              pipe_stage_rank(cfg, s)]];
            sched_stage st = out->stages[s];
            st.fwd = st.bwd = st.wgt = 0;
            for (int32_t i = out->first[s]; i < out->first[s] + out->count[s];
                 i++) {
                double b = 0, w = 0;
                if (layer_split(&cfg->layers[i], i, rate, &b, &w, err))
                    return PS_ERR;
                st.fwd += layer_fwd(&cfg->layers[i], rate);
                st.bwd += b;
                st.wgt += w;
            }
            double kept, unit;
            stage_recompute(cfg, out->first[s], out->count[s], rate,
                            &st.recompute, &kept, &unit);
            out->stages[j * nstages + s] = st;
        }
    return PS_OK;
}

/* A layer given as times (ps.models' roofline times it on the cluster's
 * device) cannot be rescaled to a rank's device of its own
 * (cluster.devices): that would leave a slow rank at full speed, a
 * plausible wrong step. So a run whose simulated ranks differ in rate
 * takes its layers as FLOPs, or its straggler as a fault. */
static int check_timed_devices(const pipe_config *cfg, const pipe_costs *out,
                               ps_err *err)
{
    int32_t timed = -1;
    for (int32_t i = 0; i < cfg->nlayers && timed < 0; i++)
        if (cfg->layers[i].fwd_time >= 0)
            timed = i;
    if (timed < 0)
        return PS_OK;
    double base = cfg->device_rate[out->rank_of[0]];
    for (int32_t k = 1; k < out->n * cfg->p; k++) {
        int32_t rank = out->rank_of[k];
        double rate = cfg->device_rate[rank];
        if (rate != base && !(isnan(rate) && isnan(base))) /* NaN: none */
            return ps_errf(
                err,
                "cluster rank %d runs on a device of its own "
                "(cluster.devices: %.4g FLOP/s against rank %d's %.4g), "
                "but layer %d carries its times (fwd_time), which no "
                "device rescales: give the layers as FLOPs (fwd_flops), "
                "or make the rank a straggler with faults = { { rank = "
                "%d, slow = s } }",
                (int)rank, rate, (int)out->rank_of[0], base, (int)timed + 1,
                (int)rank);
    }
    return PS_OK;
}

int pipe_stage_costs(const pipe_config *cfg, const pipe_costs *out, ps_err *err)
{
    int32_t nstages = cfg->p * cfg->v, first = 0, nshared = 0;
    if (check_timed_devices(cfg, out, err))
        return PS_ERR;
    /* expert gradients sync apart (par/ep_sync.c) when the expert
     * data-parallel group differs from dp x cp */
    int apart = cfg->ep > 1 || (cfg->etp > 0 && cfg->etp != cfg->tp);
    for (int32_t s = 0; s < nstages; s++) {
        int32_t count = cfg->partition[s];
        if (count < 1)
            return ps_errf(err, "partition: stage %d has %d layers", (int)s,
                           (int)count);
        if (first + count > cfg->nlayers)
            return ps_errf(err,
                           "partition needs more than the %d layers of "
                           "the model",
                           (int)cfg->nlayers);
        /* rows and gradient buckets from instance 0's device; each
         * instance's compute times below from its own */
        int32_t rank = out->rank_of[pipe_stage_rank(cfg, s)];
        double rate = cfg->device_rate[rank];
        out->first[s] = first;
        out->count[s] = count;
        sched_stage st = {0};
        double experts = 0;
        rec_stage row = {0};
        row.stage = s;
        row.rank = pipe_stage_rank(cfg, s);
        row.chunk = sched_place_chunk(cfg->placement, cfg->place, cfg->p, s);
        row.first_layer = first;
        row.last_layer = first + count - 1;
        if (stage_layers(cfg, out, first, count, rate, apart, &st, &row,
                         &experts, &nshared, err))
            return PS_ERR;
        const pipe_layer *in = &cfg->layers[first];
        st.in_bytes = in->in_bytes >= 0 ? in->in_bytes
                      : first > 0       ? cfg->layers[first - 1].out_bytes
                                        : 0;
        st.out_bytes = cfg->layers[first + count - 1].out_bytes;
        row.act_bytes = st.act_bytes; /* all of them, recomputed or not */
        double kept, unit;
        stage_recompute(cfg, first, count, rate, &st.recompute, &kept, &unit);
        if (kept >= 0 && cfg->checkpoint) {
            /* F keeps `kept`, R restores one unit: sched/sched.c's extra */
            st.in_bytes = kept;
            st.act_bytes = kept + unit;
        }
        row.fwd_time = st.fwd;
        row.bwd_time = st.bwd + st.wgt;
        row.out_bytes = st.out_bytes;
        row.exposed_comm = NAN;
        out->stages[s] = st;
        out->rows[s] = row;
        out->stage_params[s] = row.params - experts;
        first += count;
    }
    if (first != cfg->nlayers)
        return ps_errf(err, "partition sums to %d layers but the model has %d",
                       (int)first, (int)cfg->nlayers);
    *out->nshared = nshared;
    return time_instances(cfg, out, nstages, err);
}
