#!/bin/sh
# Streaming engine (issue 12): generated programs give the rows their
# arrays give (PIPESIM_ARRAY=1, the test mode that forces the array path),
# the recorder's writer thread the rows of binding them on the engine's
# thread (PIPESIM_REC_THREAD=0),
# runs are deterministic bit for bit, and a 4096-rank ring allreduce runs
# with record = "none" in O(ranks) memory at the closed form's time.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_stream OUT=cli_stream
. tests/lib_cli.sh

# every generated collective and every built-in schedule, on a mesh and on
# a cluster, recorded with summary and event rows
cat >"$TMP/stream.lua" <<'LUA'
local ps = require "pipesim"
local mesh = ps.cluster{ ranks = 8, link = { bandwidth = "25 GB/s", latency = "5 us" } }
local cl = ps.cluster{ nodes = 2, gpus_per_node = 4,
                       intra = { bandwidth = "300 GB/s", latency = "1 us" },
                       inter = { bandwidth = "25 GB/s", latency = "5 us" } }
for _, c in ipairs{ mesh, cl } do
  for _, op in ipairs{ "allreduce", "reduce_scatter", "allgather" } do
    for _, slots in ipairs{ 1, 8 } do
      for _, p2p in ipairs{ "rendezvous", "eager" } do
        for _, record in ipairs{ "summary", "events" } do
          ps.collective{ cluster = c, op = op, algorithm = "ring", bytes = "4 MB",
                         slots = slots, p2p = p2p, record = record,
                         ranks = { 3, 1, 4, 0, 5, 2, 7 }, ranks_per_node = 1 }
        end
      end
    end
  end
end
local layers = {}
for i = 1, 8 do
  layers[i] = { fwd_time = (1 + i % 3) .. " ms", act_bytes = "1 GB", out_bytes = "8 MB",
                params = 1e8 }
end
for _, s in ipairs{ "gpipe", "1f1b", "interleaved", "zb_h1", "zb_h2", "looped_bfs",
                    "interleaved_pytorch", "interleaved_zb", "zbv", "dualpipev",
                    "dualpipe", "forward_only" } do
  for _, record in ipairs{ "summary", "events" } do
    local v = (s == "interleaved" or s == "looped_bfs" or s == "interleaved_pytorch"
               or s == "interleaved_zb" or s == "zbv" or s == "dualpipev") and 2 or nil
    ps.run{ cluster = mesh, layers = layers, stages = 4, microbatches = 8,
            schedule = s, virtual_stages = v, record = record }
  end
end
-- the optimizer step of one replica: generated as each lane's last op,
-- as dp_lower appends it to the arrays
for _, s in ipairs{ "gpipe", "1f1b", "interleaved" } do
  for _, record in ipairs{ "summary", "events" } do
    ps.run{ cluster = cl, layers = layers, stages = 4, microbatches = 8,
            schedule = s, virtual_stages = s == "interleaved" and 2 or nil,
            record = record, optimizer_time = (s == "gpipe" and 30 or 3) .. " ms" }
  end
end
LUA
# the rows of a database, its creation timestamps blanked
dump() {
    sqlite3 "$1" .dump | sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/T/g'
}
if $VG "$BIN" run "$TMP/stream.lua" -o "$TMP/gen.db" >"$TMP/stream.out" 2>&1 &&
    $VG "$BIN" run "$TMP/stream.lua" -o "$TMP/gen2.db" >>"$TMP/stream.out" 2>&1 &&
    PIPESIM_ARRAY=1 $VG "$BIN" run "$TMP/stream.lua" -o "$TMP/array.db" \
        >>"$TMP/stream.out" 2>&1 &&
    PIPESIM_REC_THREAD=0 $VG "$BIN" run "$TMP/stream.lua" -o "$TMP/nothread.db" \
        >>"$TMP/stream.out" 2>&1; then
    ok
    dump "$TMP/gen.db" >"$TMP/gen.sql"
    dump "$TMP/gen2.db" >"$TMP/gen2.sql"
    dump "$TMP/array.db" >"$TMP/array.sql"
    [ "$(grep -c '^INSERT INTO collective' "$TMP/gen.sql")" -eq 48 ] && ok || bad "collective rows"
    cmp -s "$TMP/gen.sql" "$TMP/array.sql" && ok ||
        bad "generated and array rows differ: $(diff "$TMP/gen.sql" "$TMP/array.sql" | head -n 4)"
    cmp -s "$TMP/gen.sql" "$TMP/gen2.sql" && ok || bad "two runs differ"
    # the writer thread (rec/writer.c) and rows bound on the engine's thread
    dump "$TMP/nothread.db" >"$TMP/nothread.sql"
    cmp -s "$TMP/gen.sql" "$TMP/nothread.sql" && ok ||
        bad "rows with and without the writer thread differ: $(diff "$TMP/gen.sql" "$TMP/nothread.sql" | head -n 4)"
