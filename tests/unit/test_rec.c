/* Recorder: both recording levels read back through rec_query, the views,
 * failed runs, rollback of a run that fails half way, run ids and appends,
 * per-run commits, new files, and the messages for files that are not
 * pipesim databases (the timeline's storage: test_rec_timeline.c).
 * Runs with cwd = a scratch directory (tests/run.sh). */
#include "rec/rec.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "harness.h"

/* fixture_scalar and fixture_text under the short names every test here
 * uses */
static double scalar(rec_db *db, const char *sql)
{
    return fixture_scalar(db, sql);
}

static const char *text(rec_db *db, const char *sql, char *buf, size_t size)
{
    return fixture_text(db, sql, buf, size);
}

static void test_levels_and_views(void)
{
    ps_err err = {0};
    rec_db *db = fixture_new_db("levels.db", &err);
    CHECK(db != NULL);
    if (!db) {
        printf("%s\n", err.msg);
        return;
    }
    fixture fx;
    CHECK_INT(fixture_run(&fx, "1f1b", 4, 8, 1, 1.0, 2.0, 100.0, &err), 0);
    CHECK_NEAR(fx.res.makespan, 33.0);
    int64_t id = -1;
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 1);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 1"), 64);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 1 AND "
                         "kind = 'F'"),
              32);
    CHECK_INT(scalar(db, "SELECT count(*) FROM transfer WHERE run = 1"), 48);
    CHECK_INT(scalar(db, "SELECT count(*) FROM transfer WHERE run = 1 AND "
                         "kind = 'grad' AND src > dst"),
              24);
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory WHERE run = 1"), 4 + 64);
    CHECK_INT(scalar(db, "SELECT count(*) FROM stage WHERE run = 1"), 4);
    CHECK_INT(scalar(db, "SELECT count(*) FROM rank_stat WHERE run = 1"), 4);
    CHECK_INT(scalar(db, "SELECT count(*) FROM link WHERE run = 1"), 6);
    CHECK_INT(scalar(db, "SELECT count(*) FROM collective"), 0);
    /* values */
    CHECK_NEAR(scalar(db, "SELECT t_end FROM event WHERE run = 1 AND rank = 0 "
                          "AND kind = 'F' AND mb = 0"),
               1.0);
    CHECK_NEAR(scalar(db, "SELECT max(t_end) FROM event WHERE run = 1"), 33.0);
    CHECK_NEAR(scalar(db, "SELECT makespan FROM run WHERE id = 1"), 33.0);
    CHECK_NEAR(scalar(db, "SELECT closed_form_bubble FROM run WHERE id = 1"),
               3.0 / 11.0);
    CHECK_NEAR(scalar(db, "SELECT bytes FROM memory WHERE run = 1 AND rank = 2 "
                          "ORDER BY rowid LIMIT 1"),
               3000.0);
    /* multi-row inserts keep the ledger's order: rowid order is time order
     * within a rank */
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory a JOIN memory b ON "
                         "a.run = b.run AND a.rank = b.rank AND a.rowid < "
                         "b.rowid AND a.t > b.t"),
              0);
    CHECK_NEAR(scalar(db, "SELECT sum(bytes) FROM link WHERE run = 1"),
               48 * 64.0);
    char buf[256];
    CHECK_STR(text(db, "SELECT params FROM run WHERE id = 1", buf, sizeof buf),
              "{\"test\": true}");
    CHECK_STR(text(db, "SELECT status FROM run WHERE id = 1", buf, sizeof buf),
              "ok");
    CHECK_INT(scalar(db, "SELECT created LIKE '____-__-__T__:__:__Z' FROM run "
                         "WHERE id = 1"),
              1);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 1 AND "
                         "kind = 'OPT' OR mb IS NULL"),
              0);
    /* views */
    CHECK_NEAR(scalar(db, "SELECT fraction FROM bubble WHERE run = 1 AND "
                          "rank = 3"),
               9.0 / 33.0);
    CHECK_NEAR(scalar(db, "SELECT makespan FROM bubble WHERE run = 1 AND "
                          "rank = 0"),
               33.0);
    /* 1F1B stage s holds min(p - s, m) activations at its peak */
    CHECK_NEAR(scalar(db, "SELECT peak FROM memory_peak WHERE run = 1 AND "
                          "rank = 0"),
               1000.0 + 4 * 100.0);
    CHECK_NEAR(scalar(db, "SELECT peak FROM memory_peak WHERE run = 1 AND "
                          "rank = 3"),
               4000.0 + 1 * 100.0);
    CHECK_NEAR(scalar(db, "SELECT max(bytes) FROM memory WHERE run = 1 AND "
                          "rank = 1"),
               2000.0 + 3 * 100.0);

    /* summary level: only run, stage, rank_stat (and collective) rows */
    fx.run.name = "summary";
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(id, 2);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 2"), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM transfer WHERE run = 2"), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory WHERE run = 2"), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM link WHERE run = 2"), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM bubble WHERE run = 2"), 4);
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory_peak WHERE run = 2"), 4);

    /* a collective run at summary level */
    rec_collective coll = {"allreduce", "ring", 4,   1e9,
                           0.5,         2e9,    3e9, "simple"};
    rec_run cr = {.kind = "collective",
                  .name = "ring",
                  .stages = 4,
                  .makespan = 0.5,
                  .closed_form_bubble = NAN,
                  .imbalance = NAN,
                  .status = "ok"};
    rec_payload cp = {.run = &cr, .collective = &coll};
    CHECK_INT(rec_write(db, &cp, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(id, 3);
    CHECK_NEAR(scalar(db, "SELECT busbw FROM collective WHERE run = 3"), 3e9);
    CHECK_INT(scalar(db, "SELECT closed_form_bubble IS NULL AND schedule IS "
                         "NULL FROM run WHERE id = 3"),
              1);

    /* a failed run keeps its run row and message, and no timeline */
    fx.run.status = "failed";
    fx.run.error = "deadlock at t=0 s: rank 0 waits on recv F0 from rank 1";
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 4);
    CHECK_STR(text(db, "SELECT status || ': ' || error FROM run WHERE id = 4",
                   buf, sizeof buf),
              "failed: deadlock at t=0 s: rank 0 waits on recv F0 from rank 1");
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 4"), 0);
    fx.run.status = "ok";
    fx.run.error = NULL;

    CHECK_INT(rec_close(db, &err), 0);
    fixture_free(&fx);

    /* reopened for reading, all of it is there */
    db = rec_open_read("levels.db", &err);
    CHECK(db != NULL);
    if (db) {
        CHECK_INT(scalar(db, "SELECT count(*) FROM run"), 4);
        CHECK_INT(scalar(db, "SELECT count(*) FROM event"), 64);
        int64_t ignored;
        CHECK_INT(rec_write(db, &cp, REC_SUMMARY, &ignored, &err), PS_ERR);
        CHECK_STR(err.msg, "levels.db: opened read-only");
        CHECK(rec_query_new(db, "SELECT nope FROM run", &err) == NULL);
        CHECK_STR(err.msg, "levels.db: cannot read: no such column: nope");
        CHECK_INT(rec_close(db, &err), 0);
    }
}

