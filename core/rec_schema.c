/* The recorder's schema: the tables and views a new database gets, the
 * in-place migrations from older versions, and the checks a writer makes
 * before it trusts a file (rec_schema_prepare). The write path is in
 * rec.c, the read API in rec_read.c. */
#include <stdio.h>

#include "rec_impl.h"

/* Per-run tables carry an index on run: reports and the views always
 * select one run, and run ids only grow, so each index insert appends at
 * the right edge of its b-tree. Measured with tests/bench/rec_speed.c (1F1B,
 * p = 64, m = 1024, 391k rows): 0.19 s without the indexes, 0.28 s with
 * them, so they are created with the schema rather than lazily. */
static const char schema_sql[] =
    "CREATE TABLE run(\n"
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  kind TEXT NOT NULL CHECK (kind IN ('pipeline', 'collective')),\n"
    "  name TEXT NOT NULL,\n"
    "  schedule TEXT,\n"
    "  stages INTEGER, microbatches INTEGER, virtual_stages INTEGER,\n"
    "  dp INTEGER,\n"
    "  makespan REAL, bubble REAL, closed_form_bubble REAL,\n"
    "  imbalance REAL, peak_memory REAL,\n"
    "  p2p TEXT, params TEXT,\n"
    "  status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),\n"
    "  error TEXT,\n"
    "  created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', "
    "'now')),\n"
    "  fits INTEGER CHECK (fits IN (0, 1)),\n"
    "  tp INTEGER, sequence_parallel INTEGER, recompute TEXT,\n"
    "  sweep TEXT, point TEXT, point_index INTEGER, tags TEXT, model TEXT,\n"
    "  seq_length INTEGER, micro_batch INTEGER, global_batch INTEGER,\n"
    "  scenario TEXT);\n"
    "CREATE TABLE event(\n"
    "  run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,\n"
    "  rank INTEGER NOT NULL, kind TEXT NOT NULL,\n"
    "  stage INTEGER, chunk INTEGER, mb INTEGER,\n"
    "  t_start REAL NOT NULL, t_end REAL NOT NULL);\n"
    "CREATE INDEX event_run ON event(run);\n"
    "CREATE TABLE transfer(\n"
    "  run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,\n"
    "  src INTEGER NOT NULL, dst INTEGER NOT NULL, bytes REAL NOT NULL,\n"
    "  t_start REAL NOT NULL, t_end REAL NOT NULL, kind TEXT NOT NULL,\n"
    "  mb INTEGER, tag INTEGER);\n"
    "CREATE INDEX transfer_run ON transfer(run);\n"
    "CREATE TABLE memory(\n"
    "  run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,\n"
    "  rank INTEGER NOT NULL, t REAL NOT NULL, bytes REAL NOT NULL);\n"
    "CREATE INDEX memory_run ON memory(run);\n"
    "CREATE TABLE stage(\n"
    "  run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,\n"
    "  stage INTEGER NOT NULL, rank INTEGER, chunk INTEGER,\n"
    "  first_layer INTEGER, last_layer INTEGER, fwd_flops REAL,\n"
    "  params REAL, fwd_time REAL, bwd_time REAL, act_bytes REAL,\n"
    "  out_bytes REAL, exposed_comm REAL, tp_comm REAL, tp_exposed REAL,\n"
    "  PRIMARY KEY (run, stage));\n"
    "CREATE TABLE rank_stat(\n"
    "  run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,\n"
    "  rank INTEGER NOT NULL, busy REAL, bubble REAL,\n"
    "  static_memory REAL, peak_memory REAL, t_peak REAL,\n"
    "  exposed_comm REAL, capacity REAL,\n"
    "  fits INTEGER CHECK (fits IN (0, 1)), tp_comm REAL, tp_exposed REAL,\n"
    "  PRIMARY KEY (run, rank));\n"
    "CREATE TABLE collective(\n"
    "  run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,\n"
    "  op TEXT NOT NULL, algorithm TEXT NOT NULL, ranks INTEGER,\n"
    "  bytes REAL, time REAL, algbw REAL, busbw REAL, protocol TEXT);\n"
    "CREATE INDEX collective_run ON collective(run);\n"
    "CREATE TABLE link(\n"
    "  run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,\n"
    "  src INTEGER NOT NULL, dst INTEGER NOT NULL, bandwidth REAL,\n"
    "  latency REAL, bytes REAL, busy REAL);\n"
    "CREATE INDEX link_run ON link(run);\n"
    /* rank_stat is written at every level, so the views work for summary
     * runs too; the fraction is the front end's own figure, not
     * recomputed here, so that the view and ps.run agree bit for bit */
    "CREATE VIEW bubble(run, rank, busy, makespan, fraction) AS\n"
    "  SELECT s.run, s.rank, s.busy, r.makespan, s.bubble\n"
    "  FROM rank_stat s JOIN run r ON r.id = s.run;\n"
    "CREATE VIEW memory_peak(run, rank, peak, t_peak) AS\n"
    "  SELECT run, rank, peak_memory, t_peak FROM rank_stat;\n";

