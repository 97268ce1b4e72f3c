/* Engine: compute/transfer timing, rendezvous vs eager, early sends in
 * order per connection, device exclusivity, signals, determinism and the
 * deadlock report. */
#include "harness.h"
#include "sim/eng.h"

static prog_set *two_ranks(void)
{
    return prog_new(2);
}

static int run(prog_set *ps, net *nw, enum eng_p2p p2p, eng_result *res,
               ps_err *err)
{
    eng_sim *e = eng_new();
    int rc = prog_seal(ps, err);
    if (rc == 0)
        rc = eng_run(e, ps, nw, p2p, res, err);
    eng_free(e);
    return rc;
}

/* rank 0 computes 1 s then sends 100 B; rank 1 receives then computes 2 s.
 * Link: 100 B/s, 0.5 s latency: transfer 1.5 s. */
static void test_send_recv_timing(void)
{
    for (int mode = 0; mode < 2; mode++) {
        prog_set *ps = two_ranks();
        net *nw = net_new(2);
        ps_err err;
        net_set_mesh(nw, 100, 0.5, &err);
        int32_t a = prog_add_lane(ps, 0), b = prog_add_lane(ps, 1);
        int32_t m = prog_new_msg(ps);
        prog_op op = prog_compute(PROG_F, 0, 0, 0, 1.0, 10);
        prog_push(ps, a, &op);
        op = prog_send(1, m, 100, PROG_F, 0, 0);
        prog_push(ps, a, &op);
        op = prog_recv(0, m, 100, PROG_F, 0, 0);
        prog_push(ps, b, &op);
        op = prog_compute(PROG_F, 1, 0, 0, 2.0, 0);
        prog_push(ps, b, &op);
        eng_result res;
        CHECK_INT(run(ps, nw, mode ? ENG_EAGER : ENG_RENDEZVOUS, &res, &err),
                  0);
        CHECK_NEAR(ps->lanes[0].ops[1].t_start, 1.0);
        CHECK_NEAR(ps->lanes[0].ops[1].t_end, 2.5);
        CHECK_NEAR(ps->lanes[1].ops[1].t_start, 2.5);
        CHECK_NEAR(res.makespan, 4.5);
        CHECK_INT(res.transfers, 1);
        prog_free(ps);
        net_free(nw);
    }
}

/* Two sends on the same directed link queue FIFO. */
static void test_fifo_link(void)
{
    prog_set *ps = two_ranks();
    net *nw = net_new(2);
    ps_err err;
    net_set_mesh(nw, 10, 0, &err);
    int32_t a = prog_add_lane(ps, 0), b = prog_add_lane(ps, 1);
    for (int i = 0; i < 2; i++) {
        int32_t m = prog_new_msg(ps);
        prog_op op = prog_send(1, m, 10, PROG_F, i, PROG_BATCH * (i == 0));
        prog_push(ps, a, &op);
    }
    for (int i = 0; i < 2; i++) {
        prog_op op = prog_recv(0, i, 10, PROG_F, i, PROG_BATCH * (i == 0));
        prog_push(ps, b, &op);
    }
    eng_result res;
    CHECK_INT(run(ps, nw, ENG_RENDEZVOUS, &res, &err), 0);
    CHECK_NEAR(ps->lanes[0].ops[0].t_end, 1.0);
    CHECK_NEAR(ps->lanes[0].ops[1].t_start, 1.0);
    CHECK_NEAR(ps->lanes[0].ops[1].t_end, 2.0);
    CHECK_NEAR(res.makespan, 2.0);
    prog_free(ps);
    net_free(nw);
}

/* Two early, non-waiting sends of 100 B on one FAIR link (100 B/s, 0.5 s
 * latency): they leave one after the other (the lane's connection,
 * net_start_conn), arriving at 1.5 and 2.5 s, while the lane is free at
 * once (the compute after them starts at 0). */