/* A write that fails half way leaves nothing of its run; the runs before
 * and after it are intact, ids continue from 1, 2. */
static void test_rollback_and_append(void)
{
    ps_err err = {0};
    rec_db *db = fixture_new_db("append.db", &err);
    fixture fx;
    CHECK_INT(fixture_run(&fx, "gpipe", 3, 4, 1, 1.0, 2.0, 10.0, &err), 0);
    int64_t id = -1;
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 1);

    /* rank_stat is written after the timeline: a duplicate rank fails the
     * run after thousands of rows went in */
    rec_rank dup[4];
    fixture_dup_rank(&fx, dup);
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), PS_ERR);
    CHECK_INT(id, 0);
    CHECK_STR(err.msg, "append.db: run not recorded: UNIQUE constraint "
                       "failed: rank_stat.run, rank_stat.rank");
    CHECK_INT(scalar(db, "SELECT count(*) FROM run"), 1);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run <> 1"), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM memory WHERE run <> 1"), 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM stage WHERE run <> 1"), 0);

    fixture_ranks_back(&fx);
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 2);
    CHECK_INT(rec_close(db, &err), 0);

    /* reopening for writing appends */
    db = rec_open("append.db", &err);
    CHECK(db != NULL);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event"), 2 * 24);
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(id, 3);
    CHECK_INT(rec_close(db, &err), 0);
    db = rec_open_read("append.db", &err);
    CHECK_INT(scalar(db, "SELECT group_concat(id) = '1,2,3' FROM run"), 1);
    CHECK_INT(rec_close(db, &err), 0);
    fixture_free(&fx);
}

/* Every rec_write commits its run before it returns: a second connection
 * sees each run at once, and no transaction is left open between runs (so
 * another writer can take the lock; the file's write lock is free). */
