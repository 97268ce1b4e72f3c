/* Fault plans and the engine under faults: plan checks and their messages,
 * time words, slow compute, stalls, lost transfers (rendezvous and eager)
 * and the recv_timeout deadline, each against a hand calculation. */
#include "harness.h"
#include "sim/eng.h"
#include "sim/fault.h"

static void test_format_and_parse(void)
{
    char buf[32];
    fault_format_time(0.012, 1, buf, sizeof buf);
    CHECK_STR(buf, "12.000 ms");
    fault_format_time(0.002, 0, buf, sizeof buf);
    CHECK_STR(buf, "2 ms");
    fault_format_time(1.5, 0, buf, sizeof buf);
    CHECK_STR(buf, "1.5 s");
    fault_format_time(2.5e-6, 0, buf, sizeof buf);
    CHECK_STR(buf, "2.5 us");
    fault_format_time(0, 0, buf, sizeof buf);
    CHECK_STR(buf, "0 s");
    double t = -1;
    ps_err err;
    CHECK_INT(fault_parse_time("at 2 ms", strlen("at 2 ms"), &t, &err), 0);
    CHECK_NEAR(t, 0.002);
    CHECK_INT(fault_parse_time("  at 1 s", strlen("  at 1 s"), &t, &err), 0);
    CHECK_NEAR(t, 1);
    CHECK_INT(fault_parse_time("3 us", strlen("3 us"), &t, &err), 0);
    CHECK_NEAR(t, 3e-6);
    CHECK_INT(fault_parse_time("at", strlen("at"), &t, &err), PS_ERR);
    CHECK_INT(fault_parse_time("-1 ms", strlen("-1 ms"), &t, &err), PS_ERR);
    CHECK_HAS(err.msg, "must not be negative");
    /* a NUL inside the Lua string is an error, not the end of the text */
    CHECK_INT(fault_parse_time("2 ms\0junk", 9, &t, &err), PS_ERR);
}

static void test_plan_checks(void)
{
    fault_rank ranks[4];
    fault_plan fp;
    ps_err err;
    fault ok[] = {{FAULT_STALL, 3, 0, 0.002, 0},
                  {FAULT_SLOW, 1, 0, 0.001, 0.7},
                  {FAULT_DOWN, 2, 0, 0.001, 0}};
    CHECK_INT(fault_plan_init(&fp, ok, 3, INFINITY, ranks, 4, &err), 0);
    CHECK_NEAR(ranks[3].stall_at, 0.002);
    CHECK(isinf(ranks[0].stall_at) && isinf(ranks[0].slow_from));
    CHECK_NEAR(ranks[1].speed, 0.7);
    CHECK_INT(ranks[2].nlinks, 1);
    CHECK_INT(ranks[0].nlinks, 1);
    CHECK_NEAR(fault_down_at(&fp, 0, 2), 0.001);
    CHECK(isinf(fault_down_at(&fp, 0, 1)));
    char buf[96];
    fault_describe(&fp, 1, buf, sizeof buf);
    CHECK_STR(buf, "rank 1 slow (70% speed) from 1 ms");
    fault_describe(&fp, 2, buf, sizeof buf);
    CHECK_STR(buf, "link 2-0 down at 1 ms");
    int len = fault_append_active(&fp, 0.0015, buf, 0, sizeof buf);
    CHECK_STR(buf,
              "; rank 1 slow (70% speed) from 1 ms; link 2-0 down at 1 ms");
    CHECK_INT(len, (int)strlen(buf));

    fault slow[] = {{FAULT_SLOW, 1, 0, 0, 1.5}};
    CHECK_INT(fault_plan_init(&fp, slow, 1, INFINITY, ranks, 4, &err), PS_ERR);
    CHECK_STR(err.msg, "field 'faults[1].slow' must be in (0, 1], got 1.5");
    slow[0].speed = 0;
    CHECK_INT(fault_plan_init(&fp, slow, 1, INFINITY, ranks, 4, &err), PS_ERR);
    fault twice[] = {{FAULT_DOWN, 2, 3, 0, 0}, {FAULT_DOWN, 3, 2, 1, 0}};
    CHECK_INT(fault_plan_init(&fp, twice, 2, INFINITY, ranks, 4, &err), PS_ERR);
    CHECK_STR(err.msg, "faults[2]: a second 'down' fault on link 3-2 (the "
                       "first is faults[1])");
    fault out[] = {{FAULT_DOWN, 0, 4, 0, 0}};
    CHECK_INT(fault_plan_init(&fp, out, 1, INFINITY, ranks, 4, &err), PS_ERR);
    CHECK_STR(err.msg, "field 'faults[1].link' must be a rank of the cluster "
                       "(0..3), got 4");
    CHECK_INT(fault_plan_init(&fp, NULL, 0, 0, ranks, 4, &err), PS_ERR);
    CHECK_STR(err.msg, "field 'recv_timeout' must be a time > 0, got 0");
    CHECK_INT(fault_plan_init(&fp, NULL, 0, -1, ranks, 4, &err), PS_ERR);
}