static void test_conn_sends(void)
{
    prog_set *ps = two_ranks();
    net *nw = net_new(2);
    ps_err err;
    CHECK_INT(net_add_link(nw, 0, 1, 100, 0.5, &err), 0);
    CHECK_INT(net_add_link(nw, 1, 0, 100, 0.5, &err), 0);
    CHECK_INT(net_finalize(nw, &err), 0);
    net_set_sharing(nw, NET_FAIR);
    int32_t a = prog_add_lane(ps, 0), b = prog_add_lane(ps, 1);
    for (int i = 0; i < 2; i++) {
        int32_t m = prog_new_msg(ps);
        prog_op op =
            prog_send(1, m, 100, PROG_COLL, i, PROG_EARLY | PROG_NOWAIT);
        prog_push(ps, a, &op);
    }
    prog_op op = prog_compute(PROG_F, 0, 0, 0, 1.0, 0);
    prog_push(ps, a, &op);
    for (int i = 0; i < 2; i++) {
        op = prog_recv(0, i, 100, PROG_COLL, i, 0);
        prog_push(ps, b, &op);
    }
    eng_result res;
    CHECK_INT(run(ps, nw, ENG_RENDEZVOUS, &res, &err), 0);
    CHECK_NEAR(ps->lanes[a].ops[0].t_end, 1.5);
    CHECK_NEAR(ps->lanes[a].ops[1].t_start, 1.0);
    CHECK_NEAR(ps->lanes[a].ops[1].t_end, 2.5);
    CHECK_NEAR(ps->lanes[a].ops[2].t_start, 0.0);
    CHECK_NEAR(ps->lanes[b].ops[1].t_end, 2.5);
    CHECK_NEAR(res.makespan, 2.5);
    prog_free(ps);
    net_free(nw);
}

/* A lane's early sends keep one connection per peer, as NCCL keeps one
 * FIFO per (channel, peer) (src/device/prims_simple.h): rank 0 sends 100 B
 * to rank 1, to rank 2, then again to rank 1, all over its one FAIR link
 * to a switch (100 B/s, 0.5 s latency; the switch's links are free). The
 * two first share the link (50 B/s each, data ends at 2, arrive at 2.5);
 * the second to rank 1 waits for the first to rank 1 to leave, then runs
 * alone: begins at 2, arrives at 3.5. One connection per lane (the last
 * send's) let it share with both: all three arrived at 3.5. */
static void test_conn_per_peer(void)
{
    prog_set *ps = prog_new(3);
    net *nw = net_new(3);
    ps_err err;
    int32_t sw = net_add_switch(nw);
    CHECK_INT(net_add_link(nw, 0, sw, 100, 0.5, &err), 0);
    for (int32_t r = 1; r < 3; r++) {
        CHECK_INT(net_add_link(nw, sw, r, 1e12, 0, &err), 0);
        CHECK_INT(net_add_link(nw, r, sw, 1e12, 0, &err), 0);
    }
    CHECK_INT(net_add_link(nw, sw, 0, 1e12, 0, &err), 0);
    CHECK_INT(net_finalize(nw, &err), 0);
    net_set_sharing(nw, NET_FAIR);
    int32_t a = prog_add_lane(ps, 0);
    int32_t rl[3] = {-1, prog_add_lane(ps, 1), prog_add_lane(ps, 2)};
    const int32_t to[3] = {1, 2, 1};
    for (int i = 0; i < 3; i++) {
        int32_t m = prog_new_msg(ps);
        prog_op op =
            prog_send(to[i], m, 100, PROG_COLL, i, PROG_EARLY | PROG_NOWAIT);
        prog_push(ps, a, &op);
        op = prog_recv(0, m, 100, PROG_COLL, i, 0);
        prog_push(ps, rl[to[i]], &op);
    }
    eng_result res;
    CHECK_INT(run(ps, nw, ENG_RENDEZVOUS, &res, &err), 0);
    CHECK_NEAR(ps->lanes[a].ops[0].t_end, 2.5);
    CHECK_NEAR(ps->lanes[a].ops[1].t_end, 2.5);
    CHECK_NEAR(ps->lanes[a].ops[2].t_start, 2.0);
    CHECK_NEAR(ps->lanes[a].ops[2].t_end, 3.5);
    CHECK_NEAR(res.makespan, 3.5);
    prog_free(ps);
    net_free(nw);
}

