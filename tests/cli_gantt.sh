#!/bin/sh
# The schedule glyphs of the charts (docs/guide.md "Reading a run"): the ASCII
# Gantt's row per chunk, W's and FB's glyphs, two-digit microbatch labels;
# the SVG's and Perfetto trace's own colours and names for W and FB; the
# pytorch-csv export's refusal of dualpipe; the exports' rows under TP, one
# per simulated rank labelled with its TP group; the replica drawn.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_gantt OUT=gantt
. tests/lib_cli.sh

cat >"$TMP/gantt.lua" <<'LUA'
local ps = require "pipesim"
local l = {}
for i = 1, 8 do l[i] = { fwd_time = 0.01, act_bytes = 1 } end
ps.run{ layers = l, stages = 4, virtual_stages = 2, microbatches = 12, schedule = "dualpipev" }
ps.run{ layers = l, stages = 4, microbatches = 8, schedule = "dualpipe" }
LUA
rm -f "$TMP/gantt.db"
$VG "$BIN" run "$TMP/gantt.lua" -o "$TMP/gantt.db" >/dev/null 2>"$TMP/gantt.err" && ok ||
    bad "recording: $(cat "$TMP/gantt.err")"
"$BIN" report "$TMP/gantt.db" 1 --width 100 >"$TMP/g.txt" 2>&1
# a row per chunk, every line within the width
[ "$(grep -c '^rank [0-3] c0 |' "$TMP/g.txt")" -ge 4 ] && [ "$(grep -c '^       c1 |' "$TMP/g.txt")" -ge 4 ] &&
    ok || bad "rows per chunk: $(head -n 4 "$TMP/g.txt")"
[ "$(awk 'length > 100' "$TMP/g.txt" | wc -l)" -eq 0 ] && ok || bad "lines over 100 columns"
# FB's '&', W's '+', and the two-digit microbatches 10 and 11 labelled
grep -q '&&' "$TMP/g.txt" && grep -q '[0-9]+' "$TMP/g.txt" && ok || bad "FB or W glyphs missing"
grep -q '10[-=+&]' "$TMP/g.txt" && grep -q '11[-=+&]' "$TMP/g.txt" && ok || bad "microbatches 10, 11 unlabelled"
grep -q 'overlapped forward and backward' "$TMP/g.txt" && grep -q 'weight gradient (W)' "$TMP/g.txt" &&
    ok || bad "legend: $(tail -n 3 "$TMP/g.txt")"
# dualpipe records v = 1 but two chunks (copies): rows per chunk too
"$BIN" report "$TMP/gantt.db" 2 >"$TMP/g2.txt" 2>&1
grep -q '^       c1 |' "$TMP/g2.txt" && ok || bad "dualpipe rows: $(head -n 3 "$TMP/g2.txt")"
# SVG: FB in its own colour with one legend entry, W in its own
"$BIN" export "$TMP/gantt.db" 1 -o "$TMP/g.svg" 2>"$TMP/gantt.err" && ok || bad "svg: $(cat "$TMP/gantt.err")"
grep -q 'class="op FB.F"' "$TMP/g.svg" && grep -q 'class="op FB.B"' "$TMP/g.svg" &&
    grep -q '#e15759' "$TMP/g.svg" && grep -q 'class="op W"' "$TMP/g.svg" && ok || bad "svg FB/W blocks"
[ "$(grep -c '>overlapped F&amp;B<' "$TMP/g.svg")" -eq 1 ] && ok || bad "svg FB legend entries"
grep -q '<title>rank 0: FB:F' "$TMP/g.svg" && ok || bad "svg FB names"
# Perfetto / chrome://tracing: names and reserved colours
"$BIN" export "$TMP/gantt.db" 1 -o "$TMP/g.json" 2>"$TMP/gantt.err" && ok || bad "json: $(cat "$TMP/gantt.err")"
grep -q '"name":"FB:F[0-9]*.c' "$TMP/g.json" && grep -q '"cname":"terrible"' "$TMP/g.json" &&
    grep -q '"cname":"olive"' "$TMP/g.json" && ok || bad "trace FB/W"
expect_fail "export $TMP/gantt.db 2 --format pytorch-csv -o $TMP/dp.csv" \
    "run 2: dualpipe runs each stage on two ranks, which PyTorch's schedule CSV cannot hold"

# TP 2 x PP 2 on a DGX A100 node: pipesim simulates TP ranks 0 and 2 for
# their groups (docs/parallelism.md "Which ranks are simulated"); the
# exports draw those two, labelled with their groups, and not the ranks
# they stand for nor the node's unused GPUs 4-7 (memory rows of 0 bytes)
cat >"$TMP/tp.lua" <<'LUA'
local ps = require "pipesim"
ps.run{ cluster = ps.cluster(ps.clusters.dgx("A100", 1)), stages = 2, tp = 2, microbatches = 2,
    layers = ps.models.transformer{ layers = 2, hidden = 256, heads = 4, seq = 128, vocab = 1000 },
    record = "events" }
