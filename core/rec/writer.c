/* The recorder's writer threads (issue 12): while a streamed run executes,
 * the engine's completion hook (rec/stream.c) only copies each row into a
 * block of a preallocated pool, and writer threads insert the blocks (one
 * INSERT per block reads it through pipesim_rows, rec/rows.c), so
 * SQLite's per-row work (the VDBE, the record, the b-tree append, the WAL
 * pages) runs beside the engine. Lane 0 inserts into the file; lane 1,
 * when the run has one, inserts the transfer rows into an in-memory twin
 * (rec/aux.c) in parallel, which lane 0 moves into the file at the end
 * (one statement, records copied as they are).
 *
 * The file's connection is used by one thread at a time: lane 0 only
 * between rec_writer_start's caller handing it blocks and
 * rec_writer_drain (or _discard) returning, the caller's thread at every
 * other moment; the twin's connection likewise by lane 1, and by lane 0
 * for the move once lane 1 is idle; each handover is a mutex, so SQLite's
 * own locking is not needed (the connections are opened NOMUTEX). The
 * run's transaction, its atomicity and every other statement stay on the
 * caller's thread (rec/rec.c). Blocks of a table are inserted in the order
 * they were filled, so rowid order is completion order as before. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rec/impl.h"

/* 32 blocks of REC_ROWS rows: 512 KiB. When the writers fall behind, the
 * engine waits for a free block (the pool is the backlog, not the run). */
#define NBLOCKS 32

/* Blocks handed over between two requests for early writeback of the
 * file the pages spill to (rec/flush.c): 4096 rows, about 128 KiB of
 * pages, so the disk writes the run as it is inserted and the fsync
 * after the commit waits for the last pages only. */
#define FLUSH_BLOCKS 16

/* The transfer rows of a run that go through the twin at most: its
 * image is in memory twice at the move (the twin and the copy the file's
 * connection reads), about 40 bytes a row, so 1 << 18 rows is ~20 MiB;
 * a run's later transfer rows go to lane 0 after the move. */
#define AUX_MAX_ROWS (1 << 18)

/* Free blocks a caller waiting for one is woken at (a quarter of the
 * pool): no wake-up per block when the writers are the slower side. */
#define WAKE_FREE 8

/* A block's table when it is no rows but lane 0's turn to move lane 1's
 * rows into the file (queued once lane 1 has had its last block). */
#define MOVE_AUX (-1)

enum { LANES = 2 };

typedef struct block {
    int32_t table, n, lane;
    rec_row row[REC_ROWS];
} block;

typedef struct lane {
    rec_db *db;
    int idx;
    pthread_t thread;
    int started;
    pthread_cond_t work; /* the lane waits: a block queued, or quit */
    int32_t queue[NBLOCKS], qhead, qn; /* FIFO of filled blocks */
    int busy;                          /* inserting a block */
} lane;

struct rec_writer {
    rec_writer *next_live; /* the process's writers (fork_prepare) */
    pthread_mutex_t mu;
    pthread_cond_t done; /* waited for: a block freed, a lane idle */
    lane lane[LANES];
    block *pool;
    int32_t free_[NBLOCKS], nfree;
    int32_t cur[NROWS]; /* the caller's block per table, -1 */
    int ckpt;           /* a checkpoint is asked for (rec_writer_checkpoint) */
    sqlite3 *ckpt_db;   /* lane 0's own connection for it, or NULL */
    int quit;
    int discarding; /* rec_writer_discard is dropping the run's blocks */
    int failed;     /* the first failure of an insert, in err; later blocks
                       are dropped */
    ps_err err;
    int64_t rows;      /* inserted since the start (rec_writer_usage) */
    int flush_fd;      /* rec_flush_open's for the current run, or -1 */
    int32_t published; /* blocks handed over (the caller's side) */
    double cpu;        /* lane 0's CPU seconds at the last drain */
    /* the caller's side of lane 1: the twin, whether this run's transfer
     * blocks go to it, whether it holds rows not moved yet, and the rows
     * handed to it this run */
    rec_aux *aux;
    int aux_on, aux_used;
    int64_t aux_rows, aux_max; /* aux_max: AUX_MAX_ROWS, or a test's */
};

/* ------------------------------------------------------------------ */
/* fork() (issue 27): no writer thread inside SQLite at the fork       */
/* ------------------------------------------------------------------ */

