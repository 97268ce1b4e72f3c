#!/bin/sh
# pipesim nccl-tests: nccl-tests' table on a simulated cluster (a DGX
# preset or a cluster file), its columns and busbw factors (nccl-tests
# doc/PERFORMANCE.md), the runs it records, and every flag error as one
# line. Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=nccl-tests OUT=nccltests
. tests/lib_cli.sh

DB="$TMP/nccl-tests.db"
rm -f "$DB" "$DB-wal" "$DB-shm"
if $VG "$BIN" nccl-tests all_reduce --cluster h100:2 -b 1K -e 64M -f 4 --db "$DB" \
    >"$TMP/nt.out" 2>"$TMP/nt.err"; then ok; else bad "all_reduce: $(cat "$TMP/nt.err")"; fi
[ ! -s "$TMP/nt.err" ] && ok || bad "stderr not empty: $(cat "$TMP/nt.err")"
# the header lines of nccl-tests' table
grep -q '^#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong $' "$TMP/nt.out" &&
    ok || bad "header: $(sed -n 4p "$TMP/nt.out")"
# sizes 1K, 4K, ..., 64M (x 4): 9 rows; 8 B is 2 floats, sum, root -1
[ "$(grep -c '^ *[0-9]' "$TMP/nt.out")" -eq 9 ] && ok || bad "rows: $(grep -c '^ *[0-9]' "$TMP/nt.out")"
$VG "$BIN" nccl-tests all_reduce --cluster h100:2 -b 8 -e 8 --db "$DB" >"$TMP/nt.8" 2>&1
grep -q '^           8             2     float     sum      -1 ' "$TMP/nt.8" && ok || bad "8 B row: $(cat "$TMP/nt.8")"
# one recorded run per size, with auto's algorithm and protocol
[ "$(sqlite3 "$DB" "SELECT count(*) FROM collective WHERE op = 'allreduce' AND protocol IN ('ll', 'll128', 'simple')")" -eq 10 ] &&
    ok || bad "recorded: $(sqlite3 "$DB" 'SELECT algorithm, protocol FROM collective')"
# busbw = algbw x 2(n-1)/n on 16 ranks; time = bytes / algbw; the table
# prints what was recorded (64 MiB row)
row=$(grep '^    67108864 ' "$TMP/nt.out")
# shellcheck disable=SC2086
set -- $row x x x x x x x x
rec=$(sqlite3 "$DB" "SELECT printf('%.2f %.2f %.2f', time * 1e6, algbw / 1e9, busbw / 1e9), abs(busbw / algbw - 2.0 * 15 / 16) < 1e-12, abs(time * algbw - bytes) < 1e-6 * bytes FROM collective WHERE bytes = 67108864")
[ "$rec" = "$6 $7 $8|1|1" ] && ok || bad "64 MiB row '$6 $7 $8' vs recorded '$rec'"
# allgather and reduce_scatter: per-rank counts rounded to 16 bytes,
# factor (n-1)/n; alltoall and broadcast run too
for op in all_gather reduce_scatter alltoall broadcast; do
    if $VG "$BIN" nccl-tests $op --cluster a100 -b 1M -e 1M --db "$DB" >"$TMP/nt.$op" 2>&1; then ok; else
        bad "$op: $(cat "$TMP/nt.$op")"; fi
done
grep -q '^     1048576        262144     float    none      -1 ' "$TMP/nt.all_gather" && ok || bad "all_gather row: $(grep '^ *[0-9]' "$TMP/nt.all_gather")"
grep -q '^     1048576        262144     float    none       0 ' "$TMP/nt.broadcast" && ok || bad "broadcast row: $(grep '^ *[0-9]' "$TMP/nt.broadcast")"
# a cluster file, -g and a fixed algorithm and protocol
printf 'local ps = require "pipesim"\nreturn ps.clusters.dgx("h100", 1)\n' >"$TMP/nt_cluster.lua"
if $VG "$BIN" nccl-tests all_reduce --cluster "$TMP/nt_cluster.lua" -b 1M -e 1M -g 4 \
    --algorithm ring --protocol simple --db "$DB" >"$TMP/nt.file" 2>&1; then ok; else bad "cluster file: $(cat "$TMP/nt.file")"; fi
