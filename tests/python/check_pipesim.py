"""The pipesim Python package, installed from its wheel into a virtual
environment (tests/cli_python.sh): runs in process with closed-form
figures, the objects that cross between Python and Lua, one-line errors,
scenario files (sandboxed, -D arguments), the same search as the command
line, and the rows as pandas DataFrames (when pandas is installed). Run from
an empty directory; argv[1] is the checkout (for VERSION). Ends with
"N passed, N failed"."""
import os
import sys

import pipesim

P = F = 0


def check(cond, what):
    global P, F
    if cond:
        P += 1
    else:
        F += 1
        print("FAIL python: %s" % what)


def near(a, b, what, rel=1e-9):
    check(isinstance(a, (int, float)) and abs(a - b) <= rel * abs(b), "%s: got %r, want %r" % (what, a, b))


def raises(fn, want, what, exc=pipesim.Error):
    try:
        fn()
    except exc as e:
        check(str(e) == want, "%s: got %r, want %r" % (what, str(e), want))
        return
    check(False, "%s: no %s raised" % (what, exc.__name__))


root = sys.argv[1]
with open(os.path.join(root, "VERSION")) as f:
    check(pipesim.__version__ == f.read().strip(), "version %r" % pipesim.__version__)
# in process, from the installed package, not the checkout
check(os.path.dirname(pipesim.__file__) != os.path.join(root, "python", "pipesim"), "imported the checkout")
check(pipesim.LUA_DIR.startswith(os.path.dirname(pipesim.__file__)), "LUA_DIR %s" % pipesim.LUA_DIR)
check(os.path.isfile(os.path.join(pipesim.LUA_DIR, "pipesim", "init.lua")), "no lua library in the package")

# one training step: 1F1B, p = 2, m = 4, F = 0.02 s, B = 0.04 s
c = pipesim.cluster(ranks=2, device={"flops": "100 TFLOPS", "efficiency": 1, "memory": "80 GiB"})
check(isinstance(c, pipesim.LuaObject), "cluster is a LuaObject: %r" % (c,))
check(c.ranks == 2, "cluster.ranks %r" % (c.ranks,))
layers = [{"fwd_flops": "1 TFLOP", "params": 1e6, "act_bytes": "1 GiB"} for _ in range(4)]
r = pipesim.run(cluster=c, layers=layers, stages=2, microbatches=4, schedule="1f1b", db="step.db")
check(isinstance(r, pipesim.Result) and isinstance(r, dict), "run returns a Result")
near(r.makespan, (0.02 + 0.04) * (4 + 2 - 1), "1f1b makespan (F + B)(m + p - 1)")
near(r["bubble"], (2 - 1) / (4 + 2 - 1), "1f1b bubble (p - 1)/(m + p - 1)")
check(r.id == 1 and r.db == "step.db", "run id %r db %r" % (r.get("id"), r.get("db")))
check(isinstance(r.stage_bubble, list) and len(r.stage_bubble) == 2, "stage_bubble %r" % (r.stage_bubble,))
check(r.fits is True, "fits %r" % (r.fits,))
# a dict spec and keywords together, the same run again: id 2, same time
r2 = pipesim.run({"cluster": c, "layers": layers, "stages": 2}, microbatches=4, db="step.db")
check(r2.id == 2 and r2.makespan == r.makespan, "dict spec: id %r makespan %r" % (r2.id, r2.makespan))

# ring allreduce on a 4-rank mesh: 2(N-1)(a + T/(N b)), 2T(N-1)/N bytes sent per rank
N, a, b, T = 4, 5e-6, 25e9, 4 * 4 * 1000
mesh = pipesim.cluster(ranks=N, link={"bandwidth": b, "latency": a})
k = pipesim.collective(cluster=mesh, op="allreduce", algorithm="ring", bytes=T, db="coll.db")
near(k.time, 2 * (N - 1) * (a + T / (N * b)), "ring allreduce time")
check(len(k.bytes_sent) == N, "bytes_sent per rank %r" % (k.bytes_sent,))
for i in range(N):
    near(k.bytes_sent[i], 2 * T * (N - 1) / N, "ring bytes sent by rank %d" % i)

