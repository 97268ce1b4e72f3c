/* The help text of every command, written once: cli/help.c prints it as
 * pipesim --help, pipesim help COMMAND, the man page and the completions.
 * A command main.c dispatches has an entry here (tests/cli_help.sh checks
 * each); text lines are wrapped for an 80-column terminal and say what the
 * command does, not how it is built. */
#include "cli/help_impl.h"

#include <stddef.h>

/* Completions of values: "file:GLOB" files matching GLOB (and
 * directories), "file" any file, "dir" a directory, "words:A B" one of the
 * words, NULL nothing to offer. */
#define DB_FILE "file:*.db"
#define LUA_FILE "file:*.lua"
#define HELP_OPT                                                               \
    {                                                                          \
        "-h, --help", NULL, "print this help and exit", NULL                   \
    }

static const help_opt run_opts[] = {
    {"-o", "DB",
     "append the runs to DB (default results/<scenario name>.db,\n"
     "directories made as needed)",
     DB_FILE},
    {"-D", "KEY=VALUE",
     "set ps.args.KEY for the script (numbers as numbers);\n"
     "repeat for more keys",
     NULL},
    {"--unsafe", NULL,
     "lift the sandbox: the scenario may start processes, load\n"
     "native code, write files and load binary chunks",
     NULL},
    {"--timeout", "SECONDS",
     "stop the run after SECONDS of wall-clock time (default: none)", NULL},
    {"--max-memory", "SIZE",
     "bound the memory of Lua and the simulator, such as 12GiB\n"
     "(default: half of physical or cgroup memory)",
     NULL},
    {"--jobs", "N",
     "evaluate each ps.sweep's points in N worker processes\n"
     "(default: the number of cores); the rows are those of --jobs 1",
     NULL},
    {"--shard", "K/N",
     "run only the sweep points whose index is K modulo N (K from 0);\n"
     "join the shards with pipesim merge",
     NULL},
    {"--bytes-log", "FILE",
     "every run's byte counters as JSON Lines (bytes_log; docs/live.md)",
     "file"},
    {"--rendezvous", "HOST:PORT",
     "live runs (backend = \"tcp\") use workers started with\n"
     "pipesim worker --rendezvous HOST:PORT, on any host",
     NULL},
    {"--workers", "N", "the workers --rendezvous waits for", NULL},
    HELP_OPT,
    {NULL, NULL, NULL, NULL},
};

/* The timeline's view (out/view.h), the same in report and export;
 * DEFAULT says what --replica draws when not given. */
#define VIEW_OPTS(DEFAULT)                                                     \
    {"--replica", "K|all",                                                     \
     "draw data-parallel replica K's ranks, or all; by default\n" DEFAULT,     \
     "words:all"},                                                             \
        {"--all", NULL, "draw every simulated rank (--replica all)", NULL},    \
        {"--ranks", "LIST",                                                    \
         "draw the rows standing for these cluster ranks: numbers and\n"       \
         "ranges, such as 0-7,64",                                             \
         NULL},                                                                \
        {"--stages", "LIST",                                                   \
         "draw the ranks running these pipeline stages, such as 0,2-3", NULL}, \
    {                                                                          \
        "--window", "START:END",                                               \
            "draw the time from START to END (seconds, or with units such\n"   \
            "as 1.5ms:2ms; either side may be left out)",                      \
            NULL                                                               \
    }

static const help_opt report_opts[] = {
    {"--csv", NULL,
     "the table as CSV; with RUN, one line per rank (busy time, bubble,\n"
     "peak memory)",
     NULL},
    {"--width", "N", "draw the Gantt chart N columns wide", NULL},
    VIEW_OPTS("replica 0 alone when a run has several and more than\n"
              "16 simulated ranks, the replicas identical to it folded\n"
              "into its rows (the chart says which)"),
    HELP_OPT,
    {NULL, NULL, NULL, NULL},
};

static const help_opt export_opts[] = {
    {"--format", "FORMAT",
     "chrome (a Chrome/Perfetto trace, JSON), svg (a Gantt chart with\n"
     "memory curves) or pytorch-csv; without it the extension of FILE\n"
     "decides (.json, .svg, .csv)",
     "words:chrome svg pytorch-csv"},
    {"--compare", "RUN1,RUN2,...", "stack several runs in one SVG", NULL},
    VIEW_OPTS("replica 0 alone, one row per pipeline stage, when a run\n"
              "simulates more than 64 ranks over several replicas, the\n"
              "replicas identical to it folded into its rows (chrome and\n"
              "svg; the export says which)"),
    {"-o, --output", "FILE", "write to FILE instead of standard output",
     "file"},
    HELP_OPT,
    {NULL, NULL, NULL, NULL},
};

