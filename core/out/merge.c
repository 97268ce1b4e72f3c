/* pipesim merge: shard databases (pipesim run --shard K/N) into one, as if
 * the scenario had run unsharded: runs renumbered in point order, every
 * row of every table kept, inputs from other scenario versions, sweeps or
 * schema versions refused. The result is written to a scratch file and
 * linked into place only when complete, so OUT either does not exist or
 * holds every run. Reads and copies through rec/rec.h only. */
#include "out/merge.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rec/rec.h"

typedef struct mrun {
    int64_t id;
    char *sweep;         /* NULL outside sweeps */
    int64_t point_index; /* -1 outside sweeps */
    int input;
    int64_t segment; /* place in the skeleton's order (see order_runs) */
} mrun;

typedef struct runs {
    mrun *r;
    size_t n, cap;
} runs;

static void runs_free(runs *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        free(rs->r[i].sweep);
    free(rs->r);
}

/* Reads input k's runs (id order) into rs, and its scenario version into
 * *scenario (NULL when it has no runs); refuses an input whose runs come
 * from two versions. */
static int read_input(runs *rs, const char *path, int k, char **scenario,
                      ps_err *err)
{
    rec_db *db = rec_open_read(path, err);
    if (!db)
        return PS_ERR;
    rec_query *q = rec_query_new(
        db, "SELECT id, sweep, point_index, scenario FROM run ORDER BY id",
        err);
    int rc = q ? PS_OK : PS_ERR;
    while (q && (rc = rec_query_step(q, err)) == 1) {
        const char *scen = rec_query_text(q, 3);
        if (!*scenario) {
            *scenario = strdup(scen);
        } else if (strcmp(*scenario, scen) != 0) {
            rc = ps_errf(err,
                         "%s holds runs of two scenario versions ('%s' and "
                         "'%s'): merge the shards of one scenario and one "
                         "set of -D arguments",
                         path, *scenario, *scen ? scen : "unknown");
            break;
        }
        if (rs->n == rs->cap) {
            size_t cap = rs->cap ? 2 * rs->cap : 256;
            mrun *r = realloc(rs->r, cap * sizeof *r);
            if (!r) {
                rc = ps_errf(err, "merge: out of memory");
                break;
            }
            rs->r = r;
            rs->cap = cap;
        }
        mrun *m = &rs->r[rs->n++];
        m->id = rec_query_int(q, 0);
        m->sweep = rec_query_isnull(q, 1) ? NULL : strdup(rec_query_text(q, 1));
        m->point_index = rec_query_isnull(q, 2) ? -1 : rec_query_int(q, 2);
        m->input = k;
        m->segment = 0;
    }
    rec_query_free(q);
    rec_close(db, NULL);
    return rc < 0 ? PS_ERR : PS_OK;
}

/* After the sweeps' check: every input of one scenario version. */
static int check_scenarios(char *const *scen, const char *const *in, int n,
                           ps_err *err)
{
    int first = -1;
    for (int k = 0; k < n; k++) {
        if (!scen[k])
            continue;
        if (first < 0)
            first = k;
        else if (strcmp(scen[k], scen[first]) != 0)
            return ps_errf(err,
                           "%s comes from another scenario version than %s "
                           "('%s', not '%s'): merge the shards of one "
                           "scenario and one set of -D arguments",
                           in[k], in[first], *scen[k] ? scen[k] : "unknown",
                           *scen[first] ? scen[first] : "unknown");
    }
    return PS_OK;
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* A sweep name and a number (its segment in order_runs), in a short
 * list: a scenario has few sweeps, so lookups scan it, starting from the
 * last hit, which consecutive runs of one sweep repeat. */
typedef struct names {
    const char **name;
    int64_t *value;
    size_t n, cap, last;
} names;

static int64_t *names_find(names *ns, const char *name)
{
    if (ns->n && same(ns->name[ns->last], name))
        return &ns->value[ns->last];
    for (size_t i = 0; i < ns->n; i++)
        if (same(ns->name[i], name)) {
            ns->last = i;
            return &ns->value[i];
        }
    return NULL;
}

/* Adds name (borrowed) unless present; returns its value, or NULL when
 * out of memory. */
static int64_t *names_add(names *ns, const char *name, int64_t value)
{
    int64_t *v = names_find(ns, name);
    if (v)
        return v;
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? 2 * ns->cap : 16;
        const char **nm = realloc(ns->name, cap * sizeof *nm);
        if (nm)
            ns->name = nm;
        int64_t *vl = nm ? realloc(ns->value, cap * sizeof *vl) : NULL;
        if (!vl)
            return NULL;
        ns->value = vl;
        ns->cap = cap;
    }
    ns->name[ns->n] = name;
    ns->value[ns->n] = value;
    ns->last = ns->n;
    return &ns->value[ns->n++];
}