/* rank 0: compute 1 s, send 100 B to rank 1 (100 B/s, 0.5 s: 1.5 s);
 * rank 1: receive, compute 2 s. */
static prog_set *pair(void)
{
    prog_set *ps = prog_new(2);
    int32_t a = prog_add_lane(ps, 0), b = prog_add_lane(ps, 1);
    int32_t m = prog_new_msg(ps);
    prog_op op = prog_compute(PROG_F, 0, 0, 0, 1.0, 0);
    prog_push(ps, a, &op);
    op = prog_send(1, m, 100, PROG_F, 0, 0);
    prog_push(ps, a, &op);
    op = prog_recv(0, m, 100, PROG_F, 0, 0);
    prog_push(ps, b, &op);
    op = prog_compute(PROG_F, 1, 0, 0, 2.0, 0);
    prog_push(ps, b, &op);
    return ps;
}

static int run_faults(const fault *list, int32_t n, double timeout,
                      enum eng_p2p p2p, eng_result *res, prog_set **out,
                      ps_err *err)
{
    prog_set *ps = pair();
    net *nw = net_new(2);
    net_set_mesh(nw, 100, 0.5, err);
    fault_rank ranks[2];
    fault_plan fp;
    int rc = fault_plan_init(&fp, list, n, timeout, ranks, 2, err);
    eng_sim *e = eng_new();
    if (rc == 0)
        rc = prog_seal(ps, err);
    eng_set_faults(e, &fp);
    if (rc == 0)
        rc = eng_run(e, ps, nw, p2p, res, err);
    eng_free(e);
    net_free(nw);
    *out = ps;
    return rc;
}

static void test_engine(void)
{
    eng_result res;
    prog_set *ps;
    ps_err err;
    /* slow 0.5 on rank 1 from 2 s: its compute starts at 2.5 s, takes 4 s */
    fault slow[] = {{FAULT_SLOW, 1, 0, 2.0, 0.5}};
    CHECK_INT(run_faults(slow, 1, INFINITY, ENG_RENDEZVOUS, &res, &ps, &err),
              0);
    CHECK_NEAR(res.makespan, 6.5);
    prog_free(ps);
    /* from 3 s: the op starting at 2.5 s keeps full speed */
    slow[0].t = 3.0;
    CHECK_INT(run_faults(slow, 1, INFINITY, ENG_RENDEZVOUS, &res, &ps, &err),
              0);
    CHECK_NEAR(res.makespan, 4.5);
    prog_free(ps);

    /* rank 0 stalls at 0.5 s: its compute (0-1 s) finishes, the send never
     * starts; rank 1 posted its receive at 0 and waits: deadline at 3 s */
    fault stall[] = {{FAULT_STALL, 0, 0, 0.5, 0}};
    CHECK_INT(run_faults(stall, 1, 3.0, ENG_RENDEZVOUS, &res, &ps, &err),
              PS_ERR);
    CHECK_STR(err.msg, "deadline at t=3.000 s: rank 1 waited 3 s on recv F0 "
                       "from rank 0 (microbatch 0); rank 0 stalled at 500 ms");
    CHECK_NEAR(ps->lanes[0].ops[0].t_end, 1.0);
    prog_free(ps);
    /* without a timeout: the deadlock report */
    CHECK_INT(run_faults(stall, 1, INFINITY, ENG_RENDEZVOUS, &res, &ps, &err),
              PS_ERR);
    CHECK_STR(err.msg, "deadlock at t=1 s (rank 0 stalled at 500 ms): rank 0 "
                       "stalled before send F0 to rank 1; rank 1 waits on "
                       "recv F0 from rank 0 (microbatch 0, not yet sent)");
    prog_free(ps);

    /* the link goes down at 2 s while the transfer (1-2.5 s) is in flight:
     * lost; eager: the send completes (buffered), the receive never */
    for (int mode = 0; mode < 2; mode++) {
        fault down[] = {{FAULT_DOWN, 1, 0, 2.0, 0}};
        CHECK_INT(run_faults(down, 1, 10.0, mode ? ENG_EAGER : ENG_RENDEZVOUS,
                             &res, &ps, &err),
                  PS_ERR);
        CHECK_STR(err.msg, "deadline at t=10.000 s: rank 1 waited 10 s on "
                           "recv F0 from rank 0 (microbatch 0, lost: the link "
                           "is down); link 1-0 down at 2 s");
        prog_free(ps);
    }
    /* down at exactly the arrival time (2.5 s): lost; just after: on time */
    fault late[] = {{FAULT_DOWN, 0, 1, 2.5, 0}};
    CHECK_INT(run_faults(late, 1, INFINITY, ENG_RENDEZVOUS, &res, &ps, &err),
              PS_ERR);
    CHECK_HAS(err.msg, "lost: the link is down");
    prog_free(ps);
    late[0].t = 2.5000001;
    CHECK_INT(run_faults(late, 1, INFINITY, ENG_RENDEZVOUS, &res, &ps, &err),
              0);
    CHECK_NEAR(res.makespan, 4.5);
    prog_free(ps);
    /* a timeout of exactly the longest wait (rank 1: 0 to 2.5 s) passes */
    CHECK_INT(run_faults(NULL, 0, 2.5, ENG_RENDEZVOUS, &res, &ps, &err), 0);
    CHECK_NEAR(res.makespan, 4.5);
    prog_free(ps);
    CHECK_INT(run_faults(NULL, 0, 2.4, ENG_RENDEZVOUS, &res, &ps, &err),
              PS_ERR);
    CHECK_STR(err.msg, "deadline at t=2.400 s: rank 1 waited 2.4 s on recv F0 "
                       "from rank 0 (microbatch 0)");
    prog_free(ps);
}

