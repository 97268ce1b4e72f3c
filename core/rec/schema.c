/* The recorder's schema: the tables and views a new database gets, the
 * in-place migrations from older versions, and the checks a writer makes
 * before it trusts a file (rec_schema_prepare). The write path is in
 * rec/rec.c, the read API in rec/read.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/embed.h"
#include "rec/impl.h"

/* The timeline (issue 12): rows go into event_row, transfer_row and
 * memory_row, which carry no run column and no index; span holds each
 * events-level run's rowid range in each of them (a run's rows are
 * inserted together, inside its transaction, so the range is contiguous),
 * and the kind columns hold the codes of event_kind and transfer_kind.
 * The views event, transfer and memory give the readable rows they
 * replace (same columns, kind names as text, plus rowid: the row's id in
 * its table, recording order), and WHERE run = ? on them is a primary-key
 * lookup of span and a rowid range scan. Their INSTEAD OF triggers keep
 * INSERT, UPDATE and DELETE working for scripts (an INSERT appends to the
 * run's range and refuses a run whose range is not the table's last).
 * Measured with tests/bench/rec_bench.c (1F1B p = 64, m = 1024, 391k
 * rows): see BENCHMARKS.md. */
#define KIND_CODE(tbl, v)                                                      \
    "coalesce((SELECT code FROM " tbl "_kind WHERE name = " v "), " v ")"
#define APPEND_CHECK(tbl)                                                      \
    "  SELECT RAISE(ABORT, '" tbl ": the rows of a run go in together, "       \
    "after those of every other run') WHERE EXISTS (SELECT 1 FROM span "       \
    "WHERE run = NEW.run AND " tbl "_last IS NOT NULL AND " tbl                \
    "_last IS NOT (SELECT max(rowid) FROM " tbl "_row));\n"
#define SPAN_EXTEND(tbl)                                                       \
    "  INSERT INTO span(run, " tbl "_first, " tbl "_last) VALUES (NEW.run, "   \
    "last_insert_rowid(), last_insert_rowid()) ON CONFLICT(run) DO UPDATE "    \
    "SET " tbl "_first = coalesce(" tbl "_first, excluded." tbl                \
    "_first), " tbl "_last = excluded." tbl "_last;\n"
#define MOVE_CHECK(tbl)                                                        \
    "  SELECT RAISE(ABORT, '" tbl ": a row cannot change its run or rowid') "  \
    "WHERE NEW.run IS NOT OLD.run OR NEW.rowid IS NOT OLD.rowid;\n"

#define TIMELINE_TABLES_SQL                                                    \
    "CREATE TABLE event_kind(code INTEGER PRIMARY KEY,\n"                      \
    "  name TEXT NOT NULL UNIQUE);\n"                                          \
    "CREATE TABLE transfer_kind(code INTEGER PRIMARY KEY,\n"                   \
    "  name TEXT NOT NULL UNIQUE);\n"                                          \
    "CREATE TABLE span(\n"                                                     \
    "  run INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,\n"        \
    "  event_first INTEGER, event_last INTEGER,\n"                             \
    "  transfer_first INTEGER, transfer_last INTEGER,\n"                       \
    "  memory_first INTEGER, memory_last INTEGER);\n"                          \
    "CREATE TABLE event_row(\n"                                                \
    "  rank INTEGER NOT NULL, kind INTEGER NOT NULL,\n"                        \
    "  stage INTEGER, chunk INTEGER, mb INTEGER,\n"                            \
    "  t_start REAL NOT NULL, t_end REAL NOT NULL);\n"                         \
    "CREATE TABLE transfer_row(\n"                                             \
    "  src INTEGER NOT NULL, dst INTEGER NOT NULL, bytes REAL NOT NULL,\n"     \
    "  t_start REAL NOT NULL, t_end REAL NOT NULL, kind INTEGER NOT NULL,\n"   \
    "  mb INTEGER, tag INTEGER);\n"                                            \
    "CREATE TABLE memory_row(\n"                                               \
    "  rank INTEGER NOT NULL, t REAL NOT NULL, bytes REAL NOT NULL);\n"        \
    "INSERT INTO event_kind VALUES (0, 'F'), (1, 'B'), (2, 'W'), (3, 'R'),\n"  \
    "  (4, 'OPT'), (5, 'COLL');\n"                                             \
    "INSERT INTO transfer_kind VALUES (0, 'act'), (1, 'grad'), (2, 'coll');\n"

