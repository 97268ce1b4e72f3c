/* libFuzzer target: the database readers behind `pipesim report` and
 * `pipesim export`. Two modes, by the first byte:
 *   even: the rest of the input is a database file;
 *   odd:  edits to a real pipesim database (the seed corpus's
 *         seed.sqlite, read once): each edit sets one cell of one row of
 *         one table to an integer near a limit, a real (infinities too),
 *         text, NULL or a blob, or deletes the row, as a hand edit would.
 * The file is opened with rec_open_read, and the readers the first
 * byte's other bits pick (read_all) write to /dev/null. Any failure must
 * come with a message. */
#include <math.h>
#include <sqlite3.h>

#include "fuzz.h"
#include "out/export.h"
#include "out/report.h"
#include "rec/rec.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *seed;
static size_t seed_size;
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *path = getenv("PIPESIM_FUZZ_DB_SEED");
    if (!path || !*path)
        path = "tests/fuzz/corpus/db/seed.sqlite";
    FILE *f = fopen(path, "rb");
    if (f) {
        seed = malloc(1 << 20);
        seed_size = seed ? fread(seed, 1, 1 << 20, f) : 0;
        fclose(f);
    }
    devnull = fopen("/dev/null", "w");
    if (!devnull)
        abort();
    return 0;
}

static const char *const tables[] = {"run",        "event", "transfer",
                                     "memory",     "stage", "rank_stat",
                                     "collective", "link"};

static const char *const texts[] = {"",
                                    "ok",
                                    "failed",
                                    "pipeline",
                                    "collective",
                                    "F",
                                    "B",
                                    "OPT",
                                    "act",
                                    "coll",
                                    "{",
                                    "[1,2",
                                    "{\"cluster\":{\"ranks\":2}}",
                                    "{\"cluster\":{\"ranks\":-1}}",
                                    "{\"gpus_per_node\":0}",
                                    "{\"device\":{\"memory\":\"1 KiB\"}}",
                                    "\"\\u12\"",
                                    "1e999",
                                    "x"};

/* Binds one value decoded from in to parameter 1 of st. */
static void bind_value(sqlite3_stmt *st, fuzz_in *in)
{
    unsigned t = fuzz_byte(in);
    switch (t % 6) {
    case 0: {
        static const sqlite3_int64 ints[] = {
            0,         1,         2,
            3,         -1,        -5,
            7,         1 << 20,   (1 << 20) + 1,
            INT32_MAX, INT32_MIN, (sqlite3_int64)1 << 40,
            INT64_MAX, INT64_MIN, 100};
        sqlite3_bind_int64(st, 1, ints[fuzz_byte(in) % 15]);
        break;
    }
    case 1: {
        static const double reals[] = {
            0.0,  -0.0, 0.5,      1e308,     1.79e308, -1e308, 4e-320, 5e-324,
            1e-9, 1e9,  INFINITY, -INFINITY, 1e15,     3.0,    -1.0};
        sqlite3_bind_double(st, 1, reals[fuzz_byte(in) % 15]);
        break;
    }
    case 2:
        sqlite3_bind_text(st, 1, texts[fuzz_byte(in) % 19], -1, SQLITE_STATIC);
        break;
    case 3: {
        char raw[12];
        int len = (int)(fuzz_byte(in) % sizeof raw);
        for (int i = 0; i < len; i++)
            raw[i] = (char)fuzz_byte(in);
        sqlite3_bind_text(st, 1, raw, len, SQLITE_TRANSIENT);
        break;
    }
    case 4: sqlite3_bind_null(st, 1); break;
    default: sqlite3_bind_zeroblob(st, 1, (int)(fuzz_byte(in) % 9));
    }
}