/* A process forked while a writer thread is inside SQLite (lane 0's
 * checkpoint after a streamed run's commit, on its own connection)
 * inherits SQLite's mutexes locked by a thread that does not exist in
 * the child: the child's first SQLite call (a sweep worker's rec_open)
 * waits forever. So every fork() of this process, whoever makes it (a
 * sweep's workers, io.popen under --unsafe), first waits until every
 * writer is idle and keeps their mutexes until the fork is done
 * (pthread_atfork): idle lanes wait on a condition variable, outside
 * SQLite, and no new work reaches them before the forking thread hands
 * some over. The list of live writers is changed by the threads that own
 * the handles, under live_mu. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static rec_writer *live;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void wait_idle(rec_writer *w);

static void fork_prepare(void)
{
    pthread_mutex_lock(&live_mu);
    for (rec_writer *w = live; w; w = w->next_live) {
        pthread_mutex_lock(&w->mu);
        wait_idle(w);
    }
}

static void fork_release(void)
{
    for (rec_writer *w = live; w; w = w->next_live)
        pthread_mutex_unlock(&w->mu);
    pthread_mutex_unlock(&live_mu);
}

/* In the child the writers are the parent's, their threads absent: the
 * child keeps their memory (its handles are never closed there, see
 * rec_forked_release) and forgets them here. */
static void fork_child(void)
{
    fork_release();
    live = NULL;
}

static void install_atfork(void)
{
    pthread_atfork(fork_prepare, fork_release, fork_child);
}

static void live_add(rec_writer *w)
{
    pthread_once(&atfork_once, install_atfork);
    pthread_mutex_lock(&live_mu);
    w->next_live = live;
    live = w;
    pthread_mutex_unlock(&live_mu);
}

static void live_remove(rec_writer *w)
{
    pthread_mutex_lock(&live_mu);
    for (rec_writer **p = &live; *p; p = &(*p)->next_live)
        if (*p == w) {
            *p = w->next_live;
            break;
        }
    pthread_mutex_unlock(&live_mu);
}

/* A PASSIVE checkpoint (what SQLite's autocheckpoint runs inside the
 * commit that passes REC_CKPT_FRAMES) on lane 0's own connection, so
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

/* One block on lane l's thread (w->mu not held). */
static int insert(rec_db *db, rec_writer *w, int l, block *b, ps_err *err)
{
    if (b->table == MOVE_AUX) {
        /* lane 1 has had its last block of the run: once it is idle, its
         * connection is lane 0's for the move */
        pthread_mutex_lock(&w->mu);
        while (w->lane[1].qn > 0 || w->lane[1].busy)
            pthread_cond_wait(&w->done, &w->mu);
        int skip = w->failed || w->discarding;
        pthread_mutex_unlock(&w->mu);
        if (skip)
            return PS_OK;
        int rc = rec_aux_move(db, w->aux, err);
        /* the moved rows' pages spilled since the engine's last request
         * (the caller waits in rec_writer_drain: the descriptor stays) */
        rec_flush_start(w->flush_fd);
        return rc;
    }
    if (l == 1)
        return rec_aux_insert(db, w->aux, b->row, b->n, err);
    return rec_rows_insert(db, b->table, b->row, b->n, err);
}

static void *writer_main(void *arg)
{
    lane *L = arg;
    rec_db *db = L->db;
    rec_writer *w = db->writer;
    int l = L->idx;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->quit && L->qn == 0 && !(l == 0 && w->ckpt))
            pthread_cond_wait(&L->work, &w->mu);
        if (l == 0 && L->qn == 0 && w->ckpt) {
            L->busy = 1;
            pthread_mutex_unlock(&w->mu);
            checkpoint(db, w);
            pthread_mutex_lock(&w->mu);
            w->ckpt = 0;
            L->busy = 0;
            pthread_cond_broadcast(&w->done);
            continue;
        }
        if (L->qn == 0)
            break; /* quit, nothing left */
        int32_t k = L->queue[L->qhead];
        L->qhead = (L->qhead + 1) % NBLOCKS;
        L->qn--;
        int skip = w->failed;
        L->busy = 1;
        pthread_mutex_unlock(&w->mu);
        block *b = &w->pool[k];
        ps_err err;
        int rc = skip ? PS_OK : insert(db, w, l, b, &err);
        pthread_mutex_lock(&w->mu);
        if (rc && !w->failed) {
            w->failed = 1;
            w->err = err;
        }
        if (!skip && !rc)
            w->rows += b->n;
        w->free_[w->nfree++] = k;
        L->busy = 0;
        /* a waiting caller wants WAKE_FREE blocks or idle lanes, lane 0
         * at a move an idle lane 1 */
        if (w->nfree == WAKE_FREE || L->qn == 0)
            pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Starts lane l's thread, which blocks every signal, so SIGINT, SIGTERM
 * and --timeout's alarm still reach the engine's thread, whose sleeps
 * and reads they cut short (base/limit.h). */
