#!/bin/sh
# pipesim merge at scale and its refusals (issue 27 items 5 and 6): 64
# shards merge into the unsharded run's rows (SQLite attaches at most 10
# databases at once: merge copies them one at a time); a missing, repeated,
# unfinished or live shard, shards of another N and a database made without
# --shard are refused, naming them, and --partial merges what there is,
# saying what it lacks. `make stress` merges 1,000 shards.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_merge
OUT=merge
. tests/lib_cli.sh
D="$TMP/merge"
rm -rf "$D" && mkdir -p "$D"
S=tests/data/sweep_shards.lua
q() { sqlite3 "$1" "$2"; }
dump() {
    cols=$(q "$1" "SELECT group_concat(name, ',') FROM pragma_table_info('run') WHERE name <> 'created'")
    q "$1" "SELECT $cols FROM run ORDER BY rowid"
    for t in stage rank_stat collective; do echo "== $t"; q "$1" "SELECT * FROM $t ORDER BY rowid"; done
}
N=64
[ -n "$VG" ] && N=12

# --- N shards, merged in reverse order: the unsharded run's rows
$VG "$BIN" run $S -o "$D/full.db" >/dev/null 2>&1 || bad "unsharded run"
k=0
while [ $k -lt $N ]; do
    $VG "$BIN" run $S -o "$D/part-$k.db" --shard $k/$N >/dev/null 2>"$D/err" || bad "shard $k/$N: $(cat "$D/err")"
    k=$((k + 1))
done
# shellcheck disable=SC2046
$VG "$BIN" merge "$D/all.db" $(ls "$D"/part-*.db | sort -r) >"$D/out" 2>&1 || bad "merge of $N: $(cat "$D/out")"
grep -q "^130 runs from $N databases merged into $D/all.db$" "$D/out" && ok || bad "merge of $N: $(cat "$D/out")"
dump "$D/full.db" >"$D/full.dump"
dump "$D/all.db" >"$D/all.dump"
[ "$(wc -l <"$D/full.dump")" -gt 300 ] && ok || bad "too few rows to compare"
cmp -s "$D/full.dump" "$D/all.dump" && ok || bad "merge of $N shards differs from the unsharded run: $(diff "$D/full.dump" "$D/all.dump" | head -5)"
[ -z "$(ls "$D" | grep -E -- '-(wal|shm|journal)$|merge-')" ] && ok || bad "merge left $(ls "$D" | grep -E -- '-(wal|shm|journal)$|merge-')"

# --- refusals, leaving no output

expect_fail "merge $D/x.db $D/part-0.db $D/part-1.db" "merge: $(($N - 2)) shards of $N are missing (2/$N, 3/$N, 4/$N, 5/$N, ...): give every shard's database, or --partial to merge the shards there are"
expect_fail "merge $D/x.db $(ls "$D"/part-*.db | grep -v "part-7.db" | tr '\n' ' ')" "merge: shard 7/$N is missing: give every shard's database, or --partial to merge the shards there are"
cp "$D/part-3.db" "$D/copy-3.db"
expect_fail "merge $D/x.db $(ls "$D"/part-*.db | tr '\n' ' ') $D/copy-3.db" "merge: $D/part-3.db and $D/copy-3.db are both shard 3/$N (the same shard twice?)"
$VG "$BIN" run $S -o "$D/three-1.db" --shard 1/3 >/dev/null 2>&1
expect_fail "merge $D/x.db $D/part-0.db $D/three-1.db" "merge: $D/part-0.db is shard 0/$N and $D/three-1.db shard 1/3: the shards of one run have one N"
$VG "$BIN" run $S -o "$D/plain.db" >/dev/null 2>&1
expect_fail "merge $D/x.db $D/plain.db" "merge: $D/plain.db was not made by pipesim run --shard K/N (it has no shard record): merge joins the shards of one run, or --partial to merge what it holds"
$VG "$BIN" run $S -o "$D/other-0.db" --shard 0/2 -D points=12 >/dev/null 2>&1
$VG "$BIN" run $S -o "$D/other-1.db" --shard 1/2 -D points=13 >/dev/null 2>&1
expect_fail "merge $D/x.db $D/other-0.db $D/other-1.db" "merge: $D/other-1.db comes from another scenario version than $D/other-0.db"
[ ! -e "$D/x.db" ] && ok || bad "a refused merge wrote $D/x.db"

