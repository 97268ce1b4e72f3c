/* pipesim merge: shard databases (pipesim run --shard K/N) into one, as if
 * the scenario had run unsharded: runs renumbered in point order, every
 * row of every table kept; inputs that are not the shards of one run
 * refused (out/merge_check.c).
 *
 * Any number of inputs (SQLite attaches at most 10 databases at once), in
 * memory that does not grow with their runs (issue 27 item 5): each input
 * is copied whole, one at a time, into a scratch database beside OUT (the
 * stage), whose temporary table merge_run lists every run with its input,
 * sweep and point; the unsharded order is computed there in SQL, and the
 * runs are copied from the stage into OUT's scratch file in that order,
 * which is linked into place only when complete, so OUT either does not
 * exist or holds every run. Reads and copies through rec/rec.h only. */
#include "out/merge.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "out/merge_impl.h"
#include "rec/rec.h"

/* Prepares sql on db with ?1.. bound to v[0..nv): NULL on failure. */
static rec_query *query(rec_db *db, const char *sql, const int64_t *v, int nv,
                        ps_err *err)
{
    rec_query *q = rec_query_new(db, sql, err);
    for (int i = 0; q && i < nv; i++)
        rec_query_bind_int(q, i + 1, v[i]);
    return q;
}

/* Runs one statement to its end (rows it returns are skipped). */
static int exec(rec_db *db, const char *sql, const int64_t *v, int nv,
                ps_err *err)
{
    rec_query *q = query(db, sql, v, nv, err);
    int rc = q ? 1 : PS_ERR;
    while (q && (rc = rec_query_step(q, err)) == 1)
        ;
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

/* The integer in the first column of the first row (0 without one);
 * *failed set on an error. */
static int64_t scalar(rec_db *db, const char *sql, const int64_t *v, int nv,
                      int *failed, ps_err *err)
{
    rec_query *q = query(db, sql, v, nv, err);
    int rc = q ? rec_query_step(q, err) : PS_ERR;
    int64_t x = rc == 1 ? rec_query_int(q, 0) : 0;
    rec_query_free(q);
    if (rc < 0)
        *failed = 1;
    return x;
}

/* ------------------------------------------------------------------ */
/* The stage                                                           */
/* ------------------------------------------------------------------ */

/* The stage's tables: a run per row (sid: its id in the stage, input,
 * orig: its id there), the sweeps' places in the unsharded order, and a
 * scratch list for order_runs; temporary (the stage's own connection),
 * so that the copy of the stage's runs sees only pipesim's tables. */
static const char *const stage_sql[] = {
    "CREATE TEMP TABLE merge_run(sid INTEGER PRIMARY KEY, input INTEGER "
    "NOT NULL, orig INTEGER NOT NULL, sweep TEXT, point_index INTEGER, "
    "scenario TEXT, segment INTEGER)",
    "CREATE TEMP TABLE merge_seg(sweep TEXT PRIMARY KEY, segment INTEGER)",
    "CREATE TEMP TABLE merge_late(sid INTEGER PRIMARY KEY, sweep TEXT, "
    "segment INTEGER)",
};

/* Copies input k whole into the stage and lists its runs in merge_run. */
static int stage_input(rec_db *stage, const char *path, int k, ps_err *err)
{
    rec_copy *cp = rec_copy_new(stage, path, err);
    if (!cp)
        return PS_ERR;
    int failed = 0;
    int64_t v[3] = {k, 0, 0};
    v[2] = scalar(stage, "SELECT coalesce(max(id), 0) FROM main.run", NULL, 0,
                  &failed, err);
    int rc = failed || rec_begin(stage, err) ? PS_ERR : PS_OK;
    if (rc == PS_OK) {
        rc = rec_copy_runs(cp, 1, INT64_MAX, &v[1], err) ||
                     exec(stage,
                          "INSERT INTO temp.merge_run(sid, input, orig, "
                          "sweep, point_index, scenario) SELECT id, ?1, id "
                          "- ?2, sweep, point_index, scenario FROM main.run "
                          "WHERE id > ?3 ORDER BY id",
                          v, 3, err)
                 ? PS_ERR
                 : rec_commit(stage, err);
        if (rc)
            rec_rollback(stage);
    }
    rec_copy_free(cp);
    return rc;
}

/* The checks the shards' own rows cannot make, for inputs without them
 * (--partial): each query's first row is a failure (its message below);
 * ?1 is the first input. */
static const struct {
    const char *sql, *fmt;
} run_checks[] = {
    {"SELECT input, input, min(scenario), max(scenario) FROM merge_run "
     "GROUP BY input HAVING min(scenario) <> max(scenario) LIMIT 1",
     "%s holds runs of two scenario versions ('%s' and '%s'): merge the "
     "shards of one scenario and one set of -D arguments"},
    {"SELECT r.input, f.input, r.scenario, f.scenario FROM merge_run r, "
     "(SELECT input, scenario FROM merge_run ORDER BY sid LIMIT 1) f WHERE "
     "r.scenario IS NOT f.scenario ORDER BY r.sid LIMIT 1",
     "%s comes from another scenario version than %s ('%s', not '%s'): "
     "merge the shards of one scenario and one set of -D arguments"},
    /* inputs with sweeps, none of them the first such input's */
    {"SELECT f.input, b.input, f.sweep, b.sweep FROM merge_sweeps b, "
     "(SELECT input, sweep FROM merge_sweeps ORDER BY input LIMIT 1) f "
     "WHERE NOT EXISTS (SELECT 1 FROM merge_sweeps x JOIN merge_sweeps y "
     "ON x.sweep = y.sweep WHERE x.input = f.input AND y.input = b.input) "
     "LIMIT 1",
     "%s holds sweep '%s' and %s sweep '%s': databases from different "
     "sweeps"},
};

static int check_runs(rec_db *st, const char *const *in, ps_err *err)
{
    if (exec(st,
             "CREATE TEMP TABLE merge_sweeps AS SELECT DISTINCT input, sweep "
             "FROM merge_run WHERE sweep IS NOT NULL",
             NULL, 0, err))
        return PS_ERR;
    for (size_t i = 0; i < sizeof run_checks / sizeof run_checks[0]; i++) {
        rec_query *q = query(st, run_checks[i].sql, NULL, 0, err);
        int rc = q ? rec_query_step(q, err) : PS_ERR;
        const char *a = rc == 1 ? in[rec_query_int(q, 0)] : NULL,
                   *b = rc == 1 ? in[rec_query_int(q, 1)] : NULL;
        if (rc == 1 && i == 0)
            rc = ps_errf(err, run_checks[i].fmt, a, rec_query_text(q, 2),
                         rec_query_text(q, 3));
        else if (rc == 1 && i == 1)
            rc = ps_errf(err, run_checks[i].fmt, a, b, rec_query_text(q, 2),
                         rec_query_text(q, 3));
        else if (rc == 1)
            rc = ps_errf(err, run_checks[i].fmt, a, rec_query_text(q, 2), b,
                         rec_query_text(q, 3));
        rec_query_free(q);
        if (rc)
            return PS_ERR;
    }
    return PS_OK;
}

/* ------------------------------------------------------------------ */
/* The unsharded order                                                 */
/* ------------------------------------------------------------------ */

/* Shard K of N holds the points with index = K mod N, so shard 0 holds
 * point 0 of every sweep and every run outside the sweeps (the others do
 * not record those): its run order (the skeleton) places each sweep,
 * which then lists its points by index from every input. The skeleton
 * is the input holding the most point-0 and out-of-sweep runs; what it
 * does not place goes last, in input order: a run outside sweeps, or a
 * sweep the skeleton lacks, where it first appears. Each run's segment
 * says its place; runs sort by (segment, point_index, input, orig). */
static const char *const order_sql[] = {
    /* the skeleton's runs: a new segment at each run outside a sweep and
     * at each change of sweep (?1: the skeleton) */
    "UPDATE merge_run SET segment = s.seg FROM (SELECT sid, sum(brk) OVER "
    "(ORDER BY sid) AS seg FROM (SELECT sid, (sweep IS NULL OR sweep IS NOT "
    "lag(sweep) OVER (ORDER BY sid)) AS brk FROM merge_run WHERE input = "
    "?1)) s WHERE merge_run.sid = s.sid",
    /* each sweep's place: its first in the skeleton */
    "INSERT INTO merge_seg(sweep, segment) SELECT sweep, min(segment) FROM "
    "merge_run WHERE input = ?1 AND sweep IS NOT NULL GROUP BY sweep",
    /* the other inputs' runs outside sweeps and the first run of each
     * sweep the skeleton lacks, after everything, in input order (sid
     * order: the stage took the inputs in order) */
    "INSERT INTO merge_late(sid, sweep, segment) SELECT sid, sweep, "
    "(SELECT coalesce(max(segment), 0) FROM merge_run WHERE input = ?1) + "
    "row_number() OVER (ORDER BY sid) FROM merge_run r WHERE input <> ?1 "
    "AND (sweep IS NULL OR (sweep NOT IN (SELECT sweep FROM merge_seg) AND "
    "sid = (SELECT min(sid) FROM merge_run o WHERE o.sweep = r.sweep AND "
    "o.input <> ?1)))",
    "INSERT INTO merge_seg(sweep, segment) SELECT sweep, segment FROM "
    "merge_late WHERE sweep IS NOT NULL",
    "UPDATE merge_run SET segment = l.segment FROM merge_late l WHERE "
    "merge_run.sid = l.sid AND l.sweep IS NULL",
    "UPDATE merge_run SET segment = (SELECT segment FROM merge_seg s WHERE "
    "s.sweep = merge_run.sweep) WHERE input <> ?1 AND sweep IS NOT NULL",
    "CREATE INDEX temp.merge_key ON merge_run(segment, point_index, input, "
    "orig)",
};

static int order_runs(rec_db *st, const char *const *in, ps_err *err)
{
    int failed = 0;
    int64_t skel = scalar(st,
                          "SELECT input FROM merge_run GROUP BY input ORDER "
                          "BY sum(point_index IS NULL OR point_index <= 0) "
                          "DESC, input LIMIT 1",
                          NULL, 0, &failed, err);
    if (failed)
        return PS_ERR;
    for (size_t i = 0; i < sizeof order_sql / sizeof order_sql[0]; i++)
        if (exec(st, order_sql[i], &skel, 1, err))
            return PS_ERR;
    /* a sweep's point in two inputs (or twice in one) */
    rec_query *q = query(st,
                         "SELECT a.point_index, a.sweep, a.input, b.input "
                         "FROM merge_run a JOIN merge_run b ON b.segment = "
                         "a.segment AND b.point_index = a.point_index AND "
                         "b.sweep = a.sweep AND b.sid > a.sid WHERE a.sweep "
                         "IS NOT NULL ORDER BY a.segment, a.point_index "
                         "LIMIT 1",
                         NULL, 0, err);
    int rc = q ? rec_query_step(q, err) : PS_ERR;
    if (rc == 1)
        rc = ps_errf(err,
                     "point_index %lld of sweep '%s' is in %s and %s (the "
                     "same shard twice, or a sweep run twice into one "
                     "file?)",
                     (long long)rec_query_int(q, 0), rec_query_text(q, 1),
                     in[rec_query_int(q, 2)], in[rec_query_int(q, 3)]);
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

/* The runs of the stage at stage_path into a new database at tmp, in the
 * unsharded order, in one transaction; *nruns of them. */
static int write_out(rec_db *st, const char *stage_path, const char *tmp,
                     int64_t *nruns, ps_err *err)
{
    rec_db *db = rec_open(tmp, err);
    if (!db)
        return PS_ERR;
    rec_copy *cp = rec_copy_new(db, stage_path, err);
    int rc = cp ? rec_begin(db, err) : PS_ERR;
    rec_query *q = rc ? NULL
                      : query(st,
                              "SELECT sid FROM merge_run ORDER BY segment, "
                              "point_index, input, orig",
                              NULL, 0, err);
    if (!q)
        rc = PS_ERR;
    while (rc == PS_OK) {
        int step = rec_query_step(q, err);
        if (step != 1) {
            rc = step < 0 ? PS_ERR : PS_OK;
            break;
        }
        int64_t off, sid = rec_query_int(q, 0);
        rc = rec_copy_runs(cp, sid, sid, &off, err);
        (*nruns)++;
    }
    rec_query_free(q);
    if (rc == PS_OK)
        rc = rec_commit(db, err);
    else if (cp)
        rec_rollback(db);
    rec_copy_free(cp);
    ps_err cerr;
    if (rec_close(db, &cerr) && rc == PS_OK)
        rc = ps_errf(err, "%s", cerr.msg);
    return rc;
}

static void remove_db(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        char f[4400];
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        unlink(f);
    }
}

/* The stage (copies of the inputs, their runs listed and ordered) at
 * stage_path, open on *st. */
static int stage_all(rec_db **st, const char *stage_path, const char *const *in,
                     int n, ps_err *err)
{
    *st = rec_open(stage_path, err);
    /* a scratch file: its journal in memory, no syncs (rec_scratch) */
    if (!*st || rec_scratch(*st, err))
        return PS_ERR;
    for (size_t i = 0; i < sizeof stage_sql / sizeof stage_sql[0]; i++)
        if (exec(*st, stage_sql[i], NULL, 0, err))
            return PS_ERR;
    for (int k = 0; k < n; k++)
        if (stage_input(*st, in[k], k, err))
            return PS_ERR;
    return check_runs(*st, in, err) || order_runs(*st, in, err) ? PS_ERR
                                                                : PS_OK;
}

/* A file's identity, for check_args. */
typedef struct file_id {
    dev_t dev;
    ino_t ino;
    int k;
} file_id;

static int by_file(const void *pa, const void *pb)
{
    const file_id *a = pa, *b = pb;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    if (a->ino != b->ino)
        return a->ino < b->ino ? -1 : 1;
    return a->k - b->k;
}

/* The arguments: out new, no input twice (by name or as the same file:
 * each stat once, then sorted, so 1,000 inputs cost 1,000 stats). */
static int check_args(const char *out, const char *const *in, int n,
                      ps_err *err)
{
    struct stat sb;
    if (stat(out, &sb) == 0)
        return ps_errf(err,
                       "%s exists: merge writes a new database (remove it "
                       "or name another)",
                       out);
    file_id *ids = calloc((size_t)(n > 0 ? n : 1), sizeof *ids);
    if (!ids)
        return ps_errf(err, "merge: out of memory");
    int m = 0;
    for (int k = 0; k < n; k++)
        if (stat(in[k], &sb) == 0)
            ids[m++] = (file_id){sb.st_dev, sb.st_ino, k};
    qsort(ids, (size_t)m, sizeof *ids, by_file);
    int twice = -1;
    for (int i = 1; i < m; i++)
        if (ids[i].dev == ids[i - 1].dev && ids[i].ino == ids[i - 1].ino &&
            (twice < 0 || ids[i].k < twice))
            twice = ids[i].k;
    free(ids);
    return twice >= 0 ? ps_errf(err, "%s is given twice", in[twice]) : PS_OK;
}

int merge_dbs(const char *out, const char *const *in, int n, int partial,
              int64_t *nruns, char **note, ps_err *err)
{
    *nruns = 0;
    *note = NULL;
    if (check_args(out, in, n, err) ||
        merge_check_shards(in, n, partial, note, err))
        return PS_ERR;
    char tmp[4200], stage_path[4300];
    snprintf(tmp, sizeof tmp, "%s.merge-%ld", out, (long)getpid());
    snprintf(stage_path, sizeof stage_path, "%s.stage", tmp);
    remove_db(tmp);
    remove_db(stage_path);
    rec_db *st = NULL;
    int rc = stage_all(&st, stage_path, in, n, err);
    if (rc == PS_OK)
        rc = write_out(st, stage_path, tmp, nruns, err);
    rec_close(st, NULL);
    remove_db(stage_path);
    /* link, not rename: never replaces an OUT made meanwhile */
    if (rc == PS_OK && link(tmp, out) != 0)
        rc = ps_errf(err, "%s: cannot create it: %s", out, strerror(errno));
    remove_db(tmp);
    if (rc) {
        *nruns = 0;
        free(*note);
        *note = NULL;
    }
    return rc;
}
