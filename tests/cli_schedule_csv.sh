#!/bin/sh
# PyTorch schedule CSV round trip (docs/schedules.md): every built-in
# schedule, recorded, exported with `pipesim export --format pytorch-csv`,
# read back with ps.schedule.load_pytorch and run as a custom schedule,
# exports the same file; and the export's own errors.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_schedule_csv OUT=csv
. tests/lib_cli.sh

cat >"$TMP/csv_all.lua" <<'LUA'
local ps = require "pipesim"
local function layers(n)
  local l = {}
  for i = 1, n do l[i] = { fwd_time = 1 / n, act_bytes = 1, out_bytes = 1 } end
  return l
end
local c = ps.cluster{ ranks = 4, link = { bandwidth = "1 GB/s", latency = "1 us" } }
for _, s in ipairs{ { "gpipe", 1 }, { "1f1b", 1 }, { "1f1b", 1, true }, { "1f1b", 1, false, true },
                    { "interleaved", 2 }, { "zb_h1", 1 }, { "zb_h2", 1 }, { "looped_bfs", 2 },
                    { "interleaved_pytorch", 2 }, { "interleaved_zb", 2 }, { "zbv", 2 },
                    { "forward_only", 1 }, { "dualpipev", 2 } } do
  ps.run{ name = s[1], cluster = c, layers = layers(4 * s[2]), stages = 4,
          virtual_stages = s[2], microbatches = 8, schedule = s[1],
          split_backward = s[3], checkpoint = s[4] }
end
LUA
cat >"$TMP/csv_back.lua" <<'LUA'
local ps = require "pipesim"
local order, info = ps.schedule.load_pytorch(ps.args.csv, { stages = 4 })
local l = {}
for i = 1, 4 * info.virtual_stages do
  l[i] = { fwd_time = 1 / (4 * info.virtual_stages), act_bytes = 1, out_bytes = 1 }
end
local c = ps.cluster{ ranks = 4, link = { bandwidth = "1 GB/s", latency = "1 us" } }
ps.run{ cluster = c, layers = l, stages = 4, virtual_stages = info.virtual_stages,
        microbatches = info.microbatches, chunk_placement = info.chunk_placement,
        schedule = order, p2p = "pytorch", checkpoint = ps.args.ck == 1 }
LUA
rm -f "$TMP/csv_all.db"
$VG "$BIN" run "$TMP/csv_all.lua" -o "$TMP/csv_all.db" >/dev/null 2>"$TMP/csv.err" && ok ||
    bad "recording the schedules: $(cat "$TMP/csv.err")"
n=$(sqlite3 "$TMP/csv_all.db" "SELECT count(*) FROM run" 2>&1)
[ "$n" = 13 ] && ok || bad "expected 13 runs, got $n"
id=1
while [ "$id" -le "$n" ]; do
    name=$(sqlite3 "$TMP/csv_all.db" "SELECT name FROM run WHERE id = $id")
    ck=0
    [ "$id" = 4 ] && ck=1
    rm -f "$TMP/csv_back.db"
    if $VG "$BIN" export "$TMP/csv_all.db" "$id" --format pytorch-csv -o "$TMP/a.csv" 2>"$TMP/csv.err" &&
        $VG "$BIN" run "$TMP/csv_back.lua" -o "$TMP/csv_back.db" -D csv="$TMP/a.csv" -D ck=$ck \
            >/dev/null 2>"$TMP/csv.err" &&
        $VG "$BIN" export "$TMP/csv_back.db" 1 -o "$TMP/b.csv" 2>"$TMP/csv.err" &&
        cmp -s "$TMP/a.csv" "$TMP/b.csv"; then
        ok
    else
        bad "round trip of $name (run $id): $(cat "$TMP/csv.err") $(diff "$TMP/a.csv" "$TMP/b.csv" | head -n 4)"
    fi
    # the same step time from the file as from the built-ins that post
    # their transfers as PyTorch does (split backward, zero bubble,
    # PyTorch's); the Megatron-style ones pair theirs, and with costly
    # links that takes longer
    case $id in
    3 | 6 | 7 | 8 | 9 | 10 | 11 | 13)
        a=$(sqlite3 "$TMP/csv_all.db" "SELECT printf('%.12g', makespan) FROM run WHERE id = $id")
        b=$(sqlite3 "$TMP/csv_back.db" "SELECT printf('%.12g', makespan) FROM run WHERE id = 1")
        [ "$a" = "$b" ] && ok || bad "makespan of $name: $a built in, $b from its CSV"
        ;;
    esac
    id=$((id + 1))
done
# rows are PyTorch's: one per rank, "\r\n" line ends, global stage indices
"$BIN" export "$TMP/csv_all.db" 11 --format pytorch-csv -o "$TMP/zbv.csv" 2>/dev/null
[ "$(head -n 1 "$TMP/zbv.csv" | cut -d, -f1-9)" = "$(printf '0F0,0F1,0F2,0F3,0F4,0F5,0F6,7F0,7I0')" ] && ok ||
    bad "zbv row 0: $(head -n 1 "$TMP/zbv.csv" | cut -c1-60)"
[ "$(wc -l <"$TMP/zbv.csv")" -eq 4 ] && grep -q "$(printf '\r')$" "$TMP/zbv.csv" && ok || bad "zbv.csv: rows or line ends"
# errors: one line each
printf 'local ps = require "pipesim"\nlocal c = ps.cluster{ ranks = 4 }\nps.collective{ cluster = c, op = "allreduce", bytes = "1 MB" }\n' >"$TMP/csv_coll.lua"
rm -f "$TMP/csv_coll.db"
"$BIN" run "$TMP/csv_coll.lua" -o "$TMP/csv_coll.db" >/dev/null 2>&1
got=$("$BIN" export "$TMP/csv_coll.db" 1 --format pytorch-csv 2>&1)
[ "$got" = "pipesim: run 1 is not a pipeline run (a collective)" ] && ok || bad "collective export: $got"
got=$("$BIN" export "$TMP/csv_all.db" 1 --format pytorch-cs 2>&1)
[ "$got" = "pipesim: export: unknown format 'pytorch-cs' (expected chrome, svg or pytorch-csv)" ] && ok ||
    bad "unknown format: $got"

echo "$P passed, $F failed"
