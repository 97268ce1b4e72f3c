/* pipesim command line: run a scenario, report on a database, export a run.
 * Every failure prints exactly one line "pipesim: <message>" on stderr and
 * exits non-zero. */
#include <errno.h>
#include <getopt.h>
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <lualib.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/limit.h"
#include "base/unit.h"
#include "bind/bind.h"
#include "bind/calibrate.h"
#include "bind/live.h"
#include "bind/nccl_tests.h"
#include "cli/help.h"
#include "out/export.h"
#include "out/merge.h"
#include "out/plot.h"
#include "out/report.h"
#include "rec/rec.h"

/* Errors go through ps_print_error: one line whatever they quote. Returns
 * the exit status 1 (cli/main.c's convention: commands return exit statuses,
 * see base/err.h): ps_fail, shared with out/export_cli.c. */
#define fail ps_fail

/* The Lua library directory: $PIPESIM_LUA, else ../lua next to the binary
 * (build/pipesim in a checkout), else ../share/pipesim/lua (make install's
 * PREFIX/bin/pipesim, wherever PREFIX is), else the installed PS_LUADIR. */
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
            static const char *const beside[] = {"../lua",
                                                 "../share/pipesim/lua"};
            for (int i = 0; i < 2; i++) {
                snprintf(out, size, "%s/%s", exe, beside[i]);
                char probe[PATH_MAX + 32];
                snprintf(probe, sizeof probe, "%s/pipesim/init.lua", out);
                if (access(probe, R_OK) == 0)
                    return;
            }
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

typedef struct run_opts {
    const char *scenario, *db;
    const char **defs; /* -D key=value, ndefs of them */
    int ndefs;
    int unsafe;
    double timeout;         /* seconds; 0: none */
    size_t max_memory;      /* bytes */
    int jobs;               /* --jobs, >= 1 */
    int shard_k, shard_n;   /* --shard K/N; shard_n 0: none */
    const char *bytes_log;  /* --bytes-log FILE; NULL: none */
    const char *rendezvous; /* --rendezvous HOST:PORT; NULL: none */
    int workers;            /* --workers N */
} run_opts;

