/* Schedules: closed forms (makespan, bubble, peak activations), the exact
 * per-rank orders of Megatron-LM and PyTorch, communication cost, that every
 * built-in schedule completes, custom lists and parse errors. */
#include "harness.h"
#include "sched/sched.h"
#include "sched_fixture.h"
#include "sim/eng.h"
#include "sim/mem.h"

#include <stdlib.h>

#define MAXS 64 /* stages p * v in these tests */

static sched_stage stages[MAXS];

/* Every stage costs fwd / bwd seconds, holds 1 byte of activations and
 * sends out bytes. */
static void uniform(double fwd, double bwd, double out)
{
    for (int i = 0; i < MAXS; i++)
        stages[i] = (sched_stage){fwd, bwd, fwd, 1, 1, out, 0, 0};
}

static sched_spec spec(enum sched_kind kind, int p, int v, int m)
{
    return spec_on(kind, p, v, m, stages, SCHED_LOOP);
}

static const char *mode_name(int mode)
{
    return mode ? "eager" : "rendezvous";
}

/* GPipe and 1F1B, fwd 1 s, bwd 2 s, free links: 3(m+p-1) and
 * (p-1)/(m+p-1). */
static void test_closed_form(void)
{
    static const int ps_[] = {2, 4, 8}, ms[] = {1, 4, 8, 64};
    uniform(1, 2, 0);
    for (int kind = SCHED_GPIPE; kind <= SCHED_1F1B; kind++)
        for (int mode = 0; mode < 2; mode++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 4; j++) {
                    int p = ps_[i], m = ms[j];
                    sched_spec s = spec((enum sched_kind)kind, p, 1, m);
                    outcome o = run_free(&s, (enum eng_p2p)mode);
                    CHECK_INT(o.rc, 0);
                    if (o.rc)
                        printf("  %s %s p=%d m=%d: %s\n", sched_name(s.kind),
                               mode_name(mode), p, m, o.err.msg);
                    CHECK_NEAR(o.res.makespan, 3.0 * (m + p - 1));
                    CHECK_NEAR(bubble(o.ps, o.res.makespan),
                               (p - 1.0) / (m + p - 1));
                    prog_free(o.ps);
                }
    /* checkpointing: R (1 s) joins B, as if backward took 3 s */
    for (int kind = SCHED_GPIPE; kind <= SCHED_1F1B; kind++)
        for (int mode = 0; mode < 2; mode++) {
            sched_spec s = spec((enum sched_kind)kind, 4, 1, 8);
            s.checkpoint = 1;
            outcome o = run_free(&s, (enum eng_p2p)mode);
            CHECK_INT(o.rc, 0);
            CHECK_NEAR(o.res.makespan, 4.0 * (8 + 4 - 1));
            prog_free(o.ps);
        }
    /* the figures quoted in DESIGN.md: 27.27% and 4.48% */
    for (int kind = SCHED_GPIPE; kind <= SCHED_1F1B; kind++)
        for (int mode = 0; mode < 2; mode++) {
            sched_spec s = spec((enum sched_kind)kind, 4, 1, 8);
            outcome o = run_free(&s, (enum eng_p2p)mode);
            CHECK_NEAR(bubble(o.ps, o.res.makespan), 3.0 / 11);
            CHECK(fabs(100 * bubble(o.ps, o.res.makespan) - 27.27) < 0.005);
            prog_free(o.ps);
            s.m = 64;
            o = run_free(&s, (enum eng_p2p)mode);
            CHECK_NEAR(bubble(o.ps, o.res.makespan), 3.0 / 67);
            CHECK(fabs(100 * bubble(o.ps, o.res.makespan) - 4.48) < 0.005);
            prog_free(o.ps);
        }
}

/* Interleaved, stage times 1/v and 2/v so a rank's work is 3m:
 * makespan 3(vm+p-1)/v, bubble (p-1)/(vm+p-1). */
