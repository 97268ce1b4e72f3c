/* The recorder's write path: a run's rows, one transaction per run. The
 * connection, its locks and the transactions (a run's, a sweep's batch)
 * are in rec/txn.c, a run's timeline rows (events, transfers, memory,
 * their spans) in rec/timeline.c, the schema and its migrations in
 * rec/schema.c, the read API in rec/read.c; rec/impl.h holds what they
 * share.
 *
 * Every statement on the write path is prepared once per rec_db and reset
 * after each use, so a run costs only bind + step per row. Each run is one
 * transaction (BEGIN IMMEDIATE ... COMMIT inside rec_write), so the write
 * lock is never held between runs and several processes can share a file. */
#include "rec/rec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "rec/impl.h"
#include "sim/mem.h"

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

/* NaN (the "not meaningful" marker in rec/rec.h) and absent text become NULL.
 */
static void put_real(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

static void put_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static void put_fits(sqlite3_stmt *st, int i, enum rec_fits f)
{
    if (f == REC_FITS_UNKNOWN)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int(st, i, f == REC_FITS_YES);
}

/* Indexes below 0 mean "none" in programs (mb -1 of an optimizer step). */
static void put_index(sqlite3_stmt *st, int i, int64_t v)
{
    if (v < 0)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

/* A positive count, or NULL for 0 (unknown). */
static void put_count(sqlite3_stmt *st, int i, int64_t v)
{
    if (v > 0)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* The sweep columns, from parameter i on (run.sweep ... run.scenario). */
static void put_meta(sqlite3_stmt *st, int i, const rec_meta *m)
{
    put_text(st, i, m->sweep);
    put_text(st, i + 1, m->point);
    put_index(st, i + 2, m->point ? m->point_index : -1);
    put_text(st, i + 3, m->tags);
    put_text(st, i + 4, m->model);
    put_count(st, i + 5, m->seq_length);
    put_count(st, i + 6, m->micro_batch);
    put_count(st, i + 7, m->global_batch);
    put_text(st, i + 8, m->scenario);
}

/* run.created: the text the column's DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ',
 * 'now')) gives, UTC to the second, made once per second rather than by
 * SQLite's date functions for every run (5 k instructions of a summary
 * run's 0.3 M). The text stays until the next call (bound SQLITE_STATIC).
 * NULL when the clock cannot be read. */
static const char *created_now(void)
{
    static time_t last = (time_t)-1;
    static char text[32];
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return NULL;
    if (ts.tv_sec != last) {
        struct tm tm;
        if (!gmtime_r(&ts.tv_sec, &tm) ||
            strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
            return NULL;
        last = ts.tv_sec;
    }
    return text;
}

static int write_run_row(rec_db *db, const rec_run *r, int64_t *id, ps_err *err)
{
    sqlite3_stmt *st = rec_stmt(db, ST_RUN, err);
    if (!st)
        return PS_ERR;
    put_text(st, 1, r->kind);
    put_text(st, 2, r->name);
    put_text(st, 3, r->schedule);
    sqlite3_bind_int64(st, 4, r->stages);
    sqlite3_bind_int64(st, 5, r->microbatches);
    sqlite3_bind_int64(st, 6, r->virtual_stages);
    sqlite3_bind_int64(st, 7, r->dp);
    put_real(st, 8, r->makespan);
    put_real(st, 9, r->bubble);
    put_real(st, 10, r->closed_form_bubble);
    put_real(st, 11, r->imbalance);
    put_real(st, 12, r->peak_memory);
    put_text(st, 13, r->p2p);
    put_text(st, 14, r->params_json);
    put_text(st, 15, r->status ? r->status : "ok");
    put_text(st, 16, r->error);
    put_fits(st, 17, r->fits);
    if (r->tp > 0) { /* pipelines; collectives leave them NULL */
        sqlite3_bind_int64(st, 18, r->tp);
        sqlite3_bind_int64(st, 19, r->sequence_parallel);
        put_text(st, 20, r->recompute);
    } else {
        sqlite3_bind_null(st, 18);
        sqlite3_bind_null(st, 19);
        sqlite3_bind_null(st, 20);
    }
    put_meta(st, 21, &r->meta);
    /* NULL (no clock): SQLite's own 'now', as the column's DEFAULT */
    put_text(st, 30, created_now());
    rec_bind_efficiency(st, 31, &r->meta.eff, r->makespan);
    /* live mode (issue 25): the executor and the simulated twin */
    int live = r->backend && strcmp(r->backend, "sim") != 0;
    put_text(st, 42, r->backend);
    put_real(st, 43, live ? r->simulated : NAN);
    if (r->tp > 0) /* pipelines */
        sqlite3_bind_int64(st, 44, r->folded != 0);
    else
        sqlite3_bind_null(st, 44);
    if (rec_step_done(db, st, err))
        return PS_ERR;
    *id = sqlite3_last_insert_rowid(db->db);
    return PS_OK;
}

/* A stage row's values from parameter b + 1 on. */
static void put_stage(sqlite3_stmt *st, int b, int64_t id, const rec_stage *s)
{
    sqlite3_bind_int64(st, b + 1, id);
    sqlite3_bind_int64(st, b + 2, s->stage);
    sqlite3_bind_int64(st, b + 3, s->rank);
    sqlite3_bind_int64(st, b + 4, s->chunk);
    sqlite3_bind_int64(st, b + 5, s->first_layer);
    sqlite3_bind_int64(st, b + 6, s->last_layer);
    put_real(st, b + 7, s->fwd_flops);
    put_real(st, b + 8, s->params);
    put_real(st, b + 9, s->fwd_time);
    put_real(st, b + 10, s->bwd_time);
    put_real(st, b + 11, s->act_bytes);
    put_real(st, b + 12, s->out_bytes);
    put_real(st, b + 13, s->exposed_comm);
    put_real(st, b + 14, s->tp_comm);
    put_real(st, b + 15, s->tp_exposed);
}

/* A rank_stat row's values from parameter b + 1 on. */
static void put_rank(sqlite3_stmt *st, int b, int64_t id, const rec_rank *r)
{
    sqlite3_bind_int64(st, b + 1, id);
    sqlite3_bind_int64(st, b + 2, r->rank);
    put_real(st, b + 3, r->busy);
    put_real(st, b + 4, r->bubble);
    put_real(st, b + 5, r->static_memory);
    put_real(st, b + 6, r->peak_memory);
    put_real(st, b + 7, r->t_peak);
    put_real(st, b + 8, r->exposed_comm);
    put_real(st, b + 9, r->capacity > 0 ? r->capacity : NAN);
    put_fits(st, b + 10, r->fits);
    put_real(st, b + 11, r->tp_comm);
    put_real(st, b + 12, r->tp_exposed);
}

/* A batched run's stage and rank_stat rows, kept until the batch commits
 * (rec/sum.c): the values put_stage and put_rank give, in the same
 * order. PS_ERR: out of memory. */
static int keep_summary(rec_db *db, const rec_payload *p, int64_t id,
                        ps_err *err)
{
    int32_t ns = p->stages ? p->nstages : 0;
    int32_t nr = p->ranks ? p->nranks : 0;
    rec_sum_row *r = ns ? rec_sum_add(db, SUM_STAGE, ns) : NULL;
    if (ns && !r)
        return ps_errf(err, "%s: out of memory (run not recorded)", db->path);
    for (int32_t i = 0; i < ns; i++, r++) {
        const rec_stage *s = &p->stages[i];
        r->i[0] = id;
        r->i[1] = s->stage;
        r->i[2] = s->rank;
        r->i[3] = s->chunk;
        r->i[4] = s->first_layer;
        r->i[5] = s->last_layer;
        double d[9] = {s->fwd_flops,    s->params,    s->fwd_time,
                       s->bwd_time,     s->act_bytes, s->out_bytes,
                       s->exposed_comm, s->tp_comm,   s->tp_exposed};
        memcpy(r->d, d, sizeof d);
    }
    r = nr ? rec_sum_add(db, SUM_RANK, nr) : NULL;
    if (nr && !r)
        return ps_errf(err, "%s: out of memory (run not recorded)", db->path);
    for (int32_t i = 0; i < nr; i++, r++) {
        const rec_rank *k = &p->ranks[i];
        r->i[0] = id;
        r->i[1] = k->rank;
        r->i[2] = k->fits == REC_FITS_YES;
        r->nulls = k->fits == REC_FITS_UNKNOWN ? 1u << 2 : 0;
        double d[9] = {k->busy,
                       k->bubble,
                       k->static_memory,
                       k->peak_memory,
                       k->t_peak,
                       k->exposed_comm,
                       k->capacity > 0 ? k->capacity : NAN,
                       k->tp_comm,
                       k->tp_exposed};
        memcpy(r->d, d, sizeof d);
    }
    return PS_OK;
}

/* Whether a run's stage numbers and ranks are strictly increasing, so
 * that its kept rows cannot break the tables' primary keys at the batch's
 * commit (the run's id is new): any other run is inserted at once and
 * fails alone, with SQLite's message. */
static int keys_increase(const rec_payload *p)
{
    for (int32_t i = 1; p->stages && i < p->nstages; i++)
        if (p->stages[i].stage <= p->stages[i - 1].stage)
            return 0;
    for (int32_t i = 1; p->ranks && i < p->nranks; i++)
        if (p->ranks[i].rank <= p->ranks[i - 1].rank)
            return 0;
    return 1;
}

static int write_summary(rec_db *db, const rec_payload *p, int64_t id,
                         ps_err *err)
{
    /* a batch's runs: kept and inserted together at its commit, one
     * statement per table for up to REC_SUM_MAX rows (a statement per
     * run cost as much as its rows) */
    int keep = db->batch_open && keys_increase(p);
    if (keep && keep_summary(db, p, id, err))
        return PS_ERR;
    /* four rows to a statement, the rest one by one, in order */
    int32_t ns = p->stages && !keep ? p->nstages : 0;
    for (int32_t i = 0; i < ns;) {
        int four = ns - i >= 4;
        sqlite3_stmt *st = rec_stmt(db, four ? ST_STAGE4 : ST_STAGE, err);
        if (!st)
            return PS_ERR;
        for (int k = 0; k < (four ? 4 : 1); k++, i++)
            put_stage(st, k * STAGE_NCOLS, id, &p->stages[i]);
        if (rec_step_done(db, st, err))
            return PS_ERR;
    }
    int32_t nr = p->ranks && !keep ? p->nranks : 0;
    for (int32_t i = 0; i < nr;) {
        int four = nr - i >= 4;
        sqlite3_stmt *st = rec_stmt(db, four ? ST_RANK4 : ST_RANK, err);
        if (!st)
            return PS_ERR;
        for (int k = 0; k < (four ? 4 : 1); k++, i++)
            put_rank(st, k * RANK_NCOLS, id, &p->ranks[i]);
        if (rec_step_done(db, st, err))
            return PS_ERR;
    }
    sqlite3_stmt *st;
    int32_t ncoll = p->collective ? (p->ncollectives ? p->ncollectives : 1) : 0;
    for (int32_t k = 0; k < ncoll; k++) {
        const rec_collective *c = &p->collective[k];
        if (!(st = rec_stmt(db, ST_COLL, err)))
            return PS_ERR;
        sqlite3_bind_int64(st, 1, id);
        put_text(st, 2, c->op);
        put_text(st, 3, c->algorithm);
        sqlite3_bind_int64(st, 4, c->ranks);
        put_real(st, 5, c->bytes);
        put_real(st, 6, c->time);
        put_real(st, 7, c->algbw);
        put_real(st, 8, c->busbw);
        put_text(st, 9, c->protocol);
        if (rec_step_done(db, st, err))
            return PS_ERR;
    }
    return PS_OK;
}

static int write_links(rec_db *db, const net *nw, int64_t id, ps_err *err)
{
    int32_t n = net_links(nw, NULL, 0);
    if (n > db->links_cap) {
        net_link_info *l = realloc(db->links, (size_t)n * sizeof *l);
        if (!l)
            return ps_errf(err, "%s: out of memory", db->path);
        db->links = l;
        db->links_cap = n;
    }
    n = net_links(nw, db->links, n);
    sqlite3_stmt *st = rec_stmt(db, ST_LINK, err);
    if (!st)
        return PS_ERR;
    sqlite3_bind_int64(st, 1, id);
    for (int32_t i = 0; i < n; i++) {
        const net_link_info *l = &db->links[i];
        sqlite3_bind_int64(st, 2, l->a);
        sqlite3_bind_int64(st, 3, l->b);
        put_real(st, 4, l->bandwidth);
        put_real(st, 5, l->latency);
        put_real(st, 6, l->bytes);
        put_real(st, 7, l->busy);
        if (rec_step_done(db, st, err))
            return PS_ERR;
    }
    return PS_OK;
}

static int write_members(rec_db *db, const rec_payload *p, int64_t id,
                         ps_err *err)
{
    sqlite3_stmt *st = rec_stmt(db, ST_MEMBER, err);
    if (!st)
        return PS_ERR;
    sqlite3_bind_int64(st, 1, id);
    for (int32_t i = 0; i < p->nmembers; i++) {
        const rec_member *m = &p->members[i];
        sqlite3_bind_int64(st, 2, m->rank);
        sqlite3_bind_int64(st, 3, m->member);
        sqlite3_bind_int64(st, 4, m->tp);
        sqlite3_bind_int64(st, 5, m->cp);
        sqlite3_bind_int64(st, 6, m->dp);
        sqlite3_bind_int64(st, 7, m->pp);
        if (rec_step_done(db, st, err))
            return PS_ERR;
    }
    return PS_OK;
}

/* Everything of one run, inside its transaction. The timeline (events,
 * transfers, memory, links) of a failed run is skipped: ops the engine
 * never reached carry no times and would read as a real schedule. The
 * timeline rows go in first, table by table, and the span row last: the
 * write lock held since BEGIN IMMEDIATE keeps each table's new rowids
 * contiguous (max(rowid) + 1 on), so count and last rowid give the
 * range. */
static int run_ok(const rec_payload *p)
{
    return !p->run->status || strcmp(p->run->status, "ok") == 0;
}

static int write_body(rec_db *db, const rec_payload *p, enum rec_level level,
                      int streamed, int64_t *id, ps_err *err)
{
    if (write_run_row(db, p->run, id, err) || write_summary(db, p, *id, err))
        return PS_ERR;
    if (level != REC_EVENTS || !run_ok(p))
        return PS_OK;
    if (rec_timeline_write(db, p, streamed, *id, err))
        return PS_ERR;
    if (p->network && write_links(db, p->network, *id, err))
        return PS_ERR;
    if (p->members && write_members(db, p, *id, err))
        return PS_ERR;
    return PS_OK;
}

/* A full disk's message says what survives it; returns PS_ERR. */
static int full_note(ps_err *err, int code)
{
    if (err && (code & 0xff) == SQLITE_FULL) {
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof err->msg - len,
                 " (runs recorded before are kept)");
    }
    return PS_ERR;
}

/* A streamed run's rows and transaction dropped (rec_stream_begin,
 * rec/stream.c; here, below it, since rec_write_run ends a stream too). */
void rec_stream_cancel(rec_db *db)
{
    if (!db || !db->streaming)
        return;
    if (db->writing)
        rec_writer_discard(db);
    db->writing = 0;
    db->streaming = 0;
    for (int i = 0; i < NROWS; i++)
        db->rows[i].n = 0;
    rec_run_rollback(db);
}

/* rec_write once its run is not shipped and what was shipped is written
 * (rec_write, rec/ship.c). */
int rec_write_run(rec_db *db, const rec_payload *p, enum rec_level level,
                  int64_t *run_id, ps_err *err)
{
    /* a streamed timeline (rec_stream_begin) is kept only for an ok run
     * at the events level; otherwise the run is written afresh */
    int streamed = db->streaming;
    if (streamed && db->writing) {
        /* the connection back from the writer thread: every row in, or
         * dropped when the run's timeline is not kept */
        if (level != REC_EVENTS || !run_ok(p))
            rec_writer_discard(db);
        else if (rec_writer_drain(db, &db->stream_err) && !db->stream_rc)
            db->stream_rc = PS_ERR;
        db->writing = 0;
    }
    if (streamed && (level != REC_EVENTS || !run_ok(p) || db->stream_rc)) {
        int failed = db->stream_rc;
        rec_stream_cancel(db);
        db->stream_rc = PS_OK;
        if (failed) {
            ps_errf(err, "%s", db->stream_err.msg);
            return full_note(err, db->rows_code);
        }
        streamed = 0;
    }
    db->streaming = 0;
    if (!streamed && rec_run_begin(db, err))
        return PS_ERR;
    int in_batch = db->batch_open; /* this run is a batch's savepoint */
    int64_t id = 0;
    db->defer_ckpt = streamed;
    int failed =
        write_body(db, p, level, streamed, &id, err) || rec_run_commit(db, err);
    db->defer_ckpt = 0;
    if (failed) {
        int full = (sqlite3_errcode(db->db) & 0xff) == SQLITE_FULL;
        /* the batch's own commit failed (rec_run_commit): its message
         * says how many runs are lost */
        int committing = in_batch && !db->batch_open;
        /* SQLite may have rolled back already (disk full, I/O error),
         * taking the batch's earlier runs with it (rec_lost_runs) */
        int64_t lost0 = db->lost_runs;
        rec_run_rollback(db);
        long long lost = (long long)(db->lost_runs - lost0);
        if (err && (lost > 0 || (full && !committing))) {
            size_t len = strlen(err->msg);
            snprintf(err->msg + len, sizeof err->msg - len,
                     lost > 0 ? " (the sweep's last %lld runs are lost)"
                              : " (runs recorded before are kept)",
                     lost);
        }
        /* what the batch holds is committed now: a failure should not
         * put the runs before it at risk */
        ps_err ce;
        if (in_batch && db->batch_open && rec_batch_commit(db, &ce) && err)
            *err = ce;
        return PS_ERR;
    }
    /* a new file's first run: the file appears with it (rec/txn.c) */
    if (db->pending && rec_publish(db, &id, err))
        return PS_ERR;
    *run_id = id;
    return PS_OK;
}
