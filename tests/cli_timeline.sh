#!/bin/sh
# The timeline views of report, export and plot (issue 28, out/view.h):
# the ASCII Gantt draws one row per simulated rank, labelled with its TP
# group, never a rank that did not run; one replica by default when a run
# has several, saying so; --ranks, --stages, --window and --replica on
# report and export, --ranks and --replica on plot's rank_stat rows, and
# their one-line errors naming the flag and value.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_timeline OUT=timeline
. tests/lib_cli.sh

# TP 2 x PP 2 on a DGX A100 node: ranks 0 and 2 simulated, for their
# groups 0-1 and 2-3; ranks 1, 3 and the unused GPUs 4-7 have memory rows
# of 0 bytes and must not be drawn
cat >"$TMP/tl.lua" <<'LUA'
local ps = require "pipesim"
ps.run{ cluster = ps.cluster(ps.clusters.dgx("A100", 1)), stages = 2, tp = 2, microbatches = 4,
    layers = ps.models.transformer{ layers = 2, hidden = 256, heads = 4, seq = 128, vocab = 1000 },
    record = "events" }
-- 4 stages x 8 replicas: 32 simulated ranks, more than report's 16
ps.run{ cluster = ps.cluster{ ranks = 32, link = { bandwidth = "10 GB/s", latency = "5 us" } },
    layers = { { fwd_time = 0.01, params = 1e6 }, { fwd_time = 0.01, params = 1e6 },
               { fwd_time = 0.01, params = 1e6 }, { fwd_time = 0.01, params = 1e6 } },
    stages = 4, dp = 8, microbatches = 4, record = "events" }
LUA
DB="$TMP/tl.db"
rm -f "$DB"
$VG "$BIN" run "$TMP/tl.lua" -o "$DB" >/dev/null 2>"$TMP/tl.err" && ok || bad "recording: $(cat "$TMP/tl.err")"
rows() { grep -o '^[a-z][a-z0-9 ,-]* |' "$1" | sed 's/ *|$//' | sort -u | tr '\n' ';'; }
$VG "$BIN" report "$DB" 1 >"$TMP/tl1.txt" 2>&1 && ok || bad "report 1: $(cat "$TMP/tl1.txt")"
[ "$(rows "$TMP/tl1.txt")" = "ranks 0-1;ranks 2-3;" ] && ok || bad "TP 2 rows: $(rows "$TMP/tl1.txt")"
grep -q '^drawn:' "$TMP/tl1.txt" && bad "a note on a run drawn whole" || ok

# several replicas: replica 0 alone, with the note saying how to get all
"$BIN" report "$DB" 2 >"$TMP/tl2.txt" 2>&1 && ok || bad "report 2: $(cat "$TMP/tl2.txt")"
[ "$(rows "$TMP/tl2.txt")" = "rank 0;rank 16;rank 24;rank 8;" ] && ok || bad "replica 0 rows: $(rows "$TMP/tl2.txt")"
grep -q '^drawn: replica 0 of 8 (other replicas identical,$' "$TMP/tl2.txt" &&
    grep -q '^  folded into it: 7; differing: 1-6): 4 of 32 simulated ranks (--all: every rank)$' "$TMP/tl2.txt" &&
    ok || bad "replica note: $(tail -n 2 "$TMP/tl2.txt")"
"$BIN" report "$DB" 2 --replica all >"$TMP/tl3.txt" 2>&1 &&
    [ "$(grep -c '^rank [0-9]* *|' "$TMP/tl3.txt")" -eq 32 ] && ok || bad "--replica all: $(head -n 3 "$TMP/tl3.txt")"
"$BIN" report "$DB" 2 --replica 7 >"$TMP/tl4.txt" 2>&1 &&
    [ "$(rows "$TMP/tl4.txt")" = "rank 15;rank 23;rank 31;rank 7;" ] && ok || bad "--replica 7: $(rows "$TMP/tl4.txt")"

# --ranks picks the rows standing for them (rank 3 is in group 2-3);
# --stages the ranks running them (stage s of replica d is rank 8 s + d);
# --window the axis
"$BIN" report "$DB" 1 --ranks 3 >"$TMP/tl5.txt" 2>&1 &&
    [ "$(rows "$TMP/tl5.txt")" = "ranks 2-3;" ] && ok || bad "--ranks 3: $(cat "$TMP/tl5.txt")"
grep -q '^drawn: --ranks 3: 1 of 2 simulated ranks$' "$TMP/tl5.txt" && ok || bad "--ranks note: $(tail -n 1 "$TMP/tl5.txt")"
"$BIN" report "$DB" 2 --replica all --ranks 0-1,30 --stages 0,2-3 >"$TMP/tl6.txt" 2>&1 &&
    [ "$(rows "$TMP/tl6.txt")" = "rank 0;rank 1;rank 30;" ] && ok || bad "--ranks --stages: $(rows "$TMP/tl6.txt")"
"$BIN" report "$DB" 2 --window 20ms:0.05 --width 60 >"$TMP/tl7.txt" 2>&1 && ok || bad "--window: $(cat "$TMP/tl7.txt")"
axis=$(grep -A1 '^ *+-' "$TMP/tl7.txt" | tail -n 1 | tr -s ' ')
case "$axis" in " 20 "*" 50 ms") ok ;; *) bad "--window axis: '$axis'" ;; esac