static void names_free(names *ns)
{
    free(ns->name);
    free(ns->value);
}

/* Inputs with sweeps but none in common are different sweeps, whatever
 * else matches. */
static int check_sweeps(const runs *rs, const char *const *in, int n,
                        ps_err *err)
{
    names *per = n > 0 ? calloc((size_t)n, sizeof *per) : NULL;
    if (!per)
        return ps_errf(err, "merge: out of memory");
    int rc = PS_OK;
    for (size_t i = 0; i < rs->n && rc == PS_OK; i++)
        if (rs->r[i].sweep &&
            !names_add(&per[rs->r[i].input], rs->r[i].sweep, 0))
            rc = ps_errf(err, "merge: out of memory");
    for (int k = 1; k < n && rc == PS_OK; k++) {
        if (!per[0].n || !per[k].n)
            continue;
        int shared = 0;
        for (size_t i = 0; i < per[k].n && !shared; i++)
            shared = names_find(&per[0], per[k].name[i]) != NULL;
        if (!shared)
            rc = ps_errf(err,
                         "%s holds sweep '%s' and %s sweep '%s': databases "
                         "from different sweeps",
                         in[0], per[0].name[0], in[k], per[k].name[0]);
    }
    for (int k = 0; k < n; k++)
        names_free(&per[k]);
    free(per);
    return rc;
}