static void test_interleaved_closed_form(void)
{
    static const int ps_[] = {2, 3, 4, 8}, vs[] = {2, 3, 4}, ks[] = {1, 2, 4};
    for (int mode = 0; mode < 2; mode++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 3; k++) {
                    int p = ps_[i], v = vs[j], m = ks[k] * p;
                    uniform(1.0 / v, 2.0 / v, 0);
                    sched_spec s = spec(SCHED_INTERLEAVED, p, v, m);
                    outcome o = run_free(&s, (enum eng_p2p)mode);
                    CHECK_INT(o.rc, 0);
                    CHECK_NEAR(o.res.makespan, 3.0 * (v * m + p - 1) / v);
                    CHECK_NEAR(bubble(o.ps, o.res.makespan),
                               (p - 1.0) / (v * m + p - 1));
                    prog_free(o.ps);
                }
}

static void test_peak_activations(void)
{
    mem_rank mr[16];
    uniform(1, 2, 0);
    static const int ms[] = {1, 2, 3, 4, 8, 16};
    for (int p = 1; p <= 8; p++)
        for (int j = 0; j < 6; j++) {
            int m = ms[j];
            sched_spec s = spec(SCHED_GPIPE, p, 1, m);
            peaks(&s, mr);
            for (int r = 0; r < p; r++)
                CHECK_NEAR(mr[r].peak, m);
            s.kind = SCHED_1F1B;
            peaks(&s, mr);
            for (int r = 0; r < p; r++)
                CHECK_NEAR(mr[r].peak, p - r < m ? p - r : m);
        }
    /* Interleaved: the warmup of current Megatron-LM, 2(p-1-r) + (v-1)p,
     * plus the steady-state forward that runs before the first backward
     * frees anything; all m v chunks when the warmup covers everything. */
    for (int p = 1; p <= 8; p++)
        for (int v = 1; v <= 3; v++)
            for (int k = 1; k <= 3; k++) {
                int m = k * p;
                uniform(1.0 / v, 2.0 / v, 0);
                sched_spec s = spec(SCHED_INTERLEAVED, p, v, m);
                peaks(&s, mr);
                for (int r = 0; r < p; r++) {
                    int want = 2 * (p - 1 - r) + (v - 1) * p + 1;
                    CHECK_NEAR(mr[r].peak, want < m * v ? want : m * v);
                }
            }
    /* Checkpointing keeps in_bytes per microbatch in flight plus one
     * recomputed stage: 1F1B p=4 m=8, act 3, in 1: (p - s) * 1 + 2. */
    uniform(1, 2, 0);
    for (int i = 0; i < MAXS; i++)
        stages[i].act_bytes = 3;
    sched_spec s = spec(SCHED_1F1B, 4, 1, 8);
    s.checkpoint = 1;
    peaks(&s, mr);
    for (int r = 0; r < 4; r++)
        CHECK_NEAR(mr[r].peak, 4 - r + 2);
    s.checkpoint = 0;
    peaks(&s, mr);
    for (int r = 0; r < 4; r++)
        CHECK_NEAR(mr[r].peak, 3 * (4 - r));
}

/* Orders read off the reference code by hand (see sched/sched.c for sources).
 */
