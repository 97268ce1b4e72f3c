#!/bin/sh
# ps.sweep and its database columns (run.sweep, point, point_index, tags,
# model, seq_length, micro_batch, global_batch, scenario), the schema 4 -> 5
# upgrade, --jobs (rows identical to --jobs 1), --shard and pipesim merge.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_sweep
OUT=sweep
. tests/lib_cli.sh
# Workers make their scratch directories under TMPDIR: a private one, so the
# "scratch directories left" check sees only this suite's (other suites and
# other checkouts may run sweeps in /tmp at the same time).
TMPDIR="$TMP/sweep-tmpdir"
mkdir -p "$TMPDIR"
export TMPDIR
S=tests/data/sweep_small.lua
q() { sqlite3 "$1" "$2"; }
# the workers' scratch directories go under this suite's own TMPDIR, so the
# "none left" check below sees only this suite's (other test suites on the
# machine make their own in /tmp at the same time)
mkdir -p "$TMP/sweep-scratch"
export TMPDIR="$TMP/sweep-scratch"

# --- the columns
$VG "$BIN" run $S -o "$TMP/sw1.db" --jobs 1 >"$TMP/sw1.out" 2>&1 && ok || bad "sweep run: $(cat "$TMP/sw1.out")"
got=$(q "$TMP/sw1.db" "SELECT group_concat(coalesce(sweep, '-') || ':' || coalesce(point_index, '-'), ',') FROM run")
[ "$got" = "-:-,small:0,small:1,small:2,small:3,small:4,small:5,-:-" ] && ok || bad "sweep and point_index: $got"
got=$(q "$TMP/sw1.db" "SELECT point FROM run WHERE point_index = 1")
[ "$got" = '{"microbatches":4,"schedule":"gpipe"}' ] && ok || bad "point JSON: $got"
got=$(q "$TMP/sw1.db" "SELECT json_extract(point, '\$.schedule'), microbatches, schedule FROM run WHERE point_index = 3")
[ "$got" = "gpipe|8|gpipe" ] && ok || bad "json_extract of the point: $got"
got=$(q "$TMP/sw1.db" "SELECT json_extract(tags, '\$.gbs'), json_extract(tags, '\$.team') FROM run WHERE point_index = 0")
[ "$got" = "1024|infra" ] && ok || bad "tags: $got"
# Megatron-LM: global batch = micro-batch size x microbatches x dp
got=$(q "$TMP/sw1.db" "SELECT model, seq_length, micro_batch, global_batch FROM run WHERE point_index = 5")
[ "$got" = "llama2-7b|4096|2|64" ] && ok || bad "model and batch shape: $got"
got=$(q "$TMP/sw1.db" "SELECT count(DISTINCT scenario), min(scenario) LIKE 'fnv1a64:%' FROM run")
[ "$got" = "1|1" ] && ok || bad "one scenario version: $got"
got=$(q "$TMP/sw1.db" "SELECT tags IS NULL AND point IS NULL FROM run WHERE name = 'before'")
[ "$got" = "1" ] && ok || bad "a run outside the sweep has no point or tags: $got"

# --- a schema 4 file: readers say how to upgrade, a writer upgrades it
cp "$TMP/sw1.db" "$TMP/v4.db"
q "$TMP/v4.db" "ALTER TABLE run DROP COLUMN sweep; ALTER TABLE run DROP COLUMN point;
    ALTER TABLE run DROP COLUMN point_index; ALTER TABLE run DROP COLUMN tags;
    ALTER TABLE run DROP COLUMN model; ALTER TABLE run DROP COLUMN seq_length;
    ALTER TABLE run DROP COLUMN micro_batch; ALTER TABLE run DROP COLUMN global_batch;
    ALTER TABLE run DROP COLUMN scenario; ALTER TABLE collective DROP COLUMN protocol;
    $DROP_V8 $DROP_V9
    PRAGMA user_version = 4"
