#!/usr/bin/env python3
"""make bench (issue 12): the fixed cost of one `pipesim run` process.
Median wall and CPU milliseconds (rusage of the child: user + system) of
REPS runs of each workload; with OLD_BIN, the same for another build, the
two alternated run by run so that both see the same load.

  python3 tests/bench/startup.py [BIN [OLD_BIN [REPS]]]

Workloads: tests/bench/startup.lua (a 2-rank step, summary recording) into
a new file and into an existing one, and the 1F1B p = 64, m = 1024 step of
tests/bench/pipe_1f1b.lua into a new file."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/pipesim"
OLD = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else None
REPS = int(sys.argv[3]) if len(sys.argv) > 3 else 11
TMP = tempfile.mkdtemp(prefix="pipesim-startup-")
CASES = [
    ("2-rank step, new file", "startup.lua", {}, True),
    ("2-rank step, existing file", "startup.lua", {}, False),
    ("1F1B p = 64, m = 1024, new file", "pipe_1f1b.lua", {"p": 64, "m": 1024}, True),
]


def rm_db(db):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)


def run(binary, script, args, db):
    cmd = [binary, "run", "--unsafe", "tests/bench/" + script, "-o", db]
    for k, v in args.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read()
    proc.stderr.close()
    if status != 0:
        sys.exit("startup.py: %s failed: %s" % (" ".join(cmd), err.decode()))
    return wall * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3


def main():
    builds = [("new", BIN)] + ([("old", OLD)] if OLD else [])
    times = {}
    for i, (name, script, args, new) in enumerate(CASES):
        for b, binary in builds:
            db = os.path.join(TMP, "%s-%d.db" % (b, i))
            rm_db(db)
            if not new:
                run(binary, script, args, db)  # the existing file
        for _ in range(REPS):
            for b, binary in builds:
                db = os.path.join(TMP, "%s-%d.db" % (b, i))
                if new:
                    rm_db(db)
                times.setdefault((i, b), []).append(run(binary, script, args, db))
    print("%-34s %-5s %9s %9s" % ("workload (median of %d)" % REPS, "build", "wall ms", "CPU ms"))
    for i, (name, _, _, _) in enumerate(CASES):
        for b, _ in builds:
            t = times[(i, b)]
            print("%-34s %-5s %9.1f %9.1f" % (name, b, statistics.median(x[0] for x in t),
                                            statistics.median(x[1] for x in t)))
    for i in range(len(CASES)):
        rm_db(os.path.join(TMP, "new-%d.db" % i))
        rm_db(os.path.join(TMP, "old-%d.db" % i))
    os.rmdir(TMP)


main()
