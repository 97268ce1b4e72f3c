#!/bin/sh
# Durability and concurrency of the results database (issue 8): eight
# writers and one that pauses between two runs share a file and lose
# nothing; kill -9 mid-sweep leaves an intact file holding every id the
# writer printed; readers racing a writer that creates the file wait; a full
# disk is one short line and keeps the earlier runs. No timing is asserted:
# the pause is a FIFO the pausing writer blocks on, released by this script.
# Env from tests/run.sh: BIN, TMP, VG. `make stress` runs the heavy version
# (tests/stress.sh).
set -u
P=0
F=0
ok() { P=$((P + 1)); }
bad() { F=$((F + 1)); echo "FAIL concurrency: $*"; }
D="$TMP/conc"
rm -rf "$D" && mkdir -p "$D"
# fewer runs under valgrind, which is ~50x slower
RUNS=300
[ -n "$VG" ] && RUNS=10

# The writer: RUNS summary runs named NAME, printing each run id as soon as
# ps.run returns it; with -D pause_after=K it blocks after run K until a
# line arrives on the FIFO -D fifo (io.open read-only: sandbox-safe).
cat >"$D/writer.lua" <<'LUA'
local ps = require "pipesim"
local a = ps.args
io.stdout:setvbuf("line")
local l = { { fwd_time = 1e-3 }, { fwd_time = 1e-3 } }
local function body(i)
    local r = ps.run{ layers = l, stages = 2, microbatches = a.mb or 4, name = a.name,
        record = a.record or "summary" }
    print(r.id)
    if i == a.pause_after then
        local f = assert(io.open(a.fifo, "r"))
        f:read("l")
        f:close()
    end
end
-- -D batch=1: the loop inside ps.batch (its runs commit together)
if a.batch then
    ps.batch(function() for i = 1, a.runs do body(i) end end)
else
    for i = 1, a.runs do body(i) end
end
LUA

# ids FILE: the run ids a writer printed (none while a background writer has
# not yet created its output file)
ids() { grep -E '^[0-9]+$' "$1" 2>/dev/null; }

# wait_ids FILE N: waits (at most ~30 s) until FILE holds N printed ids
wait_ids() {
    i=0
    while [ "$(ids "$1" | wc -l)" -lt "$2" ]; do
        i=$((i + 1))
        [ "$i" -gt 600 ] && return 1
        sleep 0.05
    done
}

q() { sqlite3 -bail "$DB" "$1" 2>&1; }

