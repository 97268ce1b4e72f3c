#!/usr/bin/env python3
"""Two builds side by side on the engine workloads of issue 12 (whole
`pipesim run` processes, runs of the two builds alternated so that both
see the same machine load): median wall and CPU seconds per build and
their ratios.

  python3 tests/bench/ab.py OLD_BUILD_DIR NEW_BUILD_DIR [REPS]

Each build dir holds a `pipesim` built by `make`; REPS (default 5) runs
per build and workload."""
import os
import statistics
import sys
import tempfile

import proc
from proc import rm_db

OLD, NEW = sys.argv[1], sys.argv[2]
REPS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
TMP = tempfile.mkdtemp(prefix="pipesim-ab-")
CASES = [
    ("ring all-reduce 1 GiB, 1024 ranks", "ring.lua", {"ranks": 1024}),
    ("ring all-reduce 1 GiB, 4096 ranks", "ring.lua", {"ranks": 4096}),
    ("1F1B p = 64, m = 1024", "pipe_1f1b.lua", {"p": 64, "m": 1024}),
    ("1F1B p = 128, m = 4096", "pipe_1f1b.lua", {"p": 128, "m": 4096}),
    ("interleaved p = 64, v = 4, m = 1024", "pipe_1f1b.lua", {"p": 64, "m": 1024, "v": 4}),
]


def run(build, script, args):
    db = os.path.join(TMP, "ab.db")
    rm_db(db)
    wall, cpu, _, out = proc.run(proc.pipesim_cmd(os.path.join(build, "pipesim"), script, args, db),
                                 output=True)
    return wall, cpu, out.split("simulated")[-1].strip()


print("load average before: %.2f %.2f %.2f" % os.getloadavg())
print("| workload | old wall s | new wall s | old/new | old CPU s | new CPU s | old/new |")
print("|---|---|---|---|---|---|---|")
for name, script, args in CASES:
    w = {OLD: [], NEW: []}
    c = {OLD: [], NEW: []}
    sim = {}
    for _ in range(REPS):
        for b in (OLD, NEW):
            wall, cpu, s = run(b, script, args)
            w[b].append(wall)
            c[b].append(cpu)
            sim[b] = s
    if sim[OLD] != sim[NEW]:
        sys.exit("ab: %s: simulated times differ: %s vs %s" % (name, sim[OLD], sim[NEW]))
    mw = [statistics.median(w[b]) for b in (OLD, NEW)]
    mc = [statistics.median(c[b]) for b in (OLD, NEW)]
    print("| %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f |" % (
        name, mw[0], mw[1], mw[0] / mw[1], mc[0], mc[1], mc[0] / mc[1]), flush=True)
print("load average after: %.2f %.2f %.2f" % os.getloadavg())
for f in os.listdir(TMP):
    os.unlink(os.path.join(TMP, f))
os.rmdir(TMP)
