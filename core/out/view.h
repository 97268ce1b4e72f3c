/* Which part of a run's timeline a reader draws: the options `--ranks`,
 * `--stages`, `--window` and `--replica` of `pipesim report`, `export` and
 * `plot` (issue 28), parsed here once for the three. A set of ranks or
 * stages is a list of numbers and ranges ("0-7,64"); a window is
 * "START:END" in seconds, each side a time with units as scenarios write
 * them ("1.5ms:2ms", "0:0.25", ":10 ms", "2s:"). */
#ifndef PS_VIEW_H
#define PS_VIEW_H

#include <stdint.h>

#include "base/err.h"

/* Ranges of non-negative integers, sorted and merged; n = 0: every one. */
typedef struct view_set {
    int64_t (*r)[2]; /* [lo, hi], inclusive */
    int n;
} view_set;

typedef struct out_view {
    int replica;     /* export.h's EXPORT_REPLICA_AUTO (default), _ALL, k */
    int replica_set; /* --replica was given */
    int auto_ranks;  /* EXPORT_REPLICA_AUTO draws one replica above this
                        many simulated ranks (0: EXPORT_AUTO_RANKS) */
    view_set ranks;  /* cluster ranks; a row standing for a TP group is
                        drawn when one of its ranks is in the set */
    view_set stages; /* pipeline stages (the event rows' stage) */
    double t0, t1;   /* the window: 0 and INFINITY when not given */
    int windowed;    /* --window was given */
    /* the values as typed (argv's strings, not copied), for notes */
    const char *ranks_text, *stages_text, *window_text;
} out_view;

/* The largest number a set names: ranks and stages both fit below it. */
#define VIEW_MAX (1 << 24)

void view_init(out_view *v);
void view_free(out_view *v);

/* 1 when flag is one of the four options (as typed, without a value). */
int view_is_option(const char *flag);

/* Sets option flag ("--ranks", "--stages", "--window", "--replica") from
 * value; fails with one line naming the flag and the value:
 *   "--ranks: expected rank numbers and ranges such as 0-7,64, got '7-3'
 *   (a range runs from low to high)". */
int view_option(out_view *v, const char *flag, const char *value, ps_err *err);

/* 1 when x is in s (an empty set holds everything). */
int view_has(const view_set *s, int64_t x);

/* 1 when [t0, t1] meets the window. */
int view_in_window(const out_view *v, double t0, double t1);

/* 1 when any option but --replica was given. */
int view_filters(const out_view *v);

/* The options given, as typed, for notes: "--ranks 0-7 --window 0:1ms"
 * (empty when none). */
void view_describe(const out_view *v, char *buf, int n);

#endif