#define EVENT_VIEW_SQL                                                                                                                   \
    "CREATE VIEW event(run, rank, kind, stage, chunk, mb, t_start, t_end,\n"                                                             \
    "  rowid) AS\n"                                                                                                                      \
    "  SELECT s.run, e.rank, coalesce(k.name, e.kind), e.stage, e.chunk,\n"                                                              \
    "    e.mb, e.t_start, e.t_end, e.rowid\n"                                                                                            \
    "  FROM span s CROSS JOIN event_row e\n"                                                                                             \
    "    ON e.rowid BETWEEN s.event_first AND s.event_last\n"                                                                            \
    "  LEFT JOIN event_kind k ON k.code = e.kind;\n"                                                                                     \
    "CREATE TRIGGER event_insert INSTEAD OF INSERT ON event "                                                                            \
    "BEGIN\n" APPEND_CHECK(                                                                                                              \
        "event") "  INSERT INTO event_row(rank, kind, stage, chunk, mb, "                                                                \
                 "t_start, t_end)\n"                                                                                                     \
                 "  VALUES (NEW.rank, " KIND_CODE(                                                                                       \
                     "event",                                                                                                            \
                     "NEW.kind") ", NEW.stage,\n"                                                                                        \
                                 "    NEW.chunk, NEW.mb, NEW.t_start, "                                                                  \
                                 "NEW.t_end);\n" SPAN_EXTEND(                                                                            \
                                     "event") "END;\n"                                                                                   \
                                              "CREATE TRIGGER event_update "                                                             \
                                              "INSTEAD OF UPDATE ON event "                                                              \
                                              "BEGIN\n" MOVE_CHECK("event") "  UPDATE event_row SET rank = NEW.rank, kind = " KIND_CODE( \
                                                  "event",                                                                               \
                                                  "NEW.kind") ", stage = "                                                               \
                                                              "NEW.stage, "                                                              \
                                                              "chunk = "                                                                 \
                                                              "NEW.chunk, mb "                                                           \
                                                              "= NEW.mb, "                                                               \
                                                              "t_start = "                                                               \
                                                              "NEW.t_start, "                                                            \
                                                              "t_end = "                                                                 \
                                                              "NEW.t_end\n"                                                              \
                                                              "  WHERE rowid "                                                           \
                                                              "= OLD.rowid;\n"                                                           \
                                                              "END;\n"                                                                   \
                                                              "CREATE "                                                                  \
                                                              "TRIGGER "                                                                 \
                                                              "event_delete "                                                            \
                                                              "INSTEAD OF "                                                              \
                                                              "DELETE ON "                                                               \
                                                              "event BEGIN\n"                                                            \
                                                              "  DELETE FROM "                                                           \
                                                              "event_row "                                                               \
                                                              "WHERE rowid = "                                                           \
                                                              "OLD.rowid;\n"                                                             \
                                                              "END;\n"

