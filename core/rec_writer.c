/* The recorder's writer thread (issue 12): while a streamed run executes,
 * the engine's completion hook (rec_stream.c) only copies each row into a
 * block of a preallocated pool, and this thread inserts the blocks (one
 * INSERT per block reads it through pipesim_rows, rec_rows.c), so
 * SQLite's per-row work (the VDBE, the record, the b-tree append, the WAL
 * pages) runs on the second core beside the engine.
 *
 * The connection is used by one thread at a time: the writer only between
 * rec_writer_start's caller handing it blocks and rec_writer_drain (or
 * _discard) returning, the caller's thread at every other moment; each
 * handover is a mutex, so SQLite's own locking is not needed (the
 * connection is opened NOMUTEX). The run's transaction, its atomicity and
 * every other statement stay on the caller's thread (rec.c). Blocks of a
 * table are inserted in the order they were filled, so rowid order is
 * completion order as before. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rec_impl.h"

/* 32 blocks of REC_ROWS rows: 512 KiB. When the writer falls behind, the
 * engine waits for a free block (the pool is the backlog, not the run). */
#define NBLOCKS 32

/* Blocks handed over between two requests for early writeback of the
 * file the pages spill to (rec_flush.c): 4096 rows, about 128 KiB of
 * pages, so the disk writes the run as it is inserted and the fsync
 * after the commit waits for the last pages only. */
#ifndef FLUSH_BLOCKS
#define FLUSH_BLOCKS 16
#endif

/* Free blocks a caller waiting for one is woken at (a quarter of the
 * pool): no wake-up per block when the writer is the slower side. */
#define WAKE_FREE 8

typedef struct block {
    int32_t table, n;
    rec_row row[REC_ROWS];
} block;

struct rec_writer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work; /* the writer waits: a block queued, or quit */
    pthread_cond_t done; /* the caller waits: a block freed, or idle */
    block *pool;
    int32_t free_[NBLOCKS], nfree;
    int32_t queue[NBLOCKS], qhead, qn; /* FIFO of filled blocks */
    int32_t cur[NROWS];                /* the caller's block per table, -1 */
    int busy;                          /* the writer is inserting a block */
    int ckpt;         /* a checkpoint is asked for (rec_writer_checkpoint) */
    sqlite3 *ckpt_db; /* the writer's own connection for it, or NULL */
    int quit;
    int failed; /* the first failure of an insert, in err; later blocks
                   are dropped */
    ps_err err;
    int64_t rows;      /* inserted since the start (rec_writer_usage) */
    int flush_fd;      /* rec_flush_open's for the current run, or -1 */
    int32_t published; /* blocks handed over (the caller's side) */
    double cpu;        /* the thread's CPU seconds at the last drain */
};

/* A PASSIVE checkpoint (what SQLite's autocheckpoint runs inside the
 * commit that passes REC_CKPT_FRAMES) on the writer's own connection, so
 * that rec_write returns once its run is committed and the copy of the
 * log into the database (and its two fsyncs) overlaps whatever the caller
 * does next, writing on its own connection included. A checkpoint that
 * fails or is cut short is harmless: the next one, or the one SQLite runs
 * when the last connection closes, copies the rest. */
static void checkpoint(rec_db *db, rec_writer *w)
{
    /* a new connection's pager learns that the file is in WAL mode when
     * it first reads the header: before that a checkpoint does nothing */
    if (!w->ckpt_db &&
        (sqlite3_open_v2(db->path, &w->ckpt_db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                         NULL) != SQLITE_OK ||
         sqlite3_exec(w->ckpt_db, "PRAGMA journal_mode", NULL, NULL, NULL) !=
             SQLITE_OK)) {
        sqlite3_close(w->ckpt_db);
        w->ckpt_db = NULL;
        return;
    }
    sqlite3_wal_checkpoint_v2(w->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
                              NULL);
}

