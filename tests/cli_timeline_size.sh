#!/bin/sh
# Timelines at any size (issue 28): above the size threshold (64 simulated
# ranks over several data-parallel replicas) the exports and the report
# draw one row per pipeline stage of replica 0, the identical replicas
# folded into it and the note saying so and naming --all. A 16-layer GPT on
# 1,024 A100 GPUs (TP 8, PP 8, DP 16: 128 simulated ranks), the layout of
# the issue's GPT-3 175B case (docs/reference/pipesim-export.md gives its
# sizes): the SVG is valid XML, small and renders with rsvg-convert at full
# size (PIPESIM_RSVG_REQUIRE=1, set by .ci/run, fails when rsvg-convert is
# missing instead of skipping that check); the Perfetto trace is valid
# JSON, small, with one compute track per stage; the report fits 60 lines.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_timeline_size OUT=tsize
. tests/lib_cli.sh

cat >"$TMP/ts.lua" <<'LUA'
local ps = require "pipesim"
local run = ps.models.megatron {
    num_layers = 16, hidden_size = 4096, num_attention_heads = 32, seq_length = 2048,
    vocab_size = 50257, bf16 = true, micro_batch_size = 1, global_batch_size = 256,
    world_size = 1024, tensor_model_parallel_size = 8, pipeline_model_parallel_size = 8,
    sequence_parallel = true, recompute_granularity = "selective",
    use_distributed_optimizer = true, cluster = ps.cluster(ps.clusters.dgx("A100", 128)),
}
run.record = "events"
run.name = "gpt 16 layers"
ps.run(run)
LUA
DB="$TMP/ts.db"
rm -f "$DB"
"$BIN" run "$TMP/ts.lua" -o "$DB" >/dev/null 2>"$TMP/ts.err" && ok || bad "recording: $(cat "$TMP/ts.err")"
size() { wc -c <"$1" | tr -d ' '; }
NOTE='replica 0 of 16 (replicas 1-15 identical, folded into it): 8 of 128 simulated ranks (--all: every rank)'

# SVG: 8 rows (one per stage, labelled with its TP group), the note, small
$VG "$BIN" export "$DB" 1 -o "$TMP/ts.svg" 2>"$TMP/ts.err" && ok || bad "svg: $(cat "$TMP/ts.err")"
rows=$(grep -o '<text class="row"[^>]*>[^<]*<' "$TMP/ts.svg" | grep -o '>[^<]*<' | tr -d '<>' | tr '\n' ';')
[ "$rows" = "ranks 0-7;ranks 128-135;ranks 256-263;ranks 384-391;ranks 512-519;ranks 640-647;ranks 768-775;ranks 896-903;" ] &&
    ok || bad "svg rows: $rows"