expect_fail "report $TMP/v4.db" "v4.db: schema version 4 (before the run 'sweep' columns), this pipesim reads 11"
$VG "$BIN" run $S -o "$TMP/v4.db" --jobs 1 >/dev/null 2>&1 && ok || bad "upgrade run"
got=$(q "$TMP/v4.db" "PRAGMA user_version; SELECT count(*), count(sweep) FROM run")
[ "$got" = "11
16|6" ] && ok || bad "upgraded v4: $got"
[ "$(q "$TMP/v4.db" "SELECT group_concat(name, ',') FROM pragma_table_info('run')")" = \
  "$(q "$TMP/sw1.db" "SELECT group_concat(name, ',') FROM pragma_table_info('run')")" ] && ok || bad "upgraded run columns differ from a new file's"

# dump DB: every row of every table in row order (run without its
# creation time), for comparing databases
dump() {
    cols=$(q "$1" "SELECT group_concat(name, ',') FROM pragma_table_info('run') WHERE name <> 'created'")
    q "$1" "SELECT $cols FROM run ORDER BY rowid"
    for t in event transfer memory stage rank_stat collective link; do
        echo "== $t"; q "$1" "SELECT rowid, * FROM $t ORDER BY rowid"
    done
}

# --- --jobs N: the rows, run ids and results of --jobs 1
for args in "" "-D record=events -D op=1"; do
    rm -f "$TMP"/j*.db*
    $VG "$BIN" run $S -o "$TMP/j1.db" --jobs 1 $args >"$TMP/j1.out" 2>&1 || bad "jobs 1 $args: $(cat "$TMP/j1.out")"
    dump "$TMP/j1.db" >"$TMP/j1.dump"
    [ "$(wc -l <"$TMP/j1.dump")" -gt 20 ] && ok || bad "jobs 1 $args: too few rows to compare"
    for j in 2 3; do
        $VG "$BIN" run $S -o "$TMP/j$j.db" --jobs $j $args >"$TMP/j$j.out" 2>&1 || bad "jobs $j $args: $(cat "$TMP/j$j.out")"
        dump "$TMP/j$j.db" >"$TMP/j$j.dump"
        cmp -s "$TMP/j1.dump" "$TMP/j$j.dump" && ok || bad "--jobs $j $args: rows differ from --jobs 1: $(diff "$TMP/j1.dump" "$TMP/j$j.dump" | head -5)"
        grep -v ' added to ' "$TMP/j1.out" >"$TMP/j1.res"
        grep -v ' added to ' "$TMP/j$j.out" >"$TMP/j$j.res"
        cmp -s "$TMP/j1.res" "$TMP/j$j.res" && ok || bad "--jobs $j $args: results differ: $(diff "$TMP/j1.res" "$TMP/j$j.res" | head -5)"
    done
done
# chunks that mix shipped summary runs with events-level runs (the worker
# writes the shipped ones into its scratch database first, in order)
rm -f "$TMP"/mix*.db*
$VG "$BIN" run tests/data/sweep_mixed.lua -o "$TMP/mix1.db" --jobs 1 >"$TMP/mix1.out" 2>&1 || bad "mixed jobs 1: $(cat "$TMP/mix1.out")"
$VG "$BIN" run tests/data/sweep_mixed.lua -o "$TMP/mix2.db" --jobs 2 >"$TMP/mix2.out" 2>&1 || bad "mixed jobs 2: $(cat "$TMP/mix2.out")"
dump "$TMP/mix1.db" >"$TMP/mix1.dump"
dump "$TMP/mix2.db" >"$TMP/mix2.dump"
[ "$(q "$TMP/mix1.db" "SELECT count(*) FROM span")" = 16 ] && ok || bad "mixed: 16 runs with timelines expected"
cmp -s "$TMP/mix1.dump" "$TMP/mix2.dump" && ok || bad "mixed --jobs 2: rows differ from --jobs 1: $(diff "$TMP/mix1.dump" "$TMP/mix2.dump" | head -5)"
grep -v ' added to ' "$TMP/mix1.out" >"$TMP/mix1.res"
grep -v ' added to ' "$TMP/mix2.out" >"$TMP/mix2.res"
cmp -s "$TMP/mix1.res" "$TMP/mix2.res" && ok || bad "mixed --jobs 2: results differ: $(diff "$TMP/mix1.res" "$TMP/mix2.res" | head -5)"

# runs append: a second --jobs 2 run numbers its runs after the first's
$VG "$BIN" run $S -o "$TMP/j2.db" --jobs 2 $args >"$TMP/j2b.out" 2>&1
got=$(head -n 1 "$TMP/j2b.out")
[ "$got" = "0 $(( $(q "$TMP/j1.db" "SELECT count(*) FROM run") + 2 )) 4 $(head -n 1 "$TMP/j1.out" | cut -d' ' -f4)" ] && ok || bad "appended ids: $got"

# a point that fails: the same message and the same rows before it
for j in 1 2; do
    rm -f "$TMP/f$j.db"*
    $VG "$BIN" run $S -o "$TMP/f$j.db" --jobs $j -D fail_at=1 >/dev/null 2>"$TMP/f$j.err" && bad "fail_at exited 0"
    dump "$TMP/f$j.db" >"$TMP/f$j.dump"
done
grep -q "^pipesim: tests/data/sweep_small.lua:[0-9]*: ps.sweep: 'small' point_index 3 {\"microbatches\":8,\"schedule\":\"gpipe\"}: ps.run: field 'microbatches' must be" "$TMP/f1.err" && ok || bad "failing point: $(cat "$TMP/f1.err")"
cmp -s "$TMP/f1.err" "$TMP/f2.err" && ok || bad "--jobs 2 failure message: $(cat "$TMP/f2.err")"
cmp -s "$TMP/f1.dump" "$TMP/f2.dump" && ok || bad "--jobs 2 rows before the failure: $(diff "$TMP/f1.dump" "$TMP/f2.dump" | head -5)"
[ "$(q "$TMP/f2.db" "SELECT count(*) FROM run")" = 4 ] && ok || bad "runs before the failing point"
ls "$TMPDIR" | grep -q "^pipesim-sweep\." && bad "scratch directories left: $(ls "$TMPDIR" | grep pipesim-sweep)" || ok

# --- --shard K/N and pipesim merge: the shards' union is the unsharded
# run, row for row, in the same order, whatever the inputs' order
for n in 1 2 3 7; do
    rm -f "$TMP"/full.db* "$TMP"/part-*.db* "$TMP"/m.db*
    $VG "$BIN" run $S -o "$TMP/full.db" -D record=events -D op=1 >/dev/null 2>&1 || bad "unsharded run"
    k=0
    while [ $k -lt $n ]; do
        $VG "$BIN" run $S -o "$TMP/part-$k.db" --shard $k/$n -D record=events -D op=1 >/dev/null 2>"$TMP/shard.err" || bad "shard $k/$n: $(cat "$TMP/shard.err")"
        k=$((k + 1))
    done
    # reversed: the order of the arguments does not matter
    parts=$(ls "$TMP"/part-*.db | sort -r)
    # shellcheck disable=SC2086
    $VG "$BIN" merge "$TMP/m.db" $parts >"$TMP/merge.out" 2>&1 || bad "merge of $n: $(cat "$TMP/merge.out")"
    dump "$TMP/full.db" >"$TMP/full.dump"
    dump "$TMP/m.db" >"$TMP/m.dump"
    [ "$(q "$TMP/full.db" "SELECT count(*) FROM event")" -gt 100 ] && ok || bad "too few events to compare"
    cmp -s "$TMP/full.dump" "$TMP/m.dump" && ok || bad "merge of $n shards differs from the unsharded run: $(diff "$TMP/full.dump" "$TMP/m.dump" | head -5)"
done
# shard 6 of 7 has no point of 6: its database holds its shard record
# (issue 27 item 6: merge knows that it is there) and no run
grep -q "^11 runs from 7 databases merged into $TMP/m.db" "$TMP/merge.out" && ok || bad "merge output: $(cat "$TMP/merge.out")"
got="$(q "$TMP/part-6.db" "SELECT count(*) FROM run")|$(q "$TMP/part-6.db" "SELECT group_concat(k || '/' || n || ':' || sweep) FROM shard")"
[ "$got" = "0|6/7:small,6/7:sizes" ] && ok || bad "shard 6/7's database: $got"
# a shard's results are its own points
$VG "$BIN" run $S -o "$TMP/s1.db" --shard 1/2 >"$TMP/s1.out" 2>&1
[ "$(grep -c '^[0-9]* [0-9]* ' "$TMP/s1.out")" = 3 ] && grep -q "^1 1 4 " "$TMP/s1.out" && ok || bad "shard 1/2 results: $(cat "$TMP/s1.out")"
[ "$(q "$TMP/s1.db" "SELECT group_concat(point_index) FROM run")" = "1,3,5" ] && ok || bad "shard 1/2 records only its points"

# merge refuses, leaving no output
rm -f "$TMP"/x*.db*
$VG "$BIN" run $S -o "$TMP/xa.db" --shard 0/2 -D sweep=alpha >/dev/null 2>&1
$VG "$BIN" run $S -o "$TMP/xb.db" --shard 1/2 -D sweep=beta >/dev/null 2>&1
expect_fail "merge $TMP/xo.db $TMP/xa.db $TMP/xb.db" "merge: $TMP/xa.db holds sweep 'alpha' and $TMP/xb.db sweep 'beta': databases from different sweeps"
$VG "$BIN" run $S -o "$TMP/xc.db" --shard 1/2 -D sweep=alpha -D record=events >/dev/null 2>&1
expect_fail "merge $TMP/xo.db $TMP/xa.db $TMP/xc.db" "merge: $TMP/xc.db comes from another scenario version than $TMP/xa.db ('fnv1a64:"
cp "$TMP/xa.db" "$TMP/xd.db"
expect_fail "merge $TMP/xo.db $TMP/xa.db $TMP/xd.db" "merge: $TMP/xa.db and $TMP/xd.db are both shard 0/2 (the same shard twice?)"
# a sweep run twice into one shard's file
$VG "$BIN" run $S -o "$TMP/xe.db" --shard 0/2 -D sweep=alpha >/dev/null 2>&1
$VG "$BIN" run $S -o "$TMP/xe.db" --shard 0/2 -D sweep=alpha >/dev/null 2>&1
$VG "$BIN" run $S -o "$TMP/xf.db" --shard 1/2 -D sweep=alpha >/dev/null 2>&1
expect_fail "merge $TMP/xo.db $TMP/xe.db $TMP/xf.db" "merge: $TMP/xe.db holds 2 runs of pipesim run --shard 0/2 (the shard run again into the same file?): its points are there more than once"
cp "$TMP/xa.db" "$TMP/x4.db"
q "$TMP/x4.db" "ALTER TABLE run DROP COLUMN scenario; DROP TABLE rank_member; PRAGMA user_version = 4"  # enough for the check
expect_fail "merge $TMP/xo.db $TMP/xa.db $TMP/x4.db" "merge: $TMP/x4.db: schema version 4 (before the run 'sweep' columns), this pipesim reads"
expect_fail "merge $TMP/xo.db $TMP/xa.db $TMP/xa.db" "merge: $TMP/xa.db is given twice"
expect_fail "merge $TMP/xo.db $TMP/nosuch.db" "merge: $TMP/nosuch.db: no such file"
expect_fail "merge $TMP/xo.db" "merge: expected OUT.db and at least one shard database"
[ ! -e "$TMP/xo.db" ] && [ -z "$(ls "$TMP" | grep '^xo.db')" ] && ok || bad "a refused merge left $(ls "$TMP" | grep '^xo')"
expect_fail "merge $TMP/xa.db $TMP/xb.db" "merge: $TMP/xa.db exists: merge writes a new database"

# --- a batch SQLite rolls back itself (a full disk, an I/O error; here a
# trigger's RAISE(ROLLBACK) on the third point's run): the message says how
# many of the batch's runs are lost, and "N runs added" does not count them
rm -f "$TMP/lost.db"
$VG "$BIN" run tests/data/sweep_lost.lua -o "$TMP/lost.db" --jobs 1 >/dev/null 2>&1 && ok || bad "lost: first run"
q "$TMP/lost.db" "CREATE TRIGGER boom AFTER INSERT ON run WHEN NEW.name = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'simulated'); END"
$VG "$BIN" run tests/data/sweep_lost.lua -o "$TMP/lost.db" --jobs 1 >"$TMP/lost.out" 2>&1 && ok || bad "lost: run: $(cat "$TMP/lost.out")"
grep -q "lost.db: run not recorded: simulated (the sweep's last 2 runs are lost)" "$TMP/lost.out" && ok || bad "lost: message: $(cat "$TMP/lost.out")"
grep -q "^2 runs added to $TMP/lost.db (7 in all" "$TMP/lost.out" && ok || bad "lost: count: $(cat "$TMP/lost.out")"
[ "$(q "$TMP/lost.db" "SELECT count(*) FROM run")" = 7 ] && ok || bad "lost: rows"
# the same in a --jobs worker's scratch database (PIPESIM_TEST_SCRATCH_SQL
# puts the trigger there; 2 points a chunk, the 4th point's run is "boom"):
# the chunk's lost run is not counted either (before: "5 runs added" for 4)
rm -f "$TMP/lostj.db"
PIPESIM_TEST_SCRATCH_SQL="CREATE TRIGGER boom AFTER INSERT ON run WHEN NEW.name = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'simulated'); END" \
    $VG "$BIN" run tests/data/sweep_lost_jobs.lua -o "$TMP/lostj.db" --jobs 2 >"$TMP/lostj.out" 2>&1 && ok || bad "lost --jobs: run: $(cat "$TMP/lostj.out")"
grep -q "run not recorded: simulated (the sweep's last 1 runs are lost)" "$TMP/lostj.out" && ok || bad "lost --jobs: message: $(cat "$TMP/lostj.out")"
grep -q "^4 runs added to $TMP/lostj.db (4 in all" "$TMP/lostj.out" && ok || bad "lost --jobs: count: $(cat "$TMP/lostj.out")"
[ "$(q "$TMP/lostj.db" "SELECT group_concat(name) FROM run")" = "before,kept,kept,after" ] && ok || bad "lost --jobs: rows"
# the message names the user's database, not the worker's scratch file,
# and an uncaught one is the scenario's one line (ps.run's db as well)
grep -q "ps.run: $TMP/lostj.db: run not recorded" "$TMP/lostj.out" && ok || bad "lost --jobs: database named: $(cat "$TMP/lostj.out")"
cat >"$TMP/lostdb.lua" <<'LUA'
local ps = require "pipesim"
local layers = { { fwd_time = 1e-3 }, { fwd_time = 1e-3 } }
ps.sweep{ name = "lost", space = { microbatches = { 1, 2, 3, 4, 5, 6 } },
    run = function(p) return { layers = layers, stages = 2, microbatches = p.microbatches,
                               record = "summary", db = ps.args.other } end }
LUA
rm -f "$TMP/lostdb.db"* "$TMP/lostdb_other.db"*
PIPESIM_TEST_SCRATCH_SQL="CREATE TRIGGER boom AFTER INSERT ON run WHEN NEW.microbatches = 4 BEGIN SELECT RAISE(ROLLBACK, 'simulated'); END" \
    $VG "$BIN" run "$TMP/lostdb.lua" -o "$TMP/lostdb.db" -D other="$TMP/lostdb_other.db" --jobs 2 >/dev/null 2>"$TMP/lostdb.err" && bad "lost db: exited 0"
[ "$(cat "$TMP/lostdb.err")" = "pipesim: $TMP/lostdb.lua:3: ps.sweep: 'lost' point_index 3 {\"microbatches\":4}: ps.run: $TMP/lostdb_other.db: run not recorded: simulated" ] && ok ||
    bad "lost db --jobs: message: $(cat "$TMP/lostdb.err")"

# a plain run shown before a sweep: shard 0 records and shows it, shard 1
# simulates it and its ps.show prints nothing (it failed: "this run was not
# recorded (record = "none")", which the script never set)
for k in 0 1; do
    rm -f "$TMP/sh$k.db" "$TMP/sh$k.db-wal" "$TMP/sh$k.db-shm"
    $VG "$BIN" run tests/data/shard_show.lua --shard $k/2 -o "$TMP/sh$k.db" >"$TMP/sh$k.out" 2>&1 &&
        ok || bad "shard $k/2 with ps.show of a plain run: $(cat "$TMP/sh$k.out")"
done
[ "$(grep -c '^rank' "$TMP/sh0.out")" = 2 ] && [ "$(grep -c '^rank' "$TMP/sh1.out")" = 0 ] &&
    ok || bad "ps.show under --shard: shard 0 shows the plain run's Gantt, shard 1 nothing"
[ "$(q "$TMP/sh0.db" "SELECT count(*) FROM run WHERE sweep IS NULL")" = 1 ] &&
    [ "$(q "$TMP/sh1.db" "SELECT count(*) FROM run WHERE sweep IS NULL")" = 0 ] &&
    ok || bad "the plain run is recorded by shard 0 only"

# --- --shard and --jobs errors
expect_fail "run $S -o $TMP/e.db --shard 3/2" "run: --shard 3/2: K must be in 0..1 (shards are numbered from 0), got 3"
expect_fail "run $S -o $TMP/e.db --shard 1" "run: --shard 1: expected K/N, such as 0/4"
expect_fail "run $S -o $TMP/e.db --shard 0/0" "run: --shard 0/0: expected K/N with integers K >= 0 and N >= 1"
expect_fail "run $S -o $TMP/e.db --jobs 0" "run: --jobs 0: expected a number of worker processes in 1..1024"
expect_fail "run tests/lua/test_fits.lua -o $TMP/e.db --shard 0/2" "tests/lua/test_fits.lua: --shard 0/2 needs a ps.sweep, and the scenario runs none"

echo "$P passed, $F failed"
