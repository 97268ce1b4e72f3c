/* pipesim command line: run a scenario, report on a database, export a run.
 * Every failure prints exactly one line "pipesim: <message>" on stderr and
 * exits non-zero. */
#include <errno.h>
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bind.h"
#include "export.h"
#include "rec.h"
#include "report.h"

static const char usage[] =
    "usage: pipesim run SCENARIO.lua [-o DB] [-D key=value]... [--unsafe]\n"
    "       pipesim report DB [RUN] [--csv] [--width N]\n"
    "       pipesim export DB RUN --format chrome|svg [-o FILE]\n"
    "       pipesim export DB --compare RUN1,RUN2,... [-o FILE.svg]\n"
    "       pipesim --help | --version\n"
    "\n"
    "  run      runs a Lua scenario; its runs are appended to DB\n"
    "           (default results/<scenario name>.db). -D key=value is\n"
    "           visible to the script as ps.args.key (numbers as numbers).\n"
    "           Scenarios run sandboxed (no processes, native code, file\n"
    "           writes or binary chunks); --unsafe lifts the sandbox.\n"
    "  report   without RUN: a table comparing every run in DB;\n"
    "           with RUN: its summary and an ASCII Gantt chart.\n"
    "  export   a run as a Chrome/Perfetto trace (JSON) or an SVG Gantt\n"
    "           chart with memory curves; --compare stacks runs.\n"
    "\n"
    "Examples:\n"
    "  pipesim run scenarios/demo.lua\n"
    "  pipesim report results/demo.db 2\n"
    "  pipesim export results/demo.db 2 --format chrome -o trace.json\n"
    "  sqlite3 results/demo.db < results/queries/bubble_per_rank.sql\n";

static int fail(const char *fmt, const char *a, const char *b)
{
    char msg[8192];
    snprintf(msg, sizeof msg, fmt, a, b);
    ps_print_error(msg);
    return 1;
}

/* The Lua library directory: $PIPESIM_LUA, else ../lua next to the binary
 * (build/pipesim in a checkout), else the installed PS_LUADIR. */
static void find_luadir(char *out, size_t size)
{
    const char *env = getenv("PIPESIM_LUA");
    if (env && *env) {
        snprintf(out, size, "%s", env);
        return;
    }
    char exe[PATH_MAX / 2];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(out, size, "%s/../lua", exe);
            char probe[PATH_MAX + 32];
            snprintf(probe, sizeof probe, "%s/pipesim/init.lua", out);
            if (access(probe, R_OK) == 0)
                return;
        }
    }
#ifdef PS_LUADIR
    snprintf(out, size, "%s", PS_LUADIR);
#else
    snprintf(out, size, "lua");
#endif
}