/* A decimal integer in lo..hi, the whole string. */
static int parse_int(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

/* --shard K/N: 0 <= K < N. */
static int parse_shard(const char *v, run_opts *o)
{
    const char *slash = strchr(v, '/');
    char k[32];
    long kk, nn;
    if (!slash || (size_t)(slash - v) >= sizeof k)
        return fail("run: --shard %s: expected K/N, such as 0/4", v);
    memcpy(k, v, (size_t)(slash - v));
    k[slash - v] = '\0';
    if (parse_int(k, 0, INT_MAX, &kk) || parse_int(slash + 1, 1, INT_MAX, &nn))
        return fail("run: --shard %s: expected K/N with integers K >= 0 and "
                    "N >= 1, such as 0/4",
                    v);
    if (kk >= nn)
        return fail("run: --shard %s: K must be in 0..%ld (shards are "
                    "numbered from 0), got %ld",
                    v, nn - 1, kk);
    o->shard_k = (int)kk;
    o->shard_n = (int)nn;
    return 0;
}

/* --max-memory SIZE: a byte quantity of at least 1 MiB and no more than
 * any machine has. */
static int parse_max_memory(const char *v, run_opts *o)
{
    double bytes;
    ps_err err;
    if (unit_parse(v, UNIT_BYTES, &bytes, &err))
        return fail("run: --max-memory: %s", err.msg);
    if (bytes > 0x1p62) { /* issue 27 item 15: not "at least" */
        char def[64];
        limit_format_bytes(limit_default_memory(), def, sizeof def);
        return fail("run: --max-memory %s: more memory than any "
                    "machine has (at most 4 EiB); without "
                    "--max-memory the budget is half of the "
                    "physical or cgroup memory, here %s",
                    v, def);
    }
    if (!(bytes >= 1 << 20))
        return fail("run: --max-memory %s: expected a size of at "
                    "least 1 MiB, such as 64MiB or 12GiB",
                    v);
    o->max_memory = (size_t)bytes;
    return 0;
}

/* --timeout SECONDS: a number > 0 (and not absurdly large). */
static int parse_timeout(const char *v, run_opts *o)
{
    char *end;
    errno = 0;
    o->timeout = strtod(v, &end);
    if (end == v || *end || errno || !(o->timeout > 0) || o->timeout > 1e9)
        return fail("run: --timeout %s: expected a number of seconds "
                    "> 0",
                    v);
    return 0;
}

enum {
    OPT_UNSAFE = 256,
    OPT_TIMEOUT,
    OPT_MAX_MEMORY,
    OPT_JOBS,
    OPT_SHARD,
    OPT_BYTES_LOG,
    OPT_RENDEZVOUS,
    OPT_WORKERS
};

/* One option of `pipesim run` that getopt_long returned as c (a: the
 * option as typed, for messages) into o; 0, or 1 after printing the
 * one-line error. */
static int run_option(int c, const char *a, run_opts *o)
{
    long n;
    switch (c) {
    case 'o':
        o->db = optarg;
        if (!*o->db)
            return fail("run: -o: the database path is empty");
        if (strcmp(o->db, ":memory:") == 0)
            return fail("run: -o :memory: would keep the runs nowhere: "
                        "name a database file");
        return 0;
    case OPT_UNSAFE: o->unsafe = 1; return 0;
    case OPT_RENDEZVOUS: o->rendezvous = optarg; return 0;
    case OPT_WORKERS:
        if (parse_int(optarg, 1, 4096, &n))
            return fail("run: --workers %s: expected a number of workers "
                        "in 1..4096",
                        optarg);
        o->workers = (int)n;
        return 0;
    case OPT_BYTES_LOG:
        if (!*optarg)
            return fail("run: --bytes-log: the file name is empty");
        o->bytes_log = optarg;
        return 0;
    case OPT_JOBS:
        if (parse_int(optarg, 1, 1024, &n))
            return fail("run: --jobs %s: expected a number of worker "
                        "processes in 1..1024",
                        optarg);
        o->jobs = (int)n;
        return 0;
    case OPT_SHARD: return parse_shard(optarg, o) ? 1 : 0;
    case OPT_TIMEOUT: return parse_timeout(optarg, o);
    case OPT_MAX_MEMORY: return parse_max_memory(optarg, o);
    case 'D': {
        const char *d = optarg;
        const char *sep = strchr(d, '=');
        if (!sep || sep == d)
            return fail("run: -D %s: expected key=value with a "
                        "non-empty key",
                        d);
        o->defs[o->ndefs++] = d;
        return 0;
    }
    case ':': /* optopt: the short option, or a long one's OPT_ value */
        if (optopt && optopt < 256)
            return fail("run: -%c needs a value (see pipesim --help)", optopt);
        return fail("run: %s needs a value (see pipesim --help)", a);
    default:
        if (optopt && optopt < 256)
            return fail("run: unknown option '-%c' (see pipesim --help)",
                        optopt);
        return fail("run: unknown option '%s' (see pipesim --help)", a);
    }
}

/* Fills o from the arguments of `pipesim run` (argv[0] is "run", as
 * getopt_long wants a program name there); returns 0, or 1 after printing
 * the one-line error. getopt_long: options and the scenario in any order,
 * "-Dk=v" or "-D k=v", "--" ends the options; its own messages are off
 * (opterr = 0) so that every error is pipesim's one line. */
static int parse_run(int argc, char **argv, run_opts *o)
{
    static const struct option longopts[] = {
        {"unsafe", no_argument, NULL, OPT_UNSAFE},
        {"jobs", required_argument, NULL, OPT_JOBS},
        {"shard", required_argument, NULL, OPT_SHARD},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
        {"bytes-log", required_argument, NULL, OPT_BYTES_LOG},
        {"rendezvous", required_argument, NULL, OPT_RENDEZVOUS},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {NULL, 0, NULL, 0},
    };
    o->max_memory = limit_default_memory();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = cores >= 1 ? (cores < 256 ? (int)cores : 256) : 1;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":o:D:", longopts, NULL)) != -1) {
        /* the option as typed, for messages */
        const char *a = optind > 1 ? argv[optind - 1] : "";
        if (run_option(c, a, o))
            return 1;
    }
    for (int i = optind; i < argc; i++) {
        if (!o->scenario)
            o->scenario = argv[i];
        else
            return fail("run: more than one scenario ('%s' and '%s')",
                        o->scenario, argv[i]);
    }
    if (!o->scenario)
        return fail("run: no scenario given (usage: pipesim run "
                    "SCENARIO.lua)");
    if (access(o->scenario, R_OK) != 0)
        return fail("%s: %s", o->scenario, strerror(errno));
    return 0;
}

