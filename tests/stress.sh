#!/bin/sh
# make stress (not part of make test): 8 processes write one database at
# once, for each run count given (default 3000 and 12000 runs per writer,
# the counts that killed 1 and 7 of 8 writers with "database is locked"
# when runs were committed in batches of 256). Asserts every writer exits 0
# and the stored ids are exactly the printed ones; prints the wall time.
# Env: BUILD (build dir). Usage: sh tests/stress.sh [RUNS...]
set -u
BIN=${BUILD:-build}/pipesim
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pipesim-stress.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
[ $# -gt 0 ] || set -- 3000 12000
cat >"$TMP/writer.lua" <<'LUA'
local ps = require "pipesim"
local l = { { fwd_time = 1e-3 }, { fwd_time = 1e-3 } }
for _ = 1, ps.args.runs do
    local r = ps.run{ layers = l, stages = 2, microbatches = 4, name = ps.args.name,
        record = "summary" }
    print(r.id)
end
LUA
FAILED=0
for runs in "$@"; do
    DB="$TMP/stress-$runs.db"
    t0=$(date +%s.%N)
    pids=""
    for w in 1 2 3 4 5 6 7 8; do
        "$BIN" run "$TMP/writer.lua" -o "$DB" -D runs="$runs" -D name=w$w >"$TMP/w$w.out" 2>&1 &
        pids="$pids $!"
    done
    failed=0
    w=0
    for pid in $pids; do
        w=$((w + 1))
        wait "$pid" || { failed=$((failed + 1)); echo "writer $w: $(grep -v '^[0-9]' "$TMP/w$w.out" | head -n 1)"; }
    done
    t1=$(date +%s.%N)
    stored=$(sqlite3 "$DB" 'SELECT count(*) FROM run')
    cat "$TMP"/w*.out | grep -E '^[0-9]+$' | sort -n >"$TMP/printed"
    sqlite3 "$DB" 'SELECT id FROM run ORDER BY id' >"$TMP/stored"
    same=yes
    cmp -s "$TMP/printed" "$TMP/stored" || same=no
    want=$((8 * runs))
    status=ok
    if [ "$failed" -ne 0 ] || [ "$stored" != "$want" ] || [ "$same" != yes ]; then
        status=FAILED
        FAILED=$((FAILED + 1))
    fi
    awk -v r="$runs" -v f="$failed" -v s="$stored" -v w="$want" -v same="$same" \
        -v t0="$t0" -v t1="$t1" -v st="$status" 'BEGIN {
        printf "8 writers x %d runs: %d of 8 failed, %s of %d runs stored, printed ids = stored ids: %s, %.1f s wall, %.0f runs/s: %s\n",
            r, f, s, w, same, t1 - t0, w / (t1 - t0), st }'
    rm -f "$DB" "$DB-wal" "$DB-shm"
done
[ "$FAILED" -eq 0 ]
