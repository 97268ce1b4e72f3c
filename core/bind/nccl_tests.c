/* pipesim nccl-tests OP --cluster PRESET|cluster.lua [-b -e -f -i -g ...]:
 * nccl-tests' command line (src/common.cu's flags) over a simulated
 * cluster. Parses the flags (one line per mistake), builds a Lua state as
 * `pipesim run` does and hands them to lua/pipesim/nccl_tests.lua (cli),
 * which prints nccl-tests' table and records every size as a collective. */
#include "bind/nccl_tests.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
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
#include "coll/coll.h"

/* What the flags set; strings as typed (nccl_tests.lua checks sizes). */
typedef struct nt_opts {
    const char *op, *cluster, *db;
    const char *b, *e, *f, *i, *g, *t;
    const char *algorithm, *protocol;
} nt_opts;

/* A whole number in [lo, hi] (nccl-tests' -n, -w, -c: accepted, nothing
 * to repeat in a deterministic simulation). */
static int whole(const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    return *v && !*end && !errno && x >= lo && x <= hi;
}

#define NT_FLAGS                                                               \
    "-b, -e, -i, -f, -g, -t, -n, -w, -c, -o, -d, --cluster, --db, "            \
    "--algorithm, --protocol"

static int parse(int argc, char **argv, nt_opts *o)
{
    enum { OPT_CLUSTER = 256, OPT_DB, OPT_ALGO, OPT_PROTO };
    static const struct option longopts[] = {
        {"cluster", required_argument, NULL, OPT_CLUSTER},
        {"db", required_argument, NULL, OPT_DB},
        {"algorithm", required_argument, NULL, OPT_ALGO},
        {"protocol", required_argument, NULL, OPT_PROTO},
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"stepbytes", required_argument, NULL, 'i'},
        {"stepfactor", required_argument, NULL, 'f'},
        {"ngpus", required_argument, NULL, 'g'},
        {"nthreads", required_argument, NULL, 't'},
        {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"check", required_argument, NULL, 'c'},
        {"op", required_argument, NULL, 'o'},
        {"datatype", required_argument, NULL, 'd'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":b:e:i:f:g:t:n:w:c:o:d:", longopts,
                            NULL)) != -1) {
        const char *a = optind > 1 ? argv[optind - 1] : "";
        switch (c) {
        case 'b': o->b = optarg; break;
        case 'e': o->e = optarg; break;
        case 'i': o->i = optarg; break;
        case 'f': o->f = optarg; break;
        case 'g': o->g = optarg; break;
        case 't': o->t = optarg; break;
        case 'n':
        case 'w':
        case 'c':
            if (!whole(optarg, 0, 1 << 30))
                return ps_fail("nccl-tests: -%c %s: expected a whole number "
                               "(accepted for nccl-tests' sake: a simulation "
                               "needs no repeats or checks)",
                               c, optarg);
            break;
        case 'o':
            if (strcmp(optarg, "sum") != 0)
                return ps_fail("nccl-tests: -o %s: pipesim reduces with sum "
                               "only",
                               optarg);
            break;
        case 'd':
            if (strcmp(optarg, "float") != 0)
                return ps_fail("nccl-tests: -d %s: pipesim moves float only",
                               optarg);
            break;
        case OPT_CLUSTER: o->cluster = optarg; break;
        case OPT_DB:
            if (!*optarg)
                return ps_fail("nccl-tests: --db: the database path is empty");
            o->db = optarg;
            break;
        case OPT_ALGO: o->algorithm = optarg; break;
        case OPT_PROTO: o->protocol = optarg; break;
        case ':':
            if (optopt && optopt < 256)
                return ps_fail("nccl-tests: -%c needs a value", optopt);
            return ps_fail("nccl-tests: %s needs a value", a);
        default:
            if (optopt && optopt < 256)
                return ps_fail("nccl-tests: unknown option '-%c' (expected "
                               "%s)",
                               optopt, NT_FLAGS);
            return ps_fail("nccl-tests: unknown option '%s' (expected %s)", a,
                           NT_FLAGS);
        }
    }
    for (int k = optind; k < argc; k++) {
        if (o->op)
            return ps_fail("nccl-tests: more than one op ('%s' and '%s')",
                           o->op, argv[k]);
        o->op = argv[k];
    }
    if (!o->op)
        return ps_fail("nccl-tests: no op given (usage: pipesim nccl-tests "
                       "all_reduce --cluster h100:2 -b 8 -e 8G -f 2)");
    enum coll_op op;
    ps_err err;
    if (coll_parse_op(o->op, &op, &err))
        return ps_fail("nccl-tests: %s", err.msg);
    if (!o->cluster)
        return ps_fail("nccl-tests: missing --cluster (a preset such as h100 "
                       "or h100:4 for 4 nodes, or a Lua file returning a "
                       "cluster)");
    return 0;
}