#define TRANSFER_VIEW_SQL                                                                                                                                                \
    "CREATE VIEW transfer(run, src, dst, bytes, t_start, t_end, kind, mb,\n"                                                                                             \
    "  tag, rowid) AS\n"                                                                                                                                                 \
    "  SELECT s.run, x.src, x.dst, x.bytes, x.t_start, x.t_end,\n"                                                                                                       \
    "    coalesce(k.name, x.kind), x.mb, x.tag, x.rowid\n"                                                                                                               \
    "  FROM span s CROSS JOIN transfer_row x\n"                                                                                                                          \
    "    ON x.rowid BETWEEN s.transfer_first AND s.transfer_last\n"                                                                                                      \
    "  LEFT JOIN transfer_kind k ON k.code = x.kind;\n"                                                                                                                  \
    "CREATE TRIGGER transfer_insert INSTEAD OF INSERT ON transfer "                                                                                                      \
    "BEGIN\n" APPEND_CHECK(                                                                                                                                              \
        "transfer") "  INSERT INTO transfer_row(src, dst, "                                                                                                              \
                    "bytes, t_start, t_end, kind, mb,\n"                                                                                                                 \
                    "    tag) VALUES (NEW.src, NEW.dst, "                                                                                                                \
                    "NEW.bytes, NEW.t_start, NEW.t_end,\n"                                                                                                               \
                    "    " KIND_CODE(                                                                                                                                    \
                        "transfer",                                                                                                                                      \
                        "NEW."                                                                                                                                           \
                        "kind") ", NEW.mb, NEW.tag);\n" SPAN_EXTEND("transfe"                                                                                            \
                                                                    "r") "END"                                                                                           \
                                                                         ";\n"                                                                                           \
                                                                         "CRE"                                                                                           \
                                                                         "ATE"                                                                                           \
                                                                         " TR"                                                                                           \
                                                                         "IGG"                                                                                           \
                                                                         "ER "                                                                                           \
                                                                         "tra"                                                                                           \
                                                                         "nsf"                                                                                           \
                                                                         "er_"                                                                                           \
                                                                         "upd"                                                                                           \
                                                                         "ate"                                                                                           \
                                                                         " "                                                                                             \
                                                                         "INS"                                                                                           \
                                                                         "TEA"                                                                                           \
                                                                         "D "                                                                                            \
                                                                         "OF "                                                                                           \
                                                                         "UPD"                                                                                           \
                                                                         "ATE"                                                                                           \
                                                                         " ON"                                                                                           \
                                                                         " "                                                                                             \
                                                                         "tra"                                                                                           \
                                                                         "nsf"                                                                                           \
                                                                         "er "                                                                                           \
                                                                         "BEG"                                                                                           \
                                                                         "IN"                                                                                            \
                                                                         "\n" MOVE_CHECK(                                                                                \
                                                                             "transfer") "  "                                                                            \
                                                                                         "UPDAT"                                                                         \
                                                                                         "E "                                                                            \
                                                                                         "trans"                                                                         \
                                                                                         "fer_"                                                                          \
                                                                                         "row "                                                                          \
                                                                                         "SET "                                                                          \
                                                                                         "src "                                                                          \
                                                                                         "= "                                                                            \
                                                                                         "NEW."                                                                          \
                                                                                         "src, "                                                                         \
                                                                                         "dst "                                                                          \
                                                                                         "= "                                                                            \
                                                                                         "NEW."                                                                          \
                                                                                         "dst, "                                                                         \
                                                                                         "bytes"                                                                         \
                                                                                         " = "                                                                           \
                                                                                         "NEW."                                                                          \
                                                                                         "bytes"                                                                         \
                                                                                         ", "                                                                            \
                                                                                         "t_"                                                                            \
                                                                                         "start"                                                                         \
                                                                                         " = "                                                                           \
                                                                                         "NEW."                                                                          \
                                                                                         "t_"                                                                            \
                                                                                         "start"                                                                         \
                                                                                         ", "                                                                            \
                                                                                         "t_"                                                                            \
                                                                                         "end "                                                                          \
                                                                                         "= "                                                                            \
                                                                                         "NEW."                                                                          \
                                                                                         "t_"                                                                            \
                                                                                         "end, "                                                                         \
                                                                                         "kind "                                                                         \
                                                                                         "="                                                                             \
                                                                                         " " KIND_CODE(                                                                  \
                                                                                             "t"                                                                         \
                                                                                             "r"                                                                         \
                                                                                             "a"                                                                         \
                                                                                             "n"                                                                         \
                                                                                             "s"                                                                         \
                                                                                             "f"                                                                         \
                                                                                             "e"                                                                         \
                                                                                             "r",                                                                        \
                                                                                             "N"                                                                         \
                                                                                             "E"                                                                         \
                                                                                             "W"                                                                         \
                                                                                             "."                                                                         \
                                                                                             "k"                                                                         \
                                                                                             "i"                                                                         \
                                                                                             "n"                                                                         \
                                                                                             "d") ", mb = NEW.mb, tag = NEW.tag\n"                                       \
                                                                                                  "  WHERE rowid = OLD.rowid;\n"                                         \
                                                                                                  "END;\n"                                                               \
                                                                                                  "CREATE TRIGGER transfer_delete INSTEAD OF DELETE ON transfer BEGIN\n" \
                                                                                                  "  DELETE FROM transfer_row WHERE rowid = OLD.rowid;\n"                \
                                                                                                  "END;\n"

