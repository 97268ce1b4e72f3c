/* A recorded pipeline run as PyTorch's schedule CSV, the format that
 * torch.distributed.pipelining's _PipelineScheduleRuntime._load_csv reads
 * and PipelineScheduleMulti._dump_csv writes (csv.writer, one row per
 * pipeline rank, "\r\n" line ends): actions "<stage><type><microbatch>"
 * with the global stage index and F (forward), I (input-gradient backward
 * of a unit that has a W), W (weight gradient), B (full backward); an
 * overlapped FB (its FB.F and FB.B rows) as "(0F3;3B1)OVERLAP_F_B", the
 * repr of PyTorch's _Action with sub_actions. */
#include <stdlib.h>
#include <string.h>

#include "out/export.h"
#include "out/export_run.h"

static int is_compute(const export_event *e)
{
    return e->stage >= 0 && e->mb >= 0 &&
           (strcmp(e->kind, "F") == 0 || strcmp(e->kind, "B") == 0 ||
            strcmp(e->kind, "W") == 0 || strcmp(e->kind, "FB.F") == 0 ||
            strcmp(e->kind, "FB.B") == 0);
}

/* Does rank's event list [lo, hi) hold a W of (stage, mb)? */
static int has_w(const export_run *r, int32_t lo, int32_t hi, int32_t stage,
                 int32_t mb)
{
    for (int32_t i = lo; i < hi; i++)
        if (r->ev[i].stage == stage && r->ev[i].mb == mb &&
            strcmp(r->ev[i].kind, "W") == 0)
            return 1;
    return 0;
}

int export_pytorch_csv(rec_db *db, int64_t run, FILE *out, ps_err *err)
{
    export_run r;
    out_view all;
    view_init(&all);
    all.replica = EXPORT_REPLICA_ALL;
    if (export_run_load(db, run, &all, &r, err))
        return PS_ERR;
    int rc = PS_OK;
    int32_t p = r.stages;
    /* a pipeline rank holds stage r first (loop and V placements alike);
     * with data parallelism the lowest cluster rank of each is replica 0's */
    int32_t *lo = malloc((size_t)(p > 0 ? p : 1) * 2 * sizeof *lo);
    if (strcmp(r.kind, "pipeline") != 0 || p < 1) {
        rc = ps_errf(err, "run %lld is not a pipeline run (a %s)",
                     (long long)run, r.kind);
        goto done;
    }
    if (!lo) {
        rc = ps_errf(err, "out of memory");
        goto done;
    }
    /* a row per rank names the stage of each cell; DualPipe runs every
     * stage on two ranks, which the format cannot say */
    if (r.schedule && strcmp(r.schedule, "dualpipe") == 0) {
        rc = ps_errf(err,
                     "run %lld: dualpipe runs each stage on two ranks, which "
                     "PyTorch's schedule CSV cannot hold",
                     (long long)run);
        goto done;
    }
    int32_t *hi = lo + p;
    for (int32_t s = 0; s < p; s++)
        lo[s] = hi[s] = -1;
    for (int32_t i = 0; i < r.nev;) {
        int32_t j = i, first = -1;
        while (j < r.nev && r.ev[j].rank == r.ev[i].rank) {
            if (is_compute(&r.ev[j]) && (first < 0 || r.ev[j].stage < first))
                first = r.ev[j].stage;
            j++;
        }
        if (first >= 0 && first < p && lo[first] < 0) {
            lo[first] = i;
            hi[first] = j;
        }
        i = j;
    }
    for (int32_t s = 0; s < p && rc == PS_OK; s++) {
        if (lo[s] < 0) {
            rc = ps_errf(err, "run %lld: no rank holds stage %d",
                         (long long)run, (int)s);
            break;
        }
        int cells = 0;
        const export_event *prev = NULL;
        for (int32_t i = lo[s]; i < hi[s]; i++) {
            const export_event *e = &r.ev[i];
            if (!is_compute(e))
                continue;
            /* gradient sync cuts a backward into pieces: one action */
            if (prev && prev->stage == e->stage && prev->mb == e->mb &&
                strcmp(prev->kind, e->kind) == 0)
                continue;
            prev = e;
            int fb_f = strcmp(e->kind, "FB.F") == 0;
            int fb_b = strcmp(e->kind, "FB.B") == 0;
            char k = fb_f ? 'F' : fb_b ? 'B' : e->kind[0];
            if (k == 'B' && has_w(&r, lo[s], hi[s], e->stage, e->mb))
                k = 'I';
            /* an FB's forward half opens the cell, its backward closes it */
            fprintf(out, "%s%s%d%c%d%s", cells++ && !fb_b ? "," : "",
                    fb_f   ? "("
                    : fb_b ? ";"
                           : "",
                    (int)e->stage, k, (int)e->mb, fb_b ? ")OVERLAP_F_B" : "");
        }
        fputs("\r\n", out);
    }
done:
    free(lo);
    export_run_free(&r);
    return rc;
}
