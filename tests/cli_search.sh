#!/bin/sh
# ps.search under --jobs: the configurations are simulated in batches of a
# fixed size whatever the number of workers, so --jobs 2 records the same
# rows, run ids and order as --jobs 1, and finds the same best plan (the
# quick scenario runs one process unless -D jobs= says otherwise).
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_search
OUT=search
. tests/lib_cli.sh
S=scenarios/plan_search.lua
q() { sqlite3 "$1" "$2"; }
# the workers' scratch directories go under this suite's own $TMP
TMPDIR=$TMP
export TMPDIR
rows="SELECT id, name, makespan, peak_memory, fits, sweep, point, point_index FROM run ORDER BY id"
for j in 1 2; do
    rm -f "$TMP/search$j.db" "$TMP/search$j.db-wal" "$TMP/search$j.db-shm"
    $VG "$BIN" run $S -D quick=1 --jobs $j -D jobs=$j -o "$TMP/search$j.db" >"$TMP/search$j.out" 2>&1 &&
        ok || bad "--jobs $j: $(tail -n 3 "$TMP/search$j.out")"
done
a=$(q "$TMP/search1.db" "$rows")
b=$(q "$TMP/search2.db" "$rows")
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "--jobs 2 rows differ from --jobs 1"
grep -A1 '^best:' "$TMP/search1.out" >"$TMP/search1.best"
grep -A1 '^best:' "$TMP/search2.out" >"$TMP/search2.best"
cmp -s "$TMP/search1.best" "$TMP/search2.best" && ok || bad "--jobs 2 found another best plan"
n=$(q "$TMP/search1.db" "SELECT count(*) FROM run WHERE sweep = 'gpt-1.7b'")
[ "$n" -gt 0 ] && ok || bad "search runs recorded as points of the sweep 'gpt-1.7b': $n"
best=$(sqlite3 -csv "$TMP/search1.db" <results/queries/best_plan.sql | cut -d, -f1,6)
case "$best" in
"gpt-1.7b,\"tp"*) ok ;;
*) bad "best_plan.sql on the search: $best" ;;
esac
echo "$P passed, $F failed"
