/* libFuzzer target: the schedule action parser and custom schedules
 * (core/sched/sched.c). Two modes, by the first byte:
 *   odd:  raw parse: 4 + 4 bytes of m and v (any int32), then one action
 *         text and a schedule name; a parsed action (FB's backward half
 *         too) must be in range;
 *   even: a whole custom schedule: p (1..4), m (1..8), v (1..3) and flags
 *         (checkpointing, eager p2p) from the next bytes, then the text:
 *         ranks separated by '|', actions by spaces. Parsed lists go
 *         through sched_check and, when accepted, are lowered and run on a
 *         mesh; the run ends (a deadlock is an error, never a hang). */
#include "fuzz.h"
#include "net/net.h"
#include "sched/sched.h"
#include "sim/eng.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int32_t int32_at(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                 (uint32_t)p[3] << 24;
    int32_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static void raw(const uint8_t *data, size_t size)
{
    if (size < 8)
        return;
    int32_t m = int32_at(data), v = int32_at(data + 4);
    char *text = fuzz_cstr(data + 8, size - 8);
    if (!text)
        return;
    sched_action a;
    ps_err err;
    if (sched_parse_action(text, m, v, &a, &err) == PS_OK &&
        (a.mb < 0 || a.mb >= m || a.chunk < 0 || a.chunk >= v ||
         (a.kind != PROG_F && a.kind != PROG_B && a.kind != PROG_R &&
          a.kind != PROG_W && a.kind != SCHED_FB) ||
         (a.kind == SCHED_FB &&
          (a.bmb < 0 || a.bmb >= m || a.bchunk < 0 || a.bchunk >= v)))) {
        fprintf(stderr, "'%s' with m %d v %d parsed out of range\n", text,
                (int)m, (int)v);
        abort();
    }
    enum sched_kind k;
    if (sched_parse(text, &k, &err) == PS_OK)
        (void)sched_name(k);
    free(text);
}

enum { MAXP = 4, MAXACT = 64 };

static void custom(const uint8_t *data, size_t size)
{
    if (size < 4)
        return;
    int32_t p = 1 + data[0] % MAXP, m = 1 + data[1] % 8, v = 1 + data[2] % 3;
    int checkpoint = data[3] & 1, eager = (data[3] >> 1) & 1;
    char *text = fuzz_cstr(data + 4, size - 4);
    if (!text)
        return;
    static sched_action lists[MAXP][MAXACT];
    const sched_action *ptr[MAXP];
    int32_t n[MAXP] = {0};
    int rank = 0, ok = 1;
    ps_err err;
    /* split by '|' into ranks and by ' ' into actions */
    for (char *q = text; ok && rank < p;) {
        size_t len = strcspn(q, " |");
        char sep = q[len];
        q[len] = '\0';
        if (len > 0) {
            if (n[rank] == MAXACT ||
                sched_parse_action(q, m, v, &lists[rank][n[rank]], &err))
                ok = 0;
            else
                n[rank]++;
        }
        if (sep == '\0')
            break;
        if (sep == '|')
            rank++;
        q += len + 1;
    }
    free(text);
    if (!ok)
        return;
    sched_stage stages[MAXP * 3];
    for (int i = 0; i < MAXP * 3; i++)
        stages[i] = (sched_stage){1, 2, 1, 100, 10, 8, 0.5, 50};
    for (int r = 0; r < MAXP; r++)
        ptr[r] = lists[r];
    sched_spec s = {.kind = SCHED_CUSTOM,
                    .p = p,
                    .v = v,
                    .m = m,
                    .checkpoint = checkpoint,
                    .stages = stages,
                    .custom = ptr,
                    .ncustom = n};
    if (sched_check(&s, &err))
        return;
    prog_set *ps = prog_new(p);
    net *nw = net_new(p);
    eng_sim *e = eng_new();
    eng_result res;
    if (ps && nw && e && net_set_mesh(nw, 1e9, 1e-6, &err) == PS_OK &&
        sched_lower(&s, ps, &err) == PS_OK && prog_seal(ps, &err) == PS_OK)
        (void)eng_run(e, ps, nw, eager ? ENG_EAGER : ENG_RENDEZVOUS, &res,
                      &err);
    eng_free(e);
    net_free(nw);
    prog_free(ps);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1)
        raw(data + 1, size - 1);
    else
        custom(data + 1, size - 1);
    return 0;
}