static void test_commit_per_run(void)
{
    ps_err err = {0};
    rec_db *db = fixture_new_db("commit.db", &err);
    rec_db *rd = rec_open_read("commit.db", &err);
    CHECK(db != NULL && rd != NULL);
    rec_db *other = rec_open("commit.db", &err);
    CHECK(other != NULL);
    rec_rank rk = {0, 1, 0, 0, 0, 0, 0, 0, REC_FITS_UNKNOWN, 0, 0};
    rec_run r = {.kind = "pipeline",
                 .name = "sweep",
                 .schedule = "1f1b",
                 .makespan = 1,
                 .closed_form_bubble = NAN,
                 .status = "ok"};
    rec_payload p = {.run = &r, .ranks = &rk, .nranks = 1};
    int64_t id = 0;
    int fails = 0, unseen = 0;
    for (int i = 1; i <= 300; i++) {
        /* two writers interleaved: each must find the lock free */
        fails += rec_write(i % 2 ? db : other, &p, REC_SUMMARY, &id, &err) != 0;
        unseen += id != i || scalar(rd, "SELECT max(id) FROM run") != i;
    }
    CHECK_INT(fails, 0);
    CHECK_INT(unseen, 0);
    CHECK_INT(scalar(rd, "SELECT count(*) FROM rank_stat"), 300);
    CHECK_INT(rec_flush(db, &err), 0); /* nothing pending: harmless */
    CHECK_INT(rec_close(rd, &err), 0);
    CHECK_INT(rec_close(other, &err), 0);
    CHECK_INT(rec_close(db, &err), 0);
    CHECK_INT(rec_close(NULL, &err), 0);
}

/* The entries of dir other than . and .. */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        entries += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return entries;
}

/* A new file is built beside its path and linked into place with its
 * first run (rec/schema.c, rec/txn.c): before it, the path does not
 * exist (a failed first run leaves none); after it, a complete database
 * in WAL mode with the mode SQLite would give it (0644 less the umask),
 * and no scratch file left. Two writers of the same new path: the second
 * finds the first's file and its run is copied in with the next id, its
 * timeline rows included. */
static void test_new_file(void)
{
    ps_err err = {0};
    char dir[] = "/tmp/pipesim-test-rec-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/new.db", dir);
    fixture fx;
    CHECK_INT(fixture_run(&fx, "1f1b", 3, 4, 1, 1.0, 2.0, 10.0, &err), 0);
    rec_db *db = rec_open(path, &err);
    rec_db *other = rec_open(path, &err);
    CHECK(db != NULL && other != NULL);
    struct stat sb;
    CHECK(stat(path, &sb) != 0 && errno == ENOENT);
    CHECK_INT(dir_entries(dir), 2); /* the two scratch files */
    CHECK_INT(scalar(db, "PRAGMA user_version"), REC_SCHEMA_VERSION);
    /* a first run that fails: still no file */
    rec_rank dup[4];
    fixture_dup_rank(&fx, dup);
    int64_t id = 0;
    CHECK(rec_write(db, &fx.pay, REC_EVENTS, &id, &err) != 0);
    fixture_ranks_back(&fx);
    CHECK(stat(path, &sb) != 0 && errno == ENOENT);
    CHECK_INT(rec_write(db, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 1);
    CHECK(stat(path, &sb) == 0);
    CHECK_INT(scalar(db, "SELECT count(*) FROM sqlite_master WHERE name IN "
                         "('run', 'event', 'span', 'memory_peak')"),
              4);
    char mode[16];
    CHECK_STR(text(db, "PRAGMA journal_mode", mode, sizeof mode), "wal");
    /* the second writer's first run lands in the first's file */
    CHECK_INT(rec_write(other, &fx.pay, REC_EVENTS, &id, &err), 0);
    CHECK_INT(id, 2);
    CHECK_INT(rec_write(db, &fx.pay, REC_SUMMARY, &id, &err), 0);
    CHECK_INT(id, 3);
    CHECK_INT(scalar(db, "SELECT count(*) FROM run"), 3);
    /* 3 ranks x 4 microbatches x (F, B) */
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 1"), 24);
    CHECK_INT(scalar(db, "SELECT count(*) FROM event WHERE run = 2"), 24);
    CHECK_INT(scalar(db, "SELECT count(*) FROM span WHERE run = 3"), 0);
    CHECK_INT(rec_close(other, &err), 0);
    CHECK_INT(rec_close(db, &err), 0);
    mode_t mask = umask(0);
    umask(mask);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == (0644 & ~mask));
    CHECK_INT(dir_entries(dir), 1); /* new.db alone */
    unlink(path);
    /* a new file closed without a run is published empty */
    db = rec_open(path, &err);
    CHECK(db != NULL && stat(path, &sb) != 0);
    CHECK_INT(rec_close(db, &err), 0);
    CHECK_INT(dir_entries(dir), 1);
    rec_db *rd = rec_open_read(path, &err);
    CHECK(rd != NULL);
    CHECK_INT(scalar(rd, "SELECT count(*) FROM run"), 0);
    rec_close(rd, NULL);
    unlink(path);
    char f[160];
    snprintf(f, sizeof f, "%s-wal", path);
    unlink(f);
    snprintf(f, sizeof f, "%s-shm", path);
    unlink(f);
    rmdir(dir);
    fixture_free(&fx);
}

