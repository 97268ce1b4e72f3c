#!/bin/sh
# Command-line contract: help, version, exit codes, one-line errors, -D.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
P=0
F=0
ok() { P=$((P + 1)); }
bad() { F=$((F + 1)); echo "FAIL cli: $*"; }

# expect_fail "ARGS" "substring": non-zero exit, one stderr line with it
expect_fail() {
    args=$1 want=$2
    # shellcheck disable=SC2086
    if $VG "$BIN" $args >"$TMP/cli.stdout" 2>"$TMP/cli.stderr"; then
        bad "pipesim $args exited 0"
        return
    fi
    lines=$(wc -l <"$TMP/cli.stderr")
    got=$(cat "$TMP/cli.stderr")
    case "$got" in
    "pipesim: "*"$want"*) [ "$lines" -eq 1 ] && ok || bad "pipesim $args: $lines lines: $got" ;;
    *) bad "pipesim $args: got '$got', want 'pipesim: ...$want...'" ;;
    esac
}

$VG "$BIN" --help >"$TMP/help" 2>&1 && grep -q "pipesim run SCENARIO.lua" "$TMP/help" && ok || bad "--help"
$VG "$BIN" --version | grep -qE '^pipesim [0-9]+\.[0-9]+\.[0-9]+$' && ok || bad "--version"
expect_fail "" "no command"
expect_fail "frobnicate" "unknown command 'frobnicate'"
expect_fail "run" "no scenario given"
expect_fail "run $TMP/nope.lua" "nope.lua: No such file or directory"
expect_fail "run -x" "unknown option '-x'"
expect_fail "report $TMP/missing.db" "missing.db: no such file"
printf 'not a database at all, just text\n' >"$TMP/junk.db"
expect_fail "report $TMP/junk.db" "junk.db: not a pipesim database"

# -D values reach ps.args, numbers as numbers
cat >"$TMP/args.lua" <<'LUA'
local ps = require "pipesim"
assert(ps.args.m == 16, "m is " .. tostring(ps.args.m))
assert(ps.args.name == "x=y", "name is " .. tostring(ps.args.name))
assert(ps.args.flag == true)
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = ps.args.m, name = ps.args.name }
LUA
if $VG "$BIN" run "$TMP/args.lua" -o "$TMP/args.db" -D m=16 -D name=x=y -Dflag=true \
    >"$TMP/args.out" 2>&1; then ok; else bad "-D: $(cat "$TMP/args.out")"; fi
grep -q "1 run recorded in $TMP/args.db" "$TMP/args.out" && ok || bad "run summary line: $(cat "$TMP/args.out")"

# report: table of runs, one run's Gantt, a missing run
$VG "$BIN" report "$TMP/args.db" >"$TMP/rep" 2>&1 && grep -q "x=y" "$TMP/rep" && ok || bad "report table: $(cat "$TMP/rep")"
$VG "$BIN" report "$TMP/args.db" --csv >"$TMP/rep.csv" 2>&1 && head -n 1 "$TMP/rep.csv" | grep -q "," && ok || bad "report --csv"
$VG "$BIN" report "$TMP/args.db" 1 >"$TMP/gantt" 2>&1 && grep -q "rank 1" "$TMP/gantt" && ok || bad "report run: $(cat "$TMP/gantt")"
expect_fail "report $TMP/args.db 7" "run 7 not found"
expect_fail "report $TMP/args.db x" "run id must be a positive integer"

# the default database is results/<scenario>.db next to the working dir
mkdir -p "$TMP/cwd" && cp "$TMP/args.lua" "$TMP/cwd/sweep.lua"
(cd "$TMP/cwd" && $VG "$OLDPWD/$BIN" run sweep.lua -D m=16 -D name=x=y -D flag=true >/dev/null 2>&1) &&
    [ -f "$TMP/cwd/results/sweep.db" ] && ok || bad "default database results/sweep.db"

# a failing scenario: one line, file:line, non-zero
printf 'local ps = require "pipesim"\nps.run{ stages = 2 }\n' >"$TMP/bad.lua"
expect_fail "run $TMP/bad.lua -o $TMP/bad.db" "bad.lua:2: ps.run: missing field 'layers'"

# export: a trace Python's json module reads, an SVG xmllint accepts
if $VG "$BIN" export "$TMP/args.db" 1 --format chrome -o "$TMP/t.json" 2>"$TMP/e" &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["traceEvents"]' "$TMP/t.json"; then
    ok; else bad "export chrome: $(cat "$TMP/e")"; fi
if $VG "$BIN" export "$TMP/args.db" --compare 1,1 -o "$TMP/t.svg" 2>"$TMP/e" &&
    xmllint --noout "$TMP/t.svg"; then ok; else bad "export svg: $(cat "$TMP/e")"; fi
expect_fail "export $TMP/args.db 9 --format svg" "run 9 not found"
expect_fail "export $TMP/missing.db 1 --format svg" "missing.db: no such file"