/* Runs the scenario in L; returns 0, or 1 after printing its error (or
 * nothing when a stop is requested: the caller reports it). [-0, +(0|1)]
 * nothing left on 0; on 1 the error object stays on the stack. */
static int run_scenario(lua_State *L, const run_opts *o)
{
    int status = bind_load_scenario(L, o->scenario, !o->unsafe);
    if (status == LUA_OK)
        status = lua_pcall(L, 0, 0, 0);
    if (status == LUA_OK)
        return 0;
    if (!limit_stopped()) {
        const char *msg = lua_tostring(L, -1);
        ps_print_error(msg ? msg : "(error object is not a string)");
    }
    return 1;
}

/* cmd_run's exit status once the state is closed (finalizers at exit may
 * fail the run): an interrupt's 128 + signal with what was recorded
 * (where: the database), a limit's stop, bind_finish's failure or a
 * __gc error, each with its one line; else rc. */
static int run_status(int rc, int finish, long runs, const char *where,
                      const ps_err *err)
{
    int stop = limit_stopped();
    const char *gc = bind_gc_error();
    if (stop == LIMIT_SIGINT || stop == LIMIT_SIGTERM) {
        /* the run in progress left no rows; the finished ones are in */
        fprintf(stderr, "pipesim: interrupted; %ld run%s recorded in %s\n",
                runs, runs == 1 ? "" : "s", where);
        return stop == LIMIT_SIGINT ? 128 + SIGINT : 128 + SIGTERM;
    }
    if (stop) {
        char msg[512];
        fprintf(stderr, "pipesim: %s\n", limit_message(msg, sizeof msg));
        return 1;
    }
    if (finish && rc == 0) {
        ps_print_error(err->msg);
        return 1;
    }
    if (gc && rc == 0)
        return fail("%s (raised in a __gc metamethod)", gc);
    return rc;
}

/* The last line: runs added by this scenario and in the whole file (runs
 * append); total is bind_finish's count, before it closed the file. */
static void print_added(long runs, int64_t total, const char *path)
{
    if (total >= runs)
        printf("%ld run%s added to %s (%lld in all; pipesim report %s)\n", runs,
               runs == 1 ? "" : "s", path, (long long)total, path);
    else
        printf("%ld run%s added to %s (pipesim report %s)\n", runs,
               runs == 1 ? "" : "s", path, path);
}

