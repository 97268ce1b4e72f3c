#!/bin/sh
# A sweep's worker processes (issue 27 items 7 and 8): the ids a run
# function's own ps.run returns under --jobs are the ids stored, and the
# counts are right; workers die with a writer killed with -9, whose scratch
# directory the next sweep removes; a stopped worker fails the sweep instead
# of making it wait forever.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_workers
OUT=workers
. tests/lib_cli.sh
D="$TMP/workers"
rm -rf "$D" && mkdir -p "$D/tmp"
export TMPDIR="$D/tmp"
q() { sqlite3 "$1" "$2"; }
# running PID: the process exists and is no zombie (a killed worker's
# parent is gone; whoever adopted it reaps it in its own time)
running() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }

# --- item 8: a run function that records a baseline run itself
for from in 1 5; do
    for j in 1 2; do
        rm -f "$D/n$j.db"*
        $VG "$BIN" run tests/data/sweep_nested.lua -o "$D/n$j.db" --jobs $j -D from=$from >"$D/n$j.out" 2>"$D/n$j.err" || bad "nested from=$from --jobs $j: $(cat "$D/n$j.err")"
    done
    grep -v ' added to ' "$D/n1.out" >"$D/n1.res"
    grep -v ' added to ' "$D/n2.out" >"$D/n2.res"
    cmp -s "$D/n1.res" "$D/n2.res" && ok || bad "nested from=$from: --jobs 2 results differ: $(diff "$D/n1.res" "$D/n2.res" | head -4)"
    # every baseline id a point was tagged with is the id of the baseline
    # recorded just before it
    got=$(q "$D/n2.db" "SELECT count(*) FROM run p JOIN run b ON b.id = json_extract(p.tags, '\$.baseline') WHERE p.name = 'point' AND b.name = 'baseline' AND b.id = p.id - 1")
    want=$(( 9 - from ))
    [ "$got" = "$want" ] && ok || bad "nested from=$from: $got points tagged with their baseline's id, want $want"
    [ "$(q "$D/n1.db" "SELECT group_concat(id || name) FROM run")" = "$(q "$D/n2.db" "SELECT group_concat(id || name) FROM run")" ] && ok || bad "nested from=$from: rows differ from --jobs 1"
    # the ids printed are those of the sweep's runs
    [ "$(cut -f2 "$D/n2.res" | tr '\n' ',')" = "$(q "$D/n2.db" "SELECT group_concat(id) || ',' FROM run WHERE name = 'point'")" ] && ok || bad "nested from=$from: printed ids"
    n=$(( 8 + 9 - from ))
    grep -q "^$n runs added to $D/n2.db ($n in all" "$D/n2.out" && ok || bad "nested from=$from: count: $(tail -n 1 "$D/n2.out")"
    grep -q "^pipesim: note: a ps.sweep's run function records runs itself" "$D/n2.err" && ok || bad "nested from=$from: no note: $(cat "$D/n2.err")"
done

