/* A sweep's pool, the worker's side (run/pool.h): the task pipe read,
 * the scratch databases a chunk records into, its shipped runs and the
 * files it hands to the writer, written whole. */
#include "run/pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/limit.h"

void run_pool_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        p += k;
        n -= (size_t)k;
    }
}

int run_pool_next_task(int task_fd, int32_t *c)
{
    for (;;) {
        ssize_t k = read(task_fd, c, sizeof *c);
        if (k < 0 && errno == EINTR && !limit_stopped())
            continue;
        return k == (ssize_t)sizeof *c;
    }
}

/* PIPESIM_TEST_SCRATCH_SQL, or NULL when unset or empty. */
static const char *test_sql(void)
{
    const char *sql = getenv("PIPESIM_TEST_SCRATCH_SQL");
    return sql && *sql ? sql : NULL;
}

/* Runs the test-only SQL on a new scratch database (run_scratch_open). */
static int scratch_test_sql(rec_db *db, ps_err *err)
{
    const char *sql = test_sql();
    if (!sql)
        return PS_OK;
    rec_query *q = rec_query_new(db, sql, err);
    int rc = q ? rec_query_step(q, err) : PS_ERR;
    rec_query_free(q);
    return rc == PS_ERR ? PS_ERR : PS_OK;
}

rec_db *run_scratch_open(const char *file, rec_ship **ship, ps_err *err)
{
    *ship = NULL;
    rec_db *db = rec_open(file, err);
    if (db && (rec_scratch(db, err) || scratch_test_sql(db, err))) {
        rec_close(db, NULL);
        return NULL;
    }
    if (!db)
        return NULL;
    /* runs below the events level go to the writer as bytes, recorded
     * there once (rec/ship.c), unless a test makes the scratch database
     * fail (it must then get every run) */
    *ship = test_sql() ? NULL : rec_ship_new();
    rec_set_shipper(db, *ship);
    return db;
}

int run_scratch_close(rec_db *db, int64_t *lost, ps_err *err)
{
    /* the flush first, as a session's end: runs of a batch SQLite rolled
     * back (now or earlier in the chunk) are not in the file */
    ps_err cerr;
    int failed = rec_flush(db, err);
    *lost = rec_lost_runs(db);
    if (rec_close(db, &cerr) && !failed) {
        failed = 1;
        *err = cerr;
    }
    return failed ? PS_ERR : PS_OK;
}

int run_ship_save(rec_ship *ship, const char *file, int64_t *runs)
{
    size_t n;
    const void *bytes = rec_ship_bytes(ship, &n);
    *runs = rec_ship_runs(ship);
    int rc = 0;
    if (*runs > 0) {
        FILE *f = fopen(file, "wb");
        int wrote = f && fwrite(bytes, 1, n, f) == n;
        if (!f || fclose(f) || !wrote)
            rc = -1;
    }
    rec_ship_free(ship);
    return rc;
}

int run_file_publish(const char *tmp, const char *final,
                     const unsigned char *bytes, size_t n)
{
    FILE *f = bytes ? fopen(tmp, "wb") : NULL;
    int wrote = f && fwrite(bytes, 1, n, f) == n;
    if (!f || fclose(f) || !wrote || rename(tmp, final))
        return -1;
    return 0;
}
