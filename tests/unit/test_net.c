/* Network: FIFO and max-min fair sharing (hand-computed times), link
 * statistics, connections (transfers in order), the cluster builder's
 * routes and contention, deterministic shortest routes and the
 * unreachable-rank error. */
#include "harness.h"
#include "net/net.h"
#include "net_drive.h"
#include "sim/eng.h"

#include <math.h>

/* Two ranks, one directed link 0 -> 1 of 100 B/s and latency lat. */
static net *one_link(double lat, enum net_sharing sharing)
{
    net *nw = net_new(2);
    ps_err err;
    CHECK_INT(net_add_link(nw, 0, 1, 100, lat, &err), 0);
    CHECK_INT(net_add_link(nw, 1, 0, 100, lat, &err), 0);
    CHECK_INT(net_finalize(nw, &err), 0);
    net_set_sharing(nw, sharing);
    return nw;
}

static void test_fair_two_flows_halve(void)
{
    net *nw = one_link(0.5, NET_FAIR);
    start st[] = {{0, 0, 1, 100}, {0, 0, 1, 100}};
    double at[2];
    drive(nw, st, 2, at);
    /* both at 50 B/s: data ends at 2, arrival latency later */
    CHECK_NEAR(at[0], 2.5);
    CHECK_NEAR(at[1], 2.5);
    net_link_info li[4];
    CHECK_INT(net_links(nw, li, 4), 2);
    CHECK_NEAR(li[0].bytes, 200);
    CHECK_NEAR(li[0].busy, 2.0); /* data phases only */
    CHECK_NEAR(li[1].bytes, 0);
    net_free(nw);

    /* FIFO on the same link: one after the other, each holding the link
     * for its latency too */
    nw = one_link(0.5, NET_FIFO);
    drive(nw, st, 2, at);
    CHECK_NEAR(at[0], 1.5);
    CHECK_NEAR(at[1], 3.0);
    CHECK_INT(net_links(nw, li, 4), 2);
    CHECK_NEAR(li[0].bytes, 200);
    CHECK_NEAR(li[0].busy, 3.0);
    net_free(nw);
}

/* A sends 200 B from t=0; B joins at 0.5 with 50 B. At 0.5 A has 150 B left;
 * both run at 50 B/s until B is done at 1.5; A's last 100 B then run at
 * 100 B/s: A ends at 2.5. */
static void test_fair_late_joiner(void)
{
    net *nw = one_link(0, NET_FAIR);
    start st[] = {{0, 0, 1, 200}, {0.5, 0, 1, 50}};
    double at[2];
    drive(nw, st, 2, at);
    CHECK_NEAR(at[1], 1.5);
    CHECK_NEAR(at[0], 2.5);
    net_link_info li[2];
    net_links(nw, li, 2);
    CHECK_NEAR(li[0].bytes, 250);
    CHECK_NEAR(li[0].busy, 2.5);
    net_free(nw);
}

/* Runs q's events through nw to the end: at[id] the arrival of each
 * transfer; began[id] (when given) when its data phase began if it waited
 * on its connection (net_event_queued), else -1. */
static void drain(net *nw, eq *q, double *at, double *began)
{
    eq_event ev;
    double tb;
    while (!net_settle(nw) && !eq_pop(q, &ev)) {
        int32_t id = net_event(nw, &ev);
        if (id < 0)
            continue;
        at[id] = ev.t;
        if (began)
            began[id] = net_event_queued(nw, &tb) ? tb : -1;
    }
}

/* Flows that start or end at one instant share one solve (net_settle):
 * 64 flows of 100 B on one 100 B/s link (latency 0.5) from t=0 all run at
 * 100/64 B/s, end their data phase at 64 and arrive at 64.5. The queue sees
 * one data-end and one arrival event per flow: 128 events. A solve per
 * start and per end (before net_settle) rescheduled every flow on the link
 * each time, about 64 * 64 events. */
