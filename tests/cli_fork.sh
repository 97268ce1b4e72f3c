#!/bin/sh
# Concurrency and fork stress (issue 27 item 1): sweeps whose workers are
# forked right after a run with a full timeline (the recorder's writer
# thread checkpointing inside SQLite at that moment), in one process and in
# four processes writing one file at once. Before the fix a worker
# inherited SQLite's mutex locked and the sweep hung within 60 rounds, every
# time; each process here runs under `timeout`, so a hang fails instead of
# stalling the suite. The ids each sweep returned must be the ids stored.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_fork
OUT=fork
. tests/lib_cli.sh
D="$TMP/fork"
rm -rf "$D" && mkdir -p "$D/tmp"
export TMPDIR="$D/tmp"
S=tests/data/fork_stress.lua
q() { sqlite3 "$1" "$2"; }
# fewer rounds under valgrind (~50x slower); the limit is generous for
# sanitizer builds, a hang runs into it
ROUNDS=60
PROCS=4
PROUNDS=15
[ -n "$VG" ] && ROUNDS=4 && PROUNDS=2
LIMIT=120

# ids_stored DB OUT: every id the sweeps printed is a sweep run of DB
ids_stored() {
    printed=$(grep -E '^[0-9]+	[0-9]+$' "$2" | tr '\t' '\n' | sort -n | tr '\n' ',')
    stored=$(q "$1" "SELECT group_concat(id) FROM (SELECT id FROM run WHERE sweep IS NOT NULL ORDER BY id)"),
    [ "$printed" = "$stored" ]
}

# --- one process, ROUNDS rounds
# shellcheck disable=SC2086
if timeout $LIMIT $VG "$BIN" run $S -o "$D/one.db" -D rounds=$ROUNDS >"$D/one.out" 2>&1; then ok; else
    bad "one process, $ROUNDS rounds: exit $? (124: hung): $(tail -n 2 "$D/one.out")"; fi
[ "$(q "$D/one.db" "SELECT count(*) FROM run")" = $((3 * ROUNDS)) ] && ok || bad "one process: $(q "$D/one.db" "SELECT count(*) FROM run") runs, want $((3 * ROUNDS))"
ids_stored "$D/one.db" "$D/one.out" && ok || bad "one process: printed ids are not the sweep runs' ids"

# --- PROCS processes writing one file, each PROUNDS rounds of --jobs 2
i=0
while [ $i -lt $PROCS ]; do
    # shellcheck disable=SC2086
    (timeout $LIMIT $VG "$BIN" run $S -o "$D/many.db" -D rounds=$PROUNDS >"$D/many$i.out" 2>&1; echo $? >"$D/many$i.rc") &
    i=$((i + 1))
done
wait
i=0
while [ $i -lt $PROCS ]; do
    [ "$(cat "$D/many$i.rc")" = 0 ] && ok || bad "writer $i of $PROCS: exit $(cat "$D/many$i.rc") (124: hung): $(grep -v "^[0-9]" "$D/many$i.out" | tail -n 2)"
    i=$((i + 1))
done
[ "$(q "$D/many.db" "PRAGMA integrity_check")" = ok ] && ok || bad "many: integrity_check"
[ "$(q "$D/many.db" "SELECT count(*) FROM run")" = $((3 * PROCS * PROUNDS)) ] && ok || bad "many: $(q "$D/many.db" "SELECT count(*) FROM run") runs, want $((3 * PROCS * PROUNDS))"
cat "$D"/many*.out >"$D/many.all"
ids_stored "$D/many.db" "$D/many.all" && ok || bad "many: printed ids are not the sweep runs' ids"
# no worker outlived its sweep, no scratch directory is left
[ -z "$(ls "$TMPDIR")" ] && ok || bad "scratch left in TMPDIR: $(ls "$TMPDIR")"

echo "$P passed, $F failed"