/* One cleanup path (out:): whatever was made so far is freed there. */
static int cmd_run(int argc, char **argv)
{
    run_opts o = {0};
    lua_State *L = NULL;
    int rc = 1;
    char dbbuf[PATH_MAX], luadir[PATH_MAX];
    o.defs = calloc((size_t)argc + 1, sizeof *o.defs);
    if (!o.defs) {
        rc = fail("out of memory");
        goto out;
    }
    if (parse_run(argc, argv, &o))
        goto out;
    if (!o.db) {
        default_db(o.scenario, dbbuf, sizeof dbbuf);
        o.db = dbbuf;
    }
    if (make_parent_dirs(o.db)) {
        rc = fail("%s: cannot create its directory: %s", o.db, strerror(errno));
        goto out;
    }
    ps_err perr; /* a directory or a FIFO: before the scenario runs */
    if (rec_check_path(o.db, &perr) < 0) {
        rc = fail("run: -o %s", perr.msg);
        goto out;
    }
    find_luadir(luadir, sizeof luadir);

    limit_set_memory(o.max_memory);
    if (!(L = bind_newstate())) {
        rc = fail("cannot create a Lua state");
        goto out;
    }
    luaL_openlibs(L);
    bind_session s = {o.db,   o.scenario, o.defs,   o.ndefs,
                      o.jobs, o.shard_k,  o.shard_n};
    bind_setup(L, luadir, &s);
    if (!o.unsafe)
        bind_sandbox(L, luadir, o.scenario, o.db);
    bind_live_set_bytes_log(o.bytes_log);
    ps_err err;
    rc = bind_limits(L, luadir, o.timeout, &err);
    if (rc == 0 && o.rendezvous &&
        bind_live_rendezvous(o.rendezvous, o.workers ? o.workers : 1,
                             o.timeout > 0 ? o.timeout : 120, o.scenario,
                             o.defs, o.ndefs, &err))
        rc = 1;
    if (rc)
        ps_print_error(err.msg);
    else
        rc = run_scenario(L, &o);
    bind_live_rendezvous_end();
    if (rc == 0 && o.shard_n > 0 && !bind_sweeps_run(L))
        rc = fail("%s: --shard %d/%d needs a ps.sweep, and the scenario "
                  "runs none (its runs are not divided among shards)",
                  o.scenario, o.shard_k, o.shard_n);
    /* the shard is complete: pipesim merge takes it without --partial */
    if (rc == 0 && !limit_stopped() && bind_sweep_shard_end(L, &err)) {
        ps_print_error(err.msg);
        rc = 1;
    }
    long runs = 0;
    const char *path = NULL;
    int finish = bind_finish(L, &runs, &path, &err);
    /* the file's total, counted by bind_finish before it closed the file */
    int64_t total = bind_finish_total(L);
    /* finalizers at exit run under the limits, and may fail the run */
    bind_limits_close(L);
    L = NULL;
    rc = run_status(rc, finish, runs, path ? path : o.db, &err);
    if (rc == 0 && runs > 0 && path)
        print_added(runs, total, path);
out:
    if (L)
        lua_close(L);
    free(o.defs);
    return rc;
}

/* The arguments of `pipesim report` (argv[0] is "report"), by getopt_long
 * as parse_run's: options and operands in any order, "--" ends the
 * options, every error one line. */
static int report_in_view(int argc, char **argv, out_view *view);

static int cmd_report(int argc, char **argv)
{
    out_view view;
    view_init(&view);
    int rc = report_in_view(argc, argv, &view);
    view_free(&view);
    return rc;
}

/* The failure of report option a given without its value. */
static int report_missing_value(const char *a)
{
    if (strncmp(a, "--width", 7) == 0)
        return fail("report: --width (missing): expected a number of "
                    "columns");
    return fail("report: %s needs a value (%s)", a,
                strcmp(a, "--replica") == 0  ? "a replica number or all"
                : strcmp(a, "--window") == 0 ? "START:END in seconds"
                                             : "numbers and ranges such as "
                                               "0-7,64");
}