static void test_orders(void)
{
    uniform(1, 2, 0);
    /* Megatron-LM forward_backward_pipelining_without_interleaving, p=4,
     * m=8: warmup p-r-1 forwards, then F/B pairs, then backwards. */
    sched_spec s = spec(SCHED_1F1B, 4, 1, 8);
    CHECK_STR(order_str(&s, 0),
              "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
    CHECK_STR(order_str(&s, 1),
              "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
    CHECK_STR(order_str(&s, 2),
              "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
    CHECK_STR(order_str(&s, 3),
              "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
    /* m < p: rank 0 only warms up */
    s.m = 2;
    CHECK_STR(order_str(&s, 0), "F0 F1 B0 B1");
    CHECK_STR(order_str(&s, 3), "F0 B0 F1 B1");
    /* PyTorch ScheduleGPipe: backwards in forward order */
    s = spec(SCHED_GPIPE, 2, 1, 3);
    CHECK_STR(order_str(&s, 1), "F0 F1 F2 B0 B1 B2");
    s.checkpoint = 1;
    CHECK_STR(order_str(&s, 0), "F0 F1 F2 R0 B0 R1 B1 R2 B2");

    /* Megatron-LM forward_backward_pipelining_with_interleaving, p=2,
     * v=2, m=4. Virtual microbatch k -> (mb, chunk), forward:
     *   k  0 1 2 3 4 5 6 7
     *   mb 0 1 0 1 2 3 2 3, chunk 0 0 1 1 0 0 1 1
     * backward k uses chunk 1 - chunk(k). Warmup rank 0: 2*1 + 1*2 = 4,
     * rank 1: 0 + 2 = 2; then F(k + warmup), B(k); then the rest of B. */
    s = spec(SCHED_INTERLEAVED, 2, 2, 4);
    CHECK_STR(order_str(&s, 0), "F0 F1 F0.c1 F1.c1 F2 B0.c1 F3 B1.c1 "
                                "F2.c1 B0 F3.c1 B1 B2.c1 B3.c1 B2 B3");
    CHECK_STR(order_str(&s, 1), "F0 F1 F0.c1 B0.c1 F1.c1 B1.c1 F2 B0 "
                                "F3 B1 F2.c1 B2.c1 F3.c1 B3.c1 B2 B3");
    /* p=4, v=2, m=4 (m == p): warmups 10, 8, 6, 4 of 8. Ranks 0 and 1 run
     * everything as warmup; 2 and 3 do not (older Megatron made every
     * rank all-warmup when m == p; current Megatron does not). */
    s = spec(SCHED_INTERLEAVED, 4, 2, 4);
    CHECK_STR(order_str(&s, 0), "F0 F1 F2 F3 F0.c1 F1.c1 F2.c1 F3.c1 "
                                "B0.c1 B1.c1 B2.c1 B3.c1 B0 B1 B2 B3");
    CHECK_STR(order_str(&s, 1), "F0 F1 F2 F3 F0.c1 F1.c1 F2.c1 F3.c1 "
                                "B0.c1 B1.c1 B2.c1 B3.c1 B0 B1 B2 B3");
    CHECK_STR(order_str(&s, 2), "F0 F1 F2 F3 F0.c1 F1.c1 F2.c1 B0.c1 "
                                "F3.c1 B1.c1 B2.c1 B3.c1 B0 B1 B2 B3");
    CHECK_STR(order_str(&s, 3), "F0 F1 F2 F3 F0.c1 B0.c1 F1.c1 B1.c1 "
                                "F2.c1 B2.c1 F3.c1 B3.c1 B0 B1 B2 B3");
}

/* GPipe p=4 with a transfer time c = out_bytes / bandwidth + latency on
 * every boundary (mesh: dedicated links, each used by one transfer at a
 * time, so nothing queues).
 *
 * Eager: sends never block. Rank r starts F_i at i + r(1 + c) (its input
 * left rank r-1 at i + (r-1)(1+c) + 1 and took c). The last rank starts
 * B_0 at m + (p-1)(1+c) and B_i every 2 s; a gradient reaches rank r-1 c
 * after B_i ends, so rank r starts B_i at that + 2i + (p-1-r)(2+c).
 * Rank 0 ends B_{m-1} at 3(m+p-1) + 2(p-1)c: the closed form plus c for
 * each of the 2(p-1) boundary crossings of the critical path.
 *
 * Rendezvous: a batch {send F_i to r+1, recv F_{i+1} from r-1} completes
 * only when both transfers have arrived; every rank posts its batch at the
 * same instant, so the ranks move in lockstep and each forward step costs
 * 1 + c, each backward step 2 + c, on every rank. Rank r starts F_i at
 * (r+i)(1+c); the last rank's B_0 follows its F_{m-1} without a transfer
 * at (m+p-2)(1+c) + 1; rank r starts B_i at that + (p-1-r+i)(2+c). Rank 0
 * ends at 3(m+p-1) + 2(m+p-2)c: c per step, m+p-2 steps per direction. */
static void test_comm_cost(void)
{
    const double bytes = 1e6, bw = 1e7, lat = 0.05, c = 0.15;
    uniform(1, 2, bytes);
    static const int ms[] = {1, 4, 8};
    for (int j = 0; j < 3; j++) {
        int p = 4, m = ms[j];
        sched_spec s = spec(SCHED_GPIPE, p, 1, m);
        outcome o = run_mesh(&s, ENG_EAGER, bw, lat);
        CHECK_INT(o.rc, 0);
        CHECK_NEAR(o.res.makespan, 3.0 * (m + p - 1) + 2 * (p - 1) * c);
        CHECK_INT(o.res.transfers, 2 * (p - 1) * m);
        prog_free(o.ps);
        o = run_mesh(&s, ENG_RENDEZVOUS, bw, lat);
        CHECK_INT(o.rc, 0);
        CHECK_NEAR(o.res.makespan, 3.0 * (m + p - 1) + 2 * (m + p - 2) * c);
        prog_free(o.ps);
    }
}

/* The compute op of (kind, stage, mb) on lane l, or NULL. */
static const prog_op *find(const prog_set *ps, int kind, int stage, int mb)
{
    for (int32_t l = 0; l < ps->nlanes; l++)
        for (int32_t i = 0; i < ps->lanes[l].n; i++) {
            const prog_op *op = &ps->lanes[l].ops[i];
            if (op->type == PROG_COMPUTE && op->kind == kind &&
                op->stage == stage && op->mb == mb)
                return op;
        }
    return NULL;
}

/* Dependencies and device exclusivity of an executed schedule; returns
 * the number of violations (each reported). */
static int check_run(const sched_spec *s, const prog_set *ps)
{
    int bad = 0, S = s->p * s->v;
    for (int st = 0; st < S; st++)
        for (int mb = 0; mb < s->m; mb++) {
            const prog_op *f = find(ps, PROG_F, st, mb);
            const prog_op *b = find(ps, PROG_B, st, mb);
            const prog_op *r = find(ps, PROG_R, st, mb);
            if (!f || !b || !s->checkpoint != !r) {
                bad++;
                continue;
            }
            bad += f->t_end > b->t_start;
            if (r)
                bad += f->t_end > r->t_start || r->t_end > b->t_start;
            if (st + 1 < S) {
                bad += f->t_end > find(ps, PROG_F, st + 1, mb)->t_start;
                bad += find(ps, PROG_B, st + 1, mb)->t_end > b->t_start;
            }
        }
    for (int32_t l = 0; l < ps->nlanes; l++) {
        double last = 0;
        int n = 0;
        for (int32_t i = 0; i < ps->lanes[l].n; i++) {
            const prog_op *op = &ps->lanes[l].ops[i];
            if (op->type != PROG_COMPUTE)
                continue;
            bad += op->t_start < last;
            last = op->t_end;
            n++;
        }
        bad += n != s->m * s->v * (s->checkpoint ? 3 : 2);
    }
    return bad;
}

/* Every built-in schedule completes for p 1..8, v 1..3 (interleaved),
 * several m, with and without checkpointing and communication cost. */
static void test_all_complete(void)
{
    int runs = 0, failed = 0;
    for (int kind = SCHED_GPIPE; kind <= SCHED_INTERLEAVED; kind++)
        for (int p = 1; p <= 8; p++)
            for (int v = 1; v <= (kind == SCHED_INTERLEAVED ? 3 : 1); v++) {
                int ms[] = {1, 2, 3, p, 2 * p, 3 * p, 2 * p + 1};
                for (int j = 0; j < 7; j++)
                    for (int ck = 0; ck < 2; ck++)
                        for (int cost = 0; cost < 2; cost++)
                            for (int mode = 0; mode < 2; mode++) {
                                int m = ms[j];
                                if (kind == SCHED_INTERLEAVED && m % p)
                                    continue;
                                uniform(1.0 / v, 2.0 / v, cost ? 3e5 : 0);
                                sched_spec s =
                                    spec((enum sched_kind)kind, p, v, m);
                                s.checkpoint = ck;
                                outcome o = run_mesh(&s, (enum eng_p2p)mode,
                                                     1e6, cost ? 1e-3 : 0);
                                int bad = o.rc ? 1 : check_run(&s, o.ps);
                                runs++;
                                if (bad) {
                                    failed++;
                                    printf("  %s p=%d v=%d m=%d ck=%d "
                                           "cost=%d %s: %d problems %s\n",
                                           sched_name(s.kind), p, v, m, ck,
                                           cost, mode_name(mode), bad,
                                           o.rc ? o.err.msg : "");
                                }
                                prog_free(o.ps);
                            }
            }
    CHECK_INT(failed, 0);
    CHECK(runs > 1000);
}

/* The ops sched_lower emits for GPipe p=2, m=2 mapped onto ranks 3 and 1
 * of a 4-rank cluster. */
static void test_lowering(void)
{
    uniform(1, 2, 8);
    stages[0].out_bytes = 16;
    int32_t rank_of[] = {3, 1};
    sched_spec s = spec(SCHED_GPIPE, 2, 1, 2);
    s.rank_of = rank_of;
    prog_set *ps = prog_new(4);
    ps_err err;
    ps->nmsgs = 5; /* ids handed out earlier stay untouched */
    CHECK_INT(sched_lower(&s, ps, &err), 0);
    CHECK_INT(ps->nmsgs, 5 + 2 * 1 * 2);
    CHECK_INT(ps->nlanes, 2);
    CHECK_INT(ps->lanes[0].rank, 3);
    CHECK_INT(ps->lanes[1].rank, 1);
    static const char *want[2][8] = {
        {"F0", "send F0 to rank 1", "F1", "send F1 to rank 1",
         "recv B0 from rank 1", "B0", "recv B1 from rank 1", "B1"},
        {"recv F0 from rank 3", "F0", "recv F1 from rank 3", "F1", "B0",
         "send B0 to rank 3", "B1", "send B1 to rank 3"}};
    /* GPipe sends are PyTorch-style isends the lane does not wait on */
    static const int batched[2][8] = {
        {0, PROG_NOWAIT, 0, PROG_NOWAIT | PROG_BATCH},
        {0, 0, 0, 0, 0, PROG_NOWAIT, 0, PROG_NOWAIT}};
    char d[96];
    for (int l = 0; l < 2; l++) {
        CHECK_INT(ps->lanes[l].n, 8);
        for (int i = 0; i < 8 && i < ps->lanes[l].n; i++) {
            const prog_op *op = &ps->lanes[l].ops[i];
            prog_describe(op, d, sizeof d);
            CHECK_STR(d, want[l][i]);
            CHECK_INT(op->flags, batched[l][i]);
            if (op->type == PROG_COMPUTE) {
                CHECK_INT(op->stage, l);
                CHECK_NEAR(op->mem, op->kind == PROG_F ? 1 : -1);
            } else {
                CHECK(op->msg >= 5 && op->msg < 9);
                CHECK_NEAR(op->bytes, 16);
            }
        }
    }
    CHECK_INT(prog_seal(ps, &err), 0);
    /* the same spec again: fresh message ids, the set still seals */
    CHECK_INT(sched_lower(&s, ps, &err), 0);
    CHECK_INT(ps->nmsgs, 9 + 4);
    CHECK_INT(prog_seal(ps, &err), 0);
    prog_free(ps);

    /* p = 1, v = 3: all chunks on one rank, no transfers */
    uniform(1, 2, 8);
    s = spec(SCHED_INTERLEAVED, 1, 3, 2);
    outcome o = run_free(&s, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    CHECK_INT(o.ps->nmsgs, 0);
    CHECK_INT(o.ps->lanes[0].n, 12);
    CHECK_NEAR(o.res.makespan, 18);
    prog_free(o.ps);

    /* rank_of errors */
    int32_t dup[] = {1, 1}, out[] = {0, 7};
    ps = prog_new(2);
    s = spec(SCHED_1F1B, 2, 1, 2);
    s.rank_of = dup;
    CHECK_INT(sched_lower(&s, ps, &err), PS_ERR);
    CHECK_STR(err.msg, "pipeline ranks 0 and 1 both map to rank 1");
    s.rank_of = out;
    CHECK_INT(sched_lower(&s, ps, &err), PS_ERR);
    CHECK_STR(err.msg, "pipeline rank 1 maps to rank 7 outside 0..1");
    CHECK_INT(ps->nlanes, 0);
    s.rank_of = NULL;
    s.p = 3;
    CHECK_INT(sched_lower(&s, ps, &err), PS_ERR);
    CHECK_STR(err.msg, "pipeline rank 2 maps to rank 2 outside 0..1");
    prog_free(ps);
}

/* Custom lists: p = 2, m = 2. */
static void test_custom(void)
{
    uniform(1, 2, 0);
    sched_action r0[4], r1[4];
    const sched_action *lists[2] = {r0, r1};
    int32_t n[2] = {4, 4};
    sched_spec s = spec(SCHED_CUSTOM, 2, 1, 2);
    s.custom = lists;
    s.ncustom = n;
    ps_err err;

    /* a valid custom 1F1B runs like the built-in one */
    static const char *ok0[] = {"F0", "F1", "B0", "B1"};
    static const char *ok1[] = {"F0", "B0", "F1", "B1"};
    for (int i = 0; i < 4; i++) {
        r0[i] = act(ok0[i], 2, 1);
        r1[i] = act(ok1[i], 2, 1);
    }
    outcome o = run_free(&s, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    CHECK_NEAR(o.res.makespan, 9);
    prog_free(o.ps);

    /* checkpointing inserts R before each B unless it is there already */
    s.checkpoint = 1;
    r0[2] = act("R1", 2, 1);
    r0[3] = act("B0", 2, 1);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "rank 0: B1 is missing");
    sched_action r0c[5] = {act("F0", 2, 1), act("F1", 2, 1), act("R1", 2, 1),
                           act("B0", 2, 1), act("B1", 2, 1)};
    lists[0] = r0c;
    n[0] = 5;
    CHECK_STR(order_str(&s, 0), "F0 F1 R1 R0 B0 B1");
    CHECK_STR(order_str(&s, 1), "F0 R0 B0 F1 R1 B1");
    o = run_free(&s, ENG_EAGER);
    CHECK_INT(o.rc, 0);
    prog_free(o.ps);
    s.checkpoint = 0;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "rank 0: R1 needs checkpointing");
    lists[0] = r0;
    n[0] = 4;

    /* invalid orders are rejected, naming rank and action */
    static const char *bad[][4] = {{"B0", "F0", "F1", "B1"},
                                   {"F0", "F0", "B0", "B1"},
                                   {"F0", "F1", "B1", "B1"}};
    static const char *msgs[] = {"rank 0: B0 comes before F0",
                                 "rank 0: F0 appears twice",
                                 "rank 0: B1 appears twice"};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 4; i++)
            r0[i] = act(bad[k][i], 2, 1);
        CHECK_INT(sched_check(&s, &err), PS_ERR);
        CHECK_STR(err.msg, msgs[k]);
    }
    n[1] = 3;
    for (int i = 0; i < 4; i++)
        r0[i] = act(ok0[i], 2, 1);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "rank 1: B1 is missing");
    n[1] = 4;

    /* valid but deadlocking under rendezvous: rank 1 wants F1 first while
     * rank 0 can only send F0 before it computes F1 */
    static const char *dl1[] = {"F1", "F0", "B1", "B0"};
    for (int i = 0; i < 4; i++)
        r1[i] = act(dl1[i], 2, 1);
    CHECK_INT(sched_check(&s, &err), 0);
    o = run_free(&s, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, PS_ERR);
    CHECK_STR(o.err.msg,
              "deadlock at t=1 s: rank 0 waits on send F0 to rank 1 "
              "(microbatch 0, not yet received); rank 1 waits on recv F1 "
              "from rank 0 (microbatch 1, not yet sent)");
    prog_free(o.ps);
    o = run_free(&s, ENG_EAGER); /* buffered sends break the cycle */
    CHECK_INT(o.rc, 0);
    prog_free(o.ps);

    s.custom = NULL;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "custom schedule has no action lists");
}

