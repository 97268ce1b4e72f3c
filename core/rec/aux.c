/* The recorder's second writer's database (issue 12): while a streamed run
 * executes, its transfer rows go into a private in-memory twin of
 * transfer_row (the same declaration, read from the file), inserted by a
 * second writer thread (rec/writer.c) in parallel with the event and
 * memory rows the first one inserts into the file. At the end the first
 * writer moves them with one INSERT INTO main.transfer_row SELECT * FROM
 * pipesim_aux.transfer_row, which SQLite runs as its transfer optimization
 * (xferOptimization in insert.c: each record copied as it is, neither
 * decoded nor built again; a third of an insert's instructions). The twin
 * reaches the file's connection as an image: sqlite3_serialize on the
 * second connection, sqlite3_deserialize into the schema pipesim_aux that
 * the file's connection attached (':memory:') before the run's
 * transaction. Nothing of it enters the file: the rows arrive in
 * transfer_row as if inserted there, in the same order. */
/* getloadavg and sysconf's processor count are glibc's: ask for them */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE 1
#endif
#include <stdlib.h>
#include <unistd.h>

#include "rec/impl.h"

#define AUX "pipesim_aux"

struct rec_aux {
    sqlite3 *c;         /* the in-memory database */
    sqlite3_stmt *ins;  /* INSERT ... SELECT ... FROM pipesim_rows on c */
    rec_vtab_scan scan; /* what pipesim_rows reads on c */
    unsigned nulls;     /* the integers read as NULL below 0 */
    int64_t rows;       /* in the twin this run */
};

void rec_aux_free(rec_aux *a)
{
    if (!a)
        return;
    sqlite3_finalize(a->ins);
    sqlite3_close(a->c);
    free(a);
}

/* A text value of one row from the file's connection, copied (NULL: none). */
static char *query_text(sqlite3 *c, const char *sql)
{
    sqlite3_stmt *st = NULL;
    char *out = NULL;
    if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        out = sqlite3_mprintf("%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
}

rec_aux *rec_aux_new(rec_db *db)
{
    rec_aux *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    /* the twin must match transfer_row column for column (types, NOT
     * NULL) for SQLite to copy records, and its pages be of the same size
     * for it to copy cells whole */
    char *decl = query_text(db->db, "SELECT sql FROM main.sqlite_schema "
                                    "WHERE type = 'table' AND "
                                    "name = 'transfer_row'");
    char *page = query_text(db->db, "PRAGMA main.page_size");
    char *setup = decl && page ? sqlite3_mprintf("PRAGMA page_size = %s; "
                                                 "PRAGMA journal_mode = OFF; "
                                                 "%s",
                                                 page, decl)
                               : NULL;
    sqlite3_free(decl);
    sqlite3_free(page);
    int ok = setup &&
             sqlite3_open_v2(":memory:", &a->c,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                 SQLITE_OPEN_NOMUTEX,
                             NULL) == SQLITE_OK &&
             sqlite3_exec(a->c, setup, NULL, NULL, NULL) == SQLITE_OK &&
             rec_rows_module_on(a->c, &a->scan) == SQLITE_OK &&
             sqlite3_prepare_v3(a->c, rec_rows_sql(ROWS_TRANSFER, &a->nulls),
                                -1, SQLITE_PREPARE_PERSISTENT, &a->ins,
                                NULL) == SQLITE_OK;
    sqlite3_free(setup);
    if (!ok) {
        rec_aux_free(a);
        return NULL;
    }
    return a;
}

int rec_aux_worth(void)
{
    /* Test only (tests/cli_stream.sh): a cap on the twin's rows also
     * forces it on, whatever the load. */
    const char *cap = getenv("PIPESIM_TEST_AUX_ROWS");
    if (cap && *cap)
        return 1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double load;
    return cpus >= 2 && getloadavg(&load, 1) == 1 && load < (double)cpus - 1;
}

int rec_aux_attach(rec_db *db)
{
    if (sqlite3_db_readonly(db->db, AUX) >= 0)
        return PS_OK;
    return sqlite3_exec(db->db, "ATTACH ':memory:' AS " AUX, NULL, NULL,
                        NULL) == SQLITE_OK
               ? PS_OK
               : PS_ERR;
}

int rec_aux_begin(rec_aux *a)
{
    a->rows = 0;
    if (!sqlite3_get_autocommit(a->c))
        sqlite3_exec(a->c, "ROLLBACK", NULL, NULL, NULL);
    /* the last run's rows, if its image was not taken (a run that failed) */
    return sqlite3_exec(a->c, "DELETE FROM transfer_row; BEGIN", NULL, NULL,
                        NULL) == SQLITE_OK
               ? PS_OK
               : PS_ERR;
}

/* "PATH: run not recorded: why" from the twin's connection. */
static int aux_fail(const rec_db *db, sqlite3 *c, ps_err *err)
{
    return ps_errf(err, "%s: run not recorded: %s", db->path,
                   sqlite3_errmsg(c));
}

int rec_aux_insert(const rec_db *db, rec_aux *a, const rec_row *rows, int32_t n,
                   ps_err *err)
{
    a->scan.rows = rows;
    a->scan.n = n;
    a->scan.nulls = a->nulls;
    int rc = sqlite3_step(a->ins);
    sqlite3_reset(a->ins);
    a->scan.rows = NULL;
    a->scan.n = 0;
    if (rc != SQLITE_DONE)
        return aux_fail(db, a->c, err);
    a->rows += n;
    return PS_OK;
}

int rec_aux_move(rec_db *db, rec_aux *a, ps_err *err)
{
    if (sqlite3_exec(a->c, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return aux_fail(db, a->c, err);
    if (a->rows == 0)
        return PS_OK;
    sqlite3_int64 size = 0;
    unsigned char *img = sqlite3_serialize(a->c, "main", &size, 0);
    if (!img)
        return ps_errf(err, "%s: run not recorded: out of memory", db->path);
    /* the file's connection owns the copy from here (freed by the next
     * image or the close; freed at once when this fails); not READONLY:
     * the BEGIN IMMEDIATE of a later run takes the write lock of every
     * attached database, which a read-only one refuses */
    if (sqlite3_deserialize(db->db, AUX, img, size, size,
                            SQLITE_DESERIALIZE_FREEONCLOSE) != SQLITE_OK)
        return rec_sql_fail(db, "run not recorded", err);
    /* plain INSERT: SQLite copies records into a table that holds rows
     * only when the conflict mode is ABORT (OR FAIL would decode them) */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->db,
                           "INSERT INTO main.transfer_row "
                           "SELECT * FROM " AUX ".transfer_row",
                           -1, &st, NULL) != SQLITE_OK)
        return rec_sql_fail(db, "run not recorded", err);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) {
        rec_sql_fail(db, "run not recorded", err);
        db->rows_code = sqlite3_errcode(db->db);
        sqlite3_finalize(st);
        return PS_ERR;
    }
    sqlite3_finalize(st);
    rowbuf *rb = &db->rows[ROWS_TRANSFER];
    rb->count += sqlite3_changes64(db->db);
    rb->last = sqlite3_last_insert_rowid(db->db);
    return PS_OK;
}