# results/queries/best_partition.sql on balance_sweep's runs: one row per
# model, and the row is that model's fastest run
db="$TMP/scenario-balance_sweep.db"
[ -f "$db" ] || $VG "$BIN" run scenarios/balance_sweep.lua -o "$db" -D quick=1 >/dev/null 2>&1
best=$(sqlite3 -bail -csv "$db" <results/queries/best_partition.sql 2>&1)
want=$(sqlite3 -bail -csv "$db" "SELECT count(DISTINCT substr(name, 1, instr(name, '/') - 1)) FROM run" 2>&1)
[ "$(echo "$best" | wc -l)" -eq "$want" ] && ok || bad "best_partition.sql: $want groups, got: $best"
fastest=$(sqlite3 -bail -csv "$db" "SELECT id, json_extract(params, '$.partition') FROM run
    WHERE name LIKE 'gpt3-xl/%' ORDER BY makespan, id LIMIT 1" 2>&1)
echo "$best" | grep -q "^gpt3-xl,[0-9]*,${fastest%%,*},[a-z]*,$(echo "${fastest#*,}" | sed 's/[][]/\\&/g')," &&
    ok || bad "best_partition.sql: gpt3-xl row is not run $fastest: $best"
# collectives: canned queries on the ring_vs_tree sweep, report and export
# of a collective run
if $VG "$BIN" run scenarios/ring_vs_tree.lua -o "$TMP/rvt.db" -D quick=1 >"$TMP/rvt.out" 2>&1; then ok; else
    bad "ring_vs_tree: $(tail -n 3 "$TMP/rvt.out")"; fi
sqlite3 -separator ' ' "$TMP/rvt.db" <results/queries/crossover.sql >"$TMP/cross" 2>&1
grep -q '^allreduce 8 8 ranks, mesh 25 GB/s 5 us tree 16384 262144$' "$TMP/cross" && ok ||
    bad "crossover.sql: $(head -n 5 "$TMP/cross")"
printf 'local ps = require "pipesim"\nlocal c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }\nps.collective{ cluster = c, op = "allreduce", algorithm = "ring", bytes = "1 MB" }\n' >"$TMP/coll.lua"
$VG "$BIN" run "$TMP/coll.lua" -o "$TMP/coll.db" >/dev/null 2>&1 && ok || bad "collective run"
[ "$(sqlite3 "$TMP/coll.db" <results/queries/link_utilisation.sql | wc -l)" -eq 4 ] && ok ||
    bad "link_utilisation.sql: $(sqlite3 "$TMP/coll.db" <results/queries/link_utilisation.sql | head -n 3)"
sqlite3 "$TMP/coll.db" <results/queries/link_utilisation.sql | grep -q '|100.00%|' && ok ||
    bad "link_utilisation.sql: ring links busy all the time"
$VG "$BIN" report "$TMP/coll.db" 1 >"$TMP/crep" 2>&1 && grep -q "allreduce ring on 4 ranks" "$TMP/crep" && ok ||
    bad "report collective: $(head -n 3 "$TMP/crep")"
if $VG "$BIN" export "$TMP/coll.db" 1 --format chrome -o "$TMP/c.json" 2>"$TMP/e" &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["traceEvents"]' "$TMP/c.json"; then
    ok; else bad "export chrome collective: $(cat "$TMP/e")"; fi

# a data-parallel step: gradient-sync transfers are named by bucket
cat >"$TMP/dp.lua" <<'LUA'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "10 GB/s", latency = "5 us" } }
local l = { { fwd_time = 0.01, params = 1e7 }, { fwd_time = 0.01, params = 1e7 } }
ps.run{ cluster = c, layers = l, stages = 2, microbatches = 2, dp = 2 }
LUA
if $VG "$BIN" run "$TMP/dp.lua" -o "$TMP/dp.db" >/dev/null 2>&1 &&
    $VG "$BIN" export "$TMP/dp.db" 1 --format chrome -o "$TMP/dp.json" 2>"$TMP/e" &&
    grep -q '"grad sync bucket 0"' "$TMP/dp.json"; then ok; else
    bad "export of a dp run: $(cat "$TMP/e")"; fi
# exposed_comm.sql lists both stages of the dp run
[ "$(sqlite3 "$TMP/dp.db" <results/queries/exposed_comm.sql | wc -l)" -eq 2 ] && ok ||
    bad "exposed_comm.sql: $(sqlite3 "$TMP/dp.db" <results/queries/exposed_comm.sql 2>&1 | head -n 3)"

# One rule for failed runs (README, "The results database"): every run that
# fails once its fields have been read leaves a run row with status 'failed'
# and its message, pipeline or collective alike, and no timeline; a mistake
# found while reading the fields leaves no row at all.
cat >"$TMP/failed.lua" <<'LUA'
local ps = require "pipesim"
local l = { { fwd_time = 1, out_bytes = 8 }, { fwd_time = 1, out_bytes = 8 } }
local c = ps.cluster{ ranks = 4, link = { bandwidth = "25 GB/s", latency = "5 us" } }
local function fails(f, want)
  local ok, msg = pcall(f)
  assert(not ok, "expected a failure: " .. want)
  assert(msg:find(want, 1, true), msg)