static void test_fair_one_solve_per_instant(void)
{
    enum { F = 64 };
    net *nw = one_link(0.5, NET_FAIR);
    eq q;
    eq_init(&q);
    net_begin(nw, &q);
    double tb, at[F];
    for (int i = 0; i < F; i++)
        CHECK_INT(net_start(nw, i, 0, 1, 100, 0, &tb), 0);
    eq_event ev;
    int events = 0;
    while (!net_settle(nw) && !eq_pop(&q, &ev)) {
        events++;
        int32_t id = net_event(nw, &ev);
        if (id >= 0)
            at[id] = ev.t;
    }
    CHECK_INT(events, 2 * F);
    for (int i = 0; i < F; i++)
        CHECK_NEAR(at[i], 64.5);
    eq_free(&q);
    net_free(nw);
}

/* A connection's transfers leave in order (net_start_conn): at t=0 two
 * of 100 B on connection 7 and a plain transfer of 100 B, all 0 -> 1 at
 * 100 B/s, latency 0.5. The plain one shares the link with the first
 * (50 B/s each): both data phases end at 2, arrivals 2.5; the second of
 * the connection begins then, alone: data 2 .. 3, arrival 3.5, and
 * net_event_queued says it began at 2. Sharing all three would end every
 * data phase at 3. A transfer of another key does not queue behind the
 * connection, and after a new net_begin a stale state queues nothing.
 * Under NET_FIFO it is net_start. */
static void test_fair_connection(void)
{
    for (int fifo = 0; fifo < 2; fifo++) {
        net *nw = one_link(0.5, fifo ? NET_FIFO : NET_FAIR);
        eq q;
        eq_init(&q);
        net_begin(nw, &q);
        int32_t conn = 0, other = 0;
        double tb, at[4] = {NAN, NAN, NAN, NAN}, began[4] = {0, 0, 0, 0};
        CHECK_INT(net_start_conn(nw, &conn, 7, 0, 0, 1, 100, 0, &tb), 0);
        CHECK_INT(net_start(nw, 1, 0, 1, 100, 0, &tb), 0);
        CHECK_INT(net_start_conn(nw, &conn, 7, 2, 0, 1, 100, 0, &tb), 0);
        CHECK_NEAR(tb, fifo ? 3 : 0); /* FIFO: when the link is free */
        drain(nw, &q, at, began);
        if (fifo) { /* the link in order, each holding it 1.5 */
            CHECK_NEAR(at[0], 1.5);
            CHECK_NEAR(at[1], 3.0);
            CHECK_NEAR(at[2], 4.5);
            CHECK_NEAR(began[2], -1);
        } else {
            CHECK_NEAR(at[0], 2.5);
            CHECK_NEAR(at[1], 2.5);
            CHECK_NEAR(at[2], 3.5);
            CHECK_NEAR(began[0], -1);
            CHECK_NEAR(began[2], 2);
            /* another key shares the link */
            net_begin(nw, &q);
            conn = 0;
            CHECK_INT(net_start_conn(nw, &conn, 7, 0, 0, 1, 100, 0, &tb), 0);
            CHECK_INT(net_start_conn(nw, &other, 8, 1, 0, 1, 100, 0, &tb), 0);
            at[0] = at[1] = NAN;
            drain(nw, &q, at, NULL);
            CHECK_NEAR(at[0], 2.5);
            CHECK_NEAR(at[1], 2.5);
            /* a state from the last run names a slot a plain transfer
             * holds now: no queueing behind it, they share */
            net_begin(nw, &q);
            CHECK_INT(net_start(nw, 0, 0, 1, 100, 0, &tb), 0);
            CHECK_INT(net_start_conn(nw, &conn, 7, 1, 0, 1, 100, 0, &tb), 0);
            at[0] = at[1] = NAN;
            drain(nw, &q, at, NULL);
            CHECK_NEAR(at[0], 2.5);
            CHECK_NEAR(at[1], 2.5);
        }
        eq_free(&q);
        net_free(nw);
    }
}

/* A transfer of no bytes queued on a connection (a tree's empty slice of
 * a chunk) has a data phase that ends as it begins: the connection's next
 * transfer, queued behind it, begins then too. Connection 7, 0 -> 1 at
 * 100 B/s, latency 0.5: 100 B data 0 .. 1, arrival 1.5; 0 B begins at 1,
 * arrives 1.5; 100 B begins at 1, data 1 .. 2, arrival 2.5. It used to
 * wait forever behind the empty one. */
