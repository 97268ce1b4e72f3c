/* `pipesim export`: argument parsing and output handling around
 * export_chrome / export_svg. The export is rendered into memory first and
 * the output file written only when it succeeded, so a failed export never
 * leaves a truncated trace behind. */
#include "out/export.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: pipesim export DB RUN --format chrome|svg|pytorch-csv [-o "
    "FILE]\n"
    "       pipesim export DB --compare RUN1,RUN2,... [--format svg] "
    "[-o FILE]\n"
    "Options of chrome and svg: --replica K|all (default: replica 0 alone,\n"
    "one row per pipeline stage, the replicas identical to it folded into\n"
    "it, when a run simulates more than 64 ranks over several replicas;\n"
    "the export says so), --all (every rank: --replica all), --ranks\n"
    "0-7,64 (the rows standing for those cluster ranks), --stages 0,2-3,\n"
    "--window START:END (seconds; units as in 1.5ms:2ms).\n"
    "Without -o the export goes to stdout. Without --format it follows the\n"
    "extension of FILE (.json: chrome, .svg: svg, .csv: pytorch-csv).\n";

/* one line per failure, exit status 1 (base/err.h) */
#define fail ps_fail

/* A run id: a positive integer; -2 for one past int64's range. */
static int parse_run(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE && v > 0 && end != s && !*end)
        return -2;
    if (errno || end == s || *end || v < 1)
        return -1;
    *out = v;
    return 0;
}

/* "3,5,7" into a new array; NULL (and *n = -1 on a bad id) on failure. */
static int64_t *parse_list(const char *s, int *n, const char **bad)
{
    int cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    int64_t *ids = malloc((size_t)cap * sizeof *ids);
    char *copy = malloc(strlen(s) + 1);
    if (!ids || !copy) {
        free(ids);
        free(copy);
        *n = 0;
        return NULL;
    }
    strcpy(copy, s);
    *n = 0;
    for (char *tok = copy, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        if (parse_run(tok, &ids[*n])) {
            *bad = s; /* the caller quotes the whole list */
            free(ids);
            free(copy);
            *n = -1;
            return NULL;
        }
        (*n)++;
    }
    free(copy);
    return ids;
}

static const char *ext_format(const char *path)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (dot && strcmp(dot, ".json") == 0)
        return "chrome";
    if (dot && strcmp(dot, ".svg") == 0)
        return "svg";
    if (dot && strcmp(dot, ".csv") == 0)
        return "pytorch-csv";
    return NULL;
}

/* The value of option argv[*i] ("--opt VALUE" or "--opt=VALUE"), or NULL
 * when missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

static int is_opt(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static int write_file(const char *path, const char *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return fail("%s: %s", path, strerror(errno));
    size_t w = fwrite(data, 1, size, f);
    int bad = w != size || ferror(f);
    int saved = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad)
        return fail("%s: %s", path, strerror(saved));
    return 0;
}

/* The command line of one export, as given and as resolved. */
typedef struct export_args {
    const char *db_path, *run_arg, *format, *output, *compare;
    const char *view_flag; /* the first view option given, for messages */
    int chrome, csv;
    out_view view; /* --replica, --ranks, --stages, --window */
} export_args;

/* The view option arg names ("--ranks" or "--ranks=0-7"), or NULL. */
static const char *view_flag(const char *arg)
{
    static const char *const flags[] = {"--replica", "--ranks", "--stages",
                                        "--window"};
    for (int i = 0; i < 4; i++) {
        size_t n = strlen(flags[i]);
        if (strncmp(arg, flags[i], n) == 0 && (!arg[n] || arg[n] == '='))
            return flags[i];
    }
    return NULL;
}

/* Reads the options and the two operands: 0, -1 after --help (printed),
 * or the failure's exit status. */
static int read_args(int argc, char **argv, export_args *x)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            return -1;
        } else if (is_opt(a, "--format")) {
            if (!(x->format = opt_value(argc, argv, &i, "--format")))
                return fail("export: --format needs chrome or svg");
        } else if (is_opt(a, "--compare")) {
            if (!(x->compare = opt_value(argc, argv, &i, "--compare")))
                return fail("export: --compare needs a list of run ids "
                            "such as 1,2,3");
        } else if (strcmp(a, "--all") == 0) { /* --replica all */
            ps_err err;
            if (view_option(&x->view, "--replica", "all", &err))
                return fail("export: %s", err.msg);
            if (!x->view_flag)
                x->view_flag = "--all";
        } else if (view_flag(a)) {
            const char *flag = view_flag(a), *v;
            ps_err err;
            if (!(v = opt_value(argc, argv, &i, flag)))
                return fail("export: %s needs a value (%s)", flag,
                            strcmp(flag, "--replica") == 0
                                ? "a replica number or all"
                            : strcmp(flag, "--window") == 0
                                ? "START:END in seconds"
                                : "numbers and ranges such as 0-7,64");
            if (view_option(&x->view, flag, v, &err))
                return fail("export: %s", err.msg);
            if (!x->view_flag)
                x->view_flag = flag;
        } else if (strcmp(a, "-o") == 0 || is_opt(a, "--output")) {
            if (!(x->output = opt_value(argc, argv, &i,
                                        a[1] == 'o' ? "-o" : "--output")))
                return fail("export: %s needs a file name", a);
        } else if (a[0] == '-' && a[1] != '\0') {
            return fail("export: unknown option '%s' (usage: pipesim export "
                        "DB RUN --format chrome|svg [-o FILE])",
                        a);
        } else if (!x->db_path) {
            x->db_path = a;
        } else if (!x->run_arg) {
            x->run_arg = a;
        } else {
            return fail("export: unexpected argument '%s' (usage: pipesim "
                        "export DB RUN --format chrome|svg [-o FILE])",
                        a);
        }
    }
    return 0;
}