/* Applies the edits in `in` to the database at path. */
static void edit(const char *path, fuzz_in *in)
{
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        sqlite3_close(db);
        return;
    }
    /* one transaction, no syncs: the file is thrown away after the input */
    sqlite3_exec(db,
                 "PRAGMA synchronous = OFF; PRAGMA journal_mode = OFF; "
                 "BEGIN",
                 NULL, NULL, NULL);
    int n = (int)(fuzz_byte(in) % 8) + 1;
    for (int e = 0; e < n && in->n > 0; e++) {
        const char *t = tables[fuzz_byte(in) % 8];
        unsigned row = fuzz_byte(in) % 16, col = fuzz_byte(in) % 20;
        char sql[512], name[64] = "";
        /* the column's name, from the schema */
        snprintf(sql, sizeof sql,
                 "SELECT name FROM pragma_table_info('%s') LIMIT 1 "
                 "OFFSET %u",
                 t, col % 17);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            snprintf(name, sizeof name, "%s", sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        if (!*name)
            continue;
        if (col >= 18) /* now and then a row goes */
            snprintf(sql, sizeof sql,
                     "DELETE FROM \"%s\" WHERE rowid = (SELECT rowid FROM "
                     "\"%s\" ORDER BY rowid LIMIT 1 OFFSET %u)",
                     t, t, row);
        else
            snprintf(sql, sizeof sql,
                     "UPDATE \"%s\" SET \"%s\" = ?1 WHERE rowid = (SELECT "
                     "rowid FROM \"%s\" ORDER BY rowid LIMIT 1 OFFSET %u)",
                     t, name, t, row);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
            sqlite3_finalize(st);
            continue;
        }
        if (col < 18)
            bind_value(st, in);
        sqlite3_step(st); /* a constraint may refuse it: fine */
        sqlite3_finalize(st);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
}

static void one_line(int rc, const ps_err *err, const char *what)
{
    if (rc != PS_OK && !err->msg[0]) { /* the CLI prints it on one line */
        fprintf(stderr, "%s: bad message '%s'\n", what, err->msg);
        abort();
    }
}

/* What report and export read, chosen by the bits of `pick` (all of it
 * for every input would make each input slow): the run table (text, CSV,
 * warnings), and for run 1 + pick % 4 its report, warnings, Chrome trace,
 * SVG, and an SVG comparing runs 1..3, in one of four views. */
static void read_all(const char *path, int width, unsigned pick)
{
    ps_err err;
    rec_db *db = rec_open_read(path, &err);
    if (!db) {
        one_line(PS_ERR, &err, "rec_open_read");
        return;
    }
    err.msg[0] = '\0';
    int64_t ids[3] = {1, 2, 3}, run = 1 + (int64_t)(pick % 4);
    pick >>= 2;
    if (pick & 1) {
        one_line(report_runs(db, devnull, 0, &err), &err, "report_runs");
        one_line(report_runs(db, devnull, 1, &err), &err, "report_runs csv");
        one_line(report_warnings(db, 0, devnull, REPORT_WARN_RUNS, &err), &err,
                 "report_warnings");
    }
    if (pick & 2) {
        one_line(report_run(db, run, devnull, width, &err), &err, "report_run");
        one_line(report_warnings(db, run, devnull, 1, &err), &err,
                 "report_warnings run");
    }
    /* the view, from the width's bits (pick has none left): auto, all,
     * replica 0 or 1; then with or without --ranks 0-1 --stages 0,2
     * --window 1us:10ms (out/view.h) */
    out_view view;
    view_init(&view);
    view.replica = width % 4 - 2;
    if (width & 4) {
        ps_err verr;
        view_option(&view, "--ranks", "0-1", &verr);
        view_option(&view, "--stages", "0,2", &verr);
        view_option(&view, "--window", "1us:10ms", &verr);
        one_line(report_run_view(db, run, &view, devnull, width, &err), &err,
                 "report_run_view");
    }
    if (pick & 4)
        one_line(export_chrome(db, run, &view, devnull, &err), &err,
                 "export_chrome");
    if (pick & 8)
        one_line(export_svg(db, &run, 1, &view, devnull, &err), &err,
                 "export_svg");
    if (pick & 16)
        one_line(export_svg(db, ids, 3, &view, devnull, &err), &err,
                 "export_svg compare");
    view_free(&view);
    rec_close(db, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fuzz_in in = {data + 1, size - 1};
    const char *path;
    int width = 100;
    unsigned pick = data[0] >> 1;
    if (data[0] & 1) {
        if (!seed_size)
            return 0;
        width = 20 + (int)(fuzz_byte(&in) % 200);
        path = fuzz_file("edit.db", seed, seed_size);
        if (path)
            edit(path, &in);
    } else {
        path = fuzz_file("raw.db", data + 1, size - 1);
    }
    if (!path)
        return 0;
    read_all(path, width, pick);
    fuzz_unlink_db(path);
    return 0;
}