static void test_fair_connection_empty(void)
{
    net *nw = one_link(0.5, NET_FAIR);
    eq q;
    eq_init(&q);
    net_begin(nw, &q);
    int32_t conn = 0;
    double tb, at[3] = {NAN, NAN, NAN}, began[3] = {-1, -1, -1};
    CHECK_INT(net_start_conn(nw, &conn, 7, 0, 0, 1, 100, 0, &tb), 0);
    CHECK_INT(net_start_conn(nw, &conn, 7, 1, 0, 1, 0, 0, &tb), 0);
    CHECK_INT(net_start_conn(nw, &conn, 7, 2, 0, 1, 100, 0, &tb), 0);
    drain(nw, &q, at, began);
    CHECK_NEAR(at[0], 1.5);
    CHECK_NEAR(at[1], 1.5);
    CHECK_NEAR(at[2], 2.5);
    CHECK_NEAR(began[1], 1);
    CHECK_NEAR(began[2], 1);
    eq_free(&q);
    net_free(nw);
}

/* The classic max-min example: f1 (rank 0 -> 2) is held to 10 B/s by its
 * first link; f2 (1 -> 3) shares the 100 B/s trunk with it and gets the
 * 90 B/s that f1 leaves, not 50. f1 (10 B) ends at 1; f2 (180 B) has 90 B
 * left, now at 100 B/s: it ends at 1.9. A third flow on a disjoint link is
 * untouched by all of this. */
static void test_fair_max_min(void)
{
    net *nw = net_new(6);
    ps_err err;
    int32_t s = net_add_switch(nw), t = net_add_switch(nw);
    CHECK_INT(net_add_link(nw, 0, s, 10, 0, &err), 0);
    CHECK_INT(net_add_link(nw, 1, s, 100, 0, &err), 0);
    CHECK_INT(net_add_link(nw, s, t, 100, 0, &err), 0);
    CHECK_INT(net_add_link(nw, t, 2, 100, 0, &err), 0);
    CHECK_INT(net_add_link(nw, t, 3, 100, 0, &err), 0);
    CHECK_INT(net_add_link(nw, 4, 5, 100, 0, &err), 0);
    /* way back so every pair has a route */
    for (int32_t r = 0; r < 6; r++)
        CHECK_INT(net_add_link(nw, r == 5 ? s : t, r, 1, 0, &err), 0);
    CHECK_INT(net_add_link(nw, 2, s, 1, 0, &err), 0);
    CHECK_INT(net_add_link(nw, 3, s, 1, 0, &err), 0);
    CHECK_INT(net_add_link(nw, 4, s, 1, 0, &err), 0);
    CHECK_INT(net_add_link(nw, 5, s, 1, 0, &err), 0);
    CHECK_INT(net_finalize(nw, &err), 0);
    CHECK_INT(net_sharing_of(nw), NET_FAIR); /* the default off a mesh */
    start st[] = {{0, 0, 2, 10}, {0, 1, 3, 180}, {0, 4, 5, 100}};
    double at[3];
    drive(nw, st, 3, at);
    CHECK_NEAR(at[0], 1.0);
    CHECK_NEAR(at[1], 1.9);
    CHECK_NEAR(at[2], 1.0);
    net_free(nw);
}

/* Through the engine: two messages on one mesh link, FIFO (default on a
 * mesh) vs FAIR. */