static int start_lane(rec_db *db, rec_writer *w, int l)
{
    lane *L = &w->lane[l];
    if (L->started)
        return PS_OK;
    L->db = db;
    L->idx = l;
    if (pthread_cond_init(&L->work, NULL))
        return PS_ERR;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int failed = pthread_create(&L->thread, NULL, writer_main, L);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (failed) {
        pthread_cond_destroy(&L->work);
        return PS_ERR;
    }
    L->started = 1;
    return PS_OK;
}

/* The twin for this run's transfer rows, when aux says the file's
 * connection has it attached outside a transaction (rec/stream.c): made
 * on first use, emptied, lane 1 started. Any failure leaves the run's
 * rows all to lane 0, as without it. */
static void begin_aux(rec_db *db, rec_writer *w, int aux)
{
    w->aux_on = w->aux_used = 0;
    w->aux_rows = 0;
    /* Test only (tests/cli_stream.sh): N rows through the twin at most,
     * so that a small run moves them mid-run and goes on without it. */
    const char *max = getenv("PIPESIM_TEST_AUX_ROWS");
    w->aux_max = max && *max ? strtol(max, NULL, 10) : AUX_MAX_ROWS;
    if (!aux)
        return;
    if (!w->aux && !(w->aux = rec_aux_new(db)))
        return;
    if (rec_aux_begin(w->aux) || start_lane(db, w, 1))
        return;
    w->aux_on = 1;
}