grep -qF ">drawn: $NOTE</text>" "$TMP/ts.svg" && ok || bad "svg note: $(grep -o 'drawn: [^<]*' "$TMP/ts.svg")"
s=$(size "$TMP/ts.svg")
[ "$s" -gt 100000 ] && [ "$s" -lt 400000 ] && ok || bad "svg of $s bytes (expected 100 kB to 400 kB)"
xmllint --noout "$TMP/ts.svg" 2>"$TMP/ts.err" && ok || bad "svg not XML: $(head -n 2 "$TMP/ts.err")"
h=$(grep -o '<svg [^>]*height="[0-9]*"' "$TMP/ts.svg" | grep -o 'height="[0-9]*"' | tr -dc 0-9)
[ "$h" -gt 300 ] && [ "$h" -lt 700 ] && ok || bad "svg height $h px"
if command -v rsvg-convert >/dev/null 2>&1; then
    rsvg-convert "$TMP/ts.svg" -o "$TMP/ts.png" 2>"$TMP/ts.err" && ok || bad "rsvg-convert: $(cat "$TMP/ts.err")"
    dims=$(python3 -c 'import struct, sys
d = open(sys.argv[1], "rb").read(24)
print("%dx%d" % struct.unpack(">II", d[16:24]) if d[:8] == b"\x89PNG\r\n\x1a\n" else "not a PNG")' "$TMP/ts.png")
    [ "$dims" = "1200x$h" ] && ok || bad "rendered $dims, expected 1200x$h"
elif [ "${PIPESIM_RSVG_REQUIRE:-}" = 1 ]; then
    bad "rsvg-convert is not installed (apt-get install librsvg2-bin)"
else
    echo "cli_timeline_size: rsvg-convert not installed: render not checked"
fi
# --all: every simulated rank, no note, about a replica count larger
"$BIN" export "$DB" 1 --all -o "$TMP/tsall.svg" 2>"$TMP/ts.err" &&
    [ "$(grep -c '<text class="row"' "$TMP/tsall.svg")" -eq 128 ] && ! grep -q 'drawn:' "$TMP/tsall.svg" &&
    [ "$(size "$TMP/tsall.svg")" -gt $((10 * s)) ] && ok || bad "svg --all: $(cat "$TMP/ts.err")"

# Perfetto: valid JSON, a compute track per stage, the note, small
$VG "$BIN" export "$DB" 1 -o "$TMP/ts.json" 2>"$TMP/ts.err" && ok || bad "json: $(cat "$TMP/ts.err")"
got=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = sorted(e["args"]["name"] for e in d["traceEvents"] if e.get("name") == "thread_name")
print(sum(x.endswith(" compute") for x in t), t[0], d["otherData"]["run"]["view"])' "$TMP/ts.json" 2>&1)
[ "$got" = "8 ranks 0-7 comm $NOTE" ] && ok || bad "trace: $got"
s=$(size "$TMP/ts.json")
[ "$s" -gt 100000 ] && [ "$s" -lt 600000 ] && ok || bad "trace of $s bytes (expected 100 kB to 600 kB)"
"$BIN" export "$DB" 1 --replica all -o "$TMP/tsall.json" 2>"$TMP/ts.err" &&
    [ "$(size "$TMP/tsall.json")" -gt $((10 * s)) ] && ok || bad "json --replica all: $(cat "$TMP/ts.err")"

# report: at most 60 lines of at most 100 columns, 8 rows in each strip of
# the chart, the note under it
$VG "$BIN" report "$DB" 1 >"$TMP/ts.txt" 2>&1 && ok || bad "report: $(cat "$TMP/ts.txt")"
n=$(wc -l <"$TMP/ts.txt")
[ "$n" -le 60 ] && [ "$(awk 'length > 100' "$TMP/ts.txt" | wc -l)" -eq 0 ] && ok || bad "report of $n lines"
[ "$(grep -o '^ranks [0-9]*-[0-9]* *|' "$TMP/ts.txt" | sort -u | wc -l)" -eq 8 ] && grep -q '^drawn: replica 0 of 16 (replicas 1-15 identical,$' "$TMP/ts.txt" &&
    ok || bad "report rows: $(grep '|' "$TMP/ts.txt" | head -n 3)"
"$BIN" report "$DB" 1 --all >"$TMP/tsall.txt" 2>&1 && [ "$(wc -l <"$TMP/tsall.txt")" -gt 128 ] &&
    ! grep -q '^drawn:' "$TMP/tsall.txt" && ok || bad "report --all: $(tail -n 2 "$TMP/tsall.txt")"
expect_fail "export $DB 1 --all --format pytorch-csv -o $TMP/x.csv" "--all applies to chrome and svg"
# --all and --replica K together: refused, not the last one winning
expect_fail "export $DB 1 --replica 3 --all -o $TMP/x.svg" \
    "export: --replica: given twice (--all is --replica all), 'all' after '3'; give one"
expect_fail "report $DB 1 --all --replica 2" \
    "report: --replica: given twice (--all is --replica all), '2' after 'all'; give one"

echo "$P passed, $F failed"
