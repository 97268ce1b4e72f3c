/* What a `pipesim run --shard K/N` records about itself (issue 27 item 6),
 * so that pipesim merge can tell a complete set of shards from a partial
 * one: one row per ps.sweep (and ps.search) of the process in table shard,
 * written when the sweep begins (committed at once, so that the file
 * exists even for a shard that gets no point) and marked finished when
 * the scenario has ended without an error. The table is made by the first
 * sharded run of a file (CREATE TABLE IF NOT EXISTS): files without
 * shards do not have it, so the schema's version and tables are those of
 * every other database; rec/copy.c does not copy it (a merged database is
 * not a shard). */
#include <stdio.h>
#include <string.h>

#include "rec/impl.h"

#define SHARD_TABLE_SQL                                                        \
    "CREATE TABLE IF NOT EXISTS shard(\n"                                      \
    "  id INTEGER PRIMARY KEY,\n"                                              \
    "  session TEXT NOT NULL,  -- one pipesim run process\n"                   \
    "  scenario TEXT,          -- run.scenario's version\n"                    \
    "  k INTEGER NOT NULL, n INTEGER NOT NULL,\n"                              \
    "  sweep TEXT,             -- the sweep's name (NULL: a ps.search)\n"      \
    "  points INTEGER,         -- the sweep's points, all shards together\n"   \
    "  points_hash TEXT,       -- fnv1a64 of their JSON, in order\n"           \
    "  host TEXT, pid INTEGER,\n"                                              \
    "  started TEXT NOT NULL,\n"                                               \
    "  finished TEXT)          -- NULL until the scenario ended without "      \
    "error\n"

static int step_insert(rec_db *db, const rec_shard *s, ps_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(
            db->db,
            "INSERT INTO shard(session, scenario, k, n, sweep, points, "
            "points_hash, host, pid, started) VALUES (?1, ?2, ?3, ?4, ?5, "
            "?6, ?7, ?8, ?9, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))",
            -1, &st, NULL) != SQLITE_OK)
        return rec_sql_fail(db, "cannot record the shard", err);
    sqlite3_bind_text(st, 1, s->session, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, s->scenario, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, s->k);
    sqlite3_bind_int(st, 4, s->n);
    if (s->sweep)
        sqlite3_bind_text(st, 5, s->sweep, -1, SQLITE_STATIC);
    if (s->points >= 0)
        sqlite3_bind_int64(st, 6, s->points);
    if (s->points_hash)
        sqlite3_bind_text(st, 7, s->points_hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, s->host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 9, s->pid);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? PS_OK
                             : rec_sql_fail(db, "cannot record the shard", err);
}

int rec_shard_begin(rec_db *db, const rec_shard *s, ps_err *err)
{
    /* the runs a batch holds first; a new file is published by it */
    if (rec_flush(db, err) || rec_exec_sql(db, "BEGIN IMMEDIATE", err))
        return PS_ERR;
    if (rec_exec_sql(db, SHARD_TABLE_SQL, err) || step_insert(db, s, err)) {
        rec_rollback(db);
        return PS_ERR;
    }
    return rec_commit(db, err);
}

int rec_shard_end(rec_db *db, const char *session, ps_err *err)
{
    if (rec_flush(db, err) || rec_reopen(db, err))
        return PS_ERR;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->db,
                           "UPDATE shard SET finished = strftime('%Y-%m-%dT%H:"
                           "%M:%SZ', 'now') WHERE session = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return rec_sql_fail(db, "cannot record the shard's end", err);
    sqlite3_bind_text(st, 1, session, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE
               ? PS_OK
               : rec_sql_fail(db, "cannot record the shard's end", err);
}