# export takes the same options
"$BIN" export "$DB" 2 --replica all --ranks 5 -o "$TMP/tl.json" 2>"$TMP/tl.err" &&
    [ "$(grep -o '"name":"rank [0-9]* compute"' "$TMP/tl.json" | sort -u)" = '"name":"rank 5 compute"' ] &&
    ok || bad "export --ranks: $(cat "$TMP/tl.err")"
"$BIN" export "$DB" 2 --window=0.02:0.03 -o "$TMP/tl.svg" 2>"$TMP/tl.err" &&
    grep -q '>20 ms<\|>20.0 ms<\|>0.02 s<' "$TMP/tl.svg" && ok || bad "export --window axis: $(cat "$TMP/tl.err")"
"$BIN" export "$DB" 2 --replica 0 --stages 1 -o "$TMP/tl2.svg" 2>"$TMP/tl.err" &&
    [ "$(grep -c '<text class="row"' "$TMP/tl2.svg")" -eq 1 ] &&
    ok || bad "export --stages: $(cat "$TMP/tl.err")"

# errors: one line naming the flag and the value
expect_fail "report $DB 1 --ranks 7-3" "report: --ranks: expected rank numbers and ranges such as 0-7,64, got '7-3' (a range runs from low to high)"
expect_fail "report $DB 1 --ranks 1,,2" "report: --ranks: expected rank numbers and ranges such as 0-7,64, got '1,,2' (numbers from 0 to 16777216)"
expect_fail "report $DB 1 --stages -1" "report: --stages: expected stage numbers and ranges such as 0,2-3, got '-1'"
expect_fail "report $DB 1 --window 2:1" "report: --window: END must be after START, got '2:1'"
expect_fail "report $DB 1 --window 1ms" "report: --window: expected START:END in seconds, such as 0:1.5 or 2ms:3ms (either side may be left out), got '1ms'"
expect_fail "report $DB 1 --window 1parsec:" "report: --window: expected START:END, each a time of 0 or more such as 1.5, 250us or 2 ms, got '1parsec:'"
expect_fail "report $DB 1 --replica x" "report: --replica: expected a replica number (0, 1, ...) or all, got 'x'"
expect_fail "report $DB 2 --replica 8" "run 2 has 8 data-parallel replicas (0 to 7), not 8"
expect_fail "report $DB 1 --ranks 4-7" "--ranks 4-7: run 1 draws none of them (its rows stand for ranks 0-1,2-3)"
expect_fail "report $DB 1 --stages 5" "--stages 5: run 1 has no such stage among the ranks drawn (its stages: 0 to 1)"
expect_fail "report $DB 1 --window 10:" "--window 10:: run 1 has nothing there"
expect_fail "report $DB --ranks 1" "report: --ranks applies to one run's timeline (pipesim report DB RUN --ranks ...), not to the table of runs"
expect_fail "report $DB 1 --csv --window 0:1" "report: --window applies to one run's timeline (pipesim report DB RUN --window ...), not to --csv"
expect_fail "report $DB 1 --stages" "report: --stages needs a value (numbers and ranges such as 0-7,64)"
expect_fail "export $DB 1 --ranks 3-a -o $TMP/x.json" "export: --ranks: expected rank numbers and ranges such as 0-7,64, got '3-a'"
expect_fail "export $DB 1 --window -o $TMP/x.json" "export: --window: expected START:END in seconds"
expect_fail "export $DB 1 --stages 0 -o $TMP/x.csv" "export: --stages applies to chrome and svg; pytorch-csv writes replica 0's schedule"
# plot: --ranks and --replica narrow the rank_stat rows it aggregates
# (rank 3 is in the group of simulated rank 2); the timeline's options
# are refused
"$BIN" plot "$DB" --x id --y "count(rank_stat.rank)" --where "id = 1" --ranks 3 --format csv \
    >"$TMP/tl.csv" 2>"$TMP/tl.err" && [ "$(tail -n 1 "$TMP/tl.csv")" = "count(rank_stat.rank),1,1" ] &&
    ok || bad "plot --ranks: $(cat "$TMP/tl.csv" "$TMP/tl.err")"
"$BIN" plot "$DB" --x id --y "min(rank_stat.rank)" --where "id = 2" --replica 5 --format csv \
    >"$TMP/tl.csv" 2>"$TMP/tl.err" && [ "$(tail -n 1 "$TMP/tl.csv")" = "min(rank_stat.rank),2,5" ] &&
    ok || bad "plot --replica: $(cat "$TMP/tl.csv" "$TMP/tl.err")"
expect_fail "plot $DB --x id --y makespan --ranks 0" "plot: --ranks chooses the rank_stat rows a plot aggregates, and --x, --y, --by, --dashed and --where read none"
expect_fail "plot $DB --x id --y max(rank_stat.busy) --window 0:1" "plot: --window applies to a run's timeline (pipesim report DB RUN, pipesim export), not to plot's per-run quantities"
expect_fail "plot $DB --x id --y max(rank_stat.busy) --ranks=1-" "plot: --ranks: expected rank numbers and ranges such as 0-7,64, got '1-'"
echo "$P passed, $F failed"
