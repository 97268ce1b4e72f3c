#!/bin/sh
# pipesim calibrate (issue 27 item 17; docs/calibrate.md): the file it
# writes loads with ps.clusters.load and as nccl-tests' --cluster, and
# reproduces the log; standard output without -o; a warning when a tier
# is not measured; every flag and file mistake as one line.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=calibrate OUT=calibrate
. tests/lib_cli.sh

LOGS=tests/data/nccl_logs
CF="$TMP/cal_h100.lua"
rm -f "$CF"
if $VG "$BIN" calibrate --nccl-tests $LOGS/h100_2x8_ib_noranks.log --ranks 16 --nodes 2 \
    --cluster h100 -o "$CF" >"$TMP/cal.out" 2>"$TMP/cal.err"; then ok; else bad "calibrate: $(cat "$TMP/cal.err")"; fi
[ ! -s "$TMP/cal.err" ] && ok || bad "stderr: $(cat "$TMP/cal.err")"
grep -q "^a cluster reproducing 5 measured collectives within RMS [0-9.]*%, max [0-9.]*%, written to $CF\$" "$TMP/cal.out" &&
    ok || bad "summary: $(cat "$TMP/cal.out")"
head -n 1 "$CF" | grep -q '^-- pipesim calibrate (pipesim ' && ok || bad "header: $(head -n 1 "$CF")"
ls "$TMP"/cal_h100.lua.tmp-* >/dev/null 2>&1 && bad "a temporary file was left" || ok
# the file as nccl-tests' cluster: at 8 GiB, the simulated time the
# file's header states (nccl-tests prints 5 digits)
$VG "$BIN" nccl-tests all_reduce --cluster "$CF" -b 8G -e 8G --db "$TMP/cal.db" >"$TMP/cal.nt" 2>&1 && ok ||
    bad "nccl-tests --cluster FILE: $(cat "$TMP/cal.nt")"
sim=$(awk '$1 == 8589934592 { print $6 }' "$TMP/cal.nt")
stated=$(awk '$2 == 8589934592 { print $4 }' "$CF")
awk -v s="$sim" -v st="$stated" 'BEGIN { d = s / st - 1; exit !(st > 0 && d * d < 1e-8) }' &&
    ok || bad "8 GiB: nccl-tests on the file gives $sim us, its header states $stated us"
# the file in a scenario, through ps.clusters.load
cp "$CF" "$TMP/cluster_file.lua"
printf 'local ps = require "pipesim"\nlocal c = ps.cluster(ps.clusters.load("%s"))\nprint(c.ranks, c.nodes)\n' \
    "$TMP/cluster_file.lua" >"$TMP/load.lua"
[ "$($VG "$BIN" run "$TMP/load.lua" -o "$TMP/load.db" 2>&1 | head -n 1)" = "16	2" ] && ok ||
    bad "ps.clusters.load: $($BIN run "$TMP/load.lua" -o "$TMP/load.db" 2>&1)"
# a file whose chunk reaches for the environment: loaded with none
printf 'return { nodes = os.time() }\n' >"$TMP/evil.lua"
printf 'local ps = require "pipesim"\nps.clusters.load("%s")\n' "$TMP/evil.lua" >"$TMP/evil_load.lua"
$VG "$BIN" run "$TMP/evil_load.lua" -o "$TMP/evil.db" >/dev/null 2>"$TMP/evil.err" && bad "os reached from a cluster file" ||
    grep -q "evil_load.lua:2: load: .*evil.lua:1: attempt to index a nil value (global 'os')" "$TMP/evil.err" &&
    ok || bad "evil file: $(cat "$TMP/evil.err")"

printf 'local ps = require "pipesim"\nps.clusters.load("%s")\n' "$TMP/num_cluster.lua" >"$TMP/num_load.lua"
printf 'return 42\n' >"$TMP/num_cluster.lua"
$VG "$BIN" run "$TMP/num_load.lua" -o "$TMP/num.db" >/dev/null 2>"$TMP/num.err" && bad "a number loaded as a cluster" ||
    [ "$(cat "$TMP/num.err")" = "pipesim: $TMP/num_load.lua:2: load: $TMP/num_cluster.lua must return a table for ps.cluster, got number" ] &&
    ok || bad "number file: $(cat "$TMP/num.err")"