/* cmd_report's body; view: the timeline options read into it. */
static int report_in_view(int argc, char **argv, out_view *view)
{
    enum { OPT_CSV = 256, OPT_WIDTH, OPT_VIEW };
    static const struct option longopts[] = {
        {"csv", no_argument, NULL, OPT_CSV},
        {"width", required_argument, NULL, OPT_WIDTH},
        /* the timeline's view (out/view.h) */
        {"ranks", required_argument, NULL, OPT_VIEW},
        {"stages", required_argument, NULL, OPT_VIEW},
        {"window", required_argument, NULL, OPT_VIEW},
        {"replica", required_argument, NULL, OPT_VIEW},
        {"all", no_argument, NULL, OPT_VIEW}, /* --replica all */
        {NULL, 0, NULL, 0},
    };
    const char *dbpath = NULL, *run = NULL, *view_flag = NULL;
    int csv = 0, width = REPORT_WIDTH;
    opterr = 0;
    optind = 1;
    int c, li = 0;
    while ((c = getopt_long(argc, argv, ":", longopts, &li)) != -1) {
        const char *a = optind > 1 ? argv[optind - 1] : "";
        switch (c) {
        case OPT_CSV: csv = 1; break;
        case OPT_VIEW: {
            char flag[16];
            ps_err err;
            snprintf(flag, sizeof flag, "--%s", longopts[li].name);
            int all = strcmp(flag, "--all") == 0;
            if (view_option(view, all ? "--replica" : flag,
                            all ? "all" : optarg, &err))
                return fail("report: %s", err.msg);
            if (!view_flag)
                view_flag = longopts[li].name;
            break;
        }
        case OPT_WIDTH: {
            ps_err err; /* ps.show's range and message (out/report.h) */
            if (report_parse_width(optarg, &width, &err))
                return fail("report: %s", err.msg);
            break;
        }
        case ':': return report_missing_value(a);
        default:
            if (optopt && optopt < 256)
                return fail("report: unknown option '-%c'", optopt);
            return fail("report: unknown option '%s'", a);
        }
    }
    for (int i = optind; i < argc; i++) {
        if (!dbpath)
            dbpath = argv[i];
        else if (!run)
            run = argv[i];
        else
            return fail("report: unexpected argument '%s'", argv[i]);
    }
    if (!dbpath || (view_flag && (!run || csv))) {
        if (!dbpath)
            return fail("report: no database given (usage: pipesim report DB "
                        "[RUN])");
        /* nothing silent: the view is the timeline's */
        return fail("report: --%s applies to one run's timeline (pipesim "
                    "report DB RUN --%s ...), not to %s",
                    view_flag, view_flag, csv ? "--csv" : "the table of runs");
    }
    char *end;
    errno = 0;
    long long id = run ? strtoll(run, &end, 10) : 0;
    if (run && errno == ERANGE && id > 0) /* not LLONG_MAX's run */
        return fail("report: run id %s is out of range (run ids are at most "
                    "%lld)",
                    run, LLONG_MAX);
    if (run && (end == run || *end || id < 1))
        return fail("report: run id must be a positive integer, got '%s'", run);
    ps_err err;
    rec_db *db = rec_open_read(dbpath, &err);
    if (!db)
        return fail("%s", err.msg);
    int rc = run ? (csv ? report_run_csv(db, id, stdout, &err)
                        : report_run_view(db, id, view, stdout, width, &err))
                 : report_runs(db, stdout, csv, &err);
    /* runs that do not fit their devices' memory: on stderr, after the
     * report (stdout stays a clean table or CSV) */
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0) {
        rc = ps_errf(&err, "writing to standard output: %s", strerror(errno));
        clearerr(stdout); /* reported here, not again by checked_stdout */
    }
    if (rc == 0)
        rc = report_warnings(db, run ? id : 0, stderr, REPORT_WARN_RUNS, &err);
    rec_close(db, NULL);
    if (rc)
        return fail("%s", err.msg);
    return 0;
}

/* A command that succeeded but whose output was lost (a full disk, a
 * closed pipe: `pipesim report DB > /dev/full`) fails with one line. */
static int checked_stdout(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        clearerr(stdout);
        fprintf(stderr, "pipesim: writing to standard output: %s\n",
                e ? strerror(e) : "write error");
        return rc ? rc : 1;
    }
    return rc;
}

