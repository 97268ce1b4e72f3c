/* Shared by the export writers (out/export_chrome.c, out/export_svg.c): one
 * run's rows loaded into plain arrays through rec/rec.h's read API, and the
 * names both writers give to events and transfers. Not a public interface. */
#ifndef PS_EXPORT_RUN_H
#define PS_EXPORT_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "out/view.h"
#include "rec/rec.h"

typedef struct export_event {
    int32_t rank, stage, chunk, mb; /* -1 for NULL */
    char kind[8];                   /* "F", "B", "W", "R", "OPT" */
    double t0, t1;
} export_event;

typedef struct export_transfer {
    int32_t src, dst, mb, tag; /* mb, tag: -1 for NULL */
    char kind[8];              /* "act", "grad", "coll" */
    double bytes, t0, t1;
    int both; /* both ends are drawn (export_run_load's replica) */
} export_transfer;

typedef struct export_mem {
    int32_t rank;
    double t, bytes;
} export_mem;

typedef struct export_rank {
    int32_t rank;
    double busy;     /* seconds of compute */
    double bubble;   /* idle fraction, NAN when unknown */
    int32_t replica; /* its data-parallel replica (rank_member), -1 unknown */
    int picked;      /* it, or a cluster rank it stands for, is in the
                        view's --ranks (1 without --ranks) */
    char label[48];  /* "rank 3", or the cluster ranks it stands for (its
                        TP group, rank_member): "ranks 0-1", "ranks 0,8" */
} export_rank;

typedef struct export_run {
    int64_t id;
    char *kind, *name, *schedule, *p2p, *params, *status, *error, *created;
    int32_t stages, microbatches, v, dp;
    double makespan, bubble, closed_form_bubble, imbalance, peak_memory;
    export_event *ev; /* ordered by rank, then start */
    int32_t nev;
    export_transfer *tr; /* ordered by start */
    int32_t ntr;
    export_mem *mem; /* of the ranks below; ordered by rank, then time */
    int32_t nmem;
    /* the simulated ranks, ascending: every rank in rank_stat, event or
     * transfer, or with memory; a rank the run did not simulate (the other
     * ranks of a TP group, a GPU outside the layout), whose memory rows
     * are all 0, is left out */
    export_rank *ranks;
    int32_t nranks;
    int32_t replicas;      /* data-parallel replicas (rank_member), 0 unknown */
    char view[256];        /* "" when everything is drawn, else what is */
    char coll_op[64];      /* the run's collective op, "coll" if none */
    double capacity;       /* device memory from params, 0 if unknown */
    int32_t gpus_per_node; /* from params, 0 if unknown */
} export_run;

/* Loads run id into *r with the part of it view draws (out/view.h; NULL:
 * the default): the ranks of a replica (export.h's EXPORT_REPLICA_*, or
 * k >= 0), those among --ranks and running --stages, the events,
 * transfers and memory of those ranks, the events and transfers that
 * meet --window. Fails naming the run when it does not exist ("run 7 not
 * found in PATH"), failed, or has neither event nor transfer rows ("run 3
 * has no timeline (recorded with record = \"summary\")"), or has no
 * replica k ("run 2 has 2 data-parallel replicas (0 to 1), not 5"), or
 * when the view leaves nothing to draw ("--ranks 900-999: run 3 draws
 * none of them (its rows stand for ranks 0-7,8-15)"); on failure *r holds
 * nothing. export_run_free releases it and is harmless twice. */
int export_run_load(rec_db *db, int64_t id, const out_view *view, export_run *r,
                    ps_err *err);
void export_run_free(export_run *r);

/* Applies view v to the ranks, events and transfers of r loaded whole
 * (out/export_view.c; export_run_load calls it, before keeping the
 * memory rows of the ranks left): fails as export_run_load says. */
int export_run_view(export_run *r, const out_view *v, ps_err *err);

/* The index of rank in r->ranks (ascending: a binary search), or -1
 * (out/export_fold.c, which export_view.c calls). */
int32_t export_run_rank_index(const export_run *r, int32_t rank);

/* Which other data-parallel replicas of r (loaded whole) ran replica's
 * timeline exactly (out/export_fold.c): writes "replicas 1-15 identical,
 * folded into it", "other replicas identical, folded into it: 1-7,9-15;
 * differing: 8" or "every other replica differs from it" into buf (at
 * most n bytes, a long list cut with ",...") and returns how many are
 * identical; -1 when the replicas cannot be compared (a rank of no
 * replica, replicas of unequal size, out of memory), buf empty. */
int export_run_same_replicas(const export_run *r, int replica, char *buf,
                             size_t n);

/* "F3", "B3.c1" (chunk suffix when the run has virtual stages), "OPT". */
void export_event_name(const export_run *r, const export_event *e, char *buf,
                       size_t n);

/* "send act 3 -> rank 2" (recv = 0) or "recv act 3 <- rank 1" (recv = 1);
 * collective transfers "allreduce step 2" after the run's collective op. */
void export_transfer_name(const export_run *r, const export_transfer *t,
                          int recv, char *buf, size_t n);

/* 1 when s is one valid JSON value (surrounding whitespace allowed). */
int export_json_valid(const char *s);

#endif
