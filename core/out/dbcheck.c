/* Checking a recorded run's rows before they are drawn. Each table's rules
 * become one query that returns the first row breaking any of them (a scan
 * of the run's rows through the run index, as the readers do anyway); the
 * same rules are then applied in C to that row to name the field and its
 * value. SQLite keeps infinities as REAL and NaN as NULL, so "finite" is
 * "a number no larger in magnitude than DBL_MAX". */
#include "out/dbcheck.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum rule_kind {
    R_RANK,     /* integer in 0..N-1 */
    R_TIME,     /* finite number >= 0 */
    R_END,      /* R_TIME and >= the previous column */
    R_NONNEG,   /* finite number >= 0 (bytes) */
    R_FINITE,   /* NULL or a finite number */
    R_OPT_TIME, /* NULL or R_TIME */
    R_OPT_INT,  /* NULL or a 32-bit integer */
};

typedef struct rule {
    const char *col;
    enum rule_kind kind;
} rule;

typedef struct table_rules {
    const char *table;
    rule rules[8];
    int n;
} table_rules;

static const table_rules tables[] = {
    {"event",
     {{"rank", R_RANK},
      {"t_start", R_TIME},
      {"t_end", R_END},
      {"stage", R_OPT_INT},
      {"chunk", R_OPT_INT},
      {"mb", R_OPT_INT}},
     6},
    {"transfer",
     {{"src", R_RANK},
      {"dst", R_RANK},
      {"t_start", R_TIME},
      {"t_end", R_END},
      {"bytes", R_NONNEG},
      {"mb", R_OPT_INT},
      {"tag", R_OPT_INT}},
     7},
    {"memory", {{"rank", R_RANK}, {"t", R_TIME}, {"bytes", R_FINITE}}, 3},
    {"rank_stat",
     {{"rank", R_RANK},
      {"busy", R_FINITE},
      {"bubble", R_FINITE},
      {"static_memory", R_FINITE},
      {"peak_memory", R_FINITE},
      {"t_peak", R_FINITE},
      {"exposed_comm", R_FINITE}},
     7},
};

/* "x * 0.0 IS 0" tests that x is finite: the product is 0 for every finite
 * number and NaN, which SQLite makes NULL, for an infinity (IS, not =, so
 * the test is false rather than NULL). A comparison with the literal DBL_MAX
 * would need SQLite to parse it exactly, which it does not under valgrind's
 * emulated long double. */
#define NUM(c) "typeof(" c ") IN ('integer', 'real')"

/* The SQL condition that holds when column c (previous column prev) obeys
 * kind; ?2 is N. */
static void condition(char *buf, size_t n, const char *c, const char *prev,
                      enum rule_kind kind)
{
    switch (kind) {
    case R_RANK:
        snprintf(buf, n, "(typeof(%s) = 'integer' AND %s >= 0 AND %s < ?2)", c,
                 c, c);
        break;
    case R_TIME:
    case R_NONNEG:
        snprintf(buf, n,
                 "(typeof(%s) IN ('integer', 'real') AND %s >= 0 AND "
                 "%s * 0.0 IS 0)",
                 c, c, c);
        break;
    case R_END:
        snprintf(buf, n,
                 "(typeof(%s) IN ('integer', 'real') AND %s >= %s AND "
                 "%s * 0.0 IS 0)",
                 c, c, prev, c);
        break;
    case R_FINITE:
        snprintf(buf, n,
                 "(%s IS NULL OR (typeof(%s) IN ('integer', 'real') AND "
                 "%s * 0.0 IS 0))",
                 c, c, c);
        break;
    case R_OPT_TIME:
        snprintf(buf, n,
                 "(%s IS NULL OR (typeof(%s) IN ('integer', 'real') AND "
                 "%s >= 0 AND %s * 0.0 IS 0))",
                 c, c, c, c);
        break;
    case R_OPT_INT:
        snprintf(buf, n,
                 "(%s IS NULL OR (typeof(%s) = 'integer' AND %s BETWEEN "
                 "-2147483648 AND 2147483647))",
                 c, c, c);
        break;
    }
}

/* One fetched value: its SQL type and value. */
typedef struct value {
    char type[8]; /* "integer", "real", "text", "null", "blob" */
    int64_t i;
    double d;
    char text[40];
} value;

static void fetch(rec_query *q, int col, value *v)
{
    snprintf(v->type, sizeof v->type, "%s", rec_query_text(q, 2 * col));
    v->i = rec_query_int(q, 2 * col + 1);
    v->d = rec_query_double(q, 2 * col + 1);
    snprintf(v->text, sizeof v->text, "%s", rec_query_text(q, 2 * col + 1));
}

static int is_num(const value *v)
{
    return strcmp(v->type, "integer") == 0 || strcmp(v->type, "real") == 0;
}

/* The value as a message shows it: 3, 1e+308, inf, 'abc', NULL, a blob. */
static const char *show(const value *v, char *buf, size_t n)
{
    if (strcmp(v->type, "integer") == 0)
        snprintf(buf, n, "%lld", (long long)v->i);
    else if (strcmp(v->type, "real") == 0)
        snprintf(buf, n, "%g", v->d);
    else if (strcmp(v->type, "text") == 0)
        snprintf(buf, n, "'%s'", v->text);
    else if (strcmp(v->type, "null") == 0)
        snprintf(buf, n, "NULL");
    else
        snprintf(buf, n, "a blob");
    return buf;
}

/* Applies rule r to v (prev: the previous column's value); on a breach
 * writes what is wrong into msg and returns 1. */