#define MEMORY_VIEW_SQL                                                        \
    "CREATE VIEW memory(run, rank, t, bytes, rowid) AS\n"                      \
    "  SELECT s.run, m.rank, m.t, m.bytes, m.rowid\n"                          \
    "  FROM span s CROSS JOIN memory_row m\n"                                  \
    "    ON m.rowid BETWEEN s.memory_first AND s.memory_last;\n"               \
    "CREATE TRIGGER memory_insert INSTEAD OF INSERT ON memory "                \
    "BEGIN\n" APPEND_CHECK(                                                    \
        "memory") "  INSERT INTO memory_row(rank, t, bytes)\n"                 \
                  "  VALUES (NEW.rank, NEW.t, NEW.bytes);\n" SPAN_EXTEND(      \
                      "memory") "END;\n"                                       \
                                "CREATE TRIGGER memory_update INSTEAD OF "     \
                                "UPDATE ON memory BEGIN\n" MOVE_CHECK(         \
                                    "memory") "  UPDATE memory_row SET rank "  \
                                              "= NEW.rank, t = NEW.t, bytes "  \
                                              "= NEW.bytes\n"                  \
                                              "  WHERE rowid = OLD.rowid;\n"   \
                                              "END;\n"                         \
                                              "CREATE TRIGGER memory_delete "  \
                                              "INSTEAD OF DELETE ON memory "   \
                                              "BEGIN\n"                        \
                                              "  DELETE FROM memory_row "      \
                                              "WHERE rowid = OLD.rowid;\n"     \
                                              "END;\n"

/* What each simulated rank stands for (version 8): one row per cluster
 * rank of a pipeline run's layout, at the events level. */
#define RANK_MEMBER_SQL                                                        \
    "CREATE TABLE rank_member(\n"                                              \
    "  run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,\n"           \
    "  rank INTEGER NOT NULL, member INTEGER NOT NULL,\n"                      \
    "  tp INTEGER, cp INTEGER, dp INTEGER, pp INTEGER,\n"                      \
    "  PRIMARY KEY (run, member));\n"

/* The small per-run tables carry an index on run (reports and the views
 * select one run, and run ids only grow, so each index insert appends at
 * the right edge of its b-tree); the timeline has its spans instead. */
static const char schema_head_sql[] =
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
    "  scenario TEXT,\n"
    "  model_flops REAL, hardware_flops REAL, tokens REAL, gpus INTEGER,\n"
    "  peak_flops REAL, precision TEXT, model_tflops_per_gpu REAL, mfu REAL,\n"
    "  hardware_tflops_per_gpu REAL, tokens_per_s_per_gpu REAL,\n"
    "  efficiency_note TEXT,\n"
    "  backend TEXT NOT NULL DEFAULT 'sim' CHECK (backend IN ('sim', 'tcp')),\n"
    "  simulated REAL,\n"
    "  folded INTEGER CHECK (folded IN (0, 1)));\n" TIMELINE_TABLES_SQL;

