/* pipesim merge's checks of its inputs as shards (issue 27 item 6): every
 * input is a shard of one `pipesim run --shard K/N` (the same scenario
 * version, the same sweeps and N), each K is there once, none is missing,
 * none is still being written or was left incomplete. What each shard
 * recorded about itself is its table shard (rec/shard.c); the checks read
 * it input by input, keeping a few fields per input (memory grows with
 * the inputs, not with their runs). --partial lets missing, incomplete
 * and unmarked inputs through, naming them in the merge's note. */
#include "out/merge_impl.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rec/rec.h"

/* What an input says about itself. */
typedef struct shard_info {
    int has;        /* a shard row: made by run --shard */
    int sessions;   /* the runs of --shard that wrote into it */
    int k, n;       /* K/N of its latest session */
    char *scenario; /* its version */
    char *sweeps;   /* its sweeps: "name|points|hash\n" per row, in order */
    char *first;    /* the first sweep's name (messages) */
    int unfinished; /* its latest session has not finished */
    int live;       /* ... and its process is alive here */
    long long pid;  /* that process */
    char host[256]; /* and its host */
} shard_info;

static void info_free(shard_info *s)
{
    free(s->scenario);
    free(s->sweeps);
    free(s->first);
}

/* Appends text to *buf (malloc'd); PS_ERR when out of memory. */
static int append(char **buf, const char *text, ps_err *err)
{
    size_t a = *buf ? strlen(*buf) : 0, b = strlen(text);
    char *n = realloc(*buf, a + b + 1);
    if (!n)
        return ps_errf(err, "merge: out of memory");
    memcpy(n + a, text, b + 1);
    *buf = n;
    return PS_OK;
}

