/* Copying runs from one pipesim database into another, with new run ids:
 * how a sweep's worker processes hand their runs to the one writer, and
 * what pipesim merge (out/merge.c) is made of. The source is ATTACHed to the
 * destination's connection, so rows move inside SQLite without being read
 * into C; every table with a `run` column is copied, column by column by
 * name, so a table or column the schema gains later is copied too. The
 * timeline tables have no run column: their rows are copied by the
 * rowid ranges span gives the runs, shifted past the destination's rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec/impl.h"

#define MAX_TABLES 32

struct rec_copy {
    rec_db *db;
    char alias[16];
    char *path;   /* the source's */
    unsigned had; /* its -wal and -shm before the attach (rec_sidecars) */
    int ntables;
    sqlite3_stmt *copy[MAX_TABLES]; /* [0] copies run rows */
    sqlite3_stmt *next_id;
    /* the timeline (rec/schema.c): per table the source range of the
     * runs, the destination's last rowid and the row copy; then the spans */
    sqlite3_stmt *range[3], *base[3], *rows[3], *span;
};

/* The timeline tables, copied by rowid range rather than by run; a
 * table of rec/schema.c without a run column is one of these or a kind
 * table (the same codes in every file of this schema version). */
static const char *const timeline[3] = {"event", "transfer", "memory"};

static int copied_otherwise(const char *name)
{
    /* and shard (rec/shard.c): a copy is no shard of the source's */
    static const char *const names[] = {
        "event_row",  "transfer_row",  "memory_row", "span",
        "event_kind", "transfer_kind", "shard"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return 0;
}

static int copy_fail(rec_copy *c, const char *what, ps_err *err)
{
    return ps_errf(err, "%s: %s: %s", c->db->path, what,
                   sqlite3_errmsg(c->db->db));
}

/* Appends to buf (capacity cap, length *len) the comma-separated columns
 * of main.table except skip; PS_ERR when they do not fit. */
static int columns(rec_db *db, const char *table, const char *skip, char *buf,
                   size_t cap, ps_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT name FROM pragma_table_info(?1, 'main')", -1,
                           &st, NULL) != SQLITE_OK)
        return rec_sql_fail(db, "cannot read the schema", err);
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    size_t len = 0;
    buf[0] = '\0';
    int rc = PS_OK;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (strcmp(name, skip) == 0)
            continue;
        int n = snprintf(buf + len, cap - len, ", \"%s\"", name);
        if (n < 0 || (size_t)n >= cap - len) {
            rc = ps_errf(err, "%s: table %s has too many columns", db->path,
                         table);
            break;
        }
        len += (size_t)n;
    }
    sqlite3_finalize(st);
    return rc;
}

static int prepare(rec_copy *c, const char *sql, sqlite3_stmt **st, ps_err *err)
{
    if (sqlite3_prepare_v2(c->db->db, sql, -1, st, NULL) != SQLITE_OK)
        return copy_fail(c, "cannot prepare the copy", err);
    return PS_OK;
}

/* A copy with path ATTACHed read-only under a fresh alias, or NULL (err
 * says why) with nothing attached: the source is only read, and its -wal
 * and -shm, when the attach makes them, are removed at the detach
 * (rec_copy_free). */
static rec_copy *attach_source(rec_db *db, const char *path, ps_err *err)
{
    static int serial;
    rec_copy *c = calloc(1, sizeof *c);
    if (!c) {
        ps_errf(err, "%s: out of memory", db->path);
        return NULL;
    }
    c->db = db;
    snprintf(c->alias, sizeof c->alias, "src%d", serial++ % 1000);
    int missing = rec_check_path(path, err);
    if (missing > 0)
        ps_errf(err, "%s: no such file", path);
    char *uri = missing ? NULL : rec_uri(path, "mode=ro");
    c->path = uri ? strdup(path) : NULL;
    if (!c->path) {
        if (!missing)
            ps_errf(err, "%s: out of memory", db->path);
        free(uri);
        free(c);
        return NULL;
    }
    c->had = rec_sidecars(path);
    sqlite3_stmt *st = NULL;
    char sql[64];
    snprintf(sql, sizeof sql, "ATTACH ?1 AS %s", c->alias);
    if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK) {
        copy_fail(c, "cannot attach", err);
        free(uri);
        free(c->path);
        free(c);
        return NULL;
    }
    sqlite3_bind_text(st, 1, uri, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    free(uri);
    if (rc != SQLITE_DONE) {
        ps_errf(err, "%s: cannot read it: %s", path, sqlite3_errmsg(db->db));
        rec_sidecars_tidy(c->path, c->had);
        free(c->path);
        free(c);
        return NULL;
    }
    return c;
}

