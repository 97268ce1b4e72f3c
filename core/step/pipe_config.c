/* A training step's configuration: what a scenario gets for a field it
 * leaves out (pipe_config_init, pipe_layer_init: the policy cited in
 * step/pipe.h), the layout sizes it asks for and their check against the
 * cluster. Apart from step/pipe.c, which runs a step, because the binding
 * and the tests fill configs without running one. */
#include "step/pipe.h"

#include <string.h>

#include "step/pipe_impl.h"

void pipe_config_init(pipe_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->schedule = SCHED_1F1B;
    cfg->p = cfg->v = cfg->m = cfg->dp = cfg->tp = cfg->cp = cfg->ep = 1;
    /* DeepSeek-V3 report section 3.2.1: 20 of the H800's 132 SMs run
     * DualPipe's communication */
    cfg->ep_comm_share = 20.0 / 132.0;
    /* an overlapped F and B pair costs F + B unless the scenario says how
     * much of the shorter one hides (sched/sched.c sched_fb_time) */
    cfg->fb_interference = 1;
    cfg->p2p = ENG_RENDEZVOUS;
    cfg->record = REC_EVENTS;
    cfg->placement = sched_default_placement(SCHED_1F1B);
    cfg->weight_bytes = 2;
    cfg->grad_bytes = 2;
    cfg->optimizer_bytes = 12;
    cfg->bucket_bytes = 25.0 * 1024 * 1024;
    cfg->first_bucket_bytes = 1.0 * 1024 * 1024;
    cfg->grad_algorithm = COLL_AUTO;
    cfg->grad_protocol = PAR_PROTOCOL_DEFAULT;
    cfg->overlap = 1;
    cfg->order = PAR_DP_INNER;
    cfg->fold = 1;
}

void pipe_layer_init(pipe_layer *l)
{
    *l = (pipe_layer){
        .fwd_flops = -1,
        .bwd_flops = -1,
        .fwd_time = -1,
        .bwd_time = -1,
        .in_bytes = -1,
        .bwd_input_flops = -1,
        .bwd_weight_flops = -1,
        .bwd_input_time = -1,
        .bwd_weight_time = -1,
        .bwd_weight_bytes = -1,
        .recompute_time = -1,
        .kept_bytes = -1,
        .tp_comm_time = -1,
        .tp_exposed_time = -1,
        .shared_params = -1,
    };
}

/* The layout sizes of cfg. */
void pipe_sizes_of(const pipe_config *cfg, par_sizes *sz)
{
    par_sizes_init(sz);
    sz->tp = cfg->tp > 0 ? cfg->tp : 1;
    sz->cp = cfg->cp > 0 ? cfg->cp : 1;
    sz->ep = cfg->ep > 0 ? cfg->ep : 1;
    /* as par_layout_init fills it: layouts compare */
    sz->etp = cfg->etp > 0 ? cfg->etp : sz->tp;
    sz->dp = cfg->dp;
    sz->pp = cfg->p;
    sz->vp = cfg->v;
    sz->shard = cfg->zero; /* enum par_shard counts ZeRO's stages */
    sz->shard_group = cfg->shard_group;
}

int pipe_check_world(const pipe_config *cfg, int32_t nranks, ps_err *err)
{
    par_sizes sz;
    pipe_sizes_of(cfg, &sz);
    int64_t world = par_sizes_world(&sz);
    if (world <= nranks)
        return PS_OK;
    if (cfg->cp > 1)
        return ps_errf(err,
                       "tp %d x cp %d x stages %d x dp %d need %d ranks but "
                       "the cluster has %d",
                       (int)cfg->tp, (int)cfg->cp, (int)cfg->p, (int)cfg->dp,
                       (int)world, (int)nranks);
    if (cfg->tp > 1)
        return ps_errf(err,
                       "tp %d x stages %d x dp %d need %d ranks but the "
                       "cluster has %d",
                       (int)cfg->tp, (int)cfg->p, (int)cfg->dp, (int)world,
                       (int)nranks);
    return ps_errf(err,
                   "dp %d x %d stages need %d ranks but the cluster has %d",
                   (int)cfg->dp, (int)cfg->p, (int)world, (int)nranks);
}