# the rest of ps.*: presets, functions, tables passed back as they came
names = pipesim.models.presets()
check(isinstance(names, list) and "gpt3-175b" in names, "models.presets() %r" % (names,))
dgx = pipesim.clusters.dgx("A100", 1)
check(isinstance(dgx, dict), "clusters.dgx returns a table: %r" % type(dgx))
node = pipesim.cluster(dgx)
check(node.ranks == 8, "a DGX A100 node has 8 ranks: %r" % (node.ranks,))
check(pipesim.bytes(2 ** 30) == "1.00 GiB", "ps.bytes %r" % (pipesim.bytes(2 ** 30),))

# without db: results/python.db, made with its directory
d = pipesim.run(cluster=c, layers=layers, stages=2, microbatches=4)
check(d.get("db") is None and d.id == 1 and os.path.isfile("results/python.db"),
      "default database: %r" % (d,))
rows = d.frame("stage")
check(len(rows) == 2, "default database's stage rows: %r" % (rows,))

# nccl-tests' sizes 8 B .. 64 KiB by powers of two on the DGX node, quietly
rows = pipesim.nccl_tests(op="all_reduce", cluster=node, b=8, e="64K", f=2, print=False, db="nt.db")
check([x["size"] for x in rows] == [2 ** i for i in range(3, 17)], "nccl_tests sizes %r" % (rows,))
check(all(x["time"] > 0 and x["busbw"] > 0 for x in rows), "nccl_tests times")

# errors: pipesim's one line, as a Python exception
raises(lambda: pipesim.run(cluster=c, layers=layers, stages=2, microbatches=4, schedul="1f1b"),
       "ps.run: unknown field 'schedul' (did you mean 'schedule'?)", "misspelt field")
raises(lambda: pipesim.collective(cluster=mesh, op="allreduse", bytes=T),
       "ps.collective: unknown collective op 'allreduse' (expected allreduce, reduce_scatter, "
       "allgather, broadcast, reduce, alltoall, sendrecv)", "unknown op")
raises(lambda: pipesim.run(cluster={1, 2}), "pipesim: cannot pass a set to Lua (expected None, bool, "
       "int, float, str, bytes, dict, list, tuple, a function or a pipesim object)", "a set", TypeError)

# sweeps: a base table, and a Python function as the point's run
sw = pipesim.sweep(name="m", space={"microbatches": [4, 8]},
                   base={"cluster": c, "layers": layers, "stages": 2, "record": "summary", "db": "sweep.db"})
check([x.microbatches for x in sw] == [4, 8], "sweep points %r" % ([x.get("microbatches") for x in sw],))
for x in sw:
    near(x.makespan, 0.06 * (x.microbatches + 1), "sweep makespan m = %d" % x.microbatches)
seen = []


def point_run(p):
    seen.append(p["stages"])
    return {"cluster": c, "layers": layers, "stages": p["stages"], "microbatches": 4, "record": "summary",
            "db": "sweep.db"}


sw = pipesim.sweep(name="p", space={"stages": [1, 2]}, run=point_run)
check(seen == [1, 2] and len(sw) == 2, "a Python run function: points %r" % (seen,))
near(sw[0].makespan, 4 * 0.12, "one stage, four microbatches: 4 (F + B) of 4 layers")


def boom(p):
    raise ValueError("no such point")


try:
    pipesim.sweep(name="b", space={"stages": [1]}, run=boom)
    check(False, "a raising run function raised nothing")
except pipesim.Error as e:
    check("python: ValueError: no such point" in str(e) and "\n" not in str(e), "raising run function: %r" % str(e))
raises(lambda: pipesim.run(5), "pipesim.run: expected keyword arguments or one dict, got int",
       "a positional int", TypeError)

