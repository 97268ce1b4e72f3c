/* Which replicas the exports fold into the drawn one (out/export_fold.c,
 * export_run_same_replicas): a synthetic run of R replicas of 2 ranks,
 * each rank an F and a B and one send, where chosen replicas differ by
 * one event's end, one send's start or one event's microbatch; the note's
 * lists, a list too long for the buffer, and the runs it cannot compare. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "out/export_run.h"

#define PER 2

/* R replicas, ranks j * PER + p (replica j, stage p), all identical. */
static void make_run(export_run *r, int reps)
{
    memset(r, 0, sizeof *r);
    r->makespan = 1.0;
    r->replicas = reps;
    r->nranks = reps * PER;
    r->ranks = calloc((size_t)r->nranks, sizeof *r->ranks);
    r->nev = 2 * r->nranks;
    r->ev = calloc((size_t)r->nev, sizeof *r->ev);
    r->ntr = r->nranks;
    r->tr = calloc((size_t)r->ntr, sizeof *r->tr);
    for (int32_t i = 0; i < r->nranks; i++) {
        r->ranks[i].rank = i;
        r->ranks[i].replica = i / PER;
        int p = i % PER;
        export_event f = {i, p, 0, 0, "F", 0.1 * p, 0.1 * p + 0.1};
        export_event b = {i, p, 0, 0, "B", 0.5, 0.7};
        r->ev[2 * i] = f;
        r->ev[2 * i + 1] = b;
    }
    for (int32_t i = 0; i < r->ntr; i++) { /* in start order: all at 0.2 */
        export_transfer t = {
            i, (i + PER) % r->nranks, 0, -1, "coll", 1e6, 0.2, 0.3, 1};
        r->tr[i] = t;
    }
}

static void free_run(export_run *r)
{
    free(r->ranks);
    free(r->ev);
    free(r->tr);
}

static void test_all_same(void)
{
    export_run r;
    make_run(&r, 16);
    char buf[120];
    CHECK_INT(export_run_same_replicas(&r, 0, buf, sizeof buf), 15);
    CHECK_STR(buf, "replicas 1-15 identical, folded into it");
    CHECK_INT(export_run_same_replicas(&r, 3, buf, sizeof buf), 15);
    CHECK_STR(buf, "replicas 0-2,4-15 identical, folded into it");
    free_run(&r);
}

static void test_some_differ(void)
{
    export_run r;
    make_run(&r, 8);
    r.ev[2 * (3 * PER + 1) + 1].t1 += 1e-6; /* replica 3's last B ends later */
    r.tr[5 * PER].t0 += 1e-6;               /* replica 5's send starts later */
    r.ev[2 * (6 * PER)].mb = 1;             /* replica 6's F another mb */
    r.ev[2 * (7 * PER) + 1].t0 += 0.5e-9;   /* within 1e-9 of the makespan */
    char buf[120];
    CHECK_INT(export_run_same_replicas(&r, 0, buf, sizeof buf), 4);
    CHECK_STR(buf, "other replicas identical, folded into it: 1-2,4,7; "
                   "differing: 3,5-6");
    CHECK_INT(export_run_same_replicas(&r, 3, buf, sizeof buf), 0);
    CHECK_STR(buf, "every other replica differs from it");
    free_run(&r);
}

/* Every other replica differs: the lists outgrow the buffer and end in
 * ",..." within it. */
static void test_long_lists(void)
{
    export_run r;
    make_run(&r, 1000);
    for (int j = 1; j < 1000; j += 2)
        r.ev[2 * j * PER].t1 += 0.01;
    char buf[120];
    memset(buf, 'x', sizeof buf);
    CHECK_INT(export_run_same_replicas(&r, 0, buf, sizeof buf), 499);
    CHECK(strlen(buf) < sizeof buf);
    CHECK_HAS(buf, "other replicas identical, folded into it: 2,4,6,");
    CHECK(strlen(buf) > 4 && strcmp(buf + strlen(buf) - 4, ",...") == 0);
    free_run(&r);
}

/* Not comparable: a rank of no replica, replicas of unequal size. */
static void test_not_compared(void)
{
    export_run r;
    make_run(&r, 4);
    char buf[120];
    r.ranks[5].replica = -1;
    CHECK_INT(export_run_same_replicas(&r, 0, buf, sizeof buf), -1);
    CHECK_STR(buf, "");
    r.ranks[5].replica = 1; /* replica 1 has 3 ranks, replica 2 one */
    CHECK_INT(export_run_same_replicas(&r, 0, buf, sizeof buf), -1);
    r.ranks[5].replica = 2;
    r.replicas = 3; /* 8 ranks over 3 replicas */
    CHECK_INT(export_run_same_replicas(&r, 0, buf, sizeof buf), -1);
    free_run(&r);
}

int main(void)
{
    test_all_same();
    test_some_differ();
    test_long_lists();
    test_not_compared();
    return harness_done();
}