#define UNITS "words:s bytes B/s fraction none"
static const help_opt plot_opts[] = {
    {"--x", "COLUMN",
     "the x axis: a run column (microbatches, stages, ...), a sweep\n"
     "coordinate of run.point or run.tags, or an SQL expression over run",
     NULL},
    {"--y", "COLUMN", "the y axis, as --x (makespan, bubble, ...)", NULL},
    {"--by", "COLUMN", "one line per value of COLUMN", NULL},
    {"--where", "SQL", "keep the runs for which SQL holds", NULL},
    {"--dashed", "COLUMN",
     "a second series per group, dashed (a closed form, a bound)", NULL},
    {"--dashed-label", "TEXT", "the dashed series' name in the legend", NULL},
    {"--agg", "AGG",
     "min, max or mean: combine runs that share a group and an x",
     "words:min max mean"},
    {"--log", "AXES", "x, y or xy: logarithmic axes", "words:x y xy"},
    {"--xunit", "UNIT",
     "the unit of an expression on x: s, bytes, B/s, fraction or none", UNITS},
    {"--yunit", "UNIT", "the unit of an expression on y, as --xunit", UNITS},
    {"--title", "TEXT", "the chart's title", NULL},
    {"--xlabel", "TEXT", "the x axis' label", NULL},
    {"--ylabel", "TEXT", "the y axis' label", NULL},
    {"--format", "FORMAT",
     "svg (the default) or csv (group,x,y[,dashed] rows); -o FILE.csv\n"
     "implies csv",
     "words:svg csv"},
    {"--ranks", "LIST",
     "aggregate the rank_stat rows of these cluster ranks only (0-7,64)", NULL},
    {"--replica", "K",
     "aggregate the rank_stat rows of data-parallel replica K only", NULL},
    {"-o", "FILE", "write to FILE instead of standard output", "file"},
    HELP_OPT,
    {NULL, NULL, NULL, NULL},
};

static const help_opt merge_opts[] = {
    {"--partial", NULL,
     "merge what is there: let missing, unfinished or running shards and\n"
     "databases that are no shard through, saying what is missing",
     NULL},
    HELP_OPT,
    {NULL, NULL, NULL, NULL},
};

static const help_opt calibrate_opts[] = {
    {"--nccl-tests", "LOG",
     "nccl-tests output to fit (several logs, sizes and ops; the files\n"
     "after it are logs too)",
     "file"},
    {"--gemm", "CSV",
     "measured GEMMs (m,n,k,dtype,seconds) to fit the device's GEMM\n"
     "constants",
     "file"},
    {"--cluster", "CLUSTER",
     "the starting point: a DGX preset (h100, h100:2) or a cluster file",
     LUA_FILE},
    {"--ranks", "N", "the ranks of the logs, when they do not say", NULL},
    {"--nodes", "N", "the nodes of the logs, when they do not say", NULL},
    {"--op", "OP", "the collective of the logs, when they do not say", NULL},
    {"--in-place", NULL, "fit the in-place columns instead of out-of-place",
     NULL},
    {"-o, --output", "FILE", "write the cluster file to FILE", "file"},
    {"--live", NULL,
     "measure live mode's TCP transport instead (a ping-pong, least\n"
     "squares; with --layers N the live MLP's per-layer times to\n"
     "--profile FILE.csv, --width W, --samples S; docs/live.md)",
     NULL},
    HELP_OPT,
    {NULL, NULL, NULL, NULL},
};

static const help_opt worker_opts[] = {
    {"--rendezvous", "HOST:PORT", "the coordinator (pipesim run --rendezvous)",
     NULL},
    {"--timeout", "SECONDS", "wait this long for the coordinator (default 120)",
     NULL},
    HELP_OPT,
    {NULL, NULL, NULL, NULL},
};

