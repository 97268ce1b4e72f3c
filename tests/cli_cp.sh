#!/bin/sh
# Context parallelism's gradient sync (docs/parallelism.md): the ring
# transfers of each recorded step's sync are exactly a ring over each of
# Megatron's dp-cp groups (tests/data/cp_groups.lua prints them), and
# pipesim report names cp. Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cp OUT=cp
. tests/lib_cli.sh

DB="$TMP/cp_groups.db"
rm -f "$DB" "$DB-wal" "$DB-shm"
if $VG "$BIN" run tests/data/cp_groups.lua -o "$DB" >"$TMP/cp.out" 2>"$TMP/cp.err"; then ok; else
    bad "run: $(cat "$TMP/cp.err")"; fi
# every transfer of the sync joins two ranks of one expected group, and
# the transfers connect each group whole (union-find over them)
grep '^[0-9]*|' "$TMP/cp.out" >"$TMP/cp.want"
sqlite3 "$DB" "SELECT DISTINCT run || '|' || src || '|' || dst FROM transfer WHERE kind = 'coll'" \
    >"$TMP/cp.got"
[ "$(wc -l <"$TMP/cp.want")" -gt 40 ] && ok || bad "too few ranks expected: $(wc -l <"$TMP/cp.want")"
res=$(awk -F'|' 'function root(x) { while (up[x] != x) x = up[x]; return x }
    NR == FNR { k = $1 "|" $2; g[k] = $1 "|" $3; up[k] = k; next }
    { a = $1 "|" $2; b = $1 "|" $3
      if (g[a] == "" || g[a] != g[b]) { print "run " $1 ": " $2 " -> " $3 " crosses groups"; exit }
      up[root(a)] = root(b) }
    END { for (k in g) { r = root(k); if (g[k] in first) { if (first[g[k]] != r) {
              print "group " g[k] " is not connected"; exit } } else first[g[k]] = r } }' \
    "$TMP/cp.want" "$TMP/cp.got")
[ -z "$res" ] && ok || bad "the sync is not Megatron's dp-cp groups: $res"
# rank_member covers the tp x cp x dp x pp layout (the invariant the SQL
# checks run on every scenario, here on runs with CP)
got=$(sqlite3 "$DB" <tests/sql/rank_member_covers_layout.sql)
[ -z "$got" ] && ok || bad "rank_member: $got"
# the report's header names the layout's cp
$VG "$BIN" report "$DB" 1 >"$TMP/cp.rep" 2>&1
grep -q '^run 1 .* p=2 m=2 v=1 dp=2 cp=2, makespan' "$TMP/cp.rep" && ok || bad "report: no cp: $(head -n 5 "$TMP/cp.rep")"
echo "$P passed, $F failed"
