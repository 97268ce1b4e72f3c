#!/bin/sh
# A ps.sweep with `base` records the same rows as the same runs made by a
# plain ps.run loop (tests/data/sweep_memo.lua), apart from the sweep
# columns: what the sweep checks and lowers once, and the run.params text
# it keeps from its first point, change nothing.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_sweep_memo
OUT=sweep_memo
. tests/lib_cli.sh
S=tests/data/sweep_memo.lua
rm -f "$TMP/memo-sweep.db" "$TMP/memo-loop.db"
$VG "$BIN" run $S -o "$TMP/memo-sweep.db" >"$TMP/memo.out" 2>&1 && ok || bad "sweep: $(cat "$TMP/memo.out")"
$VG "$BIN" run $S -D loop=true -o "$TMP/memo-loop.db" >"$TMP/memo.out" 2>&1 && ok || bad "loop: $(cat "$TMP/memo.out")"
runs="SELECT id, kind, name, schedule, stages, microbatches, virtual_stages, dp, makespan,
  bubble, closed_form_bubble, imbalance, peak_memory, p2p, params, status, error, fits, tp,
  sequence_parallel, recompute, tags, model, seq_length, micro_batch, global_batch FROM run ORDER BY id"
for sql in "$runs" "SELECT * FROM stage ORDER BY run, stage" "SELECT * FROM rank_stat ORDER BY run, rank" \
    "SELECT * FROM collective ORDER BY run, rowid" "SELECT * FROM event ORDER BY run, rowid" \
    "SELECT * FROM transfer ORDER BY run, rowid" "SELECT * FROM memory ORDER BY run, rowid"; do
    a=$(sqlite3 "$TMP/memo-sweep.db" "$sql")
    b=$(sqlite3 "$TMP/memo-loop.db" "$sql")
    [ "$a" = "$b" ] && ok || bad "rows differ: $(echo "$sql" | head -c 60)..."
done
got=$(sqlite3 "$TMP/memo-sweep.db" "SELECT count(*), sum(status = 'failed'), count(DISTINCT params) FROM run")
[ "$got" = "19|0|15" ] && ok || bad "runs, failed, distinct params (1 and 1.0, 0.0 twice print alike): $got"
got=$(sqlite3 "$TMP/memo-sweep.db" "SELECT group_concat(instr(params, '\"optimizer_time\":-0,') > 0, ' ') FROM run WHERE name = 'plain' AND point_index < 3")
[ "$got" = "0 1 0" ] && ok || bad "0.0 and -0.0 kept apart: $got"
echo "$P passed, $F failed"
