#!/bin/sh
# The fixed cost of one `pipesim run` process (issue 12): the summary
# line's run count comes from the connection that wrote the runs (the file
# is opened once), and it counts the runs earlier processes left.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_startup OUT=cli_startup
. tests/lib_cli.sh

cat >"$TMP/startup.lua" <<'LUA'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 2, link = { bandwidth = "50 GB/s", latency = "5 us" } }
local layers = { { fwd_time = "1 ms" }, { fwd_time = "1 ms" } }
for m = 1, ps.args.n or 1 do
  ps.run{ cluster = c, layers = layers, stages = 2, microbatches = m }
end
if ps.args.other then -- a second database: not the summary line's
  ps.run{ cluster = c, layers = layers, stages = 2, microbatches = 1, db = ps.args.other }
end
LUA

# the count on an existing file with earlier runs, another database aside
DB="$TMP/startup.db"
rm -f "$DB" "$DB"-* "$TMP/startup_other.db"*
$VG "$BIN" run "$TMP/startup.lua" -o "$DB" -D n=3 >"$TMP/$OUT.1" 2>&1 &&
    grep -q "^3 runs added to $DB (3 in all; pipesim report $DB)$" "$TMP/$OUT.1" && ok ||
    bad "first process: $(cat "$TMP/$OUT.1")"
$VG "$BIN" run "$TMP/startup.lua" -o "$DB" -D n=2 -D other="$TMP/startup_other.db" >"$TMP/$OUT.2" 2>&1 &&
    grep -q "^3 runs added to $DB (5 in all; pipesim report $DB)$" "$TMP/$OUT.2" && ok ||
    bad "second process: $(cat "$TMP/$OUT.2")"
[ "$(sqlite3 "$DB" 'SELECT count(*) FROM run')" = 5 ] && ok || bad "5 runs in $DB"

# opened once: no second open to count (strace; without a working strace
# the check is skipped, saying so, as tests/cluster_recipes.sh does)
if command -v strace >/dev/null 2>&1 && strace -f -o /dev/null true 2>/dev/null; then
    strace -f -e trace=open,openat -o "$TMP/$OUT.trace" "$BIN" run "$TMP/startup.lua" -o "$DB" \
        >"$TMP/$OUT.3" 2>&1
    n=$(grep -c "\"$DB\"" "$TMP/$OUT.trace")
    grep -q "^1 run added to $DB (6 in all; pipesim report $DB)$" "$TMP/$OUT.3" && ok ||
        bad "third process: $(cat "$TMP/$OUT.3")"
    [ "$n" -eq 1 ] && ok || bad "$DB opened $n times by one process, want 1: $(grep "\"$DB\"" "$TMP/$OUT.trace")"
else
    echo "skip: strace not installed or not permitted (the open count is not checked)"
fi

echo "$P passed, $F failed"
[ "$F" -eq 0 ]