static const help_opt nccl_opts[] = {
    {"--cluster", "CLUSTER",
     "a DGX preset (a100, h100, h200, b200; h100:4 for 4 nodes) or a Lua\n"
     "file returning a cluster (sandboxed, as a scenario)",
     LUA_FILE},
    {"-b, --minbytes", "SIZE",
     "the smallest size: 8, 64K, 8G (powers of 1024; default 32M)", NULL},
    {"-e, --maxbytes", "SIZE", "the largest size (default 32M)", NULL},
    {"-f, --stepfactor", "FACTOR",
     "multiply the size by FACTOR from one line to the next", NULL},
    {"-i, --stepbytes", "SIZE",
     "add SIZE from one line to the next (default 1M; a factor above 1\n"
     "wins)",
     NULL},
    {"-g, --ngpus", "GPUS", "use the first GPUS GPUs (default all)", NULL},
    {"-t, --nthreads", "N", "multiply -g, as nccl-tests' threads do", NULL},
    {"-n, --iters", "N", "accepted; a simulation needs no repeats", NULL},
    {"-w, --warmup_iters", "N", "accepted; a simulation needs no warm-up",
     NULL},
    {"-c, --check", "N", "accepted; nothing to check", NULL},
    {"-o, --op", "OP", "the reduction: sum only", "words:sum"},
    {"-d, --datatype", "TYPE", "the element type: float only", "words:float"},
    {"--algorithm", "ALGO",
     "the collective's algorithm (ring, tree, ...; default auto)", NULL},
    {"--protocol", "PROTO", "NCCL's protocol (simple, ll, ll128; default auto)",
     NULL},
    {"--db", "DB",
     "record every size as a collective run in DB\n"
     "(default results/nccl_tests.db)",
     DB_FILE},
    HELP_OPT,
    {NULL, NULL, NULL, NULL},
};

static const help_opt help_opts[] = {
    {"--man", NULL, "print the man page pipesim(1) in roff", NULL},
    {"--completion", "SHELL", "print a completion script for bash or zsh",
     "words:bash zsh"},
    HELP_OPT,
    {NULL, NULL, NULL, NULL},
};

