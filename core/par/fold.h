/* Replica folding (issue 28): when a step's instances (its data-parallel
 * replicas, par/sim.h) are provably identical, the engine runs a few of
 * them, the representatives, and every other instance takes the times of
 * its representative.
 *
 * Why it is exact. Let sigma shift every instance by s (instance i to
 * i + s mod n, the pipeline rank kept). par_fold_build checks, op by op,
 * that sigma maps the programs onto themselves: instance i's lanes run the
 * ops of instance i mod s, with the same durations, bytes, memory and
 * static bytes, every peer and every message's other side shifted with it,
 * and signals inside an instance. It checks that sigma is an automorphism
 * of the network for the traffic: ranks on one node go to ranks on one
 * node, ranks on different nodes to different nodes, on a cluster whose
 * links but the core each belong to one GPU and whose core is never a
 * bottleneck (net_foldable). The unfolded run is then invariant under
 * sigma: max-min fair rates are unique, so equal flows get equal rates,
 * and every op of instance i starts and ends when its representative's
 * does. The folded run keeps the representatives' lanes; a message from a
 * representative to instance b is received by the receive that is its
 * image in representative b mod s, over the route's kind with the links
 * of the images (net_set_image): the links the representative's flow has
 * in the unfolded run are those of an image of it, each carrying one flow
 * of every orbit that crosses it, so every link carries the same load as
 * in the unfolded run and every flow gets the same rate. The core, shared
 * by every orbit, is left out of the fair solve either way (slack).
 *
 * s is the smallest divisor of the instance count whose shift passes the
 * checks (1 for a dense data-parallel ring; a group of replicas where the
 * traffic is symmetric only between groups); none: no folding. */
#ifndef PS_PAR_FOLD_H
#define PS_PAR_FOLD_H

#include <stdint.h>

#include "base/err.h"
#include "net/net.h"
#include "par/pass.h"
#include "par/sim.h"
#include "sim/prog.h"

typedef struct par_fold {
    prog_set *ps;       /* the representatives' lanes, sealed */
    int32_t s;          /* representatives (instances 0 .. s - 1); 0: none */
    int32_t *image;     /* nranks: each rank's representative (itself
                           when not simulated) */
    int32_t *lane_fold; /* full lane -> the folded lane that runs it */
    /* scratch, kept between builds */
    int32_t *inst_of, *lane_seq, *inst_first, *inst_lanes, *node_img;
    int32_t *sig_map, *sig_inst;
    int32_t *used, used_cap; /* a batch's ops matched */
    int32_t *shift, step;    /* each rank shifted by step (the s tried) */
    int32_t *msg_map;        /* each message's image shifted back by s */
    int32_t nranks, nlanes, n, nsignals, nnodes;
    /* the streaming check (par_fold_stream_begin): the passes lower every
     * instance, and the ops of instances 1 .. n - 1 but their compute
     * lanes are compared with instance 0's shifted and dropped */
    par_fold_hook hook;
    const par_sim *sim;
    int stream_mode; /* same_op records messages by side (below) */
    int replay;      /* same_op compares fields only (unfolding) */
    int broken;      /* a replica differed, or outran instance 0 */
    int prebuilt;    /* ps was built by par_fold_stream_end */
    int streamed;    /* the last fold was streamed: unfold that way */
    int32_t cur;     /* the instance whose ops are compared */
    int32_t p, ncompute, indexed, nrep;
    int32_t lane_cap, rep_cap, msg_cap, sig_cap;
    int32_t *dropped;    /* per lane: ops compared and dropped */
    int32_t *rep_lanes;  /* instance 0's lanes in order */
    int32_t *inst_count; /* per instance: its lanes so far */
    /* per message: its first side's image in instance 0 (x 2, + 1 for a
     * send) until both are seen; per instance-0 message: the receive its
     * send pairs with in the folded run, and back */
    uint32_t *side;
    int32_t *pair, *rpair;
} par_fold;

/* Checks whether the sealed programs full of sim's instances on nw, with
 * static bytes static_bytes (nranks entries), fold (above), and when they
 * do builds f->ps. Returns 1 (folded, f->s set), 0 (not foldable, f->s 0)
 * or PS_ERR (out of memory). O(ops + ranks) per shift tried. */
int par_fold_build(par_fold *f, const prog_set *full, const par_sim *sim,
                   const net *nw, const double *static_bytes, ps_err *err);

/* After f->ps has run: every op of full (sim's) takes its folded op's
 * times. */
void par_fold_unfold(par_fold *f, prog_set *full, const par_sim *sim);

/* The streaming check, for a step whose replicas should fold (the
 * caller's conditions as for par_fold_build; no MoE step, whose shift is
 * an expert group's span, not one; 0 too where a shift by one maps no
 * node onto a node): on the empty programs full before the
 * passes lower, returns 1 and sets f->hook for par_step.fold (memory then
 * grows with instance 0's communication, not every replica's), 0 when it
 * does not apply, PS_ERR when out of memory. */
int par_fold_stream_begin(par_fold *f, const prog_set *full, const par_sim *sim,
                          const net *nw, int want, ps_err *err);

/* After the passes lowered with the hook: 1 when every instance i ran
 * instance 0's programs shifted by i (checked op by op as they were
 * lowered, then their compute lanes and the network as par_fold_build
 * does), with f->ps built and par_fold_build then returning it; 0 when
 * not (the caller lowers again without the hook, keeping every op);
 * PS_ERR when out of memory. */
int par_fold_stream_end(par_fold *f, prog_set *full, const par_sim *sim,
                        const net *nw, const double *static_bytes, ps_err *err);

/* Releases f's arrays and programs; harmless on a zeroed or freed f. */
void par_fold_free(par_fold *f);

#endif