LUA
rm -f "$TMP/tp.db"
"$BIN" run "$TMP/tp.lua" -o "$TMP/tp.db" >/dev/null 2>"$TMP/gantt.err" && ok || bad "tp run: $(cat "$TMP/gantt.err")"
$VG "$BIN" export "$TMP/tp.db" 1 -o "$TMP/tp.json" 2>"$TMP/gantt.err" && ok || bad "tp json: $(cat "$TMP/gantt.err")"
names=$(python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
print(";".join(sorted({e["args"]["name"] for e in ev if e.get("name") == "thread_name"} |
                      {e["id"] for e in ev if e.get("ph") == "C"})))' "$TMP/tp.json")
[ "$names" = "ranks 0-1;ranks 0-1 comm;ranks 0-1 comm 2;ranks 0-1 compute;ranks 2-3;ranks 2-3 comm;ranks 2-3 comm 2;ranks 2-3 compute" ] &&
    ok || bad "tp trace tracks: $names"
$VG "$BIN" export "$TMP/tp.db" 1 -o "$TMP/tp.svg" 2>"$TMP/gantt.err" && ok || bad "tp svg: $(cat "$TMP/gantt.err")"
rows=$(grep -o '<text class="row"[^>]*>[^<]*<' "$TMP/tp.svg" |
    grep -o '>[^<]*<' | tr -d '<>' | tr '\n' ';')
[ "$rows" = "ranks 0-1;ranks 2-3;" ] && ok || bad "tp svg rows: $rows"
# a rank standing for scattered cluster ranks: runs of them, squeezed into
# the SVG's margin when long (smaller, and textLength for browsers)
sqlite3 "$TMP/tp.db" "DELETE FROM rank_member WHERE run = 1 AND rank = 0;
INSERT INTO rank_member(run, rank, member) VALUES (1, 0, 9), (1, 0, 1000), (1, 0, 1001),
    (1, 0, 1002), (1, 0, 1), (1, 0, 0), (1, 0, 5);"
"$BIN" export "$TMP/tp.db" 1 -o "$TMP/tp2.svg" 2>"$TMP/gantt.err" &&
    grep -q 'font-size="6.0" textLength="66" lengthAdjust="spacingAndGlyphs">ranks 0-1,5,9,1000-1002<' "$TMP/tp2.svg" &&
    ok || bad "scattered members: $(grep -o '>ranks [^<]*<' "$TMP/tp2.svg" | head -n 2)"

# more than 64 simulated ranks over 33 replicas: replica 0 alone by default,
# saying so; --replica all and --replica K; a replica the run lacks
cat >"$TMP/dp.lua" <<'LUA'
local ps = require "pipesim"
ps.run{ cluster = ps.cluster{ ranks = 66, link = { bandwidth = "10 GB/s", latency = "5 us" } },
    layers = { { fwd_time = 0.01, params = 1e6 }, { fwd_time = 0.01, params = 1e6 } },
    stages = 2, dp = 33, microbatches = 2, record = "events" }
LUA
rm -f "$TMP/dp.db"
"$BIN" run "$TMP/dp.lua" -o "$TMP/dp.db" >/dev/null 2>"$TMP/gantt.err" && ok || bad "dp run: $(cat "$TMP/gantt.err")"
tracks() { # the compute tracks of a trace, and its otherData.run.view
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = [e["args"]["name"] for e in d["traceEvents"] if e.get("name") == "thread_name"]
print(";".join(x for x in t if x.endswith("compute")), d["otherData"]["run"].get("view", "-"))' "$1"
}
$VG "$BIN" export "$TMP/dp.db" 1 -o "$TMP/dp.json" 2>"$TMP/gantt.err" && ok || bad "dp json: $(cat "$TMP/gantt.err")"
[ "$(tracks "$TMP/dp.json")" = "rank 0 compute;rank 33 compute replica 0 of 33 (every other replica differs from it): 2 of 66 simulated ranks (--all: every rank)" ] &&
    ok || bad "dp default view: $(tracks "$TMP/dp.json")"
"$BIN" export "$TMP/dp.db" 1 --replica 32 -o "$TMP/dp32.json" 2>"$TMP/gantt.err" &&
    [ "$(tracks "$TMP/dp32.json")" = "rank 32 compute;rank 65 compute replica 32 of 33 (every other replica differs from it): 2 of 66 simulated ranks (--all: every rank)" ] &&
    ok || bad "dp --replica 32: $(tracks "$TMP/dp32.json") $(cat "$TMP/gantt.err")"
"$BIN" export "$TMP/dp.db" 1 --replica all -o "$TMP/dpall.json" 2>"$TMP/gantt.err" &&
    [ "$(tracks "$TMP/dpall.json" | tr ';' '\n' | grep -c 'compute')" -eq 66 ] &&
    [ "$(tracks "$TMP/dpall.json" | sed 's/.* //')" = "-" ] && ok || bad "dp --replica all"
"$BIN" export "$TMP/dp.db" 1 -o "$TMP/dp.svg" 2>"$TMP/gantt.err" &&
    [ "$(grep -c '<text class="row"' "$TMP/dp.svg")" -eq 2 ] &&
    grep -q '>drawn: replica 0 of 33 (every other replica differs from it): 2 of 66 simulated ranks (--all: every rank)</text>' "$TMP/dp.svg" &&
    ok || bad "dp svg default view"
expect_fail "export $TMP/dp.db 1 --replica 33 -o $TMP/x.json" \
    "run 1 has 33 data-parallel replicas (0 to 32), not 33"
expect_fail "export $TMP/tp.db 1 --replica 1 -o $TMP/x.json" \
    "run 1 has one data-parallel replica (--replica 0 or all), not 1"
expect_fail "export $TMP/dp.db 1 --replica 1x -o $TMP/x.json" \
    "export: --replica: expected a replica number (0, 1, ...) or all, got '1x'"
expect_fail "export $TMP/dp.db 1 --replica 0 -o $TMP/x.csv" \
    "export: --replica applies to chrome and svg; pytorch-csv writes replica 0's schedule"
echo "$P passed, $F failed"
