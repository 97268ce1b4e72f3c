#!/usr/bin/env python3
"""make bench, the targets of issue 12: whole processes (`pipesim run`
start to exit, as a user sees them), median of several runs, peak RSS per
process, and the SimGrid comparison measured side by side (pipesim and
simgrid_bench alternated within one run of this script).

  python3 tests/bench/targets.py BUILD_DIR [SIMGRID_BENCH]

BENCH_BIG=1 adds the 16384-rank ring (537 M transfers); BENCH_REPS=N
changes the number of runs (default 5; 3 for the large cases);
BENCH_ONLY=TEXT runs only the workloads whose name holds TEXT (e.g.
BENCH_ONLY=cluster: building clusters, issues 23 and 28; BENCH_ONLY=step:
the frontier steps of issue 28, each under BENCH_STEP_TIMEOUT seconds,
default 120; BENCH_ONLY=sweep or loop: the summary sweep and the ps.run
loops of issue 28)."""
import os
import sqlite3
import statistics
import sys
import tempfile

import proc
from proc import rm_db

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
SIMGRID = sys.argv[2] if len(sys.argv) > 2 and os.access(sys.argv[2], os.X_OK) else None
PIPESIM = os.path.join(BUILD, "pipesim")
REPS = int(os.environ.get("BENCH_REPS", "5"))
ONLY = os.environ.get("BENCH_ONLY", "")
STEP_TIMEOUT = int(os.environ.get("BENCH_STEP_TIMEOUT", "120"))
TMP = tempfile.mkdtemp(prefix="pipesim-bench-")


def run(cmd):
    """Wall seconds, CPU seconds and peak RSS (MB, or None) of one process."""
    return proc.run(cmd, rss=True)[:3]


def pipesim(script, args, db=None):
    return proc.pipesim_cmd(PIPESIM, script, args, db or os.path.join(TMP, "bench.db"))


def fresh(cmd, db):
    rm_db(db)
    return run(cmd)


def med(xs):
    return statistics.median(xs)


rows = []  # (workload, pipesim s, RSS MB, target, ok, simgrid s, ratio, ratio target, ok)


def case(name, script, args, target_s, target_mb=None, simgrid=None, ratio=None, reps=REPS):
    if ONLY not in name:
        return
    db = os.path.join(TMP, "case.db")
    cmd = pipesim(script, args, db)
    t, mb, tsg = [], [], []
    for _ in range(reps):
        w, _, m = fresh(cmd, db)
        t.append(w)
        mb.append(m)
        if simgrid and SIMGRID:
            tsg.append(run([SIMGRID] + simgrid)[0])
    ps_s = med(t)
    ps_mb = max(mb) if None not in mb else None
    ok = ps_s <= target_s and (target_mb is None or (ps_mb or 0) <= target_mb)
    tgt = "<= %s s" % target_s + (", <= %d MB" % target_mb if target_mb else "")
    sg = "%.3f" % med(tsg) if tsg else "-"
    r = med(tsg) / ps_s if tsg else None
    rtxt = "%.0fx" % r if r else "-"
    rok = ("ok" if r >= ratio else "MISSED") if (r and ratio) else "-"
    rows.append((name, "%.3f" % ps_s, "%.1f" % ps_mb if ps_mb else "-", tgt, "ok" if ok else "MISSED", sg, rtxt,
                 ">= %dx" % ratio if ratio else "-", rok))
    print("  %s: pipesim %s s (runs %s), simgrid %s" % (
        name, "%.3f" % ps_s, ", ".join("%.3f" % x for x in t),
        ", ".join("%.3f" % x for x in tsg) or "-"), flush=True)


def step_case(name, script, target_s, target_mb, reps):
    """A frontier step (issue 28): like case, but a process that runs past
    STEP_TIMEOUT seconds (or fails) is reported, not fatal, and the step's
    own line (its makespan, whether replicas were folded) is printed."""
    if ONLY not in name:
        return
    db = os.path.join(TMP, "step.db")
    # under the memory goal as --max-memory: a step that needs more stops
    # at once with a message, rather than swapping the shared machine
    run_cmd = pipesim(script, {}, db)
    run_cmd[2:2] = ["--max-memory", "%dMiB" % target_mb]
    cmd = ["timeout", "-s", "KILL", str(STEP_TIMEOUT)] + run_cmd
    t, cpu, mb, out = [], [], [], ""
    for _ in range(reps):
        rm_db(db)
        try:
            w, c, m, out = proc.run(cmd, rss=True, output=True, fatal=False)
        except proc.Failed as e:
            rows.append((name, "> %d" % STEP_TIMEOUT if e.status in (-9, 137) else
                         "over --max-memory" if "memory limit" in str(e) else "failed",
                         "-", "<= %s s, <= %d MB" % (target_s, target_mb), "MISSED",
                         "-", "-", "-", "-"))
            print("  %s: %s" % (name, e), flush=True)
            return
        t.append(w)
        cpu.append(c)
        mb.append(m)
    ps_s, ps_mb = med(t), max(mb) if None not in mb else None
    ok = ps_s <= target_s and (ps_mb or 0) <= target_mb
    rows.append((name, "%.3f" % ps_s, "%.1f" % ps_mb if ps_mb else "-",
                 "<= %s s, <= %d MB" % (target_s, target_mb), "ok" if ok else "MISSED",
                 "-", "-", "-", "-"))
    print("  %s: pipesim %.3f s (runs %s; CPU %s), %s" % (
        name, ps_s, ", ".join("%.3f" % x for x in t), ", ".join("%.3f" % x for x in cpu),
        out.strip()), flush=True)