static void test_engine_fair_mesh(void)
{
    for (int fair = 0; fair < 2; fair++) {
        prog_set *ps = prog_new(2);
        net *nw = net_new(2);
        ps_err err;
        net_set_mesh(nw, 10, 0.25, &err);
        CHECK_INT(net_sharing_of(nw), NET_FIFO);
        if (fair)
            net_set_sharing(nw, NET_FAIR);
        int32_t a = prog_add_lane(ps, 0), b = prog_add_lane(ps, 1);
        for (int i = 0; i < 2; i++) {
            int32_t m = prog_new_msg(ps);
            prog_op op = prog_send(1, m, 10, PROG_F, i, PROG_BATCH * (i == 0));
            prog_push(ps, a, &op);
            op = prog_recv(0, m, 10, PROG_F, i, PROG_BATCH * (i == 0));
            prog_push(ps, b, &op);
        }
        eng_sim *e = eng_new();
        eng_result res;
        CHECK_INT(prog_seal(ps, &err), 0);
        CHECK_INT(eng_run(e, ps, nw, ENG_RENDEZVOUS, &res, &err), 0);
        if (fair) {
            CHECK_NEAR(ps->lanes[0].ops[0].t_end, 2.25);
            CHECK_NEAR(ps->lanes[0].ops[1].t_end, 2.25);
            CHECK_NEAR(res.makespan, 2.25);
        } else {
            CHECK_NEAR(ps->lanes[0].ops[0].t_end, 1.25);
            CHECK_NEAR(ps->lanes[0].ops[1].t_end, 2.5);
        }
        /* run twice: per-run state is reset */
        CHECK_INT(eng_run(e, ps, nw, ENG_RENDEZVOUS, &res, &err), 0);
        CHECK_NEAR(res.makespan, fair ? 2.25 : 2.5);
        net_link_info li[4];
        CHECK_INT(net_links(nw, li, 4), 1);
        CHECK_NEAR(li[0].bytes, 20);
        eng_free(e);
        prog_free(ps);
        net_free(nw);
    }
}

static net *cluster(int32_t nodes, int32_t gpus, int32_t nics, double over)
{
    net_cluster c = {.nodes = nodes,
                     .gpus_per_node = gpus,
                     .nics_per_node = nics,
                     .intra_bw = 400,
                     .intra_lat = 1,
                     .inter_bw = 50,
                     .inter_lat = 4,
                     .oversubscription = over};
    net *nw = net_new(nodes * gpus);
    ps_err err;
    CHECK_INT(net_build_cluster(nw, &c, &err), 0);
    return nw;
}

static void test_cluster(void)
{
    net *nw = cluster(2, 4, 2, 1);
    CHECK_NEAR(net_lone_time(nw, 0, 3, 400), 1 + 400.0 / 400);
    CHECK_NEAR(net_lone_time(nw, 1, 6, 100), 4 + 100.0 / 50);
    const int32_t *l0, *l1;
    net_route_buf b0, b1; /* a cluster's routes are written there */
    CHECK_INT(net_route(nw, 0, 3, &l0, &b0), 2);
    CHECK_INT(net_route(nw, 0, 4, &l0, &b0), 5);
    /* GPUs 0 and 1 share NIC 0: their routes meet on its uplink; GPU 2 uses
     * NIC 1 */
    int32_t n1 = net_route(nw, 1, 5, &l1, &b1);
    CHECK_INT(n1, 5);
    CHECK_INT(l0[1], l1[1]);
    net_route(nw, 2, 6, &l1, &b1);
    CHECK(l0[1] != l1[1]);
    CHECK_INT(net_sharing_of(nw), NET_FAIR);

    /* 0->4 and 1->5 share NIC 0 (100 B each at 25 B/s), 2->6 has NIC 1 to
     * itself; intra-node 3->0 is untouched */
    start st[] = {
        {0, 0, 4, 100}, {0, 1, 5, 100}, {0, 2, 6, 100}, {0, 3, 0, 400}};
    double at[4];
    drive(nw, st, 4, at);
    CHECK_NEAR(at[0], 4 + 100.0 / 25);
    CHECK_NEAR(at[1], 4 + 100.0 / 25);
    CHECK_NEAR(at[2], 4 + 100.0 / 50);
    CHECK_NEAR(at[3], 1 + 1);
    net_free(nw);

    /* one NIC per GPU, fabric oversubscribed 4:1: the core carries
     * 2 * 4 * 50 / 4 = 100 B/s, shared by the four node-0 -> node-1 flows */
    nw = cluster(2, 4, 0, 4);
    start st2[] = {
        {0, 0, 4, 100}, {0, 1, 5, 100}, {0, 2, 6, 100}, {0, 3, 7, 100}};
    drive(nw, st2, 4, at);
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(at[i], 4 + 100.0 / 25);
    net_link_info li[64];
    int32_t nl = net_links(nw, li, 64);
    CHECK(nl <= 64);
    int core = 0;
    for (int32_t i = 0; i < nl; i++) {
        if (li[i].bandwidth == 100 && li[i].bytes == 400) {
            core++;
            CHECK_NEAR(li[i].busy, 4);
        }
    }
    CHECK_INT(core, 1);
    net_free(nw);

    ps_err err;
    net_cluster bad = {.nodes = 2,
                       .gpus_per_node = 4,
                       .nics_per_node = 5,
                       .intra_bw = 1,
                       .inter_bw = 1};
    nw = net_new(8);
    CHECK_INT(net_build_cluster(nw, &bad, &err), PS_ERR);
    CHECK_STR(err.msg, "cluster: nics_per_node must be between 1 and "
                       "gpus_per_node (4), got 5");
    bad.nics_per_node = 1;
    bad.inter_bw = 0;
    CHECK_INT(net_build_cluster(nw, &bad, &err), PS_ERR);
    CHECK_STR(err.msg, "cluster: inter: link bandwidth must be positive, "
                       "got 0");
    net_free(nw);
}

