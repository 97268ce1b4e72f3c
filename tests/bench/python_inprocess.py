"""The cost of a small run from Python: in process (pipesim.run) against a
`pipesim run` process per run, the route without the package. A 4-stage
1F1B step of 16 layers, 8 microbatches, recorded at the default level.
Usage (pipesim installed in the Python that runs it; docs/python.md):
    python3 tests/bench/python_inprocess.py build/pipesim
Prints the mean per run of each route; run it in an empty directory."""
import subprocess
import sys
import time

import pipesim

c = pipesim.cluster(ranks=4, device={"flops": "312 TFLOPS", "efficiency": 0.5, "memory": "80 GiB"})
layers = [{"fwd_flops": "1.56 TFLOP", "params": 200e6, "act_bytes": "2 GiB"} for _ in range(16)]
N = 200
t = time.perf_counter()
for i in range(N):
    pipesim.run(cluster=c, layers=layers, stages=4, microbatches=8, schedule="1f1b", db="py.db")
py = (time.perf_counter() - t) / N
with open("one.lua", "w") as f:
    f.write('local ps = require "pipesim"\n'
            'local c = ps.cluster{ ranks = 4, device = { flops = "312 TFLOPS", efficiency = 0.5, '
            'memory = "80 GiB" } }\n'
            'local layers = {}\n'
            'for i = 1, 16 do layers[i] = { fwd_flops = "1.56 TFLOP", params = 200e6, '
            'act_bytes = "2 GiB" } end\n'
            'ps.run{ cluster = c, layers = layers, stages = 4, microbatches = 8, schedule = "1f1b" }\n')
M = 50
t = time.perf_counter()
for i in range(M):
    subprocess.run([sys.argv[1], "run", "one.lua", "-o", "cli.db"], check=True,
                   stdout=subprocess.DEVNULL)
cli = (time.perf_counter() - t) / M
print("in process: %.2f ms per run (%d runs); a pipesim run process per run: %.2f ms (%d)"
      % (py * 1e3, N, cli * 1e3, M))
