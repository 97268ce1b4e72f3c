/* A session's databases, counts and progress line (run/session.h), split
 * from the binding (bind/core.c keeps only the Lua side). */
#include "run/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/vec.h"
#include "run/proc.h"
#include "run/version.h"

typedef struct session_db {
    char *path;
    rec_db *db;
} session_db;

struct run_session {
    const char *default_db;
    session_db *dbs;
    size_t ndbs, cap;
    int default_used;
    long runs;          /* recorded */
    long simulated;     /* all runs, recorded or not */
    int progress;       /* 1: on when stderr is a terminal, 0: off */
    int progress_shown; /* a progress line is on screen */
    double started, last_shown;
    long sweep_total; /* points of the sweep in progress, 0: none */
    double sweep_started;
    /* the databases whose batches run_session_flush_batched commits */
    rec_db *batched[RUN_SESSION_BATCHED];
    int nbatched;
    /* --shard K/N: this process's token and the database its sweeps'
     * shard rows are in, NULL before the first */
    char token[40];
    rec_db *shard_db;
};

run_session *run_session_new(const char *default_db)
{
    run_session *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->default_db = default_db;
    s->progress = isatty(STDERR_FILENO);
    return s;
}

/* The connections a forked sweep worker inherited from the writer, kept
 * reachable until its _exit (run_session_free). */
static rec_db **inherited;
static size_t ninherited;

static void keep_inherited(rec_db *db)
{
    rec_forked_release(db); /* its page cache: interior pointers only */
    rec_db **k = realloc(inherited, (ninherited + 1) * sizeof *k);
    if (!k)
        return; /* out of memory at exit: the worker ends anyway */
    inherited = k;
    inherited[ninherited++] = db;
}

void run_session_free(run_session *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ndbs; i++) {
        if (s->dbs[i].db && proc_is_worker())
            keep_inherited(s->dbs[i].db);
        else
            rec_close(s->dbs[i].db, NULL);
        free(s->dbs[i].path);
    }
    free(s->dbs);
    free(s);
}

static session_db *find(const run_session *s, const char *path)
{
    for (size_t i = 0; i < s->ndbs; i++)
        if (strcmp(s->dbs[i].path, path) == 0)
            return &s->dbs[i];
    return NULL;
}

rec_db *run_session_db(run_session *s, const char *path, ps_err *err)
{
    if (!path) {
        path = s->default_db;
        s->default_used = 1;
    }
    session_db *d = find(s, path);
    if (d && !d->db)
        ps_errf(err, "%s: the session has ended", path);
    if (d)
        return d->db;
    if (VEC_RESERVE(s->dbs, s->cap, s->ndbs + 1)) {
        ps_errf(err, "out of memory");
        return NULL;
    }
    char *copy = strdup(path);
    if (!copy) {
        ps_errf(err, "out of memory");
        return NULL;
    }
    rec_db *db = rec_open(path, err);
    if (!db) {
        free(copy);
        return NULL;
    }
    s->dbs[s->ndbs++] = (session_db){copy, db};
    return db;
}

void run_session_count(run_session *s)
{
    s->runs++;
}

long run_session_runs(const run_session *s)
{
    return s ? s->runs : 0;
}

static double monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void run_session_progress(run_session *s)
{
    double t = monotonic();
    if (s->simulated++ == 0)
        s->started = t;
    if (s->sweep_total > 0) /* the sweep's line says more */
        return;
    if (!s->progress || t - s->started < 1.0 || t - s->last_shown < 0.2)
        return;
    s->last_shown = t;
    s->progress_shown = 1;
    fprintf(stderr, "\rpipesim: %ld runs, %.0f runs/s ", s->simulated,
            (double)s->simulated / (t - s->started));
    fflush(stderr);
}

static void progress_done(run_session *s)
{
    if (s->progress_shown) {
        fputc('\n', stderr);
        s->progress_shown = 0;
    }
}