else
    bad "stream.lua: $(tail -n 3 "$TMP/stream.out")"
fi

# the second writer (rec/writer.c, rec/aux.c): a run's transfer rows
# through the in-memory twin, moved into the file at the end (forced on
# by PIPESIM_TEST_AUX_ROWS whatever the machine's load),
# or moved after its first two blocks with the rest inserted directly
# (PIPESIM_TEST_AUX_ROWS=512): the rows of binding them all on the
# engine's thread, two runs in one process (the twin emptied between)
cat >"$TMP/aux.lua" <<'LUA'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 8, link = { bandwidth = "25 GB/s", latency = "5 us" } }
local layers = {}
for i = 1, 8 do layers[i] = { fwd_time = "1 ms", act_bytes = "1 GB", out_bytes = "8 MB" } end
for _, s in ipairs{ "1f1b", "zb_h1" } do
  ps.run{ cluster = c, layers = layers, stages = 8, microbatches = 64, schedule = s,
          record = "events" }
end
LUA
rm -f "$TMP"/aux_*.db*
if PIPESIM_TEST_AUX_ROWS=262144 $VG "$BIN" run "$TMP/aux.lua" -o "$TMP/aux_twin.db" \
        >"$TMP/aux.out" 2>&1 &&
    PIPESIM_TEST_AUX_ROWS=512 $VG "$BIN" run "$TMP/aux.lua" -o "$TMP/aux_cap.db" \
        >>"$TMP/aux.out" 2>&1 &&
    PIPESIM_REC_THREAD=0 $VG "$BIN" run "$TMP/aux.lua" -o "$TMP/aux_nothread.db" \
        >>"$TMP/aux.out" 2>&1; then
    ok
    dump "$TMP/aux_nothread.db" >"$TMP/aux_nothread.sql"
    for mode in twin cap; do
        dump "$TMP/aux_$mode.db" >"$TMP/aux_$mode.sql"
        cmp -s "$TMP/aux_nothread.sql" "$TMP/aux_$mode.sql" && ok ||
            bad "aux $mode rows differ: $(diff "$TMP/aux_nothread.sql" "$TMP/aux_$mode.sql" | head -n 4)"
    done
    # 7 links x 64 microbatches x (activation + gradient) per run, each
    # run's range contiguous after the other's
    n=$(sqlite3 "$TMP/aux_twin.db" "SELECT group_concat(transfer_last - transfer_first + 1) ||
        ' ' || (SELECT count(*) FROM transfer_row) FROM span")
    [ "$n" = "896,896 1792" ] && ok || bad "aux spans: $n"
else
    bad "aux.lua: $(tail -n 3 "$TMP/aux.out")"
fi

# 4096 ranks, 33.5 M transfers: the closed form 2 (N - 1) (a + T / (N b))
# of a mesh ring. Not under valgrind (minutes there); the sanitizer build
# runs it.
cat >"$TMP/ring4096.lua" <<'LUA'
local ps = require "pipesim"
local N, a, b, T = 4096, 5e-6, 50e9, 1 << 30
local c = ps.cluster{ ranks = N, link = { bandwidth = b, latency = a } }
local r = ps.collective{ cluster = c, op = "allreduce", algorithm = "ring",
                         bytes = T, record = "none" }
local want = 2 * (N - 1) * (a + T / (N * b))
assert(math.abs(r.time - want) <= 1e-9 * want, ("time %.17g, closed form %.17g"):format(r.time, want))
assert(r.transfers == 2 * N * (N - 1), "transfers " .. r.transfers)
assert(r.bytes_sent[1] == 2 * T * (N - 1) / N, "bytes_sent " .. r.bytes_sent[1])
print("ok")
LUA
# --max-memory 4MiB: its programs as arrays would take 3.5 GiB, so a
# generator that kept per-op memory fails here
if "$BIN" run "$TMP/ring4096.lua" -o "$TMP/ring4096.db" --max-memory 4MiB \
    >"$TMP/ring4096.out" 2>&1 &&
    grep -q '^ok$' "$TMP/ring4096.out"; then ok; else bad "ring4096: $(cat "$TMP/ring4096.out")"; fi

# event rows of a generated collective (rec/stream.c): a 256-rank ring
# allreduce recorded in full within 8 MiB, where its 130,560 transfers as
# arrays (PIPESIM_ARRAY=1) pass the budget; the rows are all there. Not
# under valgrind (slow there), like the 4096-rank ring.
cat >"$TMP/ring256.lua" <<'LUA'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 256, link = { bandwidth = 50e9, latency = 5e-6 } }
ps.collective{ cluster = c, op = "allreduce", algorithm = "ring",
               bytes = 1 << 28, record = "events" }