/* mkdir -p of the directory part of path. */
static int make_parent_dirs(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

/* results/<basename without .lua>.db */
static void default_db(const char *scenario, char *out, size_t size)
{
    const char *base = strrchr(scenario, '/');
    base = base ? base + 1 : scenario;
    size_t len = strlen(base);
    if (len > 4 && strcmp(base + len - 4, ".lua") == 0)
        len -= 4;
    snprintf(out, size, "results/%.*s.db", (int)len, base);
}

static int cmd_run(int argc, char **argv)
{
    const char *scenario = NULL, *db = NULL;
    int unsafe = 0;
    const char **defs = calloc((size_t)argc + 1, sizeof *defs);
    int ndefs = 0;
    if (!defs)
        return fail("out of memory", "", "");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-o") == 0 && i + 1 < argc) {
            db = argv[++i];
        } else if (strcmp(a, "--unsafe") == 0) {
            unsafe = 1;
        } else if (strcmp(a, "-D") == 0 && i + 1 < argc) {
            if (!strchr(argv[i + 1], '=')) {
                free(defs);
                return fail("-D %s: expected key=value", argv[i + 1], "");
            }
            defs[ndefs++] = argv[++i];
        } else if (strncmp(a, "-D", 2) == 0 && strchr(a, '=')) {
            defs[ndefs++] = a + 2;
        } else if (a[0] == '-') {
            free(defs);
            return fail("run: unknown option '%s' (see pipesim --help)", a, "");
        } else if (!scenario) {
            scenario = a;
        } else {
            free(defs);
            return fail("run: more than one scenario ('%s' and '%s')", scenario,
                        a);
        }
    }
    if (!scenario) {
        free(defs);
        return fail("run: no scenario given (usage: pipesim run "
                    "SCENARIO.lua)",
                    "", "");
    }
    if (access(scenario, R_OK) != 0) {
        free(defs);
        return fail("%s: %s", scenario, strerror(errno));
    }
    char dbbuf[PATH_MAX];
    if (!db) {
        default_db(scenario, dbbuf, sizeof dbbuf);
        db = dbbuf;
    }
    if (make_parent_dirs(db)) {
        free(defs);
        return fail("%s: cannot create its directory: %s", db, strerror(errno));
    }
    char luadir[PATH_MAX];
    find_luadir(luadir, sizeof luadir);

    lua_State *L = luaL_newstate();
    if (!L) {
        free(defs);
        return fail("cannot create a Lua state", "", "");
    }
    luaL_openlibs(L);
    bind_session s = {db, scenario, defs, ndefs};
    bind_setup(L, luadir, &s);
    if (!unsafe)
        bind_sandbox(L, luadir, scenario);
    int status = bind_load_scenario(L, scenario, !unsafe);
    if (status == LUA_OK)
        status = lua_pcall(L, 0, 0, 0);
    int rc = 0;
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        ps_print_error(msg ? msg : "(error object is not a string)");
        rc = 1;
    }
    long runs = 0;
    const char *path = NULL;
    ps_err err;
    if (bind_finish(L, &runs, &path, &err) && rc == 0) {
        ps_print_error(err.msg);
        rc = 1;
    }
    if (rc == 0 && runs > 0 && path) {
        /* added by this scenario and in the whole file (runs append) */
        rec_db *rdb = rec_open_read(path, &err);
        int64_t total = -1;
        if (!rdb || rec_run_count(rdb, &total, &err))
            total = -1;
        rec_close(rdb, NULL);
        if (total >= runs)
            printf("%ld run%s added to %s (%lld in all; pipesim report %s)\n",
                   runs, runs == 1 ? "" : "s", path, (long long)total, path);
        else
            printf("%ld run%s added to %s (pipesim report %s)\n", runs,
                   runs == 1 ? "" : "s", path, path);
    }
    lua_close(L);
    free(defs);
    return rc;
}

static int cmd_report(int argc, char **argv)
{
    const char *dbpath = NULL, *run = NULL;
    int csv = 0, width = 100;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--csv") == 0)
            csv = 1;
        else if (strcmp(argv[i], "--width") == 0 && i + 1 < argc)
            width = atoi(argv[++i]);
        else if (argv[i][0] == '-')
            return fail("report: unknown option '%s'", argv[i], "");
        else if (!dbpath)
            dbpath = argv[i];
        else if (!run)
            run = argv[i];
        else
            return fail("report: unexpected argument '%s'", argv[i], "");
    }
    if (!dbpath)
        return fail("report: no database given (usage: pipesim report DB "
                    "[RUN])",
                    "", "");
    char *end;
    long long id = run ? strtoll(run, &end, 10) : 0;
    if (run && (*end || id < 1))
        return fail("report: run id must be a positive integer, got '%s'", run,
                    "");
    if (width < 40)
        width = 40;
    ps_err err;
    rec_db *db = rec_open_read(dbpath, &err);
    if (!db)
        return fail("%s", err.msg, "");
    int rc = run ? report_run(db, id, stdout, width, &err)
                 : report_runs(db, stdout, csv, &err);
    /* runs that do not fit their devices' memory: on stderr, after the
     * report (stdout stays a clean table or CSV) */
    fflush(stdout);
    if (rc == 0)
        rc = report_warnings(db, run ? id : 0, stderr, REPORT_WARN_RUNS, &err);
    rec_close(db, NULL);
    if (rc)
        return fail("%s", err.msg, "");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return fail("no command (try pipesim --help)", "", "");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
        strcmp(cmd, "help") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("pipesim %s\n", PS_VERSION);
        return 0;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "report") == 0)
        return cmd_report(argc - 2, argv + 2);
    if (strcmp(cmd, "export") == 0)
        return export_main(argc - 2, argv + 2);
    return fail("unknown command '%s' (expected run, report or export; try "
                "pipesim --help)",
                cmd, "");
}