int rec_writer_start(rec_db *db, int aux)
{
    if (db->writer) {
        if (db->writer->flush_fd < 0)
            db->writer->flush_fd = rec_flush_open(db);
        begin_aux(db, db->writer, aux);
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
    if (pthread_cond_init(&w->done, NULL)) {
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
    db->writer = w;
    if (start_lane(db, w, 0)) {
        db->writer = NULL;
        pthread_cond_destroy(&w->done);
        pthread_mutex_destroy(&w->mu);
        free(w->pool);
        free(w);
        return PS_ERR;
    }
    live_add(w);
    w->flush_fd = rec_flush_open(db);
    begin_aux(db, w, aux);
    return PS_OK;
}

/* Blocks queued before a sleeping lane is woken: one wake-up (a futex
 * call and a context switch, microseconds) per WAKE_BLOCKS x REC_ROWS
 * rows rather than per block when the writer keeps up. */
#define WAKE_BLOCKS 2

/* Queues block k on its lane (w->mu held); wakes the lane when enough is
 * queued, or always (now). */
static void publish(rec_writer *w, int32_t k, int now)
{
    lane *L = &w->lane[w->pool[k].lane];
    L->queue[(L->qhead + L->qn) % NBLOCKS] = k;
    L->qn++;
    if (now || L->qn >= WAKE_BLOCKS)
        pthread_cond_signal(&L->work);
}

static int queued(const rec_writer *w)
{
    return w->lane[0].qn + w->lane[1].qn;
}

/* A free block (w->mu held), waiting for the lanes when there is none. */
static int32_t take_block(rec_writer *w)
{
    if (w->nfree == 0) {
        for (int l = 0; l < LANES; l++)
            if (w->lane[l].qn > 0)
                pthread_cond_signal(&w->lane[l].work); /* what is queued */
        while (w->nfree < WAKE_FREE && queued(w) > 0)
            pthread_cond_wait(&w->done, &w->mu);
        while (w->nfree == 0)
            pthread_cond_wait(&w->done, &w->mu);
    }
    return w->free_[--w->nfree];
}

/* Queues lane 0's move of lane 1's rows (w->mu held): after every block
 * lane 1 has, before any transfer block lane 0 gets. */
static void queue_move(rec_writer *w)
{
    int32_t k = take_block(w);
    w->pool[k].table = MOVE_AUX;
    w->pool[k].n = 0;
    w->pool[k].lane = 0;
    w->aux_used = 0;
    publish(w, k, 1);
}

rec_row *rec_writer_row(rec_db *db, int table)
{
    rec_writer *w = db->writer;
    int32_t k = w->cur[table];
    if (k < 0) {
        int l = 0;
        pthread_mutex_lock(&w->mu);
        if (table == ROWS_TRANSFER && w->aux_on) {
            if (w->aux_rows + REC_ROWS <= w->aux_max) {
                l = 1;
                w->aux_rows += REC_ROWS;
                w->aux_used = 1;
            } else {
                w->aux_on = 0; /* the rest of the run's on lane 0 */
                if (w->aux_used)
                    queue_move(w);
            }
        }
        k = take_block(w);
        pthread_mutex_unlock(&w->mu);
        w->pool[k].table = table;
        w->pool[k].n = 0;
        w->pool[k].lane = l;
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
    /* on this side: the engine's thread mostly waits for the writers */
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

/* Waits until no lane has anything queued or is inserting (w->mu held). */
static void wait_idle(rec_writer *w)
{
    while (queued(w) > 0 || w->lane[0].busy || w->lane[1].busy || w->ckpt)
        pthread_cond_wait(&w->done, &w->mu);
}

int rec_writer_drain(rec_db *db, ps_err *err)
{
    rec_writer *w = db->writer;
    if (!w)
        return PS_OK;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < NROWS; i++)
        if (w->cur[i] >= 0) {
            if (w->pool[w->cur[i]].n > 0)
                publish(w, w->cur[i], 0);
            else
                w->free_[w->nfree++] = w->cur[i];
            w->cur[i] = -1;
        }
    if (w->aux_used)
        queue_move(w);
    w->aux_on = 0;
    for (int l = 0; l < LANES; l++)
        if (w->lane[l].started)
            pthread_cond_signal(&w->lane[l].work);
    wait_idle(w);
    unwatch(w); /* after lane 0's move, which uses it */
    /* one clock read per run, from this side: none on the writer's path */
    clockid_t clock;
    struct timespec ts;
    if (pthread_getcpuclockid(w->lane[0].thread, &clock) == 0 &&
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
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < NROWS; i++)
        if (w->cur[i] >= 0) {
            w->free_[w->nfree++] = w->cur[i];
            w->cur[i] = -1;
        }
    for (int l = 0; l < LANES; l++) {
        lane *L = &w->lane[l];
        while (L->qn > 0) {
            w->free_[w->nfree++] = L->queue[L->qhead];
            L->qhead = (L->qhead + 1) % NBLOCKS;
            L->qn--;
        }
    }
    /* the twin's rows go at its next rec_aux_begin; a move lane 0 is
     * waiting to make is skipped */
    w->aux_on = w->aux_used = 0;
    w->discarding = 1;
    pthread_cond_broadcast(&w->done);
    wait_idle(w);
    unwatch(w);
    w->discarding = 0;
    w->failed = 0;
    pthread_mutex_unlock(&w->mu);
}

void rec_writer_checkpoint(rec_db *db)
{
    rec_writer *w = db->writer;
    pthread_mutex_lock(&w->mu);
    w->ckpt = 1;
    pthread_cond_signal(&w->lane[0].work);
    pthread_mutex_unlock(&w->mu);
}

void rec_writer_free(rec_db *db)
{
    rec_writer *w = db->writer;
    if (!w)
        return;
    live_remove(w);         /* first: a fork no longer waits for it */
    rec_writer_discard(db); /* and a checkpoint in progress */
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    for (int l = 0; l < LANES; l++)
        if (w->lane[l].started)
            pthread_cond_signal(&w->lane[l].work);
    pthread_mutex_unlock(&w->mu);
    for (int l = 0; l < LANES; l++)
        if (w->lane[l].started) {
            pthread_join(w->lane[l].thread, NULL);
            pthread_cond_destroy(&w->lane[l].work);
        }
    sqlite3_close(w->ckpt_db);
    rec_aux_free(w->aux);
    pthread_cond_destroy(&w->done);
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