LUA
rm -f "$TMP/ring256.db"*
if "$BIN" run "$TMP/ring256.lua" -o "$TMP/ring256.db" --max-memory 8MiB \
    >"$TMP/ring256.out" 2>&1; then ok; else bad "ring256: $(cat "$TMP/ring256.out")"; fi
n=$(sqlite3 "$TMP/ring256.db" "SELECT (SELECT count(*) FROM transfer WHERE run = 1) || ' ' ||
    (SELECT count(*) FROM memory WHERE run = 1) || ' ' || (SELECT count(*) FROM link WHERE run = 1)")
[ "$n" = "130560 256 256" ] && ok || bad "ring256 rows: $n"
rm -f "$TMP/ring256.db"*
PIPESIM_ARRAY=1 "$BIN" run "$TMP/ring256.lua" -o "$TMP/ring256.db" --max-memory 8MiB \
    >"$TMP/ring256.out" 2>&1 && bad "ring256 as arrays fit in 8 MiB: the test proves nothing" ||
    { grep -q 'memory limit of 8 MiB' "$TMP/ring256.out" && ok || bad "ring256 arrays: $(cat "$TMP/ring256.out")"; }

# a generated pipeline keeps no per-op memory either: 1F1B p = 8, m = 2^16
# (1.5 M ops) within 8 MiB, where its arrays pass the budget. So
# PIPESIM_ARRAY=1 does reach ps.run's pipelines, and the comparison of
# stream.lua's databases above compares two paths, not one path twice.
cat >"$TMP/pipe64k.lua" <<'LUA'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 8, link = { bandwidth = "50 GB/s", latency = "5 us" } }
local layers = {}
for i = 1, 8 do layers[i] = { fwd_time = "1 ms", out_bytes = "8 MB" } end
ps.run{ cluster = c, layers = layers, stages = 8, microbatches = 1 << 16, schedule = "1f1b",
        record = "summary" }
LUA
rm -f "$TMP/pipe64k.db"*
$VG "$BIN" run "$TMP/pipe64k.lua" -o "$TMP/pipe64k.db" --max-memory 8MiB \
    >"$TMP/pipe64k.out" 2>&1 && ok || bad "pipe64k: $(cat "$TMP/pipe64k.out")"
rm -f "$TMP/pipe64k.db"*
PIPESIM_ARRAY=1 $VG "$BIN" run "$TMP/pipe64k.lua" -o "$TMP/pipe64k.db" --max-memory 8MiB \
    >"$TMP/pipe64k.out" 2>&1 && bad "pipe64k as arrays fit in 8 MiB: the test proves nothing" ||
    { grep -q 'memory limit of 8 MiB' "$TMP/pipe64k.out" && ok || bad "pipe64k arrays: $(cat "$TMP/pipe64k.out")"; }

echo "$P passed, $F failed"