/* 1 when the process pid runs on this host (shard rows name both). */
static int alive_here(const char *host, long long pid)
{
    char me[256];
    if (gethostname(me, sizeof me) != 0)
        return 0;
    me[sizeof me - 1] = '\0';
    if (strcmp(me, host) != 0 || pid <= 0)
        return 0;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* Reads the latest session's rows of db's shard table into s. */
static int read_rows(rec_db *db, shard_info *s, ps_err *err)
{
    rec_query *q = rec_query_new(
        db,
        "SELECT k, n, scenario, sweep, points, points_hash, host, pid, "
        "finished IS NULL FROM shard WHERE session = (SELECT session FROM "
        "shard ORDER BY id DESC LIMIT 1) ORDER BY id",
        err);
    int rc = q ? PS_OK : PS_ERR;
    while (q && (rc = rec_query_step(q, err)) == 1) {
        s->has = 1;
        s->k = (int)rec_query_int(q, 0);
        s->n = (int)rec_query_int(q, 1);
        const char *sweep = rec_query_text(q, 3);
        if (!s->scenario && !(s->scenario = strdup(rec_query_text(q, 2))))
            rc = ps_errf(err, "merge: out of memory");
        if (rc >= 0 && !s->first && !(s->first = strdup(sweep)))
            rc = ps_errf(err, "merge: out of memory");
        char row[1024];
        snprintf(row, sizeof row, "%s|%lld|%s\n", sweep,
                 rec_query_isnull(q, 4) ? -1LL : (long long)rec_query_int(q, 4),
                 rec_query_text(q, 5));
        if (rc < 0 || append(&s->sweeps, row, err))
            break;
        snprintf(s->host, sizeof s->host, "%s", rec_query_text(q, 6));
        s->pid = (long long)rec_query_int(q, 7);
        s->unfinished |= (int)rec_query_int(q, 8);
    }
    rec_query_free(q);
    if (rc < 0)
        return PS_ERR;
    s->live = s->unfinished && alive_here(s->host, s->pid);
    return PS_OK;
}

/* The input's shard rows, if any; fails on a file that is no pipesim
 * database of this schema version (rec_open_read's message). */
static int read_info(const char *path, shard_info *s, ps_err *err)
{
    memset(s, 0, sizeof *s);
    rec_db *db = rec_open_read(path, err);
    if (!db)
        return PS_ERR;
    rec_query *q = rec_query_new(db,
                                 "SELECT count(*) FROM sqlite_master WHERE "
                                 "type = 'table' AND name = 'shard'",
                                 err);
    int rc = q && rec_query_step(q, err) == 1 ? PS_OK : PS_ERR;
    int has_table = rc == PS_OK && rec_query_int(q, 0) == 1;
    rec_query_free(q);
    if (rc == PS_OK && has_table)
        rc = read_rows(db, s, err);
    q = rc == PS_OK && has_table
            ? rec_query_new(db, "SELECT count(DISTINCT session) FROM shard",
                            err)
            : NULL;
    if (q && rec_query_step(q, err) == 1)
        s->sessions = (int)rec_query_int(q, 0);
    rec_query_free(q);
    rec_close(db, NULL);
    return rc;
}

/* The sweeps of a signature, their names only, as a set test: 1 when a
 * and b name a sweep in common. */
static int share_a_sweep(const char *a, const char *b)
{
    for (const char *p = a; p && *p;) {
        const char *bar = strchr(p, '|'), *nl = strchr(p, '\n');
        if (!bar || !nl)
            break;
        size_t len = (size_t)(bar - p);
        for (const char *q = b; q && *q;) {
            const char *qbar = strchr(q, '|'), *qnl = strchr(q, '\n');
            if (!qbar || !qnl)
                break;
            if ((size_t)(qbar - q) == len && strncmp(p, q, len) == 0)
                return 1;
            q = qnl + 1;
        }
        p = nl + 1;
    }
    return 0;
}

/* Input k against input 0 (both with shard rows): one run's shards. */
static int check_pair(const char *const *in, const shard_info *a,
                      const shard_info *b, int k, ps_err *err)
{
    if (!share_a_sweep(a->sweeps, b->sweeps))
        return ps_errf(err,
                       "%s holds sweep '%s' and %s sweep '%s': databases "
                       "from different sweeps",
                       in[0], a->first, in[k], b->first);
    if (strcmp(a->scenario, b->scenario) != 0)
        return ps_errf(err,
                       "%s comes from another scenario version than %s "
                       "('%s', not '%s'): merge the shards of one scenario "
                       "and one set of -D arguments",
                       in[k], in[0], *b->scenario ? b->scenario : "unknown",
                       *a->scenario ? a->scenario : "unknown");
    if (strcmp(a->sweeps, b->sweeps) != 0)
        return ps_errf(err,
                       "%s and %s ran other points (their sweeps' point lists "
                       "differ): shards of different runs",
                       in[0], in[k]);
    if (a->n != b->n)
        return ps_errf(err,
                       "%s is shard %d/%d and %s shard %d/%d: the shards of "
                       "one run have one N",
                       in[0], a->k, a->n, in[k], b->k, b->n);
    return PS_OK;
}

/* Appends "; what" to *note. */
static int note_add(char **note, const char *what, ps_err *err)
{
    return append(note, *note ? "; " : "", err) || append(note, what, err);
}

/* The shards of N that no input is, named in err (refused) or in *note
 * (--partial). */
static int check_missing(const shard_info *info, int n, int partial,
                         char **note, ps_err *err)
{
    int N = 0;
    for (int k = 0; k < n && !N; k++)
        N = info[k].has ? info[k].n : 0;
    if (N <= 0)
        return PS_OK;
    int missing = 0, first = -1;
    char list[256] = "";
    /* O(N x inputs) without a table of N flags: N is the inputs' count
     * when nothing is missing */
    for (int K = 0; K < N; K++) {
        int there = 0;
        for (int k = 0; k < n && !there; k++)
            there = info[k].has && info[k].k == K;
        if (there)
            continue;
        if (missing++ == 0)
            first = K;
        size_t len = strlen(list);
        if (missing <= 4)
            snprintf(list + len, sizeof list - len, "%s%d/%d",
                     missing > 1 ? ", " : "", K, N);
    }
    if (!missing)
        return PS_OK;
    char what[400];
    if (missing == 1)
        snprintf(what, sizeof what, "shard %d/%d is missing", first, N);
    else
        snprintf(what, sizeof what, "%d shards of %d are missing (%s%s)",
                 missing, N, list, missing > 4 ? ", ..." : "");
    if (partial)
        return note_add(note, what, err);
    return ps_errf(err,
                   "%s: give every shard's database, or --partial to merge "
                   "the shards there are",
                   what);
}

/* An input's own state: made by --shard, finished, not being written. */
static int check_state(const char *path, const shard_info *s, int partial,
                       char **note, ps_err *err)
{
    char what[4600];
    if (s->sessions > 1)
        return ps_errf(err,
                       "%s holds %d runs of pipesim run --shard %d/%d (the "
                       "shard run again into the same file?): its points "
                       "are there more than once; remove it and run that "
                       "shard again",
                       path, s->sessions, s->k, s->n);
    if (!s->has)
        snprintf(what, sizeof what,
                 "%s was not made by pipesim run --shard K/N (it has no "
                 "shard record)",
                 path);
    else if (s->live)
        snprintf(what, sizeof what,
                 "%s is still being written (pipesim run --shard %d/%d, "
                 "process %lld on %s)",
                 path, s->k, s->n, s->pid, s->host);
    else if (s->unfinished)
        snprintf(what, sizeof what,
                 "%s is incomplete: its pipesim run --shard %d/%d (process "
                 "%lld on %s) did not finish (killed, or its scenario "
                 "failed?)",
                 path, s->k, s->n, s->pid, s->host);
    else
        return PS_OK;
    if (partial)
        return note_add(note, what, err);
    return ps_errf(err, "%s: %s, or --partial to merge what it holds", what,
                   !s->has   ? "merge joins the shards of one run"
                   : s->live ? "wait for it to end"
                             : "run that shard again");
}

int merge_check_shards(const char *const *in, int n, int partial, char **note,
                       ps_err *err)
{
    shard_info *info = calloc((size_t)(n > 0 ? n : 1), sizeof *info);
    if (!info)
        return ps_errf(err, "merge: out of memory");
    int rc = PS_OK;
    for (int k = 0; k < n && rc == PS_OK; k++)
        rc = read_info(in[k], &info[k], err);
    int base = -1; /* the first input with shard rows */
    for (int k = 0; k < n && rc == PS_OK; k++) {
        if (!info[k].has)
            continue;
        if (base < 0) {
            base = k;
            continue;
        }
        const char *pair[2] = {in[base], in[k]};
        rc = check_pair(pair, &info[base], &info[k], 1, err);
        for (int j = base; j < k && rc == PS_OK; j++)
            if (info[j].has && info[j].k == info[k].k)
                rc = ps_errf(err,
                             "%s and %s are both shard %d/%d (the same shard "
                             "twice?)",
                             in[j], in[k], info[k].k, info[k].n);
    }
    if (rc == PS_OK)
        rc = check_missing(info, n, partial, note, err);
    for (int k = 0; k < n && rc == PS_OK; k++)
        rc = check_state(in[k], &info[k], partial, note, err);
    for (int k = 0; k < n; k++)
        info_free(&info[k]);
    free(info);
    return rc;
}