# search: the same best plan in process as in a scenario file
model = {"layers": 8, "hidden": 512, "heads": 8, "seq": 512, "vocab": 8192, "tied": True}
space = {"tp": [1, 2], "pp": [1, 2], "microbatch": [1, 2], "schedule": ["1f1b", "gpipe"]}
s = pipesim.search(model=model, cluster=node, gpus=8, global_batch=16, space=space, record="none")
best = s.best
check(isinstance(best, pipesim.Result) and best.step_time == best["step_time"], "search best is a Result")
check(isinstance(best, dict) and best["step_time"] > 0 and "label" in best, "search best %r" % (best,))
check(all(row["step_time"] >= best["step_time"] for row in s.table if row.get("step_time")),
      "best is the fastest of the table")
with open("search.lua", "w") as f:
    f.write('local ps = require "pipesim"\n'
            'local s = ps.search{ model = { layers = 8, hidden = 512, heads = 8, seq = 512, '
            'vocab = 8192, tied = true }, cluster = ps.cluster(ps.clusters.dgx("A100", 1)), '
            'gpus = 8, global_batch = 16, space = { tp = { 1, 2 }, pp = { 1, 2 }, '
            'microbatch = { 1, 2 }, schedule = { "1f1b", "gpipe" } }, record = "none" }\n'
            'assert(s.best.label == ps.args.label, s.best.label)\n'
            'assert(s.best.step_time == ps.args.step, s.best.step_time)\n')
out = pipesim.run_file("search.lua", db="search.db", args={"label": best["label"], "step": repr(best["step_time"])})
check(out["runs"] == 0, "search.lua records nothing: %r" % (out,))

# scenario files: as pipesim run runs them, sandboxed, -D as args
with open("two.lua", "w") as f:
    f.write('local ps = require "pipesim"\n'
            'local c = ps.cluster{ ranks = 2, device = { flops = "100 TFLOPS", efficiency = 1, '
            'memory = "80 GiB" } }\n'
            'local layers = {}\n'
            'for i = 1, 4 do layers[i] = { fwd_flops = "1 TFLOP", params = 1e6, act_bytes = "1 GiB" } end\n'
            'ps.run{ cluster = c, layers = layers, stages = 2, microbatches = ps.args.m, schedule = "1f1b" }\n')
out = pipesim.run_file("two.lua", args={"m": 8})
check(out == {"runs": 1, "db": "results/two.db", "total": 1}, "run_file %r" % (out,))
rows = pipesim.read("results/two.db", "SELECT makespan, microbatches FROM run")
rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
check(len(rows) == 1, "one run row: %r" % (rows,))
near(rows[0]["makespan"], 0.06 * (8 + 2 - 1), "run_file makespan, m = 8")
with open("bad.lua", "w") as f:
    f.write('os.execute("true")\n')
raises(lambda: pipesim.run_file("bad.lua", db="bad.db"),
       "bad.lua:1: os.execute is not allowed in a sandboxed scenario (run with --unsafe to allow it)",
       "sandboxed run_file")
check(not os.path.exists("bad.db"), "a failed scenario left bad.db")

# rows: DataFrames with pandas, lists of dicts without
stages = r.frame("stage")
try:
    import pandas
except ImportError:
    pandas = None
    print("skip: pandas absent, rows read as lists of dicts")
if pandas is not None:
    check(isinstance(stages, pandas.DataFrame) and list(stages["stage"]) == [0, 1], "stage frame %r" % (stages,))
    runs = pipesim.read("step.db")
    check(list(runs["id"]) == [1, 2], "run frame ids %r" % (list(runs["id"]),))
else:
    check(isinstance(stages, list) and [s["stage"] for s in stages] == [0, 1], "stage rows %r" % (stages,))
    check([x["id"] for x in pipesim.read("step.db")] == [1, 2], "run rows")
raises(lambda: pipesim.read("nope.db"), "nope.db: no such file", "read a missing file")

check(pipesim.close() >= 0, "close")
raises(lambda: pipesim.run(cluster=c), "pipesim: closed (pipesim.close() was called)", "after close")
print("%d passed, %d failed" % (P, F))
sys.exit(1 if F else 0)
