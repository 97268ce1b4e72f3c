/* libFuzzer target: the timeline options of report, export and plot
 * (core/out/view.c). Input: one byte choosing the flag, then its value.
 * Checks the contract: a success gives a sorted set of disjoint ranges
 * within 0..VIEW_MAX or a window 0 <= START < END; a failure a non-empty
 * one-line message naming the flag. */
#include <math.h>

#include "fuzz.h"
#include "out/view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_set(const view_set *s, const char *text)
{
    for (int i = 0; i < s->n; i++) {
        if (s->r[i][0] < 0 || s->r[i][1] < s->r[i][0] ||
            s->r[i][1] > VIEW_MAX ||
            (i > 0 && s->r[i][0] <= s->r[i - 1][1] + 1)) {
            fprintf(stderr, "set of '%s': bad range %d\n", text, i);
            abort();
        }
        /* ranges are merged: the number before one is in none */
        if (!view_has(s, s->r[i][0]) || !view_has(s, s->r[i][1]) ||
            (s->r[i][0] > 0 && view_has(s, s->r[i][0] - 1))) {
            fprintf(stderr, "set of '%s': view_has disagrees\n", text);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const flags[] = {"--ranks", "--stages", "--window",
                                        "--replica"};
    if (size < 1)
        return 0;
    const char *flag = flags[data[0] % 4];
    char *text = fuzz_cstr(data + 1, size - 1);
    if (!text)
        return 0;
    out_view v;
    view_init(&v);
    ps_err err;
    err.msg[0] = '\0';
    if (view_option(&v, flag, text, &err) == PS_OK) {
        check_set(&v.ranks, text);
        check_set(&v.stages, text);
        if (!(v.t0 >= 0 && v.t1 > v.t0 && !isnan(v.t1))) {
            fprintf(stderr, "window of '%s': [%g, %g]\n", text, v.t0, v.t1);
            abort();
        }
        char buf[200];
        view_describe(&v, buf, sizeof buf);
    } else if (err.msg[0] == '\0' || strncmp(err.msg, flag, strlen(flag)) ||
               (strchr(err.msg, '\n') && !strchr(text, '\n'))) {
        fprintf(stderr, "%s '%s': bad message '%s'\n", flag, text, err.msg);
        abort();
    }
    view_free(&v);
    free(text);
    return 0;
}