# --- item 7: kill -9 of the writer: its workers die with it, and the next
# sweep in the same TMPDIR removes the scratch directory it left
"$BIN" run tests/data/sweep_slow.lua -o "$D/k.db" --jobs 2 -D seconds=2 >/dev/null 2>&1 &
pid=$!
i=0
while [ "$(pgrep -P $pid | wc -l)" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
workers=$(pgrep -P $pid)
[ -n "$workers" ] && ok || bad "kill -9: no workers seen"
kill -9 $pid
wait $pid 2>/dev/null
# at most 2 s (the worker's death is immediate; its reaping is not)
i=0
alive=$workers
while [ -n "$alive" ] && [ $i -lt 40 ]; do
    sleep 0.05
    i=$((i + 1))
    alive=""
    for w in $workers; do running "$w" && alive="$alive $w"; done
done
[ -z "$alive" ] && ok || { bad "workers alive after kill -9 of the writer:$alive"; kill -9 $alive 2>/dev/null; }
[ "$(ls "$TMPDIR" | grep -c '^pipesim-sweep\.')" = 1 ] && ok || bad "kill -9: expected the one scratch directory left, got: $(ls -a "$TMPDIR")"
$VG "$BIN" run tests/data/sweep_slow.lua -o "$D/k2.db" --jobs 2 -D seconds=0 >/dev/null 2>&1 && ok || bad "sweep after kill -9"
[ -z "$(ls -A "$TMPDIR")" ] && ok || bad "the next sweep left scratch in TMPDIR: $(ls -a "$TMPDIR")"

# --- item 7: a stopped worker fails the sweep, naming it, after the grace
rm -f "$D/s.db"*
PIPESIM_TEST_STOP_GRACE=0.5 "$BIN" run tests/data/sweep_slow.lua -o "$D/s.db" --jobs 2 -D seconds=1 >/dev/null 2>"$D/s.err" &
pid=$!
i=0
while [ "$(pgrep -P $pid | wc -l)" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
w=$(pgrep -P $pid | head -n 1)
kill -STOP "$w"
i=0
while kill -0 $pid 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
if kill -0 $pid 2>/dev/null; then
    bad "a stopped worker: the writer still waits after 10 s"
    kill -9 $(pgrep -P $pid) $pid
else
    wait $pid && bad "a stopped worker: exit 0" || ok
fi
grep -q "^pipesim: .*ps.sweep: worker process $w has been stopped (signal 19, .*) for 0.5 s, and the sweep cannot finish without it" "$D/s.err" && ok || bad "a stopped worker: $(cat "$D/s.err")"
running "$w" && { bad "the stopped worker is still there"; kill -9 "$w"; } || ok
[ -z "$(ls -A "$TMPDIR")" ] && ok || bad "a stopped worker: scratch left: $(ls -a "$TMPDIR")"

# --- item 15: a full TMPDIR (here the scratch databases capped, as a full
# disk fails them) is named as such, not blamed on the output database
rm -f "$D/full.db"*
PIPESIM_TEST_SCRATCH_SQL="PRAGMA max_page_count = 40" $VG "$BIN" run tests/data/sweep_small.lua -D record=events -o "$D/full.db" --jobs 2 >/dev/null 2>"$D/full.err" &&
    bad "a full scratch space: exit 0"
grep -q "^pipesim: .*ps.run: a --jobs scratch database: run not recorded: database or disk is full (runs recorded before are kept) (the scratch space of --jobs, in TMPDIR=$TMPDIR, is full, not $D/full.db's disk: free space there, set TMPDIR to a directory with room, or run with --jobs 1)$" "$D/full.err" &&
    ok || bad "a full scratch space: $(cat "$D/full.err")"
[ -z "$(ls -A "$TMPDIR")" ] && ok || bad "a full scratch space: scratch left: $(ls -a "$TMPDIR")"

# --- item 15: a TMPDIR too full for a worker to write its scratch files at
# all (a 16 KiB tmpfs, in a user and mount namespace of its own where the
# machine allows one): the worker dies without a word, so the writer says
# that TMPDIR is full instead of guessing at a kill
if unshare -rm true 2>/dev/null; then
    rm -f "$D/tiny.db"*
    unshare -rm sh -c 'mkdir -p "$1" && mount -t tmpfs -o size=16k tmpfs "$1" &&
        TMPDIR="$1" "$2" run tests/data/sweep_small.lua -o "$3" --jobs 2' \
        sh "$D/tiny" "$BIN" "$D/tiny.db" >/dev/null 2>"$D/tiny.err" &&
        bad "a TMPDIR with no room: exit 0"
    grep -q "^pipesim: .*ps.sweep: a worker process stopped before its points were done: the scratch space of --jobs, in TMPDIR=$D/tiny, is full ([0-9]* KiB free): free space there, set TMPDIR to a directory with room, or run with --jobs 1$" "$D/tiny.err" &&
        ok || bad "a TMPDIR with no room: $(cat "$D/tiny.err")"
else
    echo "skipped: a TMPDIR with no room (no user namespaces here to mount a small tmpfs)"
fi

echo "$P passed, $F failed"
