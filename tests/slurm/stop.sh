#!/bin/sh
# Stops the Slurm that tests/slurm/start.sh DIR started: slurmd, slurmctld
# and munged, each by the pid file it wrote, then waits for them to exit.
set -u
SLURM_DIR=${1:-${SLURM_DIR:-/tmp/pipesim-slurm}}
for f in "$SLURM_DIR/slurmd.pid" "$SLURM_DIR/slurmctld.pid" "$SLURM_DIR/munge/munged.pid"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || continue
    i=0
    while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
done