end
ps.run{ layers = l, stages = 2, microbatches = 2, name = "ok" }
fails(function() ps.run{ layers = l, stages = 2, microbatches = 2, name = "deadlock",
  schedule = { { "F0", "F1", "B0", "B1" }, { "F1", "F0", "B1", "B0" } } } end, "deadlock at t=")
fails(function() ps.run{ layers = l, stages = 2, microbatches = 2, name = "bad schedule",
  schedule = { { "F0", "F1", "B0", "B1" }, { "F0", "F1", "B1" } } } end, "B0 is missing")
fails(function() ps.run{ layers = l, stages = 2, microbatches = 2, p2p = "bogus" } end,
  "unknown mode 'bogus'")
fails(function() ps.collective{ cluster = c, op = "broadcast", bytes = 64,
  ranks = { 0, 1 }, root = 3, name = "bad root" } end, "root")
fails(function() ps.collective{ cluster = c, op = "allreduce", bytes = 64, name = "bad data",
  data = function(rank, i) return "x" end } end, "returned a string")
fails(function() ps.collective{ cluster = c, op = "allreduce", bytes = 64, algorithm = "rign" } end,
  "unknown allreduce algorithm")
fails(function() ps.run{ layers = l, stages = 2, microbatches = 2, name = "deadline",
  faults = { { rank = 1, stall = 0 } }, recv_timeout = "1 s" } end, "deadline at t=")
fails(function() ps.collective{ cluster = c, op = "allreduce", bytes = 64, name = "coll deadline",
  faults = { { link = { 0, 1 }, down = 0 } }, recv_timeout = "1 ms" } end, "deadline at t=")
ps.collective{ cluster = c, op = "allreduce", bytes = 64, name = "coll ok" }
ps.collective{ cluster = c, op = "allreduce", bytes = 64, name = "last",
  data = function(rank, i) error("no data") end }
LUA
rm -f "$TMP/failed.db"
expect_fail "run $TMP/failed.lua -o $TMP/failed.db" "failed.lua:27: ps.collective: field 'data': data(0, 0) failed"
got=$(sqlite3 "$TMP/failed.db" "SELECT group_concat(kind || ':' || name || ':' || status, ', ') FROM (SELECT * FROM run ORDER BY id)" 2>&1)
want="pipeline:ok:ok, pipeline:deadlock:failed, pipeline:bad schedule:failed, collective:bad root:failed, collective:bad data:failed, pipeline:deadline:failed, collective:coll deadline:failed, collective:coll ok:ok, collective:last:failed"
[ "$got" = "$want" ] && ok || bad "failed runs recorded: got '$got', want '$want'"
# a failed run: its message, no makespan, no timeline; an ok run: no message
got=$(sqlite3 "$TMP/failed.db" "SELECT count(*) FROM run WHERE (status = 'failed') != (error IS NOT NULL)
  OR (status = 'failed' AND (makespan IS NOT NULL OR error = ''))
  OR (status = 'ok' AND makespan IS NULL)" 2>&1)
[ "$got" = 0 ] && ok || bad "failed rows carry the message and no makespan: $got"
got=$(sqlite3 "$TMP/failed.db" "SELECT (SELECT count(*) FROM event WHERE run IN (SELECT id FROM run WHERE status = 'failed'))
  + (SELECT count(*) FROM transfer WHERE run IN (SELECT id FROM run WHERE status = 'failed'))
  + (SELECT count(*) FROM memory WHERE run IN (SELECT id FROM run WHERE status = 'failed'))
  + (SELECT count(*) FROM link WHERE run IN (SELECT id FROM run WHERE status = 'failed'))
  + (SELECT count(*) FROM collective WHERE run IN (SELECT id FROM run WHERE status = 'failed'))" 2>&1)
[ "$got" = 0 ] && ok || bad "failed runs have no timeline rows: $got"
got=$(sqlite3 "$TMP/failed.db" "SELECT (SELECT count(*) FROM event WHERE run = 1) > 0 AND (SELECT count(*) FROM transfer WHERE run = 8) > 0" 2>&1)
[ "$got" = 1 ] && ok || bad "ok runs keep their timeline: $got"
got=$(sqlite3 "$TMP/failed.db" "SELECT error FROM run WHERE name = 'bad data'" 2>&1)
[ "$got" = "field 'data': data(0, 0) returned a string, expected a number" ] && ok || bad "failed run message: $got"
got=$(sqlite3 "$TMP/failed.db" "SELECT error FROM run WHERE name = 'deadline'" 2>&1)
[ "$got" = "deadline at t=2.000 s: rank 0 waited 1 s on send F0 to rank 1 (microbatch 0); rank 1 stalled at 0 s" ] && ok ||
    bad "deadline recorded: $got"
got=$(sqlite3 "$TMP/failed.db" "SELECT error LIKE 'deadline at t=1.000 ms: rank % waited 1 ms on % (step 0, lost: the link is down); link 0-1 down at 0 s' FROM run WHERE name = 'coll deadline'" 2>&1)
[ "$got" = 1 ] && ok || bad "collective deadline recorded: $(sqlite3 "$TMP/failed.db" "SELECT error FROM run WHERE name = 'coll deadline'")"

echo "$P passed, $F failed"