/* Replica folding (par/fold.h): net_foldable on a cluster with a NIC per
 * GPU and a full-bisection core only, and net_set_image's routes: the kind
 * of route of the two ranks over the links of their images. */
static void test_fold_image(void)
{
    net *nw = cluster(2, 2, 2, 1);
    CHECK_INT(net_foldable(nw), 1);
    net_route_buf b0, b1, b2;
    const int32_t *across, *back, *got;
    int32_t n = net_route(nw, 0, 2, &across, &b0);
    CHECK_INT(n, 5);
    CHECK_INT(net_route(nw, 2, 0, &back, &b1), 5);
    int32_t want[5] = {across[0], across[1], across[2], back[3], back[4]};
    int32_t image[4] = {0, 1, 0, 1}; /* node 1's GPUs stand for node 0's */
    net_set_image(nw, image);
    /* across nodes still, but back into rank 0's own NIC and GPU */
    CHECK_INT(net_route(nw, 0, 2, &got, &b2), 5);
    for (int k = 0; k < 5; k++)
        CHECK_INT(got[k], want[k]);
    /* inside node 1: node 0's switch links */
    int32_t in01[2];
    net_set_image(nw, NULL);
    CHECK_INT(net_route(nw, 0, 1, &got, &b0), 2);
    in01[0] = got[0];
    in01[1] = got[1];
    net_set_image(nw, image);
    CHECK_INT(net_route(nw, 2, 3, &got, &b0), 2);
    CHECK_INT(got[0], in01[0]);
    CHECK_INT(got[1], in01[1]);
    net_set_image(nw, NULL);
    CHECK_INT(net_route(nw, 2, 3, &got, &b0), 2);
    CHECK(got[0] != in01[0]);
    net_free(nw);
    nw = cluster(2, 2, 1, 1); /* two GPUs share a NIC */
    CHECK_INT(net_foldable(nw), 0);
    net_free(nw);
    nw = cluster(2, 2, 2, 2); /* an oversubscribed core */
    CHECK_INT(net_foldable(nw), 0);
    net_free(nw);
}

static void test_routes(void)
{
    /* two equally short routes 0 -> 1, via switch 2 or 3: the lower id wins
     * whatever the order the links were added in */
    net *nw = net_new(2);
    ps_err err;
    int32_t s2 = net_add_switch(nw), s3 = net_add_switch(nw);
    net_add_link(nw, 0, s3, 1, 0, &err);
    net_add_link(nw, s3, 1, 1, 0, &err);
    net_add_link(nw, 0, s2, 1, 0, &err);
    net_add_link(nw, s2, 1, 1, 0, &err);
    net_add_link(nw, 1, 0, 1, 0, &err);
    CHECK_INT(net_finalize(nw, &err), 0);
    const int32_t *l;
    net_route_buf one;
    CHECK_INT(net_route(nw, 0, 1, &l, &one), 2);
    CHECK_INT(l[0], 2); /* link 0 -> s2 is link number 2 */
    CHECK_INT(l[1], 3);
    net_free(nw);

    /* a chain 0 - 1 - 2 - 3 whose last hop is one-way */
    nw = net_new(4);
    for (int32_t r = 0; r < 3; r++) {
        net_add_link(nw, r, r + 1, 1, 0, &err);
        if (r < 2)
            net_add_link(nw, r + 1, r, 1, 0, &err);
    }
    CHECK_INT(net_finalize(nw, &err), PS_ERR);
    CHECK_STR(err.msg, "no route from rank 3 to rank 0");
    net_free(nw);
}