# -D arguments in another order are the same scenario version (issue 27
# item 15), as is a key given twice, whose last value counts
$VG "$BIN" run $S -o "$D/d-0.db" --shard 0/2 -D points=4 -D x=1 -D y=2 >/dev/null 2>&1
$VG "$BIN" run $S -o "$D/d-1.db" --shard 1/2 -D y=2 -D x=0 -D x=1 -D points=4 >/dev/null 2>&1
$VG "$BIN" merge "$D/d.db" "$D/d-0.db" "$D/d-1.db" >"$D/out" 2>&1 && ok || bad "-D in another order: $(cat "$D/out")"
[ "$(q "$D/d-0.db" "SELECT DISTINCT scenario FROM run")" = "$(q "$D/d-1.db" "SELECT DISTINCT scenario FROM run")" ] && ok || bad "-D in another order: two scenario versions"

# --partial: what there is, and the line says what it lacks
$VG "$BIN" merge --partial "$D/p.db" "$D/part-0.db" "$D/part-5.db" >"$D/out" 2>&1 &&
    [ "$(cat "$D/out")" = "6 runs from 2 databases merged into $D/p.db (partial: $(($N - 2)) shards of $N are missing (1/$N, 2/$N, 3/$N, 4/$N, ...))" ] && ok ||
    bad "merge --partial: $(cat "$D/out")"
[ "$(q "$D/p.db" "SELECT group_concat(coalesce(point_index, name)) FROM run")" = "before,0,5,64,69,after" ] && ok || bad "merge --partial: rows $(q "$D/p.db" "SELECT group_concat(coalesce(point_index, name)) FROM run")"

# --- a shard still being written (waiting on a FIFO), then killed
mkfifo "$D/pause.fifo"
PAUSE="tests/data/sweep_pause.lua -D fifo=$D/pause.fifo --jobs 1"
# shellcheck disable=SC2086
"$BIN" run $PAUSE -o "$D/live-0.db" --shard 0/2 >/dev/null 2>&1 &
pid=$!
# shellcheck disable=SC2086
$VG "$BIN" run $PAUSE -o "$D/live-1.db" --shard 1/2 >/dev/null 2>&1 || bad "live: shard 1/2"
i=0
while [ "$(q "$D/live-0.db" "SELECT count(*) FROM shard" 2>/dev/null)" != 1 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
expect_fail "merge $D/x.db $D/live-0.db $D/live-1.db" "merge: $D/live-0.db is still being written (pipesim run --shard 0/2, process $pid on $(hostname)): wait for it to end, or --partial to merge what it holds"
kill -9 $pid
wait $pid 2>/dev/null
expect_fail "merge $D/x.db $D/live-0.db $D/live-1.db" "merge: $D/live-0.db is incomplete: its pipesim run --shard 0/2 (process $pid on $(hostname)) did not finish (killed, or its scenario failed?): run that shard again, or --partial to merge what it holds"
$VG "$BIN" merge --partial "$D/l.db" "$D/live-0.db" "$D/live-1.db" >"$D/out" 2>&1 &&
    grep -q "^[0-9] runs from 2 databases merged into $D/l.db (partial: $D/live-0.db is incomplete" "$D/out" && ok || bad "merge --partial of a killed shard: $(cat "$D/out")"
# a scenario that fails leaves its shard unfinished too
printf 'local ps = require "pipesim"\nps.sweep{ name = "f", points = { { microbatches = 1 } }, base = { layers = { { fwd_time = 1 }, { fwd_time = 1 } }, stages = 2 } }\nerror("late")\n' >"$D/late.lua"
"$BIN" run "$D/late.lua" -o "$D/late-0.db" --shard 0/1 >/dev/null 2>&1 && bad "late.lua exited 0"
expect_fail "merge $D/x.db $D/late-0.db" "merge: $D/late-0.db is incomplete: its pipesim run --shard 0/1"
expect_fail "merge --bogus $D/x.db $D/late-0.db" "merge: unknown option '--bogus' (usage: pipesim merge [--partial] OUT.db PART.db...)"

echo "$P passed, $F failed"