grep -q 'all_reduce_perf on DGX H100 SXM x1, 4 ranks' "$TMP/nt.file" && ok || bad "cluster file header: $(head -n 1 "$TMP/nt.file")"
[ "$(sqlite3 "$DB" "SELECT algorithm || '/' || protocol || '/' || ranks FROM collective ORDER BY rowid DESC LIMIT 1")" = "ring/simple/4" ] &&
    ok || bad "fixed algorithm: $(sqlite3 "$DB" 'SELECT algorithm, protocol, ranks FROM collective ORDER BY rowid DESC LIMIT 1')"
# docs/collectives.md "Whole multi-node tables": nccl-tests #119 (3 x 8 A100 40GB, 4
# HDR NICs per node, Intel) published 95.74 GB/s busbw (out-of-place) at
# its largest size, 133169160 B; pipesim must stay within the 15% goal
printf 'local ps = require "pipesim"\nreturn ps.clusters.dgx("a100_40", 3, { nics_per_node = 4, cpu_vendor = "intel" })\n' >"$TMP/nt_119.lua"
if $VG "$BIN" nccl-tests all_reduce --cluster "$TMP/nt_119.lua" -b 133169160 -e 133169160 --db "$DB" >"$TMP/nt.119" 2>&1; then ok; else
    bad "#119 cluster: $(cat "$TMP/nt.119")"; fi
bw=$(awk '$1 == 133169160 { print $8 }' "$TMP/nt.119")
awk -v bw="${bw:-0}" 'BEGIN { d = (bw - 95.74) / 95.74; exit !(d > -0.15 && d < 0.15) }' &&
    ok || bad "#119 at 133169160 B: busbw '$bw', published 95.74 (goal within 15%)"

# bad flags: one line each, naming the flag
expect_fail "nccl-tests" "nccl-tests: no op given"
expect_fail "nccl-tests allredux --cluster h100" "nccl-tests: unknown collective op 'allredux'"
expect_fail "nccl-tests all_reduce" "nccl-tests: missing --cluster"
expect_fail "nccl-tests all_reduce --cluster h100 -x 3" "nccl-tests: unknown option '-x'"
expect_fail "nccl-tests all_reduce --cluster h100 --frob" "nccl-tests: unknown option '--frob'"
expect_fail "nccl-tests all_reduce --cluster h100 -b" "nccl-tests: -b needs a value"
expect_fail "nccl-tests all_reduce --cluster h100 -b 8X" "nccl-tests: -b: expected a size such as 8, 64K or 8G, got '8X'"
expect_fail "nccl-tests all_reduce --cluster h100 -b 1G -e 8" "nccl-tests: -b 1073741824 is larger than -e 8"
expect_fail "nccl-tests all_reduce --cluster h100 -f 0" "nccl-tests: -f: expected an integer factor >= 1, got '0'"
expect_fail "nccl-tests all_reduce --cluster h100 -b 0 -e 8 -f 2" "nccl-tests: -b 0 with -f 2 never grows: start at -b 1 or more, or step with -i"
expect_fail "nccl-tests all_reduce --cluster h100 -g 9" "nccl-tests: -g: expected 1 to 8 GPUs, got '9'"
expect_fail "nccl-tests all_reduce --cluster h100 -o max" "nccl-tests: -o max: pipesim reduces with sum only"
expect_fail "nccl-tests all_reduce --cluster h100 -d half" "nccl-tests: -d half: pipesim moves float only"
expect_fail "nccl-tests all_reduce --cluster h100 -n x" "nccl-tests: -n x: expected a whole number"
expect_fail "nccl-tests all_reduce --cluster h999" "nccl-tests: --cluster h999: dgx: unknown device 'h999'"
expect_fail "nccl-tests all_reduce --cluster h100:x" "nccl-tests: --cluster h100:x: expected PRESET or PRESET:NODES"
expect_fail "nccl-tests all_reduce --cluster $TMP/none.lua" "nccl-tests: --cluster $TMP/none.lua: No such file or directory"
expect_fail "nccl-tests all_reduce --cluster h100 --protocol ll64" "unknown protocol 'll64'"
printf 'return 42\n' >"$TMP/nt_bad.lua"
expect_fail "nccl-tests all_reduce --cluster $TMP/nt_bad.lua" "the file must return a cluster"

echo "$P passed, $F failed"
[ "$F" -eq 0 ]