static int by_key(const void *pa, const void *pb)
{
    const mrun *a = pa, *b = pb;
    if (a->segment != b->segment)
        return a->segment < b->segment ? -1 : 1;
    if (a->point_index != b->point_index)
        return a->point_index < b->point_index ? -1 : 1;
    if (a->input != b->input)
        return a->input < b->input ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* The unsharded order. Shard K of N holds the points with index = K mod
 * N, so shard 0 holds point 0 of every sweep and every run outside the
 * sweeps (the others do not record those): its run order (the skeleton)
 * places each sweep, which then lists its points by index from every
 * input. The skeleton is the input holding the most point-0 and
 * out-of-sweep runs; what it does not place goes last, in input order. */
static int order_runs(runs *rs, const char *const *in, int n, ps_err *err)
{
    int skel = 0;
    int64_t best = -1;
    for (int k = 0; k < n; k++) {
        int64_t c = 0;
        for (size_t i = 0; i < rs->n; i++)
            c += rs->r[i].input == k && rs->r[i].point_index <= 0;
        if (c > best) {
            best = c;
            skel = k;
        }
    }
    names place = {0};
    int64_t seg = 0;
    const char *prev = NULL;
    int rc = PS_OK;
    for (size_t i = 0; i < rs->n && rc == PS_OK; i++) {
        mrun *m = &rs->r[i];
        if (m->input != skel)
            continue;
        if (!m->sweep || seg == 0 || !same(prev, m->sweep))
            seg++;
        m->segment = seg;
        prev = m->sweep;
        if (m->sweep && !names_add(&place, m->sweep, seg))
            rc = ps_errf(err, "merge: out of memory");
    }
    /* the rest: a sweep's runs where the skeleton has it, else after
     * everything, where its first run elsewhere is */
    int64_t late = seg;
    for (size_t i = 0; i < rs->n && rc == PS_OK; i++) {
        mrun *m = &rs->r[i];
        if (m->input == skel)
            continue;
        if (!m->sweep) {
            m->segment = ++late;
            continue;
        }
        int64_t *at = names_find(&place, m->sweep);
        if (!at)
            at = names_add(&place, m->sweep, ++late);
        if (!at)
            rc = ps_errf(err, "merge: out of memory");
        else
            m->segment = *at;
    }
    names_free(&place);
    if (rc)
        return rc;
    qsort(rs->r, rs->n, sizeof *rs->r, by_key);
    for (size_t i = 1; i < rs->n; i++) {
        const mrun *a = &rs->r[i - 1], *b = &rs->r[i];
        if (a->sweep && b->sweep && a->segment == b->segment &&
            a->point_index == b->point_index && same(a->sweep, b->sweep))
            return ps_errf(err,
                           "point_index %lld of sweep '%s' is in %s and %s "
                           "(the same shard twice, or a sweep run twice "
                           "into one file?)",
                           (long long)a->point_index, a->sweep, in[a->input],
                           in[b->input]);
    }
    return PS_OK;
}

static void remove_db(const char *path)
{
    char f[4200];
    unlink(path);
    snprintf(f, sizeof f, "%s-wal", path);
    unlink(f);
    snprintf(f, sizeof f, "%s-shm", path);
    unlink(f);
    snprintf(f, sizeof f, "%s-journal", path);
    unlink(f);
}

/* Copies the runs in rs's order into a new database at tmp, in one
 * transaction. */
static int write_out(const runs *rs, const char *tmp, const char *const *in,
                     int n, ps_err *err)
{
    rec_db *db = rec_open(tmp, err);
    if (!db)
        return PS_ERR;
    rec_copy **cp = n > 0 ? calloc((size_t)n, sizeof *cp) : NULL;
    int rc = cp ? PS_OK : ps_errf(err, "merge: out of memory");
    for (int k = 0; k < n && rc == PS_OK; k++) {
        cp[k] = rec_copy_new(db, in[k], err);
        if (!cp[k])
            rc = PS_ERR;
    }
    if (rc == PS_OK)
        rc = rec_begin(db, err);
    for (size_t i = 0; i < rs->n && rc == PS_OK; i++) {
        int64_t off;
        const mrun *m = &rs->r[i];
        rc = rec_copy_runs(cp[m->input], m->id, m->id, &off, err);
    }
    if (rc == PS_OK)
        rc = rec_commit(db, err);
    else
        rec_rollback(db);
    for (int k = 0; cp && k < n; k++)
        rec_copy_free(cp[k]);
    free(cp);
    ps_err cerr;
    if (rec_close(db, &cerr) && rc == PS_OK)
        rc = ps_errf(err, "%s", cerr.msg);
    return rc;
}

int merge_dbs(const char *out, const char *const *in, int n, int64_t *nruns,
              ps_err *err)
{
    struct stat sb;
    *nruns = 0;
    if (stat(out, &sb) == 0)
        return ps_errf(err,
                       "%s exists: merge writes a new database (remove it "
                       "or name another)",
                       out);
    for (int k = 0; k < n; k++)
        for (int j = 0; j < k; j++)
            if (strcmp(in[j], in[k]) == 0)
                return ps_errf(err, "%s is given twice", in[k]);
    runs rs = {0};
    char **scen = n > 0 ? calloc((size_t)n, sizeof *scen) : NULL;
    int rc = scen ? PS_OK : ps_errf(err, "out of memory");
    for (int k = 0; k < n && rc == PS_OK; k++)
        rc = read_input(&rs, in[k], k, &scen[k], err);
    if (rc == PS_OK)
        rc = check_sweeps(&rs, in, n, err);
    if (rc == PS_OK)
        rc = check_scenarios(scen, in, n, err);
    for (int k = 0; scen && k < n; k++)
        free(scen[k]);
    free(scen);
    if (rc == PS_OK)
        rc = order_runs(&rs, in, n, err);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.merge-%ld", out, (long)getpid());
    if (rc == PS_OK) {
        remove_db(tmp);
        rc = write_out(&rs, tmp, in, n, err);
        /* link, not rename: never replaces an OUT made meanwhile */
        if (rc == PS_OK && link(tmp, out) != 0)
            rc = ps_errf(err, "%s: cannot create it: %s", out, strerror(errno));
        remove_db(tmp);
    }
    if (rc == PS_OK)
        *nruns = (int64_t)rs.n;
    runs_free(&rs);
    return rc;
}
