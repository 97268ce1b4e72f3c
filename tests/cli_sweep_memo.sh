#!/bin/sh
# A ps.sweep with `base` records the same rows as the same runs made by a
# plain ps.run loop (tests/data/sweep_memo.lua), and as that loop inside
# ps.batch, apart from the sweep columns: what the sweep and the loop's
# memo check and lower once, the run.params text they keep from the first
# point, and the batch's commits change nothing.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_sweep_memo
OUT=sweep_memo
. tests/lib_cli.sh
S=tests/data/sweep_memo.lua
rm -f "$TMP/memo-sweep.db" "$TMP/memo-loop.db" "$TMP/memo-batch.db"
$VG "$BIN" run $S -o "$TMP/memo-sweep.db" >"$TMP/memo.out" 2>&1 && ok || bad "sweep: $(cat "$TMP/memo.out")"
$VG "$BIN" run $S -D loop=true -o "$TMP/memo-loop.db" >"$TMP/memo.out" 2>&1 && ok || bad "loop: $(cat "$TMP/memo.out")"
$VG "$BIN" run $S -D loop=true -D batch=true -o "$TMP/memo-batch.db" >"$TMP/memo.out" 2>&1 && ok || bad "loop in ps.batch: $(cat "$TMP/memo.out")"
runs="SELECT id, kind, name, schedule, stages, microbatches, virtual_stages, dp, makespan,
  bubble, closed_form_bubble, imbalance, peak_memory, p2p, params, status, error, fits, tp,
  sequence_parallel, recompute, tags, model, seq_length, micro_batch, global_batch, model_flops,
  hardware_flops, tokens, gpus, peak_flops, precision, model_tflops_per_gpu, mfu,
  hardware_tflops_per_gpu, tokens_per_s_per_gpu, efficiency_note, backend, simulated, folded
  FROM run ORDER BY id"
for sql in "$runs" "SELECT * FROM stage ORDER BY run, stage" "SELECT * FROM rank_stat ORDER BY run, rank" \
    "SELECT * FROM collective ORDER BY run, rowid" "SELECT * FROM event ORDER BY run, rowid" \
    "SELECT * FROM transfer ORDER BY run, rowid" "SELECT * FROM memory ORDER BY run, rowid"; do
    a=$(sqlite3 "$TMP/memo-sweep.db" "$sql")
    b=$(sqlite3 "$TMP/memo-loop.db" "$sql")
    c=$(sqlite3 "$TMP/memo-batch.db" "$sql")
    [ -n "$a" ] || [ "${sql#*FROM run }" = "$sql" ] || bad "no runs"
    [ "$a" = "$b" ] && ok || bad "rows differ (loop): $(echo "$sql" | head -c 60)..."
    [ "$a" = "$c" ] && ok || bad "rows differ (loop in ps.batch): $(echo "$sql" | head -c 60)..."
done
got=$(sqlite3 "$TMP/memo-sweep.db" "SELECT count(*), sum(status = 'failed'), count(DISTINCT params) FROM run")
[ "$got" = "19|0|15" ] && ok || bad "runs, failed, distinct params (1 and 1.0, 0.0 twice print alike): $got"
got=$(sqlite3 "$TMP/memo-sweep.db" "SELECT group_concat(instr(params, '\"optimizer_time\":-0,') > 0, ' ') FROM run WHERE name = 'plain' AND point_index < 3")
[ "$got" = "0 1 0" ] && ok || bad "0.0 and -0.0 kept apart: $got"
echo "$P passed, $F failed"
