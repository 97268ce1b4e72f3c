/* The scenario's version (run/version.h): FNV-1a 64 over the script's
 * bytes and its -D arguments in a canonical order. */
#include "run/version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t run_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3u;
    }
    return h;
}

/* A -D argument and its place on the command line. */
typedef struct def_at {
    const char *d;
    int i;
} def_at;

/* -D arguments by key; a key given twice keeps its last value, as
 * ps.args does (bind/core.c push_args): the later one sorts first. */
static int by_key(const void *pa, const void *pb)
{
    const def_at *a = pa, *b = pb;
    size_t na = strcspn(a->d, "="), nb = strcspn(b->d, "=");
    int c = strncmp(a->d, b->d, na < nb ? na : nb);
    if (c == 0 && na != nb)
        c = na < nb ? -1 : 1;
    return c ? c : b->i - a->i;
}

void run_version(uint64_t src_hash, const char *const *defs, int ndefs,
                 char *out, size_t cap)
{
    uint64_t h = src_hash;
    int nd = defs ? ndefs : 0;
    def_at *at = nd > 0 ? malloc((size_t)nd * sizeof *at) : NULL;
    for (int i = 0; at && i < nd; i++)
        at[i] = (def_at){defs[i], i};
    if (at)
        qsort(at, (size_t)nd, sizeof *at, by_key);
    for (int i = 0; at && i < nd; i++) {
        const char *d = at[i].d, *prev = i > 0 ? at[i - 1].d : NULL;
        size_t k = strcspn(d, "=");
        if (prev && strcspn(prev, "=") == k && strncmp(prev, d, k) == 0)
            continue; /* an earlier value of the same key */
        h = run_fnv1a(h, d, strlen(d) + 1);
    }
    free(at);
    snprintf(out, cap, "fnv1a64:%016llx", (unsigned long long)h);
}
