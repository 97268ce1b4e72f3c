/* Limits: the memory budget charges what limit_* blocks hold and refuses
 * what would pass it (requesting a memory stop), sizes print as users
 * write them, and a requested stop ends the engine and program generation
 * between events/ops. The stop is sticky, so it is tested last. */
#include <stdlib.h>

#include "base/limit.h"
#include "harness.h"
#include "net/net.h"
#include "sim/eng.h"
#include "sim/prog.h"

static void test_format(void)
{
    char b[64];
    CHECK_STR(limit_format_bytes((size_t)64 << 20, b, sizeof b), "64 MiB");
    CHECK_STR(limit_format_bytes((size_t)12 << 30, b, sizeof b), "12 GiB");
    CHECK_STR(limit_format_bytes((size_t)3 << 29, b, sizeof b), "1.5 GiB");
    CHECK_STR(limit_format_bytes(1000, b, sizeof b), "1000 B");
    CHECK_STR(limit_format_bytes(2048, b, sizeof b), "2 KiB");
}

static void test_accounting(void)
{
    limit_set_memory(0); /* no budget: charged all the same */
    size_t base = limit_used();
    char *p = limit_malloc(100000);
    CHECK(p != NULL);
    CHECK(limit_used() >= base + 100000);
    p = limit_realloc(p, 300000);
    CHECK(p != NULL);
    CHECK(limit_used() >= base + 300000);
    p = limit_realloc(p, 1000);
    CHECK(limit_used() < base + 100000);
    limit_free(p);
    CHECK_INT(limit_used(), base);
    int *z = limit_calloc(1000, sizeof *z);
    CHECK(z && z[999] == 0);
    limit_free(z);
    limit_free(NULL);
    CHECK_INT(limit_used(), base);
    CHECK(limit_default_memory() > 0);
    CHECK_INT(limit_stopped(), LIMIT_NONE);
}

static void test_budget(void)
{
    limit_set_memory((size_t)1 << 20);
    size_t base = limit_used();
    void *small = limit_malloc(1000);
    CHECK(small != NULL);
    CHECK_INT(limit_stopped(), LIMIT_NONE);
    /* one request over the budget never reaches malloc */
    CHECK(limit_malloc((size_t)2 << 20) == NULL);
    CHECK_INT(limit_stopped(), LIMIT_MEMORY);
    CHECK(limit_realloc(small, (size_t)2 << 20) == NULL); /* small kept */
    CHECK(limit_calloc((size_t)1 << 40, (size_t)1 << 40) == NULL);
    CHECK(limit_charge((size_t)1 << 20) == -1);
    limit_free(small);
    CHECK_INT(limit_used(), base);
    char msg[128];
    CHECK_STR(limit_message(msg, sizeof msg),
              "memory limit of 1 MiB reached (--max-memory)");
    limit_note_where("x.lua:4: ");
    limit_note_where("y.lua:9: "); /* the first position wins */
    CHECK(limit_has_where());
    CHECK_STR(limit_message(msg, sizeof msg),
              "x.lua:4: memory limit of 1 MiB reached (--max-memory)");
    limit_request_stop(LIMIT_SIGINT); /* the first reason wins */
    CHECK_INT(limit_stopped(), LIMIT_MEMORY);
    limit_set_memory(0);
}

/* One rank, n compute ops of 1 s each: n events. */
static prog_set *chain(int n)
{
    prog_set *ps = prog_new(1);
    int32_t lane = prog_add_lane(ps, 0);
    for (int i = 0; i < n; i++) {
        prog_op op = prog_compute(PROG_F, 0, 0, i, 1.0, 0);
        if (prog_push(ps, lane, &op)) {
            prog_free(ps);
            return NULL;
        }
    }
    return ps;
}

/* Without a stop the run completes; with one the engine ends after at
 * most 4096 events and generation refuses more ops. */
static void test_stop(void)
{
    ps_err err;
    limit_reset();
    net *nw = net_new(1);
    CHECK(nw && net_set_mesh(nw, 1e9, 0, &err) == 0 &&
          net_finalize(nw, &err) == 0);
    prog_set *ps = chain(20000);
    eng_sim *e = eng_new();
    eng_result res;
    CHECK(ps && e);
    if (ps && nw && e) {
        CHECK_INT(prog_seal(ps, &err), PS_OK);
        CHECK_INT(eng_run(e, ps, nw, ENG_RENDEZVOUS, &res, &err), PS_OK);
        CHECK_NEAR(res.makespan, 20000.0);
        limit_request_stop(LIMIT_TIMEOUT);
        CHECK_INT(eng_run(e, ps, nw, ENG_RENDEZVOUS, &res, &err), PS_ERR);
        CHECK(strstr(err.msg, "stopped at t=") != NULL);
        CHECK(chain(20000) == NULL);
        char msg[64];
        CHECK_STR(limit_message(msg, sizeof msg), "time limit of 0 s reached");
    }
    eng_free(e);
    prog_free(ps);
    net_free(nw);
    limit_reset();
    CHECK_INT(limit_stopped(), LIMIT_NONE);
}

int main(void)
{
    test_format();
    test_accounting();
    test_budget();
    test_stop();
    return harness_done();
}
