"""Whole-process timing for tests/bench/targets.py (make bench) and
tests/bench/ab.py (two builds side by side): the `pipesim run` command of
a bench script, a database made fresh for it, and one process's wall and
CPU seconds, peak RSS and output, timed the same way for both."""
import os
import subprocess
import sys
import time

# Peak RSS comes from GNU time when it is installed: a child forked from
# the Python process starts as a copy of it, whose size its rusage would
# report instead.
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def rm_db(path):
    """Removes the database at path and its -wal and -shm side files."""
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass


def pipesim_cmd(pipesim, script, args, db):
    """`pipesim run --unsafe tests/bench/SCRIPT -o DB -D k=v ...`."""
    cmd = [pipesim, "run", "--unsafe", "tests/bench/" + script, "-o", db]
    for k, v in args.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    return cmd


class Failed(Exception):
    """A process that failed, under run(..., fatal=False); status as
    os.wait4's (a signal's number negated when GNU time reports it)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def run(cmd, rss=False, output=False, fatal=True):
    """(wall s, CPU s, peak RSS MB or None, stdout text or "") of one
    process; exits the script when the process fails (fatal=False: raises
    Failed). rss: measure the peak RSS (GNU time); output: keep stdout."""
    full = [GNU_TIME, "-f", "rss_kb=%M"] + cmd if rss and GNU_TIME else cmd
    t0 = time.perf_counter()
    proc = subprocess.Popen(full, stdout=subprocess.PIPE if output else subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out = proc.stdout.read().decode() if output else ""
    err = proc.stderr.read().decode()
    if output:
        proc.stdout.close()
    proc.stderr.close()
    if status != 0 and not fatal:
        code = os.waitstatus_to_exitcode(status)
        raise Failed(code, "%s failed (status %d): %s" % (" ".join(cmd), code, err.strip()[-300:]))
    if status != 0:
        sys.exit("%s: %s failed: %s" % (os.path.basename(sys.argv[0]), " ".join(cmd), err.strip()))
    kb = [int(x[7:]) for x in err.split() if x.startswith("rss_kb=")]
    return wall, ru.ru_utime + ru.ru_stime, kb[-1] / 1024.0 if kb else None, out