static int breach(const rule *r, const value *v, const value *prev,
                  int32_t nranks, char *msg, size_t n)
{
    char a[64], b[64];
    int null = strcmp(v->type, "null") == 0;
    int finite = is_num(v) && fabs(v->d) <= DBL_MAX;
    switch (r->kind) {
    case R_RANK:
        if (strcmp(v->type, "integer") == 0 && v->i >= 0 && v->i < nranks)
            return 0;
        snprintf(msg, n, "%s %s outside 0..%d", r->col, show(v, a, sizeof a),
                 (int)nranks - 1);
        return 1;
    case R_OPT_TIME:
        if (null)
            return 0;
        /* fall through */
    case R_TIME:
    case R_NONNEG:
        if (finite && v->d >= 0)
            return 0;
        snprintf(msg, n, "%s %s, not a finite %s >= 0", r->col,
                 show(v, a, sizeof a), r->kind == R_NONNEG ? "number" : "time");
        return 1;
    case R_END:
        if (finite && v->d >= prev->d)
            return 0;
        if (finite)
            snprintf(msg, n, "%s %s before %s %s", r->col, show(v, a, sizeof a),
                     (r - 1)->col, show(prev, b, sizeof b));
        else
            snprintf(msg, n, "%s %s, not a finite time >= 0", r->col,
                     show(v, a, sizeof a));
        return 1;
    case R_FINITE:
        if (null || finite)
            return 0;
        snprintf(msg, n, "%s %s, not a finite number", r->col,
                 show(v, a, sizeof a));
        return 1;
    case R_OPT_INT:
        if (null || (strcmp(v->type, "integer") == 0 && v->i >= INT32_MIN &&
                     v->i <= INT32_MAX))
            return 0;
        snprintf(msg, n, "%s %s, not a 32-bit integer", r->col,
                 show(v, a, sizeof a));
        return 1;
    }
    return 0;
}

static int check_table(rec_db *db, int64_t id, int32_t nranks,
                       const table_rules *t, ps_err *err)
{
    char sql[2048], cond[256];
    size_t len = (size_t)snprintf(sql, sizeof sql, "SELECT ");
    for (int i = 0; i < t->n; i++)
        len +=
            (size_t)snprintf(sql + len, sizeof sql - len, "%stypeof(%s), %s",
                             i ? ", " : "", t->rules[i].col, t->rules[i].col);
    len += (size_t)snprintf(sql + len, sizeof sql - len,
                            " FROM %s WHERE run = ?1 AND NOT (", t->table);
    for (int i = 0; i < t->n; i++) {
        condition(cond, sizeof cond, t->rules[i].col,
                  i ? t->rules[i - 1].col : NULL, t->rules[i].kind);
        len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s",
                                i ? " AND " : "", cond);
    }
    snprintf(sql + len, sizeof sql - len, ") ORDER BY rowid LIMIT 1");
    rec_query *q = rec_query_new(db, sql, err);
    if (!q)
        return PS_ERR;
    rec_query_bind_int(q, 1, id);
    rec_query_bind_int(q, 2, nranks);
    int rc = rec_query_step(q, err);
    if (rc == 1) {
        value v[8];
        char what[160] = "a value the checks reject";
        for (int i = 0; i < t->n; i++) {
            fetch(q, i, &v[i]);
            if (breach(&t->rules[i], &v[i], i ? &v[i - 1] : NULL, nranks, what,
                       sizeof what))
                break;
        }
        rc = ps_errf(err, "%s: run %lld: %s row has %s", rec_path(db),
                     (long long)id, t->table, what);
    }
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

/* The run's makespan and rank bound (see out/dbcheck.h). 0 when the run does
 * not exist. */
static int check_run_row(rec_db *db, int64_t id, int32_t *nranks, int *found,
                         ps_err *err)
{
    rec_query *q = rec_query_new(
        db,
        "SELECT typeof(makespan), makespan, "
        "CASE WHEN json_valid(params) THEN json_type(params, '$.cluster') "
        "END, CASE WHEN json_valid(params) AND json_type(params, "
        "'$.cluster.ranks') = 'integer' THEN json_extract(params, "
        "'$.cluster.ranks') END, "
        "CASE WHEN kind = 'pipeline' AND typeof(stages) = 'integer' AND "
        "typeof(dp) IN ('integer', 'null') THEN stages * coalesce(dp, 1) "
        "END FROM run WHERE id = ?1",
        err);
    if (!q)
        return PS_ERR;
    rec_query_bind_int(q, 1, id);
    int rc = rec_query_step(q, err);
    *found = rc == 1;
    *nranks = DBCHECK_MAX_RANKS;
    if (rc == 1) {
        value m;
        fetch(q, 0, &m);
        char what[160];
        static const rule makespan = {"makespan", R_OPT_TIME};
        if (breach(&makespan, &m, NULL, 0, what, sizeof what))
            rc = ps_errf(err, "%s: run %lld: run row has %s", rec_path(db),
                         (long long)id, what);
        int64_t n = 0;
        if (!rec_query_isnull(q, 3))
            n = rec_query_int(q, 3); /* the cluster's ranks */
        else if (rec_query_isnull(q, 2) && !rec_query_isnull(q, 4))
            n = rec_query_int(q, 4); /* no cluster: stages x dp */
        if (n >= 1 && n <= DBCHECK_MAX_RANKS)
            *nranks = (int32_t)n;
    }
    rec_query_free(q);
    return rc < 0 ? PS_ERR : PS_OK;
}

int dbcheck_run(rec_db *db, int64_t id, int32_t *nranks, ps_err *err)
{
    int32_t n;
    int found;
    if (check_run_row(db, id, &n, &found, err))
        return PS_ERR;
    if (nranks)
        *nranks = n;
    if (!found)
        return PS_OK;
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        if (check_table(db, id, n, &tables[i], err))
            return PS_ERR;
    return PS_OK;
}