static void test_parse(void)
{
    enum sched_kind k;
    ps_err err;
    CHECK_INT(sched_parse("gpipe", &k, &err), 0);
    CHECK_INT(k, SCHED_GPIPE);
    CHECK_INT(sched_parse("afab", &k, &err), 0);
    CHECK_INT(k, SCHED_GPIPE);
    CHECK_INT(sched_parse("1f1b", &k, &err), 0);
    CHECK_INT(k, SCHED_1F1B);
    CHECK_INT(sched_parse("interleaved", &k, &err), 0);
    CHECK_INT(k, SCHED_INTERLEAVED);
    CHECK_INT(sched_parse("foo", &k, &err), PS_ERR);
    CHECK_STR(err.msg,
              "unknown schedule 'foo' (expected gpipe, afab, 1f1b, "
              "interleaved, zb_h1, zb_h2, looped_bfs, interleaved_pytorch, "
              "interleaved_zb, zbv, dualpipev, dualpipe, forward_only, a "
              "PyTorch class "
              "name or a list of actions per rank)");
    CHECK_STR(sched_name(SCHED_1F1B), "1f1b");
    CHECK_STR(sched_name(SCHED_INTERLEAVED), "interleaved");

    sched_action a;
    CHECK_INT(sched_parse_action("F3", 4, 1, &a, &err), 0);
    CHECK(a.kind == PROG_F && a.mb == 3 && a.chunk == 0);
    CHECK_INT(sched_parse_action("B0.c1", 4, 2, &a, &err), 0);
    CHECK(a.kind == PROG_B && a.mb == 0 && a.chunk == 1);
    CHECK_INT(sched_parse_action("R2", 4, 1, &a, &err), 0);
    CHECK(a.kind == PROG_R && a.mb == 2);
    static const struct {
        const char *text;
        int m, v;
        const char *msg;
    } bad[] = {
        {"X3", 4, 1,
         "bad action 'X3': expected F, B, W, R or FB, a microbatch and "
         "optionally a chunk, as in F3, B0.c1 or FB3/1"},
        {"F", 4, 1, "bad action 'F': expected a microbatch after F"},
        {"F9", 4, 1, "action 'F9': microbatch 9 out of range 0..3"},
        {"F1.c3", 4, 2, "action 'F1.c3': chunk 3 out of range 0..1"},
        {"F1.c", 4, 2, "bad action 'F1.c': expected a chunk after .c"},
        {"F-1", 4, 1, "bad action 'F-1': expected a microbatch after F"},
        {"B1x", 4, 1, "bad action 'B1x': unexpected 'x'"},
        {"F99999999999", 4, 1,
         "bad action 'F99999999999': expected a microbatch after F"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(sched_parse_action(bad[i].text, bad[i].m, bad[i].v, &a, &err),
                  PS_ERR);
        CHECK_STR(err.msg, bad[i].msg);
    }
    /* bounds near INT32_MIN (a count that wrapped when narrowed): the
     * message's m - 1 overflowed int (UBSan) */
    CHECK_INT(sched_parse_action("F5", INT32_MIN, INT32_MIN, &a, &err), PS_ERR);
    CHECK_STR(err.msg, "action 'F5': microbatch 5 out of range "
                       "0..-2147483649");
}

static void test_check_errors(void)
{
    uniform(1, 2, 0);
    ps_err err;
    sched_spec s = spec(SCHED_INTERLEAVED, 4, 2, 6);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "interleaved schedule needs microbatches (6) to be a "
                       "multiple of pipeline ranks (4)");
    s.m = 2;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_HAS(err.msg, "microbatches (2) to be a multiple");
    s = spec(SCHED_1F1B, 4, 2, 8);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "1f1b schedule runs one chunk per rank (got 2); use "
                       "interleaved or a custom schedule");
    s = spec(SCHED_GPIPE, 0, 1, 8);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "pipeline ranks must be at least 1 (got 0)");
    s = spec(SCHED_GPIPE, 2, 1, 0);
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "microbatches must be at least 1 (got 0)");
    s = spec(SCHED_GPIPE, 2, 1, 2);
    stages[1].bwd = -1;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "stage 1: its backward time is -1, not a finite "
                       "number >= 0 (the sum of its layers' bwd_time, or 2 x "
                       "fwd_time where bwd_time is not given)");
    stages[1].bwd = INFINITY; /* fwd_time = 1e308: 2 x it (issue 27) */
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "stage 1: its backward time is inf, not a finite "
                       "number >= 0 (the sum of its layers' bwd_time, or 2 x "
                       "fwd_time where bwd_time is not given)");
    s.stages = NULL;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "no stage costs given");
    uniform(1, 2, 0);
    s = spec(SCHED_GPIPE, 2, 1, 2);
    sched_action few[2];
    int32_t n;
    CHECK_INT(sched_order(&s, 0, few, 2, &n, &err), PS_ERR);
    CHECK_STR(err.msg, "rank 0: order has 4 actions but room for 2");
    CHECK_INT(n, 4);
}