static void *writer_main(void *arg)
{
    rec_db *db = arg;
    rec_writer *w = db->writer;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->quit && w->qn == 0 && !w->ckpt)
            pthread_cond_wait(&w->work, &w->mu);
        if (w->qn == 0 && w->ckpt) {
            w->busy = 1;
            pthread_mutex_unlock(&w->mu);
            checkpoint(db, w);
            pthread_mutex_lock(&w->mu);
            w->ckpt = 0;
            w->busy = 0;
            pthread_cond_signal(&w->done);
            continue;
        }
        if (w->qn == 0)
            break; /* quit, nothing left */
        int32_t k = w->queue[w->qhead];
        w->qhead = (w->qhead + 1) % NBLOCKS;
        w->qn--;
        int skip = w->failed;
        w->busy = 1;
        pthread_mutex_unlock(&w->mu);
        block *b = &w->pool[k];
        ps_err err;
        int rc =
            skip ? PS_OK : rec_rows_insert(db, b->table, b->row, b->n, &err);
        pthread_mutex_lock(&w->mu);
        if (rc && !w->failed) {
            w->failed = 1;
            w->err = err;
        }
        if (!skip && !rc)
            w->rows += b->n;
        w->free_[w->nfree++] = k;
        w->busy = 0;
        /* a waiting caller wants WAKE_FREE blocks or an idle writer */
        if (w->nfree == WAKE_FREE || w->qn == 0)
            pthread_cond_signal(&w->done);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int rec_writer_start(rec_db *db)
{
    if (db->writer) {
        if (db->writer->flush_fd < 0)
            db->writer->flush_fd = rec_flush_open(db);
        return PS_OK;
    }
    rec_writer *w = calloc(1, sizeof *w);
    if (!w)
        return PS_ERR;
    w->pool = malloc(NBLOCKS * sizeof *w->pool);
    if (!w->pool || pthread_mutex_init(&w->mu, NULL)) {
        free(w->pool);
        free(w);
        return PS_ERR;
    }
    if (pthread_cond_init(&w->work, NULL)) {
        pthread_mutex_destroy(&w->mu);
        free(w->pool);
        free(w);
        return PS_ERR;
    }
    if (pthread_cond_init(&w->done, NULL)) {
        pthread_cond_destroy(&w->work);
        pthread_mutex_destroy(&w->mu);
        free(w->pool);
        free(w);
        return PS_ERR;
    }
    for (int32_t k = 0; k < NBLOCKS; k++)
        w->free_[k] = NBLOCKS - 1 - k;
    w->nfree = NBLOCKS;
    for (int i = 0; i < NROWS; i++)
        w->cur[i] = -1;
    w->flush_fd = rec_flush_open(db);
    db->writer = w;
    /* the thread blocks every signal, so SIGINT, SIGTERM and --timeout's
     * alarm still reach the engine's thread, whose sleeps and reads they
     * cut short (limit.h) */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int failed = pthread_create(&w->thread, NULL, writer_main, db);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (failed) {
        db->writer = NULL;
        if (w->flush_fd >= 0)
            close(w->flush_fd);
        pthread_cond_destroy(&w->done);
        pthread_cond_destroy(&w->work);
        pthread_mutex_destroy(&w->mu);
        free(w->pool);
        free(w);
        return PS_ERR;
    }
    return PS_OK;
}

/* Blocks queued before a sleeping writer is woken: one wake-up (a futex
 * call and a context switch, microseconds) per WAKE_BLOCKS x REC_ROWS
 * rows rather than per block when the writer keeps up. */
#define WAKE_BLOCKS 2

/* Queues block k (w->mu held); wakes the writer when enough is queued,
 * or always (now). */
static void publish(rec_writer *w, int32_t k, int now)
{
    w->queue[(w->qhead + w->qn) % NBLOCKS] = k;
    w->qn++;
    if (now || w->qn >= WAKE_BLOCKS)
        pthread_cond_signal(&w->work);
}

