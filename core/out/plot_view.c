/* The view options of `pipesim plot` (issue 28): --ranks and --replica
 * choose the rank_stat rows a plot that reads them aggregates (the rows
 * of the simulated ranks standing for those cluster ranks; those of one
 * data-parallel replica), as report and export choose the rows they draw
 * (out/view.h). --stages and --window choose part of a timeline, which a
 * plot of per-run quantities has not: refused with one line. And the
 * output file's writer, shared by plot.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out/export.h"
#include "out/plot.h"

int plot_view_arg(out_view *v, const char **flag, int argc, char **argv, int *i)
{
    static const char *const flags[] = {"--ranks", "--stages", "--window",
                                        "--replica"};
    const char *a = argv[*i], *name = NULL, *value = NULL;
    for (int k = 0; k < 4 && !name; k++) {
        size_t n = strlen(flags[k]);
        if (strncmp(a, flags[k], n) == 0 && (!a[n] || a[n] == '=')) {
            name = flags[k];
            value = a[n] == '=' ? a + n + 1 : NULL;
        }
    }
    if (!name)
        return 0;
    if (!value && *i + 1 >= argc) {
        ps_fail("plot: %s needs a value", name);
        return -1;
    }
    if (!value)
        value = argv[++*i];
    ps_err err;
    if (view_option(v, name, value, &err)) {
        ps_fail("plot: %s", err.msg);
        return -1;
    }
    if (!*flag)
        *flag = name;
    return 1;
}

/* Writes "COL BETWEEN lo AND hi OR ..." for the ranges of s. */
static void put_ranges(FILE *f, const char *col, const view_set *s)
{
    for (int i = 0; i < s->n; i++)
        fprintf(f, "%s%s BETWEEN %lld AND %lld", i ? " OR " : "", col,
                (long long)s->r[i][0], (long long)s->r[i][1]);
}

char *plot_view_from(const out_view *v, const char *flag, int join, ps_err *err)
{
    if (v->stages.n || v->windowed) {
        ps_errf(err,
                "%s applies to a run's timeline (pipesim report DB RUN, "
                "pipesim export), not to plot's per-run quantities",
                v->stages.n ? "--stages" : "--window");
        return NULL;
    }
    int ranks = v->ranks.n > 0, replica = v->replica >= 0;
    if ((ranks || replica) && !join) {
        ps_errf(err,
                "%s chooses the rank_stat rows a plot aggregates, and --x, "
                "--y, --by, --dashed and --where read none (such as "
                "max(rank_stat.peak_memory))",
                flag);
        return NULL;
    }
    char *sql = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&sql, &size);
    if (!f) {
        ps_errf(err, "out of memory");
        return NULL;
    }
    fputs(join ? "run LEFT JOIN rank_stat ON rank_stat.run = run.id" : "run",
          f);
    /* a rank_stat row stands for the cluster ranks rank_member lists */
    const char *member = "EXISTS (SELECT 1 FROM rank_member m WHERE m.run = "
                         "rank_stat.run AND m.rank = rank_stat.rank AND (";
    if (ranks) {
        fputs(" AND (", f);
        put_ranges(f, "rank_stat.rank", &v->ranks);
        fprintf(f, " OR %s", member);
        put_ranges(f, "m.member", &v->ranks);
        fputs(")))", f);
    }
    if (replica)
        fprintf(f, " AND %sm.dp = %d))", member, v->replica);
    if (fclose(f) != 0 || !sql) {
        free(sql);
        ps_errf(err, "out of memory");
        return NULL;
    }
    return sql;
}

int plot_write_out(const char *path, const char *data, size_t size)
{
    FILE *f = path ? fopen(path, "wb") : stdout;
    if (!f)
        return ps_fail("plot: %s: %s", path, strerror(errno));
    size_t w = fwrite(data, 1, size, f);
    int bad = w != size || ferror(f) || fflush(f) != 0;
    int saved = errno;
    if (path && fclose(f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        if (path)
            remove(path);
        else
            clearerr(stdout);
        return ps_fail("plot: writing %s: %s", path ? path : "standard output",
                       strerror(saved));
    }
    return 0;
}
