/* pipesim calibrate --nccl-tests LOG... [--gemm CSV]... [--cluster PRESET|
 * FILE.lua] [-o FILE]: fits a cluster file to measurements (issue 27 item
 * 17; docs/calibrate.md). Parses the flags (one line per mistake), reads
 * the measurement files (regular files of at most CAL_MAX_BYTES), hands
 * their text to lua/pipesim/calibrate.lua (cli) in a Lua state built as
 * `pipesim run` builds one, sandboxed, and writes the file it returns:
 * to standard output, or atomically to -o's path (a temporary file in the
 * same directory, renamed over it). Records no run. */
#include "bind/calibrate.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "base/err.h"
#include "base/limit.h"
#include "bind/bind.h"

/* A measurement file larger than this is refused (a log of every size
 * nccl-tests can print is a few MiB). */
#define CAL_MAX_BYTES (64L << 20)

typedef struct cal_opts {
    const char **logs, **gemms; /* paths, as typed */
    int nlogs, ngemms;
    const char *cluster, *ranks, *nodes, *op, *out;
    int in_place;
} cal_opts;

#define CAL_FLAGS                                                              \
    "--nccl-tests, --gemm, --cluster, --ranks, --nodes, --op, --in-place, -o"

static int parse(int argc, char **argv, cal_opts *o)
{
    enum {
        OPT_NCCL = 256,
        OPT_GEMM,
        OPT_CLUSTER,
        OPT_RANKS,
        OPT_NODES,
        OPT_OP,
        OPT_INPLACE
    };
    static const struct option longopts[] = {
        {"nccl-tests", required_argument, NULL, OPT_NCCL},
        {"gemm", required_argument, NULL, OPT_GEMM},
        {"cluster", required_argument, NULL, OPT_CLUSTER},
        {"ranks", required_argument, NULL, OPT_RANKS},
        {"nodes", required_argument, NULL, OPT_NODES},
        {"op", required_argument, NULL, OPT_OP},
        {"in-place", no_argument, NULL, OPT_INPLACE},
        {"output", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int c, last_gemm = 0;
    while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
        const char *a = optind > 1 ? argv[optind - 1] : "";
        switch (c) {
        case OPT_NCCL:
            o->logs[o->nlogs++] = optarg;
            last_gemm = 0;
            break;
        case OPT_GEMM:
            o->gemms[o->ngemms++] = optarg;
            last_gemm = 1;
            break;
        case OPT_CLUSTER: o->cluster = optarg; break;
        case OPT_RANKS: o->ranks = optarg; break;
        case OPT_NODES: o->nodes = optarg; break;
        case OPT_OP: o->op = optarg; break;
        case OPT_INPLACE: o->in_place = 1; break;
        case 'o':
            if (!*optarg)
                return ps_fail("calibrate: -o: the output path is empty");
            o->out = optarg;
            break;
        case ':': return ps_fail("calibrate: %s needs a value", a);
        default:
            return ps_fail("calibrate: unknown option '%s' (expected %s)", a,
                           CAL_FLAGS);
        }
    }
    /* `--nccl-tests a.log b.log`: the files after a flag are of its kind */
    for (int k = optind; k < argc; k++) {
        if (last_gemm)
            o->gemms[o->ngemms++] = argv[k];
        else
            o->logs[o->nlogs++] = argv[k];
    }
    if (o->nlogs == 0 && o->ngemms == 0)
        return ps_fail("calibrate: nothing to calibrate (usage: pipesim "
                       "calibrate --nccl-tests LOG... [--gemm CSV] "
                       "[--cluster PRESET] [-o FILE.lua])");
    return 0;
}

/* A positive integer flag into *v, or a one-line failure. */
static int count_flag(const char *flag, const char *text, long *v)
{
    char *end;
    errno = 0;
    *v = text ? strtol(text, &end, 10) : 0;
    if (text && (!*text || *end || errno || *v < 1 || *v > 1 << 24))
        return ps_fail("calibrate: %s %s: expected a whole number from 1", flag,
                       text);
    return 0;
}

/* The bytes of a regular file at path (NUL-terminated, malloc'd), or NULL
 * after one `pipesim: calibrate: ...` line. */
static char *slurp(const char *path, size_t *len)
{
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f) {
        ps_fail("calibrate: %s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size > CAL_MAX_BYTES) {
        fclose(f);
        ps_fail("calibrate: %s: %s", path,
                S_ISREG(st.st_mode) ? "larger than 64 MiB"
                                    : "not a regular file");
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    *len = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    int bad = !buf || ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        ps_fail("calibrate: %s: cannot read it", path);
        return NULL;
    }
    buf[*len] = '\0';
    return buf;
}

/* [-0, +0] t[key] = { {name = path, text = ...}, ... } for paths; 1 after
 * a failure line. */
static int push_files(lua_State *L, const char *key, const char **paths, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        size_t len;
        char *text = slurp(paths[i], &len);
        if (!text) {
            lua_pop(L, 1);
            return 1;
        }
        lua_createtable(L, 0, 2);
        lua_pushstring(L, paths[i]);
        lua_setfield(L, -2, "name");
        lua_pushlstring(L, text, len);
        free(text);
        lua_setfield(L, -2, "text");
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, key);
    return 0;
}