rec_row *rec_writer_row(rec_db *db, int table)
{
    rec_writer *w = db->writer;
    int32_t k = w->cur[table];
    if (k < 0) {
        pthread_mutex_lock(&w->mu);
        if (w->nfree == 0) {
            pthread_cond_signal(&w->work); /* whatever is queued */
            while (w->nfree < WAKE_FREE && w->qn > 0)
                pthread_cond_wait(&w->done, &w->mu);
            while (w->nfree == 0)
                pthread_cond_wait(&w->done, &w->mu);
        }
        k = w->free_[--w->nfree];
        pthread_mutex_unlock(&w->mu);
        w->pool[k].table = table;
        w->pool[k].n = 0;
        w->cur[table] = k;
    }
    block *b = &w->pool[k];
    return &b->row[b->n];
}

void rec_writer_commit_row(rec_db *db, int table)
{
    rec_writer *w = db->writer;
    int32_t k = w->cur[table];
    if (++w->pool[k].n < REC_ROWS)
        return;
    w->cur[table] = -1;
    pthread_mutex_lock(&w->mu);
    publish(w, k, 0);
    pthread_mutex_unlock(&w->mu);
    /* on this side: the engine's thread mostly waits for the writer */
    if (++w->published % FLUSH_BLOCKS == 0)
        rec_flush_start(w->flush_fd);
}

/* The run's writeback descriptor closed (drain, discard). */
static void unwatch(rec_writer *w)
{
    if (w->flush_fd >= 0)
        close(w->flush_fd);
    w->flush_fd = -1;
}

/* Waits until the writer has nothing queued and is not inserting (w->mu
 * held). */
static void wait_idle(rec_writer *w)
{
    while (w->qn > 0 || w->busy || w->ckpt)
        pthread_cond_wait(&w->done, &w->mu);
}

int rec_writer_drain(rec_db *db, ps_err *err)
{
    rec_writer *w = db->writer;
    if (!w)
        return PS_OK;
    unwatch(w);
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < NROWS; i++)
        if (w->cur[i] >= 0) {
            if (w->pool[w->cur[i]].n > 0)
                publish(w, w->cur[i], 0);
            else
                w->free_[w->nfree++] = w->cur[i];
            w->cur[i] = -1;
        }
    pthread_cond_signal(&w->work);
    wait_idle(w);
    /* one clock read per run, from this side: none on the writer's path */
    clockid_t clock;
    struct timespec ts;
    if (pthread_getcpuclockid(w->thread, &clock) == 0 &&
        clock_gettime(clock, &ts) == 0)
        w->cpu = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    int rc = PS_OK;
    if (w->failed) {
        if (err)
            *err = w->err;
        rc = PS_ERR;
        w->failed = 0;
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void rec_writer_discard(rec_db *db)
{
    rec_writer *w = db->writer;
    if (!w)
        return;
    unwatch(w);
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < NROWS; i++)
        if (w->cur[i] >= 0) {
            w->free_[w->nfree++] = w->cur[i];
            w->cur[i] = -1;
        }
    while (w->qn > 0) {
        w->free_[w->nfree++] = w->queue[w->qhead];
        w->qhead = (w->qhead + 1) % NBLOCKS;
        w->qn--;
    }
    wait_idle(w);
    w->failed = 0;
    pthread_mutex_unlock(&w->mu);
}

void rec_writer_checkpoint(rec_db *db)
{
    rec_writer *w = db->writer;
    pthread_mutex_lock(&w->mu);
    w->ckpt = 1;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
}

void rec_writer_free(rec_db *db)
{
    rec_writer *w = db->writer;
    if (!w)
        return;
    rec_writer_discard(db); /* and a checkpoint in progress */
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    sqlite3_close(w->ckpt_db);
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->work);
    pthread_mutex_destroy(&w->mu);
    free(w->pool);
    free(w);
    db->writer = NULL;
}

void rec_writer_usage(const rec_db *db, int64_t *rows, double *cpu)
{
    rec_writer *w = db->writer;
    *rows = 0;
    *cpu = 0;
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    *rows = w->rows;
    *cpu = w->cpu;
    pthread_mutex_unlock(&w->mu);
}