void run_session_progress_sweep(run_session *s, long done, long total)
{
    double t = monotonic();
    if (total <= 0) {
        s->sweep_total = 0;
        progress_done(s);
        return;
    }
    if (s->sweep_total != total || done == 0) {
        s->sweep_total = total;
        s->sweep_started = t;
        return;
    }
    double dt = t - s->sweep_started;
    if (!s->progress || dt < 1.0 || (t - s->last_shown < 0.2 && done < total))
        return;
    s->last_shown = t;
    s->progress_shown = 1;
    double rate = (double)done / dt;
    fprintf(stderr, "\rpipesim: %ld/%ld points, %.0f points/s, %.0f s left ",
            done, total, rate, rate > 0 ? (double)(total - done) / rate : 0.0);
    fflush(stderr);
}

void run_session_set_progress(run_session *s, int on)
{
    s->progress = on && isatty(STDERR_FILENO);
    if (!s->progress)
        progress_done(s);
}

int run_session_batch(run_session *s, rec_db *db, int on, int track)
{
    if (on && track) {
        int i = 0;
        while (i < s->nbatched && s->batched[i] != db)
            i++;
        if (i == s->nbatched) {
            if (i == RUN_SESSION_BATCHED)
                on = 0;
            else
                s->batched[s->nbatched++] = db;
        }
    }
    rec_set_batch(db, on);
    return on;
}

int run_session_flush_batched(run_session *s, ps_err *err)
{
    int rc = PS_OK;
    for (int i = 0; i < s->nbatched; i++) {
        ps_err e;
        rec_set_batch(s->batched[i], 0);
        if (rec_flush(s->batched[i], &e) && rc == PS_OK)
            rc = ps_errf(err, "%s", e.msg);
    }
    s->nbatched = 0;
    return rc;
}

int run_session_shard_begin(run_session *s, rec_db *db, rec_shard *sh,
                            ps_err *err)
{
    if (!s->token[0]) {
        /* the process (pid, clocks, an address of its stack) hashed */
        struct timespec t[2];
        clock_gettime(CLOCK_REALTIME, &t[0]);
        clock_gettime(CLOCK_MONOTONIC, &t[1]);
        uint64_t h = run_fnv1a(RUN_FNV1A_BASIS, t, sizeof t);
        pid_t pid = getpid();
        h = run_fnv1a(h, &pid, sizeof pid);
        void *where = &h;
        h = run_fnv1a(h, &where, sizeof where);
        snprintf(s->token, sizeof s->token, "%ld-%016llx", (long)pid,
                 (unsigned long long)h);
    }
    sh->session = s->token;
    if (rec_shard_begin(db, sh, err))
        return PS_ERR;
    s->shard_db = db;
    return PS_OK;
}

int run_session_shard_end(run_session *s, ps_err *err)
{
    return s->shard_db ? rec_shard_end(s->shard_db, s->token, err) : PS_OK;
}

int run_session_finish(run_session *s, long *runs, const char **db_path,
                       int64_t *total, ps_err *err)
{
    int rc = PS_OK;
    progress_done(s);
    long runs_in = s->runs;
    *db_path = s->default_used ? s->default_db : NULL;
    *total = -1;
    for (size_t i = 0; i < s->ndbs; i++) {
        rec_db *db = s->dbs[i].db;
        if (!db)
            continue;
        /* the flush first: a batch whose commit fails takes its runs
         * back, and the count says only what is in the file */
        ps_err e, ce;
        int failed = rec_flush(db, &e);
        runs_in -= (long)rec_lost_runs(db);
        /* the file's total for main's summary line, on the open
         * connection (reopening the file to count cost ~1 ms) */
        int64_t n;
        if (!failed && *db_path && strcmp(s->dbs[i].path, *db_path) == 0 &&
            rec_run_count(db, &n, &ce) == PS_OK)
            *total = n;
        if (rec_close(db, &ce) && !failed) {
            failed = 1;
            e = ce;
        }
        if (failed && rc == PS_OK)
            rc = ps_errf(err, "%s", e.msg);
        s->dbs[i].db = NULL;
    }
    *runs = runs_in;
    return rc;
}
