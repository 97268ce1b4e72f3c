#!/bin/sh
# make stress (not part of make test; tests/cli_merge.sh merges 64 shards
# there): 1,000 shards of a 1,000-point sweep merged into the unsharded
# run's rows (issue 27 item 5: SQLite attaches at most 10 databases at once,
# and merge's memory must not grow with its inputs: its peak RSS merging
# 1,000 shards is compared with 64's, when /usr/bin/time is there). Prints
# the wall times.
# Env: BUILD (build dir).
set -u
BIN=${BUILD:-build}/pipesim
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pipesim-stress-merge.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
S=tests/data/sweep_shards.lua
N=1000
FAILED=0
fail() { FAILED=$((FAILED + 1)); echo "FAIL stress_merge: $*"; }
q() { sqlite3 "$1" "$2"; }
rows() { q "$1" "SELECT name, sweep, point, point_index, makespan, microbatches FROM run ORDER BY id"; }

"$BIN" run $S -o "$TMP/full.db" -D points=$N >/dev/null || fail "unsharded run"
t0=$(date +%s.%N)
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
seq 0 $((N - 1)) | xargs -P "$jobs" -I @@ "$BIN" run $S -D points=$N --shard @@/$N -o "$TMP/part-@@.db" >/dev/null ||
    fail "a shard failed"
t1=$(date +%s.%N)
# peak N OUT: merges the first N shards (--partial) into OUT; its peak RSS
# in KiB goes to $TMP/rss (0 without /usr/bin/time)
peak() {
    set -- "$1" "$2" $(seq 0 $(($1 - 1)) | sed "s|.*|$TMP/part-&.db|")
    n=$1 out=$2
    shift 2
    echo 0 >"$TMP/rss"
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f %M -o "$TMP/rss" "$BIN" merge --partial "$out" "$@" >/dev/null 2>"$TMP/merge.err" ||
            fail "merge of $n: $(cat "$TMP/merge.err")"
    else
        "$BIN" merge --partial "$out" "$@" >/dev/null 2>"$TMP/merge.err" || fail "merge of $n: $(cat "$TMP/merge.err")"
    fi
}
peak 64 "$TMP/m64.db"
m64=$(tail -n 1 "$TMP/rss")
t2=$(date +%s.%N)
peak $N "$TMP/all.db"
m1000=$(tail -n 1 "$TMP/rss")
t3=$(date +%s.%N)
[ "$(rows "$TMP/full.db")" = "$(rows "$TMP/all.db")" ] && [ "$(q "$TMP/all.db" "SELECT count(*) FROM run")" = $((N + 2)) ] ||
    fail "the merge of $N shards differs from the unsharded run"
# constant memory: 1,000 inputs need no more than 64 do, give or take 50%
if [ "$m64" -gt 0 ] && [ $((m1000 * 2)) -gt $((m64 * 3)) ]; then fail "peak RSS $m1000 KiB for $N shards, $m64 KiB for 64"; fi
awk -v n=$N -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" -v a="$m64" -v b="$m1000" 'BEGIN {
    printf "%d shards: %.1f s to run them, merge of 64 %.1f s (%d KiB), of %d %.1f s (%d KiB)\n",
        n, t1 - t0, t2 - t1, a, n, t3 - t2, b }'
[ "$FAILED" -eq 0 ] && echo "stress_merge: ok"
[ "$FAILED" -eq 0 ]
