#!/bin/sh
# A database's files (issue 27 items 7 and 15): readers (report, export,
# plot, merge's inputs) open read-only and leave no -wal or -shm file
# behind, a failed merge none beside its inputs; a directory, a read-only
# file or a read-only directory as the database is one line that says
# what to change.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_files
OUT=files
. tests/lib_cli.sh
D="$TMP/files"
rm -rf "$D" && mkdir -p "$D"
S=tests/data/sweep_small.lua
# sidecars DIR: the -wal, -shm and -journal files in DIR
sidecars() { ls "$1" | grep -E -- '-(wal|shm|journal)$' | tr '\n' ' '; }

# --- readers leave nothing
$VG "$BIN" run scenarios/demo.lua -o "$D/d.db" >/dev/null 2>&1 || bad "demo run"
[ -z "$(sidecars "$D")" ] && ok || bad "a run left $(sidecars "$D")"
for args in "report $D/d.db" "report $D/d.db 1" "report $D/d.db --csv" \
    "export $D/d.db 1 --format chrome -o $D/t.json" "export $D/d.db 1 --format svg -o $D/t.svg" \
    "export $D/d.db --compare 1,2 -o $D/c.svg" "plot $D/d.db --x virtual_stages --y makespan --by schedule -o $D/p.svg"; do
    # shellcheck disable=SC2086
    $VG "$BIN" $args >/dev/null 2>"$D/err" || bad "pipesim $args: $(cat "$D/err")"
    [ -z "$(sidecars "$D")" ] && ok || { bad "pipesim $args left $(sidecars "$D")"; rm -f "$D"/d.db-*; }
done
# sidecars that were there before (a writer's) are not a reader's to remove
: >"$D/d.db-wal"
"$BIN" report "$D/d.db" >/dev/null 2>&1
[ -e "$D/d.db-wal" ] && ok || bad "report removed a -wal file it did not make"
rm -f "$D"/d.db-*

# --- merge: no sidecars beside its inputs, failed or not
for k in 0 1 2; do
    $VG "$BIN" run $S -o "$D/part-$k.db" --shard $k/3 >/dev/null 2>&1 || bad "shard $k/3"
done
$VG "$BIN" run $S -o "$D/other.db" --shard 1/3 -D sweep=other >/dev/null 2>&1 || bad "other shard"
$VG "$BIN" merge "$D/m.db" "$D/part-0.db" "$D/part-1.db" "$D/part-2.db" >/dev/null 2>"$D/err" && ok || bad "merge: $(cat "$D/err")"
"$BIN" merge "$D/m2.db" "$D/part-0.db" "$D/other.db" "$D/part-2.db" >/dev/null 2>&1 && bad "merge of a foreign shard exited 0" || ok
# a merge that fails after it has read every input (the unsharded run's
# points are part-0's too)
$VG "$BIN" run $S -o "$D/whole.db" >/dev/null 2>&1 || bad "unsharded run"
"$BIN" merge --partial "$D/m3.db" "$D/part-0.db" "$D/part-1.db" "$D/whole.db" >/dev/null 2>"$D/err" && bad "merge of a shard and the whole run exited 0"
grep -q "^pipesim: merge: point_index 0 of sweep 'small' is in $D/part-0.db and $D/whole.db" "$D/err" && ok || bad "merge of a shard and the whole run: $(cat "$D/err")"
[ -z "$(sidecars "$D")" ] && ok || bad "merge left $(sidecars "$D")"
[ ! -e "$D/m2.db" ] && [ ! -e "$D/m3.db" ] && [ -z "$(ls "$D" | grep 'merge-')" ] && ok || bad "a failed merge left its output: $(ls "$D")"

# --- a directory as the database
mkdir -p "$D/dir.db"
expect_fail "run scenarios/demo.lua -o $D/dir.db" "run: -o $D/dir.db is a directory, not a database file (name a file in it, such as $D/dir.db/results.db)"
expect_fail "report $D/dir.db" "$D/dir.db is a directory, not a database file"
expect_fail "export $D/dir.db 1 --format svg -o $D/x.svg" "$D/dir.db is a directory, not a database file"
expect_fail "merge $D/mx.db $D/dir.db" "merge: $D/dir.db is a directory, not a database file"
printf 'local ps = require "pipesim"\nps.run{ layers = { { fwd_time = 1 }, { fwd_time = 1 } }, stages = 2, microbatches = 2, db = "%s" }\n' "$D/dir.db" >"$D/dirdb.lua"
expect_fail "run --unsafe $D/dirdb.lua -o $D/x.db" "dirdb.lua:2: ps.run: $D/dir.db is a directory, not a database file"

# --- read-only files and directories, as another user when this is root
# (root ignores permissions)
if [ "$(id -u)" = 0 ]; then
    other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
else
    other() { "$@"; }
fi
if other "$BIN" --version >/dev/null 2>&1; then
    R="$D/ro"
    mkdir -p "$R"
    chmod 755 "$TMP" "$D"
    $VG "$BIN" run scenarios/demo.lua -o "$R/a.db" >/dev/null 2>&1 || bad "demo into ro/"
    chmod 644 "$R/a.db"
    chmod 555 "$R"
    # a reader in a read-only directory (no writer can be at work there)
    other "$BIN" report "$R/a.db" >/dev/null 2>"$D/err" && ok || bad "report in a read-only directory: $(cat "$D/err")"
    other "$BIN" run scenarios/demo.lua -o "$R/a.db" >/dev/null 2>"$D/err"
    grep -q "ps.run: $R/a.db: .*attempt to write a readonly database ($R/a.db is read-only for this user: make it writable, or give another database)$" "$D/err" && ok ||
        bad "a read-only file: $(cat "$D/err")"
    chmod 666 "$R/a.db"
    other "$BIN" run scenarios/demo.lua -o "$R/a.db" >/dev/null 2>"$D/err"
    grep -q "ps.run: $R/a.db: .* (its directory $R is read-only, and a database in WAL mode needs to write its -wal and -shm files beside it" "$D/err" && ok ||
        bad "a read-only directory: $(cat "$D/err")"
    other "$BIN" run scenarios/demo.lua -o "$R/new.db" >/dev/null 2>"$D/err"
    grep -q "ps.run: $R/new.db: cannot open: unable to open database file (its directory $R is read-only: the database cannot be created there)$" "$D/err" && ok ||
        bad "a new file in a read-only directory: $(cat "$D/err")"
    chmod 777 "$R"
    chmod 644 "$R/a.db"
    other "$BIN" run scenarios/demo.lua -o "$R/a.db" >/dev/null 2>&1
    [ -z "$(sidecars "$R")" ] && ok || bad "a failed write to a read-only file left $(sidecars "$R")"
    chmod 755 "$R"
else
    echo "skip cli_files: cannot run as another user: read-only cases not checked"
fi

echo "$P passed, $F failed"