/* Megatron's 1F1B batches a send with a receive only across a change of
 * kind (send_forward_recv_backward, send_backward_recv_forward); in warm-up
 * and cool-down send_forward / recv_forward (send_backward /
 * recv_backward) are separate waits. So no batch of a 1F1B lane holds a
 * send and a receive of the same kind, and batches that pair a send with a
 * receive pair an activation with a gradient. */
static void test_1f1b_batches(void)
{
    uniform(1, 2, 8);
    sched_spec s = spec(SCHED_1F1B, 4, 1, 8);
    outcome o = run_mesh(&s, ENG_RENDEZVOUS, 1e3, 0.01);
    CHECK_INT(o.rc, 0);
    int paired = 0;
    for (int32_t l = 0; l < o.ps->nlanes; l++) {
        const prog_lane *lane = &o.ps->lanes[l];
        for (int32_t i = 0; i + 1 < lane->n; i++) {
            const prog_op *a = &lane->ops[i], *b = &lane->ops[i + 1];
            if (!(a->flags & PROG_BATCH))
                continue;
            CHECK(a->type != b->type);
            CHECK(a->kind != b->kind);
            paired++;
        }
    }
    /* stage s has w = p - s - 1 warm-up forwards and m - w steady
     * iterations: each pairs F->B (send_forward_recv_backward) on every
     * stage but the last, and B->F (send_backward_recv_forward) on every
     * stage but the first except in the last iteration. p 4, m 8: stage 0
     * 5 + 0, stage 1 6 + 5, stage 2 7 + 6, stage 3 0 + 7: 36 */
    CHECK_INT(paired, 36);
    prog_free(o.ps);
}

int main(void)
{
    test_closed_form();
    test_interleaved_closed_form();
    test_peak_activations();
    test_orders();
    test_comm_cost();
    test_1f1b_batches();
    test_all_complete();
    test_lowering();
    test_custom();
    test_parse();
    test_check_errors();
    return harness_done();
}
