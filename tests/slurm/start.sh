#!/bin/sh
# Starts a single-node Slurm on localhost for the README's Slurm recipe
# (tests/cluster_recipes_slurm.sh): munged with a fresh key, slurmctld and
# slurmd from Debian's slurm-wlm, everything (config, key, sockets, state,
# logs) under one directory, nothing in /etc. One node with nproc CPUs,
# select/cons_tres, proctrack/linuxproc and task/none (no cgroup plugin,
# so no systemd), no accounting. Waits until sinfo shows the node idle.
#
#   . tests/slurm/start.sh [DIR]     (sources: exports SLURM_CONF)
#   sh tests/slurm/start.sh DIR && export SLURM_CONF=DIR/slurm.conf
#
# Needs root (slurmd runs jobs as their submitter). tests/slurm/stop.sh DIR
# stops the three daemons by their pid files.
set -eu
SLURM_DIR=${1:-${SLURM_DIR:-/tmp/pipesim-slurm}}
mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool" "$SLURM_DIR/munge"
# readable by a non-root submitter (slurm.conf, the munge socket); munged
# wants its directories not writable by others
chmod 755 "$SLURM_DIR" "$SLURM_DIR/munge"
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/^MemTotal:/ { print int($2 / 1024 / 2) }' /proc/meminfo)

# munge: its own key and socket
key="$SLURM_DIR/munge/munge.key"
[ -f "$key" ] || { dd if=/dev/urandom of="$key" bs=1024 count=1 2>/dev/null; chmod 400 "$key"; }
sock="$SLURM_DIR/munge/munge.socket"
if ! [ -S "$sock" ] || ! munge -n -S "$sock" >/dev/null 2>&1; then
    munged --force --key-file="$key" --socket="$sock" \
        --pid-file="$SLURM_DIR/munge/munged.pid" \
        --log-file="$SLURM_DIR/munge/munged.log" \
        --seed-file="$SLURM_DIR/munge/munged.seed"
fi

cat >"$SLURM_DIR/slurm.conf" <<CONF
# written by tests/slurm/start.sh: one node, localhost
ClusterName=pipesim
SlurmctldHost=$host(127.0.0.1)
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/backfill
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$SLURM_DIR/slurm.conf"

slurmctld -c -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"

i=0
until [ "$(sinfo -h -o %t 2>/dev/null)" = idle ]; do
    i=$((i + 1))
    if [ "$i" -gt 60 ]; then
        echo "slurm: the node is not idle after 60 s: sinfo says '$(sinfo -h -o %t 2>&1)'" >&2
        tail -n 5 "$SLURM_DIR/slurmctld.log" "$SLURM_DIR/slurmd.log" >&2
        exit 1
    fi
    sleep 1
done
echo "slurm: node $host idle with $cpus CPUs (SLURM_CONF=$SLURM_CONF)"
