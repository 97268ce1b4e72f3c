/* Recorder write speed: full recording (REC_EVENTS) of one 1F1B run, by
 * default p = 64, m = 1024, into a fresh database; prints rows, seconds and
 * rows/s for rec_write + rec_flush (the engine run is not timed).
 *   make && cc -O2 ... (see the command in the file's first test) or:
 *   build/rec_speed [p m [db]] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int p = argc > 2 ? atoi(argv[1]) : 64, m = argc > 2 ? atoi(argv[2]) : 1024;
    const char *path = argc > 3 ? argv[3] : "rec_speed.db";
    ps_err err;
    fixture fx;
    if (fixture_run(&fx, "1f1b", p, m, 1, 1.0, 2.0, 100.0, &err)) {
        fprintf(stderr, "rec_speed: %s\n", err.msg);
        return 1;
    }
    unlink(path);
    rec_db *db = rec_open(path, &err);
    if (!db) {
        fprintf(stderr, "rec_speed: %s\n", err.msg);
        return 1;
    }
    int64_t id;
    double t0 = now();
    if (rec_write(db, &fx.pay, REC_EVENTS, &id, &err) || rec_flush(db, &err)) {
        fprintf(stderr, "rec_speed: %s\n", err.msg);
        return 1;
    }
    double t1 = now();
    rec_close(db, &err);
    double t2 = now();
    rec_query *q;
    int64_t rows = 0;
    db = rec_open_read(path, &err);
    q = rec_query_new(db,
                      "SELECT (SELECT count(*) FROM event) + (SELECT count(*) "
                      "FROM transfer) + (SELECT count(*) FROM memory) + "
                      "(SELECT count(*) FROM link) + (SELECT count(*) FROM "
                      "stage) + (SELECT count(*) FROM rank_stat) + 1",
                      &err);
    if (q && rec_query_step(q, &err) == 1)
        rows = rec_query_int(q, 0);
    rec_query_free(q);
    rec_close(db, &err);
    printf("p=%d m=%d: %lld rows in %.3f s (write+commit), %.3f s with "
           "close/checkpoint: %.0f rows/s\n",
           p, m, (long long)rows, t1 - t0, t2 - t0, rows / (t2 - t0));
    fixture_free(&fx);
    return 0;
}
