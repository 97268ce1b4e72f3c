#!/bin/sh
# The schedule glyphs of the charts (docs/guide.md "Reading a run"): the ASCII
# Gantt's row per chunk, W's and FB's glyphs, two-digit microbatch labels;
# the SVG's and Perfetto trace's own colours and names for W and FB; the
# pytorch-csv export's refusal of dualpipe.
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
echo "$P passed, $F failed"
