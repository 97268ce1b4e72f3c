/* Shared by the dp pass's tests (test_par_dp, test_par_fsdp): one stage
 * of two layers, layer 0 with 100 parameters and layer 1 with 300, 2
 * weight and 2 gradient bytes each, 1 s of backward each; 400-byte
 * buckets, the first 100; a ring without a protocol. */
#ifndef PS_TEST_DP_FIXTURE_H
#define PS_TEST_DP_FIXTURE_H

#include "coll/coll.h"
#include "harness.h"
#include "par/pass.h"

static const int32_t first[1] = {0}, count[1] = {2};
static const double layer_params[2] = {100, 300}, layer_bwd[2] = {1, 1};
static const double stage_params[1] = {400};

static par_layout layout;
static par_sim sim;

/* A step of the layout sz for the dp pass on the stage tables above
 * (nstages stages of the layers first/count); the previous step's sim is
 * freed, ps and nw are the caller's. */
static inline par_step base_step(const par_sizes *sz, int32_t nstages)
{
    ps_err err;
    CHECK_INT(par_layout_init(&layout, sz, PAR_DP_INNER, NULL, &err), PS_OK);
    const int fold[PAR_NDIMS] = {0};
    par_sim_free(&sim);
    CHECK_INT(par_sim_build(&sim, &layout, fold, &err), PS_OK);
    par_step c = {0};
    c.layout = &layout;
    c.sim = &sim;
    c.v = 1;
    c.nstages = nstages;
    c.first = first;
    c.count = count;
    c.layer_params = layer_params;
    c.layer_bwd = layer_bwd;
    c.stage_params = stage_params;
    c.grad_bytes = 2;
    c.weight_bytes = 2;
    c.optimizer_bytes = 12;
    c.dp.bucket_bytes = 400;
    c.dp.first_bucket_bytes = 100;
    c.dp.algorithm = COLL_RING;
    c.dp.protocol = PAR_PROTOCOL_DEFAULT;
    return c;
}

#endif