# without -o: the file on standard output; a tier not measured is a warning
$VG "$BIN" calibrate $LOGS/v100_dgx2_12gpu.log >"$TMP/cal2.out" 2>"$TMP/cal2.err" && ok || bad "stdout: $(cat "$TMP/cal2.err")"
head -n 1 "$TMP/cal2.out" | grep -q '^-- pipesim calibrate' && grep -q '^return {$' "$TMP/cal2.out" && ok ||
    bad "stdout file: $(head -n 3 "$TMP/cal2.out")"
[ "$(cat "$TMP/cal2.err")" = "pipesim: warning: calibrate: no multi-node measurement: the file's inter tier is a copy of intra, not a measurement" ] &&
    ok || bad "warning: $(cat "$TMP/cal2.err")"

# GEMMs: a CSV after --gemm, with a preset's device
printf 'm,n,k,dtype,seconds\n8192,8192,8192,bf16,1.7e-3\n4096,4096,4096,bf16,2.2e-4\n2048,2048,2048,bf16,3.8e-5\n' >"$TMP/g.csv"
$VG "$BIN" calibrate --gemm "$TMP/g.csv" --cluster h100 -o "$TMP/g.lua" >"$TMP/g.out" 2>&1 && ok || bad "gemm: $(cat "$TMP/g.out")"
grep -q '^--   GEMMs: gemm_max ' "$TMP/g.lua" && grep -q '^        gemm_max = ' "$TMP/g.lua" && ok || bad "gemm file: $(head -n 12 "$TMP/g.lua")"

OUT=calibrate_fail
expect_fail "calibrate" "calibrate: nothing to calibrate (usage: pipesim calibrate --nccl-tests LOG... [--gemm CSV] [--cluster PRESET] [-o FILE.lua])"
expect_fail "calibrate --bogus" "calibrate: unknown option '--bogus' (expected --nccl-tests, --gemm, --cluster, --ranks, --nodes, --op, --in-place, -o)"
expect_fail "calibrate --nccl-tests" "calibrate: --nccl-tests needs a value"
expect_fail "calibrate --nccl-tests $TMP/missing.log" "calibrate: $TMP/missing.log: No such file or directory"
expect_fail "calibrate --nccl-tests $TMP" "calibrate: $TMP: not a regular file"
expect_fail "calibrate --nccl-tests $LOGS/h100_2x8_ib_noranks.log --ranks 0" "calibrate: --ranks 0: expected a whole number from 1"
expect_fail "calibrate --nccl-tests $LOGS/h100_2x8_ib_noranks.log --nodes x" "calibrate: --nodes x: expected a whole number from 1"
expect_fail "calibrate --nccl-tests $LOGS/h100_2x8_ib_noranks.log" "calibrate: $LOGS/h100_2x8_ib_noranks.log:6: the log has no '# Rank N ... on HOST' lines"
expect_fail "calibrate --nccl-tests $LOGS/h100_2x8_ib_noranks.log --ranks 16 --nodes 2 --cluster h999" "calibrate: --cluster h999: dgx: unknown device 'h999'"
expect_fail "calibrate --nccl-tests $LOGS/h100_2x8_ib_noranks.log --ranks 16 --nodes 2 --cluster h100 -o $TMP/no/such/dir.lua" "calibrate: -o $TMP/no/such/dir.lua: No such file or directory"
expect_fail "calibrate --nccl-tests $LOGS/h100_2x8_ib_noranks.log -o" "calibrate: -o needs a value"
printf 'return 42\n' >"$TMP/num_cluster.lua"
expect_fail "calibrate --gemm $TMP/g.csv --cluster $TMP/num_cluster.lua" "calibrate: --cluster $TMP/num_cluster.lua: the file must return a table for ps.cluster"
echo "$P passed, $F failed"