static const char schema_tail_sql[] =
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
    "CREATE INDEX link_run ON link(run);\n" RANK_MEMBER_SQL
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

/* Version 6 -> 7: the timeline in rowid spans (TIMELINE_TABLES_SQL):
 * the rows of event, transfer and memory are copied run by run, in their
 * recording order, so each run's rows get one contiguous range, then the
 * tables (and their run indexes) give way to the views of the same names.
 * Kinds an older file holds that the kind tables lack stay as text. */
#define SPAN_OF(tbl)                                                           \
    "INSERT INTO span(run, " tbl "_first, " tbl "_last)\n"                     \
    "  SELECT run, min(n), max(n) FROM (SELECT run, row_number() OVER\n"       \
    "  (ORDER BY run, rowid) AS n FROM " tbl ") WHERE true GROUP BY run\n"     \
    "  ON CONFLICT(run) DO UPDATE SET " tbl "_first = excluded." tbl           \
    "_first, " tbl "_last = excluded." tbl "_last;\n"
/* clang-format off */
static const char migrate_v7_sql[] =
    TIMELINE_TABLES_SQL
    "INSERT INTO event_row(rank, kind, stage, chunk, mb, t_start, t_end)\n"
    "  SELECT rank, " KIND_CODE("event", "event.kind") ", stage, chunk,\n"
    "  mb, t_start, t_end FROM event ORDER BY run, rowid;\n"
    SPAN_OF("event")
    "INSERT INTO transfer_row(src, dst, bytes, t_start, t_end, kind, mb,\n"
    "  tag) SELECT src, dst, bytes, t_start, t_end, "
    KIND_CODE("transfer", "transfer.kind") ", mb, tag\n"
    "  FROM transfer ORDER BY run, rowid;\n"
    SPAN_OF("transfer")
    "INSERT INTO memory_row(rank, t, bytes)\n"
    "  SELECT rank, t, bytes FROM memory ORDER BY run, rowid;\n"
    SPAN_OF("memory")
    "DROP TABLE event;\n"
    "DROP TABLE transfer;\n"
    "DROP TABLE memory;\n";
/* clang-format on */

/* Version 7 -> 8: a training step's efficiency figures (issue 27 item 16,
 * rec/rec.h; NULL for old runs and for collectives), appended last as
 * CREATE TABLE has them. */
static const char migrate_v8_sql[] =
    "ALTER TABLE run ADD COLUMN model_flops REAL;\n"
    "ALTER TABLE run ADD COLUMN hardware_flops REAL;\n"
    "ALTER TABLE run ADD COLUMN tokens REAL;\n"
    "ALTER TABLE run ADD COLUMN gpus INTEGER;\n"
    "ALTER TABLE run ADD COLUMN peak_flops REAL;\n"
    "ALTER TABLE run ADD COLUMN precision TEXT;\n"
    "ALTER TABLE run ADD COLUMN model_tflops_per_gpu REAL;\n"
    "ALTER TABLE run ADD COLUMN mfu REAL;\n"
    "ALTER TABLE run ADD COLUMN hardware_tflops_per_gpu REAL;\n"
    "ALTER TABLE run ADD COLUMN tokens_per_s_per_gpu REAL;\n"
    "ALTER TABLE run ADD COLUMN efficiency_note TEXT;\n"
    "PRAGMA user_version = 8;\n";

/* Version 9 -> 10: which executor ran the run (issue 25: 'tcp' for live
 * mode, 'sim' for every older run) and, for a live run, the simulated
 * twin's makespan beside the measured one; appended last as CREATE TABLE
 * has them. */
static const char migrate_v10_sql[] =
    "ALTER TABLE run ADD COLUMN backend TEXT NOT NULL DEFAULT 'sim' "
    "CHECK (backend IN ('sim', 'tcp'));\n"
    "ALTER TABLE run ADD COLUMN simulated REAL;\n"
    "PRAGMA user_version = 10;\n";