static void test_open_errors(void)
{
    ps_err err = {0};
    unlink("missing.db");
    CHECK(rec_open_read("missing.db", &err) == NULL);
    CHECK_STR(err.msg, "missing.db: no such file");

    FILE *f = fopen("notes.txt", "w");
    fputs("these are not the bytes you are looking for\n", f);
    fclose(f);
    CHECK(rec_open_read("notes.txt", &err) == NULL);
    CHECK_HAS(err.msg, "notes.txt: not a pipesim database");
    CHECK(rec_open("notes.txt", &err) == NULL);
    CHECK_HAS(err.msg, "notes.txt: not a pipesim database");

    CHECK(rec_open("no-such-dir/x.db", &err) == NULL);
    CHECK_STR(err.msg, "no-such-dir/x.db: directory no-such-dir does not "
                       "exist");

    /* an SQLite file of someone else (user_version 0, tables present) */
    rec_db *db = fixture_new_db("other.db", &err);
    rec_query *q = rec_query_new(db, "PRAGMA user_version = 0", &err);
    CHECK(q != NULL);
    CHECK_INT(rec_query_step(q, &err), 0);
    rec_query_free(q);
    rec_close(db, &err);
    CHECK(rec_open_read("other.db", &err) == NULL);
    CHECK_STR(err.msg, "other.db: not a pipesim database");
    CHECK(rec_open("other.db", &err) == NULL);
    CHECK_STR(err.msg, "other.db: not a pipesim database");

    /* a newer pipesim's file */
    unlink("newer.db");
    db = rec_open("newer.db", &err);
    q = rec_query_new(db, "PRAGMA user_version = 12", &err);
    CHECK_INT(rec_query_step(q, &err), 0);
    rec_query_free(q);
    rec_close(db, &err);
    CHECK(rec_open("newer.db", &err) == NULL);
    CHECK_STR(err.msg, "newer.db: schema version 12, this pipesim writes 11");
    CHECK(rec_open_read("newer.db", &err) == NULL);
    CHECK_STR(err.msg, "newer.db: schema version 12, this pipesim reads 11");

    /* a file of this version whose table was dropped behind pipesim's
     * back: the writer trusts the version (one header read, no schema
     * scan at open) and the first run says what is missing, in one line */
    unlink("dropped.db");
    db = rec_open("dropped.db", &err);
    q = rec_query_new(db, "DROP TABLE rank_stat", &err);
    CHECK_INT(rec_query_step(q, &err), 0);
    rec_query_free(q);
    rec_close(db, &err);
    db = rec_open("dropped.db", &err);
    CHECK(db != NULL);
    rec_run r = {.kind = "pipeline", .name = "x", .status = "ok"};
    rec_rank rk = {0};
    rec_payload p = {.run = &r, .ranks = &rk, .nranks = 1};
    int64_t id = -1;
    CHECK_INT(rec_write(db, &p, REC_SUMMARY, &id, &err), PS_ERR);
    CHECK_INT(id, 0);
    CHECK_HAS(err.msg, "dropped.db: ");
    CHECK_HAS(err.msg, "no such table: rank_stat");
    CHECK(strchr(err.msg, '\n') == NULL);
    CHECK_INT(scalar(db, "SELECT count(*) FROM run"), 0); /* rolled back */
    rec_close(db, &err);

    /* an empty file (touch results/x.db) is a fresh database */
    f = fopen("empty.db", "w");
    fclose(f);
    db = rec_open("empty.db", &err);
    CHECK(db != NULL);
    CHECK_INT(scalar(db, "PRAGMA user_version"), REC_SCHEMA_VERSION);
    rec_close(db, &err);
}

int main(void)
{
    test_levels_and_views();
    test_rollback_and_append();
    test_commit_per_run();
    test_open_errors();
    test_new_file();
    return harness_done();
}
