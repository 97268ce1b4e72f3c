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
    "Options of chrome and svg: --replica K|all (default: replica 0 alone\n"
    "when a run simulates more than 64 ranks over several replicas).\n"
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

/* --replica's value: "all", or a replica number from 0; -3 when bad. */
static int parse_replica(const char *s)
{
    if (strcmp(s, "all") == 0)
        return EXPORT_REPLICA_ALL;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > INT32_MAX)
        return -3;
    return (int)v;
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

int export_main(int argc, char **argv)
{
    const char *db_path = NULL, *run_arg = NULL, *format = NULL;
    const char *output = NULL, *compare = NULL, *replica_arg = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        } else if (is_opt(a, "--format")) {
            if (!(format = opt_value(argc, argv, &i, "--format")))
                return fail("export: --format needs chrome or svg");
        } else if (is_opt(a, "--compare")) {
            if (!(compare = opt_value(argc, argv, &i, "--compare")))
                return fail("export: --compare needs a list of run ids "
                            "such as 1,2,3");
        } else if (is_opt(a, "--replica")) {
            if (!(replica_arg = opt_value(argc, argv, &i, "--replica")))
                return fail("export: --replica needs a replica number or "
                            "all");
        } else if (strcmp(a, "-o") == 0 || is_opt(a, "--output")) {
            if (!(output = opt_value(argc, argv, &i,
                                     a[1] == 'o' ? "-o" : "--output")))
                return fail("export: %s needs a file name", a);
        } else if (a[0] == '-' && a[1] != '\0') {
            return fail("export: unknown option '%s' (usage: pipesim export "
                        "DB RUN --format chrome|svg [-o FILE])",
                        a);
        } else if (!db_path) {
            db_path = a;
        } else if (!run_arg) {
            run_arg = a;
        } else {
            return fail("export: unexpected argument '%s' (usage: pipesim "
                        "export DB RUN --format chrome|svg [-o FILE])",
                        a);
        }
    }
    if (!db_path)
        return fail("export: missing DB (usage: pipesim export DB RUN "
                    "--format chrome|svg [-o FILE])");
    if (compare && run_arg)
        return fail("export: give either RUN or --compare RUN1,RUN2,..., "
                    "not both");
    if (!compare && !run_arg)
        return fail("export: missing RUN (usage: pipesim export DB RUN "
                    "--format chrome|svg [-o FILE])");
    if (!format)
        format = compare ? "svg" : ext_format(output);
    if (!format)
        return fail("export: missing --format chrome|svg");
    int chrome = strcmp(format, "chrome") == 0;
    int csv = strcmp(format, "pytorch-csv") == 0;
    if (!chrome && !csv && strcmp(format, "svg") != 0)
        return fail("export: unknown format '%s' (expected chrome, svg or "
                    "pytorch-csv)",
                    format);
    if (csv && compare)
        return fail("export: --compare draws runs side by side and needs "
                    "--format svg");
    if (chrome && compare)
        return fail("export: --compare draws runs side by side and needs "
                    "--format svg");
    int replica =
        replica_arg ? parse_replica(replica_arg) : EXPORT_REPLICA_AUTO;
    if (replica == -3)
        return fail("export: --replica: expected a replica number (0, 1, "
                    "...) or all, got '%s'",
                    replica_arg);
    if (csv && replica_arg) /* export_pytorch_csv: replica 0's ranks */
        return fail("export: --replica applies to chrome and svg; "
                    "pytorch-csv writes replica 0's schedule");

    int64_t one, *ids = &one;
    int nids = 1;
    if (compare) {
        const char *bad = NULL;
        ids = parse_list(compare, &nids, &bad);
        if (!ids && nids < 0)
            return fail("export: bad run list '%s' (expected positive "
                        "integers separated by commas)",
                        bad);
        if (!ids)
            return fail("export: out of memory");
    } else if (parse_run(run_arg, &one) == -2) {
        return fail("export: run id %s is out of range (run ids are at most "
                    "%lld)",
                    run_arg, (long long)INT64_MAX);
    } else if (parse_run(run_arg, &one)) {
        return fail("export: bad run id '%s' (expected a positive integer)",
                    run_arg);
    }
    if (output && !*output) /* "pipesim: : No such file or directory" */
        return fail("export: -o: the file name is empty (leave -o out to "
                    "write to standard output)");

    int rc = 1;
    ps_err err = {0};
    char *buf = NULL;
    size_t size = 0;
    FILE *mem = NULL;
    rec_db *db = rec_open_read(db_path, &err);
    if (!db) {
        fail("%s", err.msg);
        goto done;
    }
    if (!(mem = open_memstream(&buf, &size))) {
        fail("export: %s", strerror(errno));
        goto done;
    }
    int xrc = chrome ? export_chrome(db, ids[0], replica, mem, &err)
              : csv  ? export_pytorch_csv(db, ids[0], mem, &err)
                     : export_svg(db, ids, nids, replica, mem, &err);
    if (fclose(mem) != 0 && xrc == 0) {
        fail("export: %s", strerror(errno));
        goto done;
    }
    if (xrc) {
        fail("%s", err.msg);
        goto done;
    }
    if (output) {
        rc = write_file(output, buf, size);
    } else {
        rc = fwrite(buf, 1, size, stdout) == size && fflush(stdout) == 0
                 ? 0
                 : fail("export: stdout: %s", strerror(errno));
    }
done:
    free(buf);
    rec_close(db, NULL);
    if (ids != &one)
        free(ids);
    return rc;
}