const help_cmd help_cmds[] = {
    {"run", "run a Lua scenario and record its runs",
     "run SCENARIO.lua [-o DB] [-D KEY=VALUE]... [--unsafe]\n"
     "    [--timeout SECONDS] [--max-memory SIZE]\n"
     "    [--jobs N] [--shard K/N] [--bytes-log FILE]\n"
     "    [--rendezvous HOST:PORT --workers N]",
     "Runs a Lua scenario (local ps = require \"pipesim\"; ps.run{...},\n"
     "ps.collective{...}, ps.sweep{...}) and appends each of its runs to DB,\n"
     "one transaction per run: a failed run leaves no rows, or a run row\n"
     "whose status says it failed.\n"
     "\n"
     "Scenarios run sandboxed: no processes, native code, file writes or\n"
     "binary chunks; require reads the scenario's directory and pipesim's\n"
     "Lua library only. Ctrl-C or SIGTERM keeps the finished runs and exits\n"
     "130 or 143.",
     LUA_FILE, run_opts,
     "pipesim run scenarios/demo.lua\n"
     "pipesim run scenarios/demo.lua -o /tmp/demo.db -D microbatches=16\n"
     "pipesim run sweep.lua --jobs 8 --shard 0/4 -o part0.db"},
    {"report", "summarise the runs of a database",
     "report DB [RUN] [--csv] [--width N] [--ranks LIST]\n"
     "       [--stages LIST] [--window START:END] [--replica K|all]",
     "Without RUN: a table comparing every run in DB (makespan, bubble,\n"
     "peak memory, whether it fits). With RUN: its summary and an ASCII\n"
     "Gantt chart, one row per simulated rank (under TP labelled with the\n"
     "cluster ranks of its group). Runs that do not fit their devices'\n"
     "memory are named on standard error.",
     DB_FILE, report_opts,
     "pipesim report results/demo.db\n"
     "pipesim report results/demo.db 2 --width 120\n"
     "pipesim report results/demo.db 2 --ranks 0-1 --window 0.2:0.6\n"
     "pipesim report results/demo.db --csv > runs.csv"},
    {"export", "write a run as a trace, a Gantt chart or a CSV",
     "export DB RUN --format chrome|svg|pytorch-csv [-o FILE]\n"
     "       [--ranks LIST] [--stages LIST] [--window START:END]\n"
     "       [--replica K|all] [--all]\n"
     "export DB --compare RUN1,RUN2,... [--format svg] [-o FILE]",
     "Writes a recorded run as a Chrome/Perfetto trace (JSON, open it in\n"
     "ui.perfetto.dev), an SVG Gantt chart with memory curves, or PyTorch's\n"
     "schedule CSV. The export is rendered in memory first, so a failed\n"
     "export leaves no truncated file.",
     DB_FILE, export_opts,
     "pipesim export results/demo.db 2 --format chrome -o trace.json\n"
     "pipesim export results/demo.db 2 -o gantt.svg\n"
     "pipesim export results/demo.db --compare 1,2,3 -o compare.svg\n"
     "pipesim export results/demo.db 2 --stages 0 --window 0:0.5 -o s0.svg"},
    {"plot", "chart one recorded column against another",
     "plot DB --x COLUMN --y COLUMN [--by COLUMN] [--where SQL]\n"
     "    [--dashed COLUMN] [--agg min|max|mean] [--log x|y|xy]\n"
     "    [--format svg|csv] [-o FILE]",
     "Draws a line chart (SVG) or writes its points (CSV) of the runs in\n"
     "DB whose status is ok: one line per --by group, one value per group\n"
     "and x (several runs there need --where, a --by coordinate or --agg).\n"
     "Axes take their units from the column: seconds, bytes, bandwidths,\n"
     "fractions.",
     DB_FILE, plot_opts,
     "pipesim plot results/sweep.db --x microbatches --y bubble "
     "--by stages\n"
     "pipesim plot results/sweep.db --x microbatches --y makespan "
     "--format csv"},
    {"merge", "join the databases of sharded sweeps",
     "merge [--partial] OUT.db PART.db...",
     "Copies the runs of the databases written by pipesim run --shard K/N\n"
     "into a new OUT.db, renumbered in point order as if the sweep had run\n"
     "unsharded. Refuses a missing, repeated, foreign, unfinished or live\n"
     "shard, naming it, unless --partial (docs/sweeps.md).",
     DB_FILE, merge_opts,
     "pipesim run sweep.lua --shard 0/2 -o part0.db\n"
     "pipesim run sweep.lua --shard 1/2 -o part1.db\n"
     "pipesim merge all.db part0.db part1.db"},
    {"nccl-tests", "print nccl-tests' table for a simulated cluster",
     "nccl-tests OP --cluster PRESET[:NODES]|CLUSTER.lua\n"
     "    [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-g GPUS]\n"
     "    [--algorithm A] [--protocol P] [--db DB]",
     "Simulates nccl-tests' size sweep (all_reduce_perf and its siblings)\n"
     "and prints its table column for column: size, count, type, redop,\n"
     "root, then time, algbw and busbw out of place and in place. OP is\n"
     "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall\n"
     "or sendrecv. Standard output carries only the table.",
     "words:all_reduce all_gather reduce_scatter broadcast reduce alltoall "
     "sendrecv",
     nccl_opts,
     "pipesim nccl-tests all_reduce --cluster h100:2 -b 8 -e 8G -f 2\n"
     "pipesim nccl-tests all_gather --cluster my_cluster.lua -b 1M -e 1G "
     "-g 8"},
    {"calibrate", "fit a cluster file to your own measurements",
     "calibrate [--nccl-tests LOG...] [--gemm CSV...]\n"
     "    [--cluster PRESET[:NODES]|CLUSTER.lua] [--ranks N]\n"
     "    [--nodes N] [--op OP] [--in-place] [-o FILE.lua]",
     "Fits the cluster's per-tier link bandwidth and latency to nccl-tests\n"
     "logs, and the device's GEMM constants to a CSV of measured GEMMs, and\n"
     "writes a cluster file whose header states the fit's error per size.\n"
     "Load it with ps.cluster(ps.clusters.load(\"FILE.lua\")) or\n"
     "pipesim nccl-tests --cluster FILE.lua (docs/calibrate.md).",
     NULL, calibrate_opts,
     "pipesim calibrate --nccl-tests allreduce.log --cluster h100:2 "
     "-o mine.lua\n"
     "pipesim calibrate --gemm gemms.csv --cluster h100 -o mine.lua"},
    {"worker", "serve the live runs of pipesim run --rendezvous",
     "worker --rendezvous HOST:PORT [--timeout SECONDS]",
     "Joins the coordinator at HOST:PORT, runs the scenario it sends\n"
     "(sandboxed, printing and recording nothing) and serves each of its\n"
     "live runs (backend = \"tcp\") as the rank it is given; start one per\n"
     "rank, by hand, ssh, GNU parallel or srun (docs/live.md).",
     NULL, worker_opts,
     "pipesim run x.lua --rendezvous 10.0.0.1:29500 --workers 4\n"
     "pipesim worker --rendezvous 10.0.0.1:29500"},
    {"help", "print the help of a command, the man page or a completion",
     "help [COMMAND]\n"
     "help --man | --completion bash|zsh",
     "Prints the help of COMMAND (the same as pipesim COMMAND --help), or\n"
     "without one the list of commands. --man prints this manual page in\n"
     "roff and --completion a completion script, both made from the same\n"
     "text.",
     "words:run report export plot merge nccl-tests calibrate worker help",
     help_opts,
     "pipesim help run\n"
     "pipesim help --man | man -l -\n"
     "source <(pipesim help --completion bash)"},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
