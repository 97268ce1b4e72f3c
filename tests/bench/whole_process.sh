#!/bin/sh
# make bench, streaming engine (issue 12): whole-process wall time (median
# of REPS runs, default 5) and peak RSS of the workloads, each a
# fresh `pipesim run` of tests/bench/stream.lua. RSS needs GNU time
# (/usr/bin/time); without it the column reads "-".
# Usage: sh tests/bench/whole_process.sh [BIN]
set -u
BIN=${1:-build/pipesim}
REPS=${REPS:-5}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pipesim-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
printf '%-46s %10s %10s  %s\n' "workload" "median ms" "RSS MB" "target"
one() {
    label=$1 target=$2
    shift 2
    : >"$TMP/times"
    rss=-
    i=0
    while [ "$i" -lt "$REPS" ]; do
        rm -f "$TMP/b.db"
        t0=$(date +%s%N)
        if [ -x /usr/bin/time ]; then
            /usr/bin/time -f "%M" -o "$TMP/rss" "$BIN" run tests/bench/stream.lua \
                -o "$TMP/b.db" "$@" >"$TMP/out" 2>&1
            rss=$(awk '{printf "%.1f", $1 / 1024}' "$TMP/rss")
        else
            "$BIN" run tests/bench/stream.lua -o "$TMP/b.db" "$@" >"$TMP/out" 2>&1
        fi
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000000)) >>"$TMP/times"
        i=$((i + 1))
    done
    med=$(sort -n "$TMP/times" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
    printf '%-46s %10s %10s  %s\n' "$label" "$med" "$rss" "$target"
}
one "ring allreduce 1 GiB, 1024 ranks, summary" "<= 80 ms" -D w=ring -D n=1024
one "ring allreduce 1 GiB, 4096 ranks, none" "<= 1500 ms, 64 MB" -D w=ring -D n=4096 -D record=none
one "1f1b p=64 m=1024, summary" "<= 30 ms" -D w=pipe -D p=64 -D m=1024
one "1f1b p=128 m=4096, summary" "<= 200 ms" -D w=pipe -D p=128 -D m=4096
one "interleaved p=64 v=4 m=1024, summary" "<= 80 ms" -D w=pipe -D p=64 -D m=1024 -D s=interleaved -D v=4
