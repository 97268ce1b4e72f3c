/* Chunk placements: explicit lists (sched_place_check, which rule a list
 * is, the errors), the routing a list gives (a stage's ops run on the rank
 * the list names, transfers go to the rank of the next stage), and a
 * schedule's own placement against a list. */
#include "harness.h"
#include "sched/sched.h"
#include "sched_fixture.h"
#include "sim/eng.h"

#define MAXS 16

static sched_stage stages[MAXS];

static void test_rules(void)
{
    ps_err err;
    enum sched_placement rule;
    const int32_t loop[] = {0, 0, 1, 0, 0, 1, 1, 1};
    const int32_t v[] = {0, 0, 1, 0, 1, 1, 0, 1};
    const int32_t odd[] = {1, 0, 0, 0, 0, 1, 1, 1};
    CHECK_INT(sched_place_check(loop, 2, 2, &rule, &err), 0);
    CHECK_INT(rule, SCHED_LOOP);
    CHECK_INT(sched_place_check(v, 2, 2, &rule, &err), 0);
    CHECK_INT(rule, SCHED_V);
    CHECK_INT(sched_place_check(odd, 2, 2, &rule, &err), 0);
    CHECK_INT(rule, SCHED_LIST);
    CHECK_INT(sched_place_rank(SCHED_LIST, odd, 2, 0), 1);
    CHECK_INT(sched_place_chunk(SCHED_LIST, odd, 2, 2), 1);
    CHECK_INT(sched_place_stage(SCHED_LIST, odd, 2, 2, 0, 0), 1);
    CHECK_INT(sched_place_stage(SCHED_V, NULL, 2, 2, 1, 0), 3);
    const int32_t twice[] = {0, 0, 0, 0};
    CHECK_INT(sched_place_check(twice, 2, 1, &rule, &err), PS_ERR);
    CHECK_STR(err.msg, "stage 1 on rank 0 chunk 0, which stage 0 holds "
                       "already");
    const int32_t out[] = {0, 0, 1, 1};
    CHECK_INT(sched_place_check(out, 2, 1, &rule, &err), PS_ERR);
    CHECK_STR(err.msg,
              "stage 1 on rank 1 chunk 1, outside ranks 0..1 and chunks 0..0");
}

/* A custom order on {stage 0 on rank 1, 1 and 2 on rank 0, 3 on rank 1}:
 * every compute op carries the stage of its chunk on its rank, and the
 * run is the four stages one after the other. */
static void test_routing(void)
{
    for (int i = 0; i < MAXS; i++)
        stages[i] = (sched_stage){1, 1, 1, 1, 1, 0, 0, 0};
    static const int32_t odd[] = {1, 0, 0, 0, 0, 1, 1, 1};
    static const char *r0[] = {"F0", "F0.c1", "B0.c1", "B0"};
    static const char *r1[] = {"F0", "F0.c1", "B0.c1", "B0"};
    sched_action l0[4], l1[4];
    ps_err err;
    for (int i = 0; i < 4; i++) {
        CHECK_INT(sched_parse_action(r0[i], 1, 2, &l0[i], &err), 0);
        CHECK_INT(sched_parse_action(r1[i], 1, 2, &l1[i], &err), 0);
    }
    const sched_action *lists[2] = {l0, l1};
    int32_t n[2] = {4, 4};
    sched_spec s = custom_on(2, 2, 1, stages, lists, n);
    s.placement = SCHED_LIST;
    s.place = odd;
    s.pytorch_p2p = 1;
    outcome o = run_free(&s, ENG_RENDEZVOUS);
    CHECK_INT(o.rc, 0);
    CHECK_NEAR(o.res.makespan, 4 * 1 + 4 * 1); /* F 1, B 1 (W 0) */
    for (int32_t l = 0; l < o.ps->nlanes; l++)
        for (int32_t i = 0; i < o.ps->lanes[l].n; i++) {
            const prog_op *op = &o.ps->lanes[l].ops[i];
            if (op->type == PROG_COMPUTE)
                CHECK_INT(op->stage, sched_place_stage(SCHED_LIST, odd, 2, 2,
                                                       op->chunk, (int32_t)l));
        }
    /* the first forward runs on rank 1 (stage 0) */
    CHECK_INT(o.ps->lanes[1].ops[0].type, PROG_COMPUTE);
    CHECK_INT(o.ps->lanes[1].ops[0].stage, 0);
    prog_free(o.ps);
}

/* zbv on a list equal to v runs as on "v"; interleaved on it does not */
static void test_schedule_needs(void)
{
    for (int i = 0; i < MAXS; i++)
        stages[i] = (sched_stage){1, 1, 1, 1, 1, 0, 1, 0};
    static const int32_t v[] = {0, 0, 1, 0, 1, 1, 0, 1};
    sched_spec s = spec_on(SCHED_ZBV, 2, 2, 4, stages, SCHED_V);
    outcome a = run_free(&s, ENG_RENDEZVOUS);
    s.place = v;
    outcome b = run_free(&s, ENG_RENDEZVOUS);
    CHECK_INT(a.rc, 0);
    CHECK_INT(b.rc, 0);
    CHECK_NEAR(a.res.makespan, b.res.makespan);
    prog_free(a.ps);
    prog_free(b.ps);
    ps_err err;
    s.kind = SCHED_INTERLEAVED;
    CHECK_INT(sched_check(&s, &err), PS_ERR);
    CHECK_STR(err.msg, "interleaved schedule needs chunk_placement 'loop', "
                       "but the list places stage 2 on rank 1 chunk 1 "
                       "('loop' has it on rank 0 chunk 1)");
}

int main(void)
{
    test_rules();
    test_routing();
    test_schedule_needs();
    return harness_done();
}