/* pipesim merge [--partial] OUT.db PART.db... (out/merge.c) */
static int cmd_merge(int argc, char **argv)
{
    int partial = 0, first = 0;
    const char *const use = "(usage: pipesim merge [--partial] OUT.db "
                            "PART.db...)";
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--partial") == 0 && i == first) {
            partial = 1;
            first++;
        } else if (argv[i][0] == '-') {
            return fail("merge: unknown option '%s' %s", argv[i], use);
        }
    }
    if (argc - first < 2)
        return fail("merge: expected OUT.db and at least one shard database "
                    "%s",
                    use);
    int64_t runs;
    char *note = NULL;
    ps_err err;
    int n = argc - first - 1;
    if (merge_dbs(argv[first], (const char *const *)argv + first + 1, n,
                  partial, &runs, &note, &err))
        return fail("merge: %s", err.msg);
    printf("%lld run%s from %d database%s merged into %s%s%s%s\n",
           (long long)runs, runs == 1 ? "" : "s", n, n == 1 ? "" : "s",
           argv[first], note ? " (partial: " : "", note ? note : "",
           note ? ")" : "");
    free(note);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return fail("no command (try pipesim --help)");
    const char *cmd = argv[1];
    /* the help of every command: cli/help.c */
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        help_overview(stdout);
        return checked_stdout(0);
    }
    if (strcmp(cmd, "help") == 0)
        return checked_stdout(help_main(argc - 1, argv + 1));
    if (help_is_command(cmd) && help_asked(argc - 1, argv + 1))
        return checked_stdout(help_command(cmd));
    if (strcmp(cmd, "--version") == 0) {
        printf("pipesim %s\n", PS_VERSION);
        return checked_stdout(0);
    }
    if (strcmp(cmd, "run") == 0)
        return checked_stdout(cmd_run(argc - 1, argv + 1)); /* argv[0] "run" */
    if (strcmp(cmd, "report") == 0)
        return checked_stdout(cmd_report(argc - 1, argv + 1)); /* "report" */
    if (strcmp(cmd, "export") == 0)
        return export_main(argc - 2, argv + 2);
    if (strcmp(cmd, "plot") == 0)
        return plot_main(argc - 2, argv + 2);
    if (strcmp(cmd, "merge") == 0)
        return checked_stdout(cmd_merge(argc - 2, argv + 2));
    if (strcmp(cmd, "nccl-tests") == 0) {
        char luadir[PATH_MAX];
        find_luadir(luadir, sizeof luadir);
        return checked_stdout(bind_nccl_tests_main(argc - 1, argv + 1, luadir));
    }
    if (strcmp(cmd, "worker") == 0) {
        char luadir[PATH_MAX];
        find_luadir(luadir, sizeof luadir);
        if (argc < 4 || strcmp(argv[2], "--rendezvous") != 0 ||
            (argc != 4 && (argc != 6 || strcmp(argv[4], "--timeout") != 0)))
            return fail("worker: usage: pipesim worker --rendezvous "
                        "HOST:PORT [--timeout SECONDS]");
        double t = argc == 6 ? strtod(argv[5], NULL) : 120;
        if (!(t > 0))
            return fail("worker: --timeout %s: expected seconds > 0", argv[5]);
        return bind_live_worker_main(argv[3], t, luadir);
    }
    if (strcmp(cmd, "calibrate") == 0) {
        char luadir[PATH_MAX];
        find_luadir(luadir, sizeof luadir);
        /* --live: live mode's transport and MLP (bind/live_cli.c), the
         * rest nccl-tests logs and GEMMs (bind/calibrate.c) */
        for (int i = 2; i < argc; i++)
            if (strcmp(argv[i], "--live") == 0) {
                for (int k = i; k + 1 < argc; k++)
                    argv[k] = argv[k + 1];
                return checked_stdout(
                    bind_live_calibrate_main(argc - 2, argv + 1, luadir));
            }
        return checked_stdout(bind_calibrate_main(argc - 1, argv + 1, luadir));
    }
    return help_unknown(cmd);
}