/* text to path through a temporary file renamed over it: a reader never
 * sees half a file, and a failure leaves the old one. */
static int write_atomic(const char *path, const char *text, size_t len)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid()) >=
        (int)sizeof tmp)
        return ps_fail("calibrate: -o %s: the path is too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return ps_fail("calibrate: -o %s: %s", path, strerror(errno));
    int ok = fwrite(text, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return ps_fail("calibrate: -o %s: %s", path, strerror(e));
    }
    return 0;
}

/* [-0, +0] the options table for calibrate.cli, on top; 1 after a
 * failure line */
static int push_opts(lua_State *L, const cal_opts *o, long ranks, long nodes)
{
    lua_newtable(L);
    if (push_files(L, "logs", o->logs, o->nlogs) ||
        push_files(L, "gemms", o->gemms, o->ngemms))
        return 1;
    if (ranks > 0) {
        lua_pushinteger(L, ranks);
        lua_setfield(L, -2, "ranks");
    }
    if (nodes > 0) {
        lua_pushinteger(L, nodes);
        lua_setfield(L, -2, "nodes");
    }
    if (o->op) {
        lua_pushstring(L, o->op);
        lua_setfield(L, -2, "op");
    }
    lua_pushboolean(L, o->in_place);
    lua_setfield(L, -2, "in_place");
    if (!o->cluster)
        return 0;
    size_t n = strlen(o->cluster);
    if (n > 4 && strcmp(o->cluster + n - 4, ".lua") == 0) {
        /* the file's value: a table for ps.cluster */
        if (bind_command_status(L, bind_load_scenario(L, o->cluster, 1)) ||
            bind_command_status(L, lua_pcall(L, 0, 1, 0)))
            return 1;
    } else {
        lua_pushstring(L, o->cluster);
    }
    lua_setfield(L, -2, "cluster");
    lua_pushstring(L, o->cluster);
    lua_setfield(L, -2, "cluster_name");
    return 0;
}

/* Runs calibrate.cli in L and writes its file; 0 or 1 after one line. */
static int run(lua_State *L, const cal_opts *o, long ranks, long nodes)
{
    lua_getglobal(L, "require");
    lua_pushstring(L, "pipesim.calibrate");
    if (bind_command_status(L, lua_pcall(L, 1, 1, 0)))
        return 1;
    lua_getfield(L, -1, "cli");
    lua_getglobal(L, "require");
    lua_pushstring(L, "pipesim");
    if (bind_command_status(L, lua_pcall(L, 1, 1, 0)) ||
        push_opts(L, o, ranks, nodes) ||
        bind_command_status(L, lua_pcall(L, 2, 3, 0)))
        return 1;
    size_t len;
    const char *text = lua_tolstring(L, -3, &len);
    if (!text)
        return ps_fail("calibrate: the fit returned no file");
    if (lua_istable(L, -2)) { /* warnings, each one line on stderr */
        for (lua_Integer i = 1; lua_rawgeti(L, -2, i) == LUA_TSTRING; i++) {
            fflush(stdout);
            fprintf(stderr, "pipesim: warning: calibrate: %s\n",
                    lua_tostring(L, -1));
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    if (!o->out) {
        fwrite(text, 1, len, stdout);
        return 0;
    }
    if (write_atomic(o->out, text, len))
        return 1;
    printf("%s written to %s\n", lua_tostring(L, -1), o->out);
    return 0;
}

int bind_calibrate_main(int argc, char **argv, const char *luadir)
{
    cal_opts o = {0};
    o.logs = calloc((size_t)argc + 1, sizeof *o.logs);
    o.gemms = calloc((size_t)argc + 1, sizeof *o.gemms);
    long ranks = 0, nodes = 0;
    int rc = !o.logs || !o.gemms ? ps_fail("calibrate: out of memory")
                                 : parse(argc, argv, &o);
    if (rc == 0)
        rc = count_flag("--ranks", o.ranks, &ranks) ||
             count_flag("--nodes", o.nodes, &nodes);
    lua_State *L = rc == 0 ? bind_newstate() : NULL;
    if (rc == 0 && !L)
        rc = ps_fail("cannot create a Lua state");
    if (rc == 0) {
        luaL_openlibs(L);
        /* nothing is recorded (every collective runs with record "none");
         * the session still names a database, as every session does */
        bind_session s = {
            "results/calibrate.db", "calibrate", NULL, 0, 1, 0, 0};
        bind_setup(L, luadir, &s);
        size_t n = o.cluster ? strlen(o.cluster) : 0;
        int file = n > 4 && strcmp(o.cluster + n - 4, ".lua") == 0;
        bind_sandbox(L, luadir, file ? o.cluster : ".", ".");
        ps_err err;
        rc = bind_limits(L, luadir, 0, &err);
        if (rc)
            ps_print_error(err.msg);
        else
            rc = run(L, &o, ranks, nodes);
        bind_limits_end(L);
        if (limit_stopped() && rc == 0)
            rc = 1;
        lua_close(L);
    }
    free(o.logs);
    free(o.gemms);
    return rc;
}
