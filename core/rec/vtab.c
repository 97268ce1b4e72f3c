/* What the recorder's two row sources share (issue 12): pipesim_rows
 * (rec/rows.c, a timeline block) and pipesim_summary (rec/sum.c, a batch's
 * summary rows) are eponymous, read-only virtual tables over rows in C
 * memory, scanned in full by one INSERT ... SELECT. Everything but how a
 * row's columns read is the same, and lives here: connecting, the one
 * plan, cursors, and registering the module on a connection. */
#include <string.h>

#include "rec/impl.h"

typedef struct vtab {
    sqlite3_vtab base;
    const rec_vtab_scan *scan; /* in the rec_db, set around each INSERT */
} vtab;

static int vtab_connect(sqlite3 *c, void *aux, int argc,
                        const char *const *argv, sqlite3_vtab **out,
                        char **errmsg)
{
    (void)argc;
    (void)argv;
    (void)errmsg;
    const rec_vtab_scan *scan = aux;
    int rc = sqlite3_declare_vtab(c, scan->kind->decl);
    if (rc != SQLITE_OK)
        return rc;
    /* not from triggers or views a file might carry: only pipesim's own
     * statements read it */
    sqlite3_vtab_config(c, SQLITE_VTAB_DIRECTONLY);
    vtab *t = sqlite3_malloc(sizeof *t);
    if (!t)
        return SQLITE_NOMEM;
    memset(t, 0, sizeof *t);
    t->scan = scan;
    *out = &t->base;
    return SQLITE_OK;
}

static int vtab_disconnect(sqlite3_vtab *t)
{
    sqlite3_free(t);
    return SQLITE_OK;
}

/* A full scan, the only plan there is. */
static int vtab_best_index(sqlite3_vtab *t, sqlite3_index_info *info)
{
    const rec_vtab_scan *scan = ((vtab *)t)->scan;
    info->estimatedCost = scan->kind->max_rows;
    info->estimatedRows = scan->kind->max_rows;
    return SQLITE_OK;
}

static int vtab_open(sqlite3_vtab *t, sqlite3_vtab_cursor **out)
{
    (void)t;
    rec_vtab_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static int vtab_close(sqlite3_vtab_cursor *c)
{
    sqlite3_free(c);
    return SQLITE_OK;
}

/* The scan reads the rows its rec_db points at when it begins. */
static int vtab_filter(sqlite3_vtab_cursor *base, int idx, const char *idxstr,
                       int argc, sqlite3_value **argv)
{
    (void)idx;
    (void)idxstr;
    (void)argc;
    (void)argv;
    rec_vtab_cursor *c = (rec_vtab_cursor *)base;
    const rec_vtab_scan *scan = ((vtab *)base->pVtab)->scan;
    c->rows = scan->rows;
    c->n = scan->n;
    c->nulls = scan->nulls;
    c->k = 0;
    return SQLITE_OK;
}

static int vtab_next(sqlite3_vtab_cursor *base)
{
    ((rec_vtab_cursor *)base)->k++;
    return SQLITE_OK;
}

static int vtab_eof(sqlite3_vtab_cursor *base)
{
    const rec_vtab_cursor *c = (const rec_vtab_cursor *)base;
    return c->k >= c->n;
}

static int vtab_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid)
{
    *rowid = ((const rec_vtab_cursor *)base)->k;
    return SQLITE_OK;
}

int rec_vtab_register_on(sqlite3 *c, rec_vtab_scan *scan,
                         const rec_vtab_kind *kind)
{
    if (scan->registered)
        return SQLITE_OK;
    scan->kind = kind;
    /* Eponymous only (no xCreate): CREATE VIRTUAL TABLE cannot name it,
     * so it never enters a file's schema. The module lives in scan, which
     * lives as long as the connection. */
    memset(&scan->module, 0, sizeof scan->module);
    scan->module.xConnect = vtab_connect;
    scan->module.xBestIndex = vtab_best_index;
    scan->module.xDisconnect = vtab_disconnect;
    scan->module.xOpen = vtab_open;
    scan->module.xClose = vtab_close;
    scan->module.xFilter = vtab_filter;
    scan->module.xNext = vtab_next;
    scan->module.xEof = vtab_eof;
    scan->module.xColumn = kind->column;
    scan->module.xRowid = vtab_rowid;
    int rc = sqlite3_create_module_v2(c, kind->name, &scan->module, scan, NULL);
    if (rc == SQLITE_OK)
        scan->registered = 1;
    return rc;
}

int rec_vtab_register(rec_db *db, rec_vtab_scan *scan,
                      const rec_vtab_kind *kind, ps_err *err)
{
    if (rec_vtab_register_on(db->db, scan, kind) != SQLITE_OK)
        return rec_sql_fail(db, "cannot prepare the inserts", err);
    return PS_OK;
}