/* Three lanes of rank 0 share its device (1 s each); the rank stalls at
 * 0.5 s: the first finishes, the second does not start when the device
 * frees, the third still waits behind it. */
static void test_stall_device(void)
{
    prog_set *ps = prog_new(1);
    net *nw = net_new(1);
    ps_err err;
    net_set_mesh(nw, 1, 0, &err);
    for (int32_t mb = 0; mb < 3; mb++) {
        int32_t l = prog_add_lane(ps, 0);
        prog_op op = prog_compute(PROG_F, 0, 0, mb, 1.0, 0);
        prog_push(ps, l, &op);
    }
    fault stall[] = {{FAULT_STALL, 0, 0, 0.5, 0}};
    fault_rank ranks[1];
    fault_plan fp;
    CHECK_INT(fault_plan_init(&fp, stall, 1, INFINITY, ranks, 1, &err), 0);
    eng_sim *e = eng_new();
    eng_set_faults(e, &fp);
    eng_result res;
    CHECK_INT(prog_seal(ps, &err), 0);
    CHECK_INT(eng_run(e, ps, nw, ENG_RENDEZVOUS, &res, &err), PS_ERR);
    CHECK_STR(err.msg, "deadlock at t=1 s (rank 0 stalled at 500 ms): rank 0 "
                       "stalled before F1; rank 0 waits for its device before "
                       "F2");
    /* the plan applies until changed: without it the same programs run */
    eng_set_faults(e, NULL);
    CHECK_INT(eng_run(e, ps, nw, ENG_RENDEZVOUS, &res, &err), 0);
    CHECK_NEAR(res.makespan, 3.0);
    eng_free(e);
    prog_free(ps);
    net_free(nw);
}

/* Lanes A (rank 0) and B (rank 1) time out at the same instant t = 1 s.
 * In that instant A's message arrives and A queues for rank 0's device
 * (busy with lane X until 5 s); B still waits, so the run fails on B. (A
 * lane's device-queue link must not cut the list of expired lanes.) */
static void test_expired_same_instant(void)
{
    prog_set *ps = prog_new(3);
    net *nw = net_new(3);
    ps_err err;
    net_set_mesh(nw, 1e18, 0, &err);
    int32_t a = prog_add_lane(ps, 0), b = prog_add_lane(ps, 1);
    int32_t x = prog_add_lane(ps, 0), r2 = prog_add_lane(ps, 2);
    int32_t m1 = prog_new_msg(ps), m2 = prog_new_msg(ps);
    prog_op op = prog_recv(2, m1, 8, PROG_F, 0, 0);
    prog_push(ps, a, &op);
    op = prog_compute(PROG_F, 0, 0, 1, 1.0, 0);
    prog_push(ps, a, &op);
    op = prog_recv(2, m2, 8, PROG_F, 0, 0);
    prog_push(ps, b, &op);
    op = prog_compute(PROG_F, 0, 0, 2, 5.0, 0);
    prog_push(ps, x, &op);
    op = prog_compute(PROG_F, 0, 0, 0, 1.0, 0);
    prog_push(ps, r2, &op);
    op = prog_send(0, m1, 8, PROG_F, 0, 0);
    prog_push(ps, r2, &op);
    op = prog_compute(PROG_F, 0, 0, 0, 10.0, 0);
    prog_push(ps, r2, &op);
    op = prog_send(1, m2, 8, PROG_F, 0, 0);
    prog_push(ps, r2, &op);
    fault_rank ranks[3];
    fault_plan fp;
    CHECK_INT(fault_plan_init(&fp, NULL, 0, 1.0, ranks, 3, &err), 0);
    eng_sim *e = eng_new();
    eng_set_faults(e, &fp);
    eng_result res;
    CHECK_INT(prog_seal(ps, &err), 0);
    CHECK_INT(eng_run(e, ps, nw, ENG_RENDEZVOUS, &res, &err), PS_ERR);
    CHECK_STR(err.msg, "deadline at t=1.000 s: rank 1 waited 1 s on recv F0 "
                       "from rank 2 (microbatch 0)");
    eng_free(e);
    prog_free(ps);
    net_free(nw);
}

int main(void)
{
    test_expired_same_instant();
    test_stall_device();
    test_format_and_parse();
    test_plan_checks();
    test_engine();
    return harness_done();
}
