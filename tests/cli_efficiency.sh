#!/bin/sh
# Efficiency figures in the run row, pipesim report and ps.show (issue 27
# item 16; docs/efficiency.md): the recorded columns are r.efficiency's,
# bit for bit; a collective has none; the report prints the line and the
# note. Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=efficiency OUT=efficiency
. tests/lib_cli.sh

DB="$TMP/efficiency.db"
rm -f "$DB" "$DB-wal" "$DB-shm"
if $VG "$BIN" run tests/data/efficiency.lua -o "$DB" >"$TMP/eff.out" 2>"$TMP/eff.err"; then ok; else
    bad "run: $(cat "$TMP/eff.err")"; fi
cols="model_flops, hardware_flops, tokens, gpus, peak_flops, model_tflops_per_gpu, mfu, hardware_tflops_per_gpu, tokens_per_s_per_gpu"
# r.efficiency printed as %.17g (exact in SQL's parser); empty is nil
for id in 1 2; do
    want=$(grep "^$id|" "$TMP/eff.out")
    [ -n "$want" ] && ok || bad "run $id: not printed: $(cat "$TMP/eff.out")"
    conds=$(echo "$want" | awk -F'|' -v cols="$cols" 'BEGIN { n = split(cols, c, ", ") }
        { for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " AND " : ""),
          ($(i + 1) == "" ? c[i] " IS NULL" : c[i] " = " $(i + 1)) }')
    [ "$(sqlite3 "$DB" "SELECT count(*) FROM run WHERE id = $id AND $conds")" = 1 ] &&
        ok || bad "run $id: row differs from r.efficiency $want: $(sqlite3 "$DB" "SELECT $cols FROM run WHERE id = $id")"
done
# the modelled step has every figure and no note; the plain one no tokens
[ "$(sqlite3 "$DB" "SELECT precision || '|' || gpus || '|' || (efficiency_note IS NULL) FROM run WHERE id = 1")" = "bf16|4|1" ] &&
    ok || bad "model run: $(sqlite3 "$DB" 'SELECT precision, gpus, efficiency_note FROM run WHERE id = 1')"
[ "$(sqlite3 "$DB" "SELECT count(*) FROM run WHERE id = 2 AND tokens IS NULL AND mfu > 0 AND efficiency_note LIKE 'plain layers:%'")" = 1 ] &&
    ok || bad "plain run: $(sqlite3 "$DB" 'SELECT * FROM run WHERE id = 2')"
# a collective carries none of them
[ "$(sqlite3 "$DB" "SELECT count(*) FROM run WHERE kind = 'collective' AND coalesce($cols, efficiency_note, precision) IS NULL")" = 1 ] &&
    ok || bad "collective row has efficiency figures"
# pipesim report: the line under the summary, and the table's columns
$VG "$BIN" report "$DB" 1 >"$TMP/eff.rep" 2>&1
grep -q '^efficiency on 4 GPUs: model [0-9.e+]* FLOP per step, [0-9.]* TFLOP/s per GPU,' "$TMP/eff.rep" &&
    grep -q 'MFU [0-9.]*% of 989 TFLOP/s (bf16)' "$TMP/eff.rep" && ok || bad "report 1: $(cat "$TMP/eff.rep")"
$VG "$BIN" report "$DB" 2 >"$TMP/eff.rep2" 2>&1
tr '\n' ' ' <"$TMP/eff.rep2" | sed 's/  */ /g' | grep -q 'tokens/s per GPU, plain layers: FLOPs from fwd_flops, no tokens without a sequence length, MFU against the device.s flops' &&
    ok || bad "report 2: $(cat "$TMP/eff.rep2")"
$VG "$BIN" report "$DB" 3 >"$TMP/eff.rep3" 2>&1
grep -q '^efficiency' "$TMP/eff.rep3" && bad "collective report has an efficiency line" || ok
$VG "$BIN" report "$DB" >"$TMP/eff.tab" 2>&1
head -n 1 "$TMP/eff.tab" | grep -q 'status  tflops/gpu  *mfu  tok/s/gpu$' && ok || bad "table: $(head -n 2 "$TMP/eff.tab")"
$VG "$BIN" report "$DB" --csv >"$TMP/eff.csv" 2>&1
head -n 1 "$TMP/eff.csv" | grep -q ',status,model_tflops_per_gpu,mfu,tokens_per_s_per_gpu$' &&
    ok || bad "csv header: $(head -n 1 "$TMP/eff.csv")"
[ "$(sqlite3 "$DB" "SELECT mfu = $(sed -n 2p "$TMP/eff.csv" | cut -d, -f17) FROM run WHERE id = 1")" = 1 ] &&
    ok || bad "csv mfu: $(sed -n 2p "$TMP/eff.csv")"
echo "$P passed, $F failed"
