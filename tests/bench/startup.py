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
import sys
import tempfile

import proc

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/pipesim"
OLD = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else None
REPS = int(sys.argv[3]) if len(sys.argv) > 3 else 11
TMP = tempfile.mkdtemp(prefix="pipesim-startup-")
CASES = [
    ("2-rank step, new file", "startup.lua", {}, True),
    ("2-rank step, existing file", "startup.lua", {}, False),
    ("1F1B p = 64, m = 1024, new file", "pipe_1f1b.lua", {"p": 64, "m": 1024}, True),
]


def run(binary, script, args, db):
    """(wall ms, CPU ms) of one process (tests/bench/proc.py)."""
    wall, cpu, _, _ = proc.run(proc.pipesim_cmd(binary, script, args, db))
    return wall * 1e3, cpu * 1e3


def main():
    builds = [("new", BIN)] + ([("old", OLD)] if OLD else [])
    times = {}
    for i, (name, script, args, new) in enumerate(CASES):
        for b, binary in builds:
            db = os.path.join(TMP, "%s-%d.db" % (b, i))
            proc.rm_db(db)
            if not new:
                run(binary, script, args, db)  # the existing file
        for _ in range(REPS):
            for b, binary in builds:
                db = os.path.join(TMP, "%s-%d.db" % (b, i))
                if new:
                    proc.rm_db(db)
                times.setdefault((i, b), []).append(run(binary, script, args, db))
    print("%-34s %-5s %9s %9s" % ("workload (median of %d)" % REPS, "build", "wall ms", "CPU ms"))
    for i, (name, _, _, _) in enumerate(CASES):
        for b, _ in builds:
            t = times[(i, b)]
            print("%-34s %-5s %9.1f %9.1f" % (name, b, statistics.median(x[0] for x in t),
                                            statistics.median(x[1] for x in t)))
    for i in range(len(CASES)):
        proc.rm_db(os.path.join(TMP, "new-%d.db" % i))
        proc.rm_db(os.path.join(TMP, "old-%d.db" % i))
    os.rmdir(TMP)


main()
