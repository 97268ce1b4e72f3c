/* Shared by the export writers (out/export_chrome.c, out/export_svg.c): one
 * run's rows loaded into plain arrays through rec/rec.h's read API, and the
 * names both writers give to events and transfers. Not a public interface. */
#ifndef PS_EXPORT_RUN_H
#define PS_EXPORT_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
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
} export_transfer;

typedef struct export_mem {
    int32_t rank;
    double t, bytes;
} export_mem;

typedef struct export_rank {
    int32_t rank;
    double busy;   /* seconds of compute */
    double bubble; /* idle fraction, NAN when unknown */
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
    export_mem *mem; /* ordered by rank, then time */
    int32_t nmem;
    export_rank *ranks; /* every rank that appears anywhere, ascending */
    int32_t nranks;
    char coll_op[64];      /* the run's collective op, "coll" if none */
    double capacity;       /* device memory from params, 0 if unknown */
    int32_t gpus_per_node; /* from params, 0 if unknown */
} export_run;

/* Loads run id into *r. Fails naming the run when it does not exist ("run 7
 * not found in PATH"), failed, or has neither event nor transfer rows ("run
 * 3 has no timeline (recorded with record = \"summary\")"); on failure *r
 * holds nothing. export_run_free releases it and is harmless twice. */
int export_run_load(rec_db *db, int64_t id, export_run *r, ps_err *err);
void export_run_free(export_run *r);

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