/* Version 10 -> 11: whether the engine folded identical replicas
 * (issue 28, par/fold.h); old runs keep NULL. */
static const char migrate_v11_sql[] =
    "ALTER TABLE run ADD COLUMN folded INTEGER CHECK (folded IN (0, 1));\n"
    "PRAGMA user_version = 11;\n";

/* A new file's schema and the version 7 upgrade, each run in order (C
 * caps one string literal at 4095 bytes). */
static const char *const schema_sql[] = {
    schema_head_sql, EVENT_VIEW_SQL,  TRANSFER_VIEW_SQL,
    MEMORY_VIEW_SQL, schema_tail_sql, NULL,
};
/* Version 8 -> 9: the rank_member table (what a simulated rank stands
 * for, core/par/sim.h); old runs have none. */
static const char migrate_v9_sql[] =
    RANK_MEMBER_SQL "PRAGMA user_version = 9;\n";

static const char *const upgrade_v7_sql[] = {
    migrate_v7_sql,
    EVENT_VIEW_SQL,
    TRANSFER_VIEW_SQL,
    MEMORY_VIEW_SQL,
    "PRAGMA user_version = 7",
    NULL,
};

static int exec_all(rec_db *db, const char *const *sql, ps_err *err)
{
    for (; *sql; sql++)
        if (rec_exec_conn(db, *sql, err))
            return PS_ERR;
    return PS_OK;
}

static const char *const table_names[] = {
    "run",       "event",      "transfer", "memory",      "stage",
    "rank_stat", "collective", "link",     "rank_member",
};
_Static_assert(sizeof table_names / sizeof table_names[0] == REC_NTABLES,
               "REC_NTABLES (rec/impl.h) counts the tables");

/* user_version and the number of pipesim tables present; fails when the
 * file is not SQLite at all. */