/* Version 1 -> 2: the memory verdicts, appended as CREATE TABLE above
 * has them last, so an upgraded file and a new one have the same columns
 * in the same order. Old runs keep NULL (unknown). */
static const char migrate_v2_sql[] =
    "ALTER TABLE run ADD COLUMN fits INTEGER CHECK (fits IN (0, 1));\n"
    "ALTER TABLE rank_stat ADD COLUMN capacity REAL;\n"
    "ALTER TABLE rank_stat ADD COLUMN fits INTEGER CHECK (fits IN (0, 1));\n"
    "PRAGMA user_version = 2;\n";

/* Version 2 -> 3: the tensor-parallel layout of a run (NULL for old runs
 * and for collectives), appended last as CREATE TABLE has it. */
static const char migrate_v3_sql[] =
    "ALTER TABLE run ADD COLUMN tp INTEGER;\n"
    "ALTER TABLE run ADD COLUMN sequence_parallel INTEGER;\n"
    "ALTER TABLE run ADD COLUMN recompute TEXT;\n"
    "PRAGMA user_version = 3;\n";

/* Version 3 -> 4: the tensor-parallel communication per stage and rank
 * (NULL for old runs), the last columns in both forms (CREATE TABLE lists
 * them before its PRIMARY KEY clause, which is not a column). */
static const char migrate_v4_sql[] =
    "ALTER TABLE stage ADD COLUMN tp_comm REAL;\n"
    "ALTER TABLE stage ADD COLUMN tp_exposed REAL;\n"
    "ALTER TABLE rank_stat ADD COLUMN tp_comm REAL;\n"
    "ALTER TABLE rank_stat ADD COLUMN tp_exposed REAL;\n"
    "PRAGMA user_version = 4;\n";

/* Version 4 -> 5: a run's sweep, point and tags, its model's name and
 * batch shape, and the scenario version (NULL for old runs), appended
 * last as CREATE TABLE has them. */
static const char migrate_v5_sql[] =
    "ALTER TABLE run ADD COLUMN sweep TEXT;\n"
    "ALTER TABLE run ADD COLUMN point TEXT;\n"
    "ALTER TABLE run ADD COLUMN point_index INTEGER;\n"
    "ALTER TABLE run ADD COLUMN tags TEXT;\n"
    "ALTER TABLE run ADD COLUMN model TEXT;\n"
    "ALTER TABLE run ADD COLUMN seq_length INTEGER;\n"
    "ALTER TABLE run ADD COLUMN micro_batch INTEGER;\n"
    "ALTER TABLE run ADD COLUMN global_batch INTEGER;\n"
    "ALTER TABLE run ADD COLUMN scenario TEXT;\n"
    "PRAGMA user_version = 5;\n";

/* Version 5 -> 6: the NCCL protocol a collective ran with (NULL for old
 * runs), appended last as CREATE TABLE has it. */
static const char migrate_v6_sql[] =
    "ALTER TABLE collective ADD COLUMN protocol TEXT;\n"
    "PRAGMA user_version = 6;\n";

static const char *const table_names[] = {
    "run",   "event",     "transfer",   "memory",
    "stage", "rank_stat", "collective", "link",
};
_Static_assert(sizeof table_names / sizeof table_names[0] == REC_NTABLES,
               "REC_NTABLES (rec_impl.h) counts the tables");

/* user_version and the number of pipesim tables present; fails when the
 * file is not SQLite at all. */
int rec_inspect(rec_db *db, int *version, int *tables, int *objects,
                ps_err *err)
{
    sqlite3_stmt *st = NULL;
    static const char sql[] =
        "SELECT (SELECT user_version FROM pragma_user_version), "
        "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name "
        "IN ('run', 'event', 'transfer', 'memory', 'stage', 'rank_stat', "
        "'collective', 'link')), (SELECT count(*) FROM sqlite_master)";
    if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        int code = sqlite3_errcode(db->db) & 0xff;
        int rc = code == SQLITE_NOTADB
                     ? ps_errf(err, "%s: not a pipesim database (%s)", db->path,
                               sqlite3_errmsg(db->db))
                     : rec_sql_fail(db, "cannot read", err);
        sqlite3_finalize(st);
        return rc;
    }
    *version = sqlite3_column_int(st, 0);
    *tables = sqlite3_column_int(st, 1);
    *objects = sqlite3_column_int(st, 2);
    sqlite3_finalize(st);
    return PS_OK;
}