/* A mesh of 65536 and of 1 << 20 ranks: the link state was an N*N table
 * indexed in int32 (65536^2 wrapped to 0: a segfault); now a pair gets a
 * slot on first use. Both sharing models, two pairs sharing nothing, one
 * pair used twice, link rows listed by (src, dst) and reset per run. */
static void test_huge_mesh(void)
{
    static const int32_t sizes[] = {65536, 1 << 20};
    for (int i = 0; i < 2; i++) {
        for (int fair = 0; fair < 2; fair++) {
            int32_t N = sizes[i];
            net *nw = net_new(N);
            ps_err err;
            CHECK_INT(net_set_mesh(nw, 100, 0.5, &err), 0);
            net_set_sharing(nw, fair ? NET_FAIR : NET_FIFO);
            start st[] = {{0, N - 1, 0, 100},
                          {0, 0, N - 1, 100},
                          {0, 0, N - 1, 100},
                          {0, 7, 3, 50}};
            double at[4];
            drive(nw, st, 4, at);
            CHECK_NEAR(at[0], 1.5);
            CHECK_NEAR(at[3], 1.0);
            /* the two on one link: one after the other, or halved */
            CHECK_NEAR(at[1], fair ? 2.5 : 1.5);
            CHECK_NEAR(at[2], fair ? 2.5 : 3.0);
            net_link_info li[4];
            CHECK_INT(net_links(nw, li, 4), 3);
            CHECK_INT(li[0].a, 0);
            CHECK_INT(li[0].b, N - 1);
            CHECK_NEAR(li[0].bytes, 200);
            CHECK_INT(li[1].a, 7);
            CHECK_INT(li[1].b, 3);
            CHECK_INT(li[2].a, N - 1);
            CHECK_INT(li[2].b, 0);
            /* a second run forgets the first one's pairs */
            start again[] = {{0, 5, 6, 100}};
            drive(nw, again, 1, at);
            CHECK_NEAR(at[0], 1.5);
            CHECK_INT(net_links(nw, li, 4), 1);
            CHECK_INT(li[0].a, 5);
            double lat, bw;
            net_path(nw, N - 1, 0, &lat, &bw);
            CHECK_NEAR(lat, 0.5);
            CHECK_NEAR(bw, 100);
            net_free(nw);
        }
    }
}

/* Enough pairs to grow the slot table and the hash several times; every
 * pair is its own link, so all arrive together. */
static void test_mesh_many_pairs(void)
{
    for (int fair = 0; fair < 2; fair++) {
        enum { N = 64 };
        net *nw = net_new(N);
        ps_err err;
        CHECK_INT(net_set_mesh(nw, 100, 0, &err), 0);
        net_set_sharing(nw, fair ? NET_FAIR : NET_FIFO);
        static start st[N * (N - 1)];
        static double at[N * (N - 1)];
        int n = 0;
        for (int32_t a = 0; a < N; a++)
            for (int32_t b = 0; b < N; b++)
                if (a != b)
                    st[n++] = (start){0, a, b, 100};
        drive(nw, st, n, at);
        int late = 0;
        for (int k = 0; k < n; k++)
            late += fabs(at[k] - 1.0) > 1e-9;
        CHECK_INT(late, 0);
        CHECK_INT(net_links(nw, NULL, 0), n);
        net_free(nw);
    }
}

int main(void)
{
    test_fair_two_flows_halve();
    test_fair_late_joiner();
    test_fair_one_solve_per_instant();
    test_fair_connection();
    test_fair_connection_empty();
    test_fair_max_min();
    test_engine_fair_mesh();
    test_cluster();
    test_routes();
    test_fold_image();
    test_huge_mesh();
    test_mesh_many_pairs();
    return harness_done();
}