def recording(reps=REPS):
    """Full event recording of the 1F1B p=64 m=1024 step: rows per second
    of the recording (events-level process minus summary-level process,
    both into fresh files) and database bytes per timeline row."""
    if ONLY:
        return
    ev_db, sm_db = os.path.join(TMP, "ev.db"), os.path.join(TMP, "sm.db")
    t_ev, t_sm = [], []
    for _ in range(reps):
        t_ev.append(fresh(pipesim("pipe_1f1b.lua", {"record": "events"}, ev_db), ev_db)[0])
        t_sm.append(fresh(pipesim("pipe_1f1b.lua", {"record": "summary"}, sm_db), sm_db)[0])
    con = sqlite3.connect(ev_db)
    n = sum(con.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
            for t in ("event", "transfer", "memory"))
    con.close()
    size = os.path.getsize(ev_db) - os.path.getsize(sm_db)
    rate = n / (med(t_ev) - med(t_sm)) / 1e6
    bpr = size / n
    print("  full recording: %d rows, events %.3f s, summary %.3f s" % (n, med(t_ev), med(t_sm)))
    rows.append(("full event recording (1F1B p=64 m=1024, %d rows)" % n,
                 "%.2f M rows/s, %.1f B/row" % (rate, bpr), "-", ">= 2 M rows/s, <= 40 B/row",
                 "ok" if rate >= 2 and bpr <= 40 else "MISSED", "-", "-", "-", "-"))


# issues 12 and 28: summary runs a minute on one core (sweep_runs.lua is
# one process; docs/performance.md, "Issue 28: a ps.run loop at a million
# runs a minute"): as one ps.sweep, as a plain ps.run loop inside ps.batch
# (its runs commit together), and as a plain loop whose runs each commit
# before ps.run returns (the durability contract's default)
SWEEP_FORMS = (
    ("summary sweep", {}),
    ("ps.run loop in ps.batch", {"loop": "true", "batch": "true"}),
    ("ps.run loop, each run committed", {"loop": "true"}),
)


def sweep(runs=20000, reps=3):
    if ONLY and ONLY not in "sweep loop":
        return
    db = os.path.join(TMP, "sweep.db")
    for label, extra in SWEEP_FORMS:
        t, cpu = [], []
        for _ in range(reps):
            w, c, _ = fresh(pipesim("sweep_runs.lua", dict({"runs": runs}, **extra), db), db)
            t.append(w)
            cpu.append(c)
        per_min = runs / med(t) * 60
        print("  %s: %d runs, %s s wall, %s s CPU (load %.1f)" % (
            label, runs, ", ".join("%.2f" % x for x in t), ", ".join("%.2f" % x for x in cpu),
            os.getloadavg()[0]))
        rows.append(("%s (34 layers, 4 stages, m = 8, %d runs)" % (label, runs),
                     "%.0f runs/min (CPU %.0f)" % (per_min, runs / med(cpu) * 60), "-",
                     ">= 1000000 runs/min", "ok" if per_min >= 1e6 else "MISSED",
                     "-", "-", "-", "-"))


def main():
    big = REPS if REPS < 3 else 3
    print("issue 12 targets (whole processes, median of %d; SimGrid %s)" % (
        REPS, "side by side" if SIMGRID else "not built: install libsimgrid-dev"), flush=True)
    case("ring all-reduce 1 GiB, 1024 ranks, summary", "ring.lua", {"ranks": 1024}, 0.08,
         simgrid=["ring", "1024", str(2**30)], ratio=100, reps=big)
    case("ring all-reduce 1 GiB, 4096 ranks", "ring.lua", {"ranks": 4096}, 1.5, 64, reps=big)
    if os.environ.get("BENCH_BIG"):
        case("ring all-reduce 1 GiB, 16384 ranks", "ring.lua", {"ranks": 16384}, 30, 256,
             reps=1)
    case("1F1B p = 64, m = 1024", "pipe_1f1b.lua", {"p": 64, "m": 1024}, 0.03,
         simgrid=["1f1b", "64", "1024"], ratio=30)
    case("1F1B p = 128, m = 4096", "pipe_1f1b.lua", {"p": 128, "m": 4096}, 0.2, reps=big)
    case("interleaved p = 64, v = 4, m = 1024", "pipe_1f1b.lua", {"p": 64, "m": 1024, "v": 4},
         0.08)
    # issues 23 and 28: ps.cluster(ps.clusters.dgx("H100", nodes)) alone,
    # time and peak RSS of the whole process (docs/clusters.md)
    case("cluster DGX H100 x 2,048 nodes (16,384 GPUs)", "cluster.lua", {"nodes": 2048}, 0.5, 100)
    case("cluster DGX H100 x 12,500 nodes (100,000 GPUs)", "cluster.lua", {"nodes": 12500}, 1.0,
         200)
    # issue 28: frontier steps, summary recording (docs/performance.md,
    # "Issue 28: replica folding")
    step_case("step Llama 3 405B, 16,384 H100 (TP 8, PP 16, DP 128, interleaved)",
              "llama405.lua", 2.0, 1024, big)
    step_case("step dense 1T, 100,000 H100 (TP 8, PP 20, DP 625)", "dense1t.lua", 10.0, 2048,
              big)
    step_case("step DeepSeek-V3, 2,048 H800 (PP 16, EP 64, DualPipe)", "deepseek_v3.lua", 2.0,
              2048, 1)
    recording(big)
    sweep()
    head = ("workload", "pipesim s", "RSS MB", "target", "", "SimGrid s", "ratio",
            "target", "")
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    for f in os.listdir(TMP):
        os.unlink(os.path.join(TMP, f))
    os.rmdir(TMP)


main()