/* Both ranks send first, then receive: rendezvous deadlocks (reported,
 * naming both ranks), eager completes. */
static void test_deadlock(void)
{
    for (int mode = 0; mode < 2; mode++) {
        prog_set *ps = two_ranks();
        net *nw = net_new(2);
        ps_err err = {0};
        net_set_mesh(nw, 1e9, 0, &err);
        int32_t l[2] = {prog_add_lane(ps, 0), prog_add_lane(ps, 1)};
        int32_t m01 = prog_new_msg(ps), m10 = prog_new_msg(ps);
        prog_op op = prog_send(1, m01, 8, PROG_F, 3, 0);
        prog_push(ps, l[0], &op);
        op = prog_recv(1, m10, 8, PROG_B, 3, 0);
        prog_push(ps, l[0], &op);
        op = prog_send(0, m10, 8, PROG_B, 3, 0);
        prog_push(ps, l[1], &op);
        op = prog_recv(0, m01, 8, PROG_F, 3, 0);
        prog_push(ps, l[1], &op);
        eng_result res;
        int rc = run(ps, nw, mode ? ENG_EAGER : ENG_RENDEZVOUS, &res, &err);
        if (mode == 0) {
            CHECK_INT(rc, PS_ERR);
            CHECK_HAS(err.msg, "deadlock at t=0 s");
            CHECK_HAS(err.msg, "rank 0 waits on send F3 to rank 1 "
                               "(microbatch 3, not yet received)");
            CHECK_HAS(err.msg, "rank 1 waits on send B3 to rank 0");
        } else {
            CHECK_INT(rc, 0);
        }
        prog_free(ps);
        net_free(nw);
    }
}

/* Two lanes of one rank share its device; a WAIT holds until a SIGNAL. */
static void test_device_and_signal(void)
{
    prog_set *ps = prog_new(1);
    net *nw = net_new(1);
    ps_err err;
    net_set_mesh(nw, 1, 0, &err);
    int32_t a = prog_add_lane(ps, 0), b = prog_add_lane(ps, 0);
    int32_t s = prog_new_signal(ps);
    prog_op op = prog_compute(PROG_F, 0, 0, 0, 2.0, 0);
    prog_push(ps, a, &op);
    op = prog_compute(PROG_B, 0, 0, 0, 3.0, 0);
    prog_push(ps, b, &op); /* waits for the device until t=2 */
    op = (prog_op){.type = PROG_SIGNAL, .msg = s};
    prog_push(ps, b, &op);
    op = (prog_op){.type = PROG_WAIT, .msg = s};
    prog_push(ps, a, &op);
    op = prog_compute(PROG_OPT, 0, 0, -1, 1.0, 0);
    prog_push(ps, a, &op);
    eng_result res;
    CHECK_INT(run(ps, nw, ENG_RENDEZVOUS, &res, &err), 0);
    CHECK_NEAR(ps->lanes[1].ops[0].t_start, 2.0);
    CHECK_NEAR(ps->lanes[0].ops[2].t_start, 5.0);
    CHECK_NEAR(res.makespan, 6.0);
    prog_free(ps);
    net_free(nw);
}

static void test_seal_errors(void)
{
    prog_set *ps = two_ranks();
    ps_err err;
    int32_t a = prog_add_lane(ps, 0);
    int32_t m = prog_new_msg(ps);
    prog_op op = prog_send(1, m, 8, PROG_F, 2, 0);
    prog_push(ps, a, &op);
    CHECK_INT(prog_seal(ps, &err), PS_ERR);
    CHECK_STR(err.msg, "rank 0: send F2 to rank 1 never matched");
    prog_free(ps);
}

int main(void)
{
    test_send_recv_timing();
    test_fifo_link();
    test_conn_sends();
    test_conn_per_peer();
    test_deadlock();
    test_device_and_signal();
    test_seal_errors();
    return harness_done();
}