static void set_str(lua_State *L, const char *k, const char *v)
{
    if (v) {
        lua_pushstring(L, v);
        lua_setfield(L, -2, k);
    }
}

int bind_nccl_tests_main(int argc, char **argv, const char *luadir)
{
    nt_opts o = {0};
    if (parse(argc, argv, &o))
        return 1;
    const char *db = o.db ? o.db : "results/nccl_tests.db";
    if (!o.db && mkdir("results", 0777) != 0 && errno != EEXIST)
        return ps_fail("results: cannot create the directory: %s",
                       strerror(errno));
    size_t len = strlen(o.cluster);
    int file = len > 4 && strcmp(o.cluster + len - 4, ".lua") == 0;
    if (file && access(o.cluster, R_OK) != 0)
        return ps_fail("nccl-tests: --cluster %s: %s", o.cluster,
                       strerror(errno));
    lua_State *L = bind_newstate();
    if (!L)
        return ps_fail("cannot create a Lua state");
    luaL_openlibs(L);
    bind_session s = {db, file ? o.cluster : "nccl-tests", NULL, 0, 1, 0, 0};
    bind_setup(L, luadir, &s);
    bind_sandbox(L, luadir, file ? o.cluster : ".", db);
    ps_err err;
    int rc = bind_limits(L, luadir, 0, &err);
    if (rc) {
        ps_print_error(err.msg);
    } else {
        lua_getglobal(L, "require");
        lua_pushstring(L, "pipesim.nccl_tests");
        rc = bind_command_status(L, lua_pcall(L, 1, 1, 0));
    }
    if (rc == 0) {
        lua_getfield(L, -1, "cli");
        lua_getglobal(L, "require");
        lua_pushstring(L, "pipesim");
        rc = bind_command_status(L, lua_pcall(L, 1, 1, 0));
        if (rc == 0) {
            lua_newtable(L);
            set_str(L, "op", o.op);
            set_str(L, "b", o.b);
            set_str(L, "e", o.e);
            set_str(L, "i", o.i);
            set_str(L, "f", o.f);
            set_str(L, "g", o.g);
            set_str(L, "t", o.t);
            set_str(L, "algorithm", o.algorithm);
            set_str(L, "protocol", o.protocol);
            set_str(L, "db", db);
            if (file) { /* the file's value is the cluster */
                rc =
                    bind_command_status(L, bind_load_scenario(L, o.cluster, 1));
                if (rc == 0)
                    rc = bind_command_status(L, lua_pcall(L, 0, 1, 0));
                if (rc == 0)
                    lua_setfield(L, -2, "cluster");
                lua_pushstring(L, o.cluster);
                lua_setfield(L, -2, "cluster_name");
            } else {
                set_str(L, "cluster", o.cluster);
            }
            if (rc == 0)
                rc = bind_command_status(L, lua_pcall(L, 2, 0, 0));
        }
    }
    bind_limits_end(L);
    long runs = 0;
    const char *path = NULL;
    if (bind_finish(L, &runs, &path, &err) && rc == 0) {
        ps_print_error(err.msg);
        rc = 1;
    }
    if (limit_stopped() && rc == 0)
        rc = 1;
    lua_close(L);
    return rc;
}
