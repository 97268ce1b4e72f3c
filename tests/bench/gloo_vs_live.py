#!/usr/bin/env python3
"""PyTorch's gloo all-reduce against pipesim's live ring (issue 25), side
by side on 4 local processes over loopback TCP, float32 arrays of 1 KB,
1 MB and 16 MB: 20 timed iterations after 5 warm-up ones, each started on
a barrier, the time of the slowest rank; gloo and pipesim take turns for
ROUNDS rounds (so that a shared machine's load falls on both alike) and
the median of all a side's iterations is quoted. Part of
`make bench`, not of `make test`: it needs Debian's python3-torch, and says
so and passes when it is missing.

usage: gloo_vs_live.py PIPESIM_BINARY
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile

SIZES = [1000, 1000 * 1000, 16 * 1000 * 1000]
RANKS, ITERS, WARMUP, ROUNDS = 4, 20, 5, 3


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def gloo_worker(rank, port, queue):
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=RANKS)
    out = {}
    for size in SIZES:
        x = torch.ones(size // 4, dtype=torch.float32)
        times = []
        for it in range(WARMUP + ITERS):
            dist.barrier()
            t0 = _now()
            dist.all_reduce(x)
            t = _now() - t0
            # the slowest rank's time: a max-reduce of the times
            tt = torch.tensor([t], dtype=torch.float64)
            dist.all_reduce(tt, op=dist.ReduceOp.MAX)
            if it >= WARMUP:
                times.append(tt.item())
        out[size] = times
    if rank == 0:
        queue.put(out)
    dist.destroy_process_group()


def _now():
    import time
    return time.monotonic()


def gloo():
    try:
        import torch.multiprocessing as mp
    except ImportError:
        return None
    port = free_port()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=gloo_worker, args=(r, port, q)) for r in range(RANKS)]
    for p in procs:
        p.start()
    res = q.get(timeout=600)
    for p in procs:
        p.join()
    return res


def live(binary):
    lines = ["local ps = require 'pipesim'",
             f"local c = ps.cluster{{ ranks = {RANKS}, link = {{ bandwidth = '1 GB/s', latency = '20 us' }} }}"]
    for size in SIZES:
        lines.append(
            f"local r = ps.collective{{ cluster = c, op = 'allreduce', algorithm = 'ring', bytes = {size}, "
            f"backend = 'tcp', iterations = {ITERS}, warmup = {WARMUP}, record = 'none' }}")
        lines.append(f"for _, t in ipairs(r.times) do print({size}, t) end")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "live_ring.lua")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        out = subprocess.run([binary, "run", path, "-o", os.path.join(d, "x.db")],
                             check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            res.setdefault(int(float(parts[0])), []).append(float(parts[1]))
    return res


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/pipesim"
    try:
        import torch  # noqa: F401
    except ImportError:
        # Debian's python3-torch is in the system Python's dist-packages,
        # which another python3 on PATH (pyenv's) does not see
        if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3":
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    g, p = {}, {}
    for _ in range(ROUNDS):  # turns, so that the load falls on both alike
        gr = gloo()
        if gr is None:
            print("gloo vs live ring: skipped (python3-torch is not installed; "
                  "apt-get install python3-torch)")
            return 0
        pr = live(os.path.abspath(binary))
        for size in SIZES:
            g.setdefault(size, []).extend(gr[size])
            p.setdefault(size, []).extend(pr[size])
    g = {k: statistics.median(v) for k, v in g.items()}
    p = {k: statistics.median(v) for k, v in p.items()}
    print(f"allreduce, {RANKS} processes on loopback, median of {ROUNDS} x {ITERS} "
          f"(gloo and pipesim in turns; machine shared):")
    print(f"{'bytes':>10} {'gloo (us)':>12} {'pipesim ring (us)':>18} {'ring/gloo':>10}")
    for size in SIZES:
        print(f"{size:>10} {g[size] * 1e6:>12.1f} {p[size] * 1e6:>18.1f} {p[size] / g[size]:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