int rec_inspect(rec_db *db, int *version, int *tables, int *objects,
                ps_err *err)
{
    sqlite3_stmt *st = NULL;
    static const char sql[] =
        "SELECT (SELECT user_version FROM pragma_user_version), "
        "(SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') "
        "AND name "
        "IN ('run', 'event', 'transfer', 'memory', 'stage', 'rank_stat', "
        "'collective', 'link', 'rank_member')), (SELECT count(*) FROM "
        "sqlite_master)";
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

/* 1 when event is still a table (the layout before version 7), 0 when
 * it is already the view (a file whose other columns were taken back to
 * an older version by hand: only those are upgraded). */
static int timeline_is_tables(rec_db *db)
{
    sqlite3_stmt *st = NULL;
    int tables = 1;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT type = 'table' FROM sqlite_master WHERE "
                           "name = 'event'",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        tables = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return tables;
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
    return rec_exec_conn(db, "PRAGMA journal_mode = WAL", err) ||
                   rec_exec_conn(db, "PRAGMA synchronous = NORMAL", err)
               ? PS_ERR
               : PS_OK;
}

/* A new file, made whole before it appears (issue 12, the fixed cost of a
 * run in a new process). The schema is written into a scratch file beside
 * the target ("<path>.new-PID-N"), in rollback mode: the connection of
 * the writer (rec_open) works on it with journal_mode = MEMORY and
 * synchronous = OFF, so a run's transaction there syncs nothing and still
 * rolls back. The first run's commit publishes it (rec_schema_link): the
 * header is switched to WAL, the file synced once (fdatasync) and
 * hard-linked into place. link() never replaces a file, so of several
 * processes creating the same path one wins and the others copy their run
 * into its file; readers never see a half-made schema or a half-written
 * first run. A new file then costs 1 fsync for its first run instead of 5
 * (core/README.md, "Durability"). A crash before the link leaves the
 * scratch file and no database. */

/* Bytes 18 and 19 of SQLite's header: the file format's write and read
 * versions, 1 for rollback journals and 2 for WAL (what PRAGMA
 * journal_mode = WAL changes in the file, sqlite.org/fileformat2.html). */
#define HDR_VERSIONS 18

static int set_versions(int fd, char v)
{
    char b[2] = {v, v};
    return pwrite(fd, b, 2, HDR_VERSIONS) == 2 ? 0 : -1;
}

char *rec_schema_scratch(const char *path, int *rest)
{
    *rest = 0;
    size_t n = strlen(path) + 48;
    char *scratch = malloc(n);
    if (!scratch)
        return NULL;
    /* not mkstemp: its 0600 would become the database's (and its -wal's)
     * mode; 0644 less the umask is what SQLite gives a file it creates */
    int fd = -1;
    static unsigned seq;
    for (int tries = 0; fd < 0 && tries < 8; tries++) {
        snprintf(scratch, n, "%s.new-%ld-%u", path, (long)getpid(), seq++);
        fd = open(scratch, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        free(scratch);
        return NULL;
    }
    int ok;
    if (embed_schema_len > 0 && embed_enabled()) {
        /* the same file, written from the bytes built into pipesim
         * (base/embed.h: what the SQL below made at build time, published),
         * back in rollback mode */
        size_t done = 0;
        while (done < embed_schema_len) {
            ssize_t w = write(fd, embed_schema + done, embed_schema_len - done);
            if (w <= 0 && errno != EINTR)
                break;
            if (w > 0)
                done += (size_t)w;
        }
        ok = done == embed_schema_len && set_versions(fd, 1) == 0;
        close(fd);
        *rest = embed_schema_nrows > 0; /* the views and triggers */
    } else {
        close(fd);
        sqlite3 *c = NULL;
        char ver[64];
        snprintf(ver, sizeof ver, "PRAGMA user_version = %d",
                 REC_SCHEMA_VERSION);
        ok = sqlite3_open_v2(scratch, &c,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                             NULL) == SQLITE_OK &&
             sqlite3_exec(c,
                          "PRAGMA journal_mode = OFF; PRAGMA synchronous = "
                          "OFF; BEGIN",
                          NULL, NULL, NULL) == SQLITE_OK;
        for (const char *const *sql = schema_sql; ok && *sql; sql++)
            ok = sqlite3_exec(c, *sql, NULL, NULL, NULL) == SQLITE_OK;
        ok = ok && sqlite3_exec(c, ver, NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_exec(c, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
        ok = sqlite3_close(c) == SQLITE_OK && ok;
    }
    if (!ok) {
        unlink(scratch);
        free(scratch);
        return NULL;
    }
    return scratch;
}

/* The scratch's views and triggers, back in sqlite_master as the build
 * made them (base/embed.h: the rows themselves, rowids included, so the file
 * is the one the SQL makes): PRAGMA writable_schema is SQLite's own way
 * to write such rows, which hold no pages (its shell's .dump writes a
 * virtual table so). The connection's parsed schema keeps the tables
 * alone, which is all that the writer's statements use; the next
 * connection reads the whole. */
int rec_schema_rest(rec_db *db, ps_err *err)
{
    if (!db->schema_rest)
        return PS_OK;
    sqlite3_stmt *st = NULL;
    /* a savepoint: its own transaction, or a part of one that is open */
    int ok =
        rec_exec_conn(db, "PRAGMA writable_schema = ON; SAVEPOINT schema_rest",
                      err) == PS_OK &&
        sqlite3_prepare_v2(db->db,
                           "INSERT INTO sqlite_master(rowid, type, name, "
                           "tbl_name, rootpage, sql) VALUES (?1, ?2, ?3, "
                           "?4, 0, ?5)",
                           -1, &st, NULL) == SQLITE_OK;
    for (size_t i = 0; ok && i < embed_schema_nrows; i++) {
        const embed_schema_row *r = &embed_schema_rows[i];
        sqlite3_bind_int64(st, 1, r->rowid);
        sqlite3_bind_text(st, 2, r->type, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, r->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, r->tbl_name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, r->sql, -1, SQLITE_STATIC);
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    ok = ok && sqlite3_exec(db->db, "RELEASE schema_rest", NULL, NULL, NULL) ==
                   SQLITE_OK;
    if (!ok) {
        rec_sql_fail(db, "cannot write the new file's schema", err);
        sqlite3_exec(db->db, "ROLLBACK TO schema_rest; RELEASE schema_rest",
                     NULL, NULL, NULL);
    }
    sqlite3_exec(db->db, "PRAGMA writable_schema = OFF", NULL, NULL, NULL);
    if (!ok)
        return PS_ERR;
    db->schema_rest = 0;
    return PS_OK;
}

int rec_schema_link(const char *path, const char *scratch, int sync)
{
    int fd = open(scratch, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* WAL in the header, as PRAGMA journal_mode = WAL leaves it, then
     * the data on disk before the name points at it */
    int ok = set_versions(fd, 2) == 0 && (!sync || fdatasync(fd) == 0);
    int e = errno;
    close(fd);
    if (!ok) {
        errno = e;
        return -1;
    }
    return link(scratch, path) == 0 ? 1 : 0;
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
    if (version < 0 || version > REC_SCHEMA_VERSION) {
        ps_errf(err, "%s: schema version %d, this pipesim writes %d", path,
                version, REC_SCHEMA_VERSION);
        return PS_ERR;
    }
    if (version != 0 && tables != REC_NTABLES_AT(version)) {
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
        if (rec_exec_conn(db, "BEGIN IMMEDIATE", err))
            return PS_ERR;
        if (rec_inspect(db, &version, &tables, &objects, err))
            return PS_ERR;
        if (version == 0 &&
            (exec_all(db, schema_sql, err) || rec_exec_conn(db, ver, err))) {
            sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
            return PS_ERR;
        }
        if (rec_exec_conn(db, "COMMIT", err))
            return PS_ERR;
    }
    if (version >= 1 && version < REC_SCHEMA_VERSION) {
        /* upgrade in place, once: a second writer that waited for the lock
         * finds the current version and does nothing */
        if (rec_exec_conn(db, "BEGIN IMMEDIATE", err))
            return PS_ERR;
        if (rec_inspect(db, &version, &tables, &objects, err)) {
            sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
            return PS_ERR;
        }
        if ((version == 1 && rec_exec_conn(db, migrate_v2_sql, err)) ||
            (version >= 1 && version <= 2 &&
             rec_exec_conn(db, migrate_v3_sql, err)) ||
            (version >= 1 && version <= 3 &&
             rec_exec_conn(db, migrate_v4_sql, err)) ||
            (version >= 1 && version <= 4 &&
             rec_exec_conn(db, migrate_v5_sql, err)) ||
            (version >= 1 && version <= 5 &&
             rec_exec_conn(db, migrate_v6_sql, err)) ||
            (version >= 1 && version <= 6 && timeline_is_tables(db) &&
             exec_all(db, upgrade_v7_sql, err)) ||
            (version >= 1 && version <= 6 &&
             rec_exec_conn(db, "PRAGMA user_version = 7", err)) ||
            (version >= 1 && version <= 7 &&
             rec_exec_conn(db, migrate_v8_sql, err)) ||
            (version >= 1 && version <= 8 &&
             rec_exec_conn(db, migrate_v9_sql, err)) ||
            (version >= 1 && version <= 9 &&
             rec_exec_conn(db, migrate_v10_sql, err)) ||
            (version >= 1 && version <= 10 &&
             rec_exec_conn(db, migrate_v11_sql, err))) {
            sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
            return PS_ERR;
        }
        if (rec_exec_conn(db, "COMMIT", err))
            return PS_ERR;
    }
    return PS_OK;
}