# check_complete LABEL [EVENTS]: integrity_check ok; every run has its 2
# stage and 2 rank_stat rows (no half-written run) and, at the events level,
# EVENTS (default 16) event rows and half as many transfers
check_complete() {
    ev=${2:-16}
    [ "$(q 'PRAGMA integrity_check')" = ok ] && ok || bad "$1: integrity_check: $(q 'PRAGMA integrity_check' | head -n 3)"
    partial=$(q "SELECT count(*) FROM run r WHERE
        (SELECT count(*) FROM stage WHERE run = r.id) <> 2 OR
        (SELECT count(*) FROM rank_stat WHERE run = r.id) <> 2 OR
        (SELECT count(*) FROM event WHERE run = r.id) NOT IN (0, $ev) OR
        (SELECT count(*) FROM transfer WHERE run = r.id) NOT IN (0, $ev / 2)")
    [ "$partial" = 0 ] && ok || bad "$1: $partial runs with missing rows"
}

# --- eight writers and a pausing one ---------------------------------------
DB="$D/shared.db"
mkfifo "$D/fifo"
$VG "$BIN" run "$D/writer.lua" -o "$DB" -D runs=2 -D name=pauser -D pause_after=1 \
    -D fifo="$D/fifo" >"$D/pauser.out" 2>&1 &
pauser=$!
# the pauser has recorded run 1 and now waits on the FIFO between two runs
wait_ids "$D/pauser.out" 1 || bad "pauser printed no id: $(cat "$D/pauser.out")"
pids=""
for w in 1 2 3 4 5 6 7 8; do
    $VG "$BIN" run "$D/writer.lua" -o "$DB" -D runs=$RUNS -D name=w$w >"$D/w$w.out" 2>&1 &
    pids="$pids $!"
done
# readers meanwhile: the runs committed so far, without waiting or failing
for r in 1 2 3; do
    $VG "$BIN" report "$DB" >"$D/report.out" 2>&1 && grep -q pauser "$D/report.out" && ok ||
        bad "report while 8 writers write: $(head -n 3 "$D/report.out")"
done
w=0
for pid in $pids; do
    w=$((w + 1))
    if wait "$pid"; then ok; else bad "writer $w of 8 exited non-zero: $(grep -v '^[0-9]' "$D/w$w.out" | head -n 3)"; fi
done
# a pauser that died before it opened the FIFO would leave this open
# waiting for a reader for ever: bounded, the failure is reported below
timeout 30 sh -c 'echo go >"$1"' sh "$D/fifo" || bad "the pausing writer never read the FIFO"
if wait "$pauser"; then ok; else bad "the pausing writer exited non-zero: $(grep -v '^[0-9]' "$D/pauser.out" | head -n 3)"; fi
total=$((8 * RUNS + 2))
[ "$(q 'SELECT count(*) FROM run')" = "$total" ] && ok || bad "$(q 'SELECT count(*) FROM run') runs recorded, want $total"
# every printed id is a distinct run of that writer, and nothing else is there
cat "$D"/w*.out "$D/pauser.out" | grep -E '^[0-9]+$' | sort -n >"$D/printed"
q 'SELECT id FROM run ORDER BY id' >"$D/stored"
[ "$(sort -nu "$D/printed" | wc -l)" = "$total" ] && ok || bad "printed ids are not $total distinct ids"
cmp -s "$D/printed" "$D/stored" && ok || bad "printed ids differ from the stored ones"
counts=$(q "SELECT group_concat(name || '=' || n, ' ') FROM
    (SELECT name, count(*) n FROM run GROUP BY name ORDER BY name)")
want="pauser=2 w1=$RUNS w2=$RUNS w3=$RUNS w4=$RUNS w5=$RUNS w6=$RUNS w7=$RUNS w8=$RUNS"
[ "$counts" = "$want" ] && ok || bad "runs per writer: $counts, want $want"
check_complete "eight writers"

# --- kill -9 mid-sweep ------------------------------------------------------
# An events-level sweep (256 microbatches: 1024 event and 512 transfer rows
# per run, so the kill often lands inside a run's transaction) is killed once
# it has printed 300 ids (more than the 256 runs pipesim once kept in one
# open transaction): the file must be intact, hold every printed id, and a
# new writer must get new ids.
DB="$D/killed.db"
$VG "$BIN" run "$D/writer.lua" -o "$DB" -D runs=1000000 -D name=killed -D record=events -D mb=256 \
    >"$D/killed.out" 2>&1 &
victim=$!
wait_ids "$D/killed.out" $((RUNS + 1)) || bad "the sweep to kill printed no ids: $(head -n 3 "$D/killed.out")"
kill -9 "$victim"
wait "$victim" 2>/dev/null
printed=$(ids "$D/killed.out" | sort -n | tail -n 1)
check_complete "after kill -9" 1024
list=$(ids "$D/killed.out" | paste -sd, -)
n=$(ids "$D/killed.out" | wc -l)
kept=$(q "SELECT count(*) FROM run WHERE name = 'killed' AND id IN ($list)")
[ "$kept" = "$n" ] && ok || bad "kill -9: $n ids printed, only $kept of them in the database"
if $VG "$BIN" run "$D/writer.lua" -o "$DB" -D runs=5 -D name=after >"$D/after.out" 2>&1; then ok; else
    bad "writing after kill -9: $(grep -v '^[0-9]' "$D/after.out" | head -n 3)"; fi
[ "$(ids "$D/after.out" | head -n 1)" -gt "$printed" ] 2>/dev/null && ok ||
    bad "ids after kill -9 reuse printed ones: $(ids "$D/after.out" | head -n 1) <= $printed"
check_complete "after kill -9 and more runs" 1024

# --- kill -9 inside ps.batch -------------------------------------------------
# ps.batch opts out of the per-run commit: a kill -9 loses the runs since its
# last commit (ids printed included), never part of a run. The file is
# intact, its runs are the first printed ids with none missing between
# (docs/sweeps.md, "A loop of ps.run").
DB="$D/batched.db"
$VG "$BIN" run "$D/writer.lua" -o "$DB" -D runs=1000000 -D name=batched -D record=events -D mb=256 \
    -D batch=1 >"$D/batched.out" 2>&1 &
victim=$!
wait_ids "$D/batched.out" $((RUNS + 1)) || bad "the batch to kill printed no ids: $(head -n 3 "$D/batched.out")"
kill -9 "$victim"
wait "$victim" 2>/dev/null
check_complete "after kill -9 in ps.batch" 1024
first=$(ids "$D/batched.out" | head -n 1)
stored=$(q "SELECT count(*) || ' ' || ifnull(min(id), 0) || ' ' || ifnull(max(id), 0) FROM run")
n=${stored%% *}
[ "$(q "SELECT count(*) FROM run WHERE id < $first")" = 0 ] && ok || bad "kill -9 in ps.batch: runs before the first printed id"
ids "$D/batched.out" | head -n "$n" >"$D/batched.want"
q 'SELECT id FROM run ORDER BY id' >"$D/batched.got"
cmp -s "$D/batched.want" "$D/batched.got" && ok ||
    bad "kill -9 in ps.batch: the stored runs ($stored) are not the first printed ids"

# --- readers and writers racing to create the file --------------------------
# Two writers and `pipesim report` start together on a file that does not
# exist: the writers both succeed, the reader reports the runs, the empty
# table, or "no such file", never "not a pipesim database".
races=30
[ -n "$VG" ] && races=3
i=0
bad_reads=0
bad_writes=0
while [ "$i" -lt "$races" ]; do
    i=$((i + 1))
    DB="$D/race$i.db"
    $VG "$BIN" run "$D/writer.lua" -o "$DB" -D runs=1 -D name=a >"$D/ra.out" 2>&1 &
    a=$!
    $VG "$BIN" run "$D/writer.lua" -o "$DB" -D runs=1 -D name=b >"$D/rb.out" 2>&1 &
    b=$!
    if ! $VG "$BIN" report "$DB" >"$D/rr.out" 2>"$D/rr.err"; then
        case "$(cat "$D/rr.err")" in
        "pipesim: $DB: no such file") ;;
        *)
            bad_reads=$((bad_reads + 1))
            [ "$bad_reads" -eq 1 ] && echo "race $i: report said: $(cat "$D/rr.err")" ;;
        esac
    fi
    wait "$a" || bad_writes=$((bad_writes + 1))
    wait "$b" || bad_writes=$((bad_writes + 1))
    [ "$(q 'SELECT count(*) FROM run')" = 2 ] || bad_writes=$((bad_writes + 1))
    rm -f "$DB" "$DB-wal" "$DB-shm"