/* Checks the options against each other and resolves the format (from
 * -o's extension when not given) and the replica: 0 or the failure's exit
 * status. */
static int resolve_args(export_args *x)
{
    if (!x->db_path)
        return fail("export: missing DB (usage: pipesim export DB RUN "
                    "--format chrome|svg [-o FILE])");
    if (x->compare && x->run_arg)
        return fail("export: give either RUN or --compare RUN1,RUN2,..., "
                    "not both");
    if (!x->compare && !x->run_arg)
        return fail("export: missing RUN (usage: pipesim export DB RUN "
                    "--format chrome|svg [-o FILE])");
    if (!x->format)
        x->format = x->compare ? "svg" : ext_format(x->output);
    if (!x->format)
        return fail("export: missing --format chrome|svg");
    x->chrome = strcmp(x->format, "chrome") == 0;
    x->csv = strcmp(x->format, "pytorch-csv") == 0;
    if (!x->chrome && !x->csv && strcmp(x->format, "svg") != 0)
        return fail("export: unknown format '%s' (expected chrome, svg or "
                    "pytorch-csv)",
                    x->format);
    if ((x->csv || x->chrome) && x->compare)
        return fail("export: --compare draws runs side by side and needs "
                    "--format svg");
    if (x->csv && x->view_flag) /* export_pytorch_csv: replica 0's ranks */
        return fail("export: %s applies to chrome and svg; "
                    "pytorch-csv writes replica 0's schedule",
                    x->view_flag);
    if (x->output && !*x->output) /* "pipesim: : No such file or directory" */
        return fail("export: -o: the file name is empty (leave -o out to "
                    "write to standard output)");
    return 0;
}

/* The run ids to export: --compare's list (allocated) or RUN in *one.
 * NULL after a failure, which it has printed. */
static int64_t *read_ids(const export_args *x, int64_t *one, int *nids)
{
    *nids = 1;
    if (x->compare) {
        const char *bad = NULL;
        int64_t *ids = parse_list(x->compare, nids, &bad);
        if (!ids && *nids < 0)
            fail("export: bad run list '%s' (expected positive integers "
                 "separated by commas)",
                 bad);
        else if (!ids)
            fail("export: out of memory");
        return ids;
    }
    int prc = parse_run(x->run_arg, one);
    if (prc == -2)
        fail("export: run id %s is out of range (run ids are at most %lld)",
             x->run_arg, (long long)INT64_MAX);
    else if (prc)
        fail("export: bad run id '%s' (expected a positive integer)",
             x->run_arg);
    return prc ? NULL : one;
}

/* Writes the export of ids into memory, then to -o's file or stdout (a
 * failure leaves no half-written file). */
static int write_export(const export_args *x, const int64_t *ids, int nids)
{
    int rc = 1;
    ps_err err = {0};
    char *buf = NULL;
    size_t size = 0;
    FILE *mem = NULL;
    rec_db *db = rec_open_read(x->db_path, &err);
    if (!db) {
        fail("%s", err.msg);
        goto done;
    }
    if (!(mem = open_memstream(&buf, &size))) {
        fail("export: %s", strerror(errno));
        goto done;
    }
    int xrc = x->chrome ? export_chrome(db, ids[0], &x->view, mem, &err)
              : x->csv  ? export_pytorch_csv(db, ids[0], mem, &err)
                        : export_svg(db, ids, nids, &x->view, mem, &err);
    if (fclose(mem) != 0 && xrc == 0) {
        fail("export: %s", strerror(errno));
        goto done;
    }
    if (xrc) {
        fail("%s", err.msg);
        goto done;
    }
    if (x->output) {
        rc = write_file(x->output, buf, size);
    } else {
        rc = fwrite(buf, 1, size, stdout) == size && fflush(stdout) == 0
                 ? 0
                 : fail("export: stdout: %s", strerror(errno));
    }
done:
    free(buf);
    rec_close(db, NULL);
    return rc;
}

int export_main(int argc, char **argv)
{
    export_args x = {0};
    view_init(&x.view);
    int rc = read_args(argc, argv, &x);
    if (!rc)
        rc = resolve_args(&x);
    if (rc) {
        view_free(&x.view);
        return rc < 0 ? 0 : rc;
    }
    int64_t one;
    int nids;
    int64_t *ids = read_ids(&x, &one, &nids);
    if (ids) {
        rc = write_export(&x, ids, nids);
        if (ids != &one)
            free(ids);
    } else {
        rc = 1;
    }
    view_free(&x.view);
    return rc;
}
