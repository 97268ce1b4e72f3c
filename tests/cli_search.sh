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
# every configuration the search simulated is one point of its sweep
n=$(q "$TMP/search1.db" "SELECT count(*) FROM run WHERE sweep = 'gpt-1.7b'")
sim=$(sed -n 's/.*: simulated \([0-9]*\),.*/\1/p' "$TMP/search1.out")
[ -n "$sim" ] && [ "$n" = "$sim" ] && ok || bad "search runs recorded as points of the sweep 'gpt-1.7b': $n, simulated ${sim:-?}"
best=$(sqlite3 -csv "$TMP/search1.db" <results/queries/best_plan.sql | cut -d, -f1,6)
case "$best" in
"gpt-1.7b,\"tp"*) ok ;;
*) bad "best_plan.sql on the search: $best" ;;
esac

# --shard K/N on a scenario whose only sweep is a search: accepted, and the
# merged shards hold the rows of the unsharded search (ids aside: the
# search simulates in bound order, merge numbers runs in point order).
# prune = "none" divides the valid configurations among the shards;
# prune = "bound" cannot be divided (what it simulates depends on what it
# simulated before): every shard searches, shard 0 records.
prows="SELECT name, makespan, peak_memory, fits, sweep, point, point_index FROM run ORDER BY point_index"
for prune in none bound; do
    rm -f "$TMP"/sfull.db* "$TMP"/spart-*.db* "$TMP"/smerged.db*
    $VG "$BIN" run $S -D quick=1 -D prune=$prune -o "$TMP/sfull.db" >/dev/null 2>&1 || bad "unsharded prune=$prune"
    for k in 0 1 2; do
        $VG "$BIN" run $S -D quick=1 -D prune=$prune --shard $k/3 -o "$TMP/spart-$k.db" \
            >"$TMP/spart-$k.out" 2>&1 || bad "prune=$prune --shard $k/3: $(tail -n 2 "$TMP/spart-$k.out")"
    done
    $VG "$BIN" merge "$TMP/smerged.db" "$TMP"/spart-*.db >"$TMP/smerge.out" 2>&1 ||
        bad "merge prune=$prune: $(cat "$TMP/smerge.out")"
    a=$(q "$TMP/sfull.db" "$prows")
    b=$(q "$TMP/smerged.db" "$prows")
    [ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "prune=$prune: merged shards differ from the unsharded search"
    if [ $prune = none ]; then
        # a third each (60 valid configurations)
        n1=$(q "$TMP/spart-1.db" "SELECT count(*) FROM run")
        total=$(q "$TMP/sfull.db" "SELECT count(*) FROM run")
        [ "$n1" -eq $((total / 3)) ] && ok || bad "prune=none: shard 1 recorded $n1 of $total"
    else
        # shard 1 records no run (its database holds its shard record,
        # which pipesim merge checks: issue 27 item 6)
        [ "$(q "$TMP/spart-1.db" "SELECT count(*) FROM run")" = 0 ] && ok || bad "prune=bound: shard 1 recorded runs"
        grep -v ' runs added to ' "$TMP/spart-0.out" >"$TMP/spart-0.res"
        cmp -s "$TMP/spart-0.res" "$TMP/spart-1.out" && ok || bad "prune=bound: shards 0 and 1 found other results"
    fi
done
echo "$P passed, $F failed"