done
[ "$bad_reads" -eq 0 ] && ok || bad "report failed in $bad_reads of $races races with a writer creating the file"
[ "$bad_writes" -eq 0 ] && ok || bad "$bad_writes writer failures in $races races creating the file: $(cat "$D/ra.out" "$D/rb.out" | grep -v '^[0-9]' | head -n 3)"

# --- a full disk ------------------------------------------------------------
# PIPESIM_TEST_MAX_PAGES (test only) caps the file as a full disk would.
DB="$D/full.db"
$VG "$BIN" run "$D/writer.lua" -o "$DB" -D runs=3 -D name=before >/dev/null 2>&1 || bad "full disk: first runs"
pages=$(q 'PRAGMA page_count')
if PIPESIM_TEST_MAX_PAGES=$((pages + 8)) $VG "$BIN" run "$D/writer.lua" -o "$DB" -D runs=100000 -D name=filling \
    >"$D/full.out" 2>"$D/full.err"; then
    bad "full disk: the writer exited 0"
else
    msg=$(cat "$D/full.err")
    [ "$(wc -l <"$D/full.err")" -eq 1 ] && ok || bad "full disk: $(wc -l <"$D/full.err") lines: $msg"
    case "$msg" in
    "pipesim: "*"$DB: run not recorded: database or disk is full (runs recorded before are kept)") ok ;;
    *) bad "full disk: message is '$msg'" ;;
    esac
    # the line's length less the database's path (TMPDIR's length is the
    # machine's, not the message's)
    rest=${msg#*"$DB"}
    [ $((${#msg} - ${#DB})) -le 160 ] && ok || bad "full disk: message is ${#msg} characters: ...$rest"
fi
n=$(ids "$D/full.out" | wc -l)
[ "$n" -gt 0 ] && [ "$(q "SELECT count(*) FROM run WHERE name = 'filling'")" = "$n" ] && ok ||
    bad "full disk: $n ids printed, $(q "SELECT count(*) FROM run WHERE name = 'filling'") stored"
check_complete "full disk"
$VG "$BIN" run "$D/writer.lua" -o "$DB" -D runs=2 -D name=freed >/dev/null 2>&1 && ok ||
    bad "full disk: writing once there is room again"

echo "$P passed, $F failed"