/* The file's user_version alone, from its header: no schema parse. */
static int read_version(rec_db *db, int *version, ps_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->db, "PRAGMA user_version", -1, &st, NULL) !=
            SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        int code = sqlite3_errcode(db->db) & 0xff;
        int rc = code == SQLITE_NOTADB
                     ? ps_errf(err, "%s: not a pipesim database (%s)", db->path,
                               sqlite3_errmsg(db->db))
                     : rec_sql_fail(db, "cannot read", err);
        sqlite3_finalize(st);
        return rc;
    }
    *version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return PS_OK;
}

/* WAL with synchronous=NORMAL: a commit is an append to the log with no
 * fsync. A killed process loses nothing it committed (the log is in the
 * OS's page cache, and the next opener replays it); on power loss or an OS
 * crash the database stays consistent but the last commits may be lost.
 * Readers and the writer do not block each other. On a file already in
 * WAL mode both are no-ops that read the header. */
static int set_journal(rec_db *db, ps_err *err)
{
    return rec_exec_sql(db, "PRAGMA journal_mode = WAL", err) ||
                   rec_exec_sql(db, "PRAGMA synchronous = NORMAL", err)
               ? PS_ERR
               : PS_OK;
}

int rec_schema_prepare(rec_db *db, ps_err *err)
{
    const char *path = db->path;
    int version = 0, tables = 0, objects = 0;
    /* The common case, a file this pipesim made: the header's version is
     * the whole check (a file whose tables were dropped behind its back
     * fails at the first INSERT with SQLite's "no such table"), so a run
     * in a new process parses the schema once, for its first INSERT. */
    if (read_version(db, &version, err))
        return PS_ERR;
    if (version == REC_SCHEMA_VERSION)
        return set_journal(db, err);
    if (rec_inspect(db, &version, &tables, &objects, err))
        return PS_ERR;
    if (version == 0 && objects > 0) {
        ps_errf(err, "%s: not a pipesim database", path);
        return PS_ERR;
    }
    if (version != 0 && version != 1 && version != 2 && version != 3 &&
        version != 4 && version != 5 && version != REC_SCHEMA_VERSION) {
        ps_errf(err, "%s: schema version %d, this pipesim writes %d", path,
                version, REC_SCHEMA_VERSION);
        return PS_ERR;
    }
    if (version != 0 && tables != REC_NTABLES) {
        ps_errf(err, "%s: not a pipesim database (tables missing)", path);
        return PS_ERR;
    }
    if (set_journal(db, err))
        return PS_ERR;
    if (version == 0) {
        /* An empty file: create the schema atomically, so that a second
         * process opening the same new file sees all of it or none. */
        char ver[64];
        snprintf(ver, sizeof ver, "PRAGMA user_version = %d",
                 REC_SCHEMA_VERSION);
        if (rec_exec_sql(db, "BEGIN IMMEDIATE", err))
            return PS_ERR;
        if (rec_inspect(db, &version, &tables, &objects, err))
            return PS_ERR;
        if (version == 0 &&
            (rec_exec_sql(db, schema_sql, err) || rec_exec_sql(db, ver, err))) {
            sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
            return PS_ERR;
        }
        if (rec_exec_sql(db, "COMMIT", err))
            return PS_ERR;
    }
    if (version >= 1 && version < REC_SCHEMA_VERSION) {
        /* upgrade in place, once: a second writer that waited for the lock
         * finds the current version and does nothing */
        if (rec_exec_sql(db, "BEGIN IMMEDIATE", err))
            return PS_ERR;
        if (rec_inspect(db, &version, &tables, &objects, err)) {
            sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
            return PS_ERR;
        }
        if ((version == 1 && rec_exec_sql(db, migrate_v2_sql, err)) ||
            (version >= 1 && version <= 2 &&
             rec_exec_sql(db, migrate_v3_sql, err)) ||
            (version >= 1 && version <= 3 &&
             rec_exec_sql(db, migrate_v4_sql, err)) ||
            (version >= 1 && version <= 4 &&
             rec_exec_sql(db, migrate_v5_sql, err)) ||
            (version >= 1 && version <= 5 &&
             rec_exec_sql(db, migrate_v6_sql, err))) {
            sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
            return PS_ERR;
        }
        if (rec_exec_sql(db, "COMMIT", err))
            return PS_ERR;
    }
    return PS_OK;
}