/* Both sides at this schema version: the same tables and columns, which
 * is what copying column by column by name relies on. */
static int check_version(rec_copy *c, const char *path, ps_err *err)
{
    char sql[64];
    sqlite3_stmt *st = NULL;
    snprintf(sql, sizeof sql, "PRAGMA %s.user_version", c->alias);
    int version = -1;
    if (sqlite3_prepare_v2(c->db->db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (version != REC_SCHEMA_VERSION)
        return ps_errf(err, "%s: schema version %d, this pipesim writes %d",
                       path, version, REC_SCHEMA_VERSION);
    return PS_OK;
}

/* Prepares the copy of the tables that have a run column (all of
 * schema.c's but the timeline and kind tables), in the order of the
 * schema. A table that has none and is not known to be copied otherwise
 * is an error: silently leaving it out would lose its rows. */
static int prepare_run_tables(rec_copy *c, sqlite3_stmt *st, char *cols,
                              size_t ncols, ps_err *err)
{
    char sql[8192];
    while (sqlite3_step(st) == SQLITE_ROW) {
        char table[64];
        snprintf(table, sizeof table, "%s",
                 (const char *)sqlite3_column_text(st, 0));
        if (copied_otherwise(table))
            continue;
        if (sqlite3_column_int(st, 1) != 1)
            return ps_errf(err,
                           "%s: table %s has no run column: cannot copy it",
                           c->db->path, table);
        if (c->ntables == MAX_TABLES)
            return ps_errf(err, "%s: more than %d tables", c->db->path,
                           MAX_TABLES);
        if (columns(c->db, table, "run", cols, ncols, err))
            return PS_ERR;
        snprintf(sql, sizeof sql,
                 "INSERT INTO main.\"%s\"(run%s) SELECT run + ?1%s FROM "
                 "%s.\"%s\" WHERE run BETWEEN ?2 AND ?3 ORDER BY rowid",
                 table, cols, cols, c->alias, table);
        if (prepare(c, sql, &c->copy[c->ntables], err))
            return PS_ERR;
        c->ntables++;
    }
    return PS_OK;
}

/* The next run id, then the run rows first and every table that refers
 * to them. */
static int prepare_runs(rec_copy *c, ps_err *err)
{
    char sql[8192], cols[2048];
    snprintf(sql, sizeof sql,
             "SELECT max(coalesce((SELECT seq FROM main.sqlite_sequence "
             "WHERE name = 'run'), 0), coalesce((SELECT max(id) FROM "
             "main.run), 0)) + 1");
    if (prepare(c, sql, &c->next_id, err))
        return PS_ERR;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db->db,
                           "SELECT m.name, (SELECT count(*) FROM "
                           "pragma_table_info(m.name, 'main') WHERE name = "
                           "'run') FROM main.sqlite_master m WHERE type = "
                           "'table' AND name NOT LIKE 'sqlite_%' AND name <> "
                           "'run' ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK)
        return copy_fail(c, "cannot read the schema", err);
    int rc = columns(c->db, "run", "id", cols, sizeof cols, err);
    if (rc == PS_OK) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO main.run(id%s) SELECT id + ?1%s FROM %s.run "
                 "WHERE id BETWEEN ?2 AND ?3 ORDER BY id",
                 cols, cols, c->alias);
        rc = prepare(c, sql, &c->copy[0], err);
    }
    if (rc == PS_OK) {
        c->ntables = 1;
        rc = prepare_run_tables(c, st, cols, sizeof cols, err);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The timeline tables: the rows keep their rowid gaps, shifted past the
 * destination's last row, and each span shifts with them. */
static int prepare_timeline(rec_copy *c, ps_err *err)
{
    char sql[8192], cols[2048];
    for (int i = 0; i < 3; i++) {
        char table[32];
        snprintf(table, sizeof table, "%s_row", timeline[i]);
        if (columns(c->db, table, "", cols, sizeof cols, err))
            return PS_ERR;
        snprintf(sql, sizeof sql,
                 "SELECT min(%s_first), max(%s_last) FROM %s.span WHERE run "
                 "BETWEEN ?1 AND ?2",
                 timeline[i], timeline[i], c->alias);
        if (prepare(c, sql, &c->range[i], err))
            return PS_ERR;
        snprintf(sql, sizeof sql, "SELECT coalesce(max(rowid), 0) FROM main.%s",
                 table);
        if (prepare(c, sql, &c->base[i], err))
            return PS_ERR;
        snprintf(sql, sizeof sql,
                 "INSERT INTO main.%s(rowid%s) SELECT rowid + ?1%s FROM %s.%s "
                 "WHERE rowid BETWEEN ?2 AND ?3 ORDER BY rowid",
                 table, cols, cols, c->alias, table);
        if (prepare(c, sql, &c->rows[i], err))
            return PS_ERR;
    }
    snprintf(sql, sizeof sql,
             "INSERT INTO main.span(run, event_first, event_last, "
             "transfer_first, transfer_last, memory_first, memory_last) "
             "SELECT run + ?1, event_first + ?2, event_last + ?2, "
             "transfer_first + ?3, transfer_last + ?3, memory_first + ?4, "
             "memory_last + ?4 FROM %s.span WHERE run BETWEEN ?5 AND ?6 "
             "ORDER BY run",
             c->alias);
    return prepare(c, sql, &c->span, err);
}

rec_copy *rec_copy_attach(rec_db *db, const char *path, ps_err *err)
{
    rec_copy *c = attach_source(db, path, err);
    if (!c)
        return NULL;
    if (check_version(c, path, err) || prepare_runs(c, err) ||
        prepare_timeline(c, err)) {
        rec_copy_free(c);
        return NULL;
    }
    return c;
}

int rec_copy_runs(rec_copy *c, int64_t first, int64_t last, int64_t *offset,
                  ps_err *err)
{
    sqlite3_stmt *st = c->next_id;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_reset(st);
        return copy_fail(c, "cannot copy runs", err);
    }
    int64_t off = sqlite3_column_int64(st, 0) - first;
    sqlite3_reset(st);
    for (int i = 0; i < c->ntables; i++) {
        st = c->copy[i];
        sqlite3_bind_int64(st, 1, off);
        sqlite3_bind_int64(st, 2, first);
        sqlite3_bind_int64(st, 3, last);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return copy_fail(c, "cannot copy runs", err);
    }
    int64_t shift[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        st = c->range[i];
        sqlite3_bind_int64(st, 1, first);
        sqlite3_bind_int64(st, 2, last);
        int rc = sqlite3_step(st);
        int none =
            rc != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL;
        int64_t lo = none ? 0 : sqlite3_column_int64(st, 0);
        int64_t hi = none ? 0 : sqlite3_column_int64(st, 1);
        sqlite3_reset(st);
        if (rc != SQLITE_ROW)
            return copy_fail(c, "cannot copy runs", err);
        if (none)
            continue;
        st = c->base[i];
        rc = sqlite3_step(st);
        int64_t base = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_reset(st);
        if (rc != SQLITE_ROW)
            return copy_fail(c, "cannot copy runs", err);
        shift[i] = base + 1 - lo;
        st = c->rows[i];
        sqlite3_bind_int64(st, 1, shift[i]);
        sqlite3_bind_int64(st, 2, lo);
        sqlite3_bind_int64(st, 3, hi);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return copy_fail(c, "cannot copy runs", err);
    }
    st = c->span;
    sqlite3_bind_int64(st, 1, off);
    for (int i = 0; i < 3; i++)
        sqlite3_bind_int64(st, 2 + i, shift[i]);
    sqlite3_bind_int64(st, 5, first);
    sqlite3_bind_int64(st, 6, last);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return copy_fail(c, "cannot copy runs", err);
    *offset = off;
    return PS_OK;
}

void rec_copy_free(rec_copy *c)
{
    if (!c)
        return;
    for (int i = 0; i < MAX_TABLES; i++)
        sqlite3_finalize(c->copy[i]);
    sqlite3_finalize(c->next_id);
    for (int i = 0; i < 3; i++) {
        sqlite3_finalize(c->range[i]);
        sqlite3_finalize(c->base[i]);
        sqlite3_finalize(c->rows[i]);
    }
    sqlite3_finalize(c->span);
    char sql[64];
    snprintf(sql, sizeof sql, "DETACH %s", c->alias);
    sqlite3_exec(c->db->db, sql, NULL, NULL, NULL);
    rec_sidecars_tidy(c->path, c->had);
    free(c->path);
    free(c);
}

int rec_commit(rec_db *db, ps_err *err)
{
    if (sqlite3_exec(db->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
        return PS_OK;
    rec_sql_fail(db, "runs not recorded", err);
    sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
    return PS_ERR;
}

void rec_rollback(rec_db *db)
{
    if (!sqlite3_get_autocommit(db->db))
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
}
