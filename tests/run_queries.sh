#!/bin/sh
# Expected rows of the canned queries: runs tests/queries/scenario.lua (a
# small deterministic scenario whose figures are worked out by hand in its
# comments) and checks that every results/queries/NAME.sql prints exactly
# tests/queries/NAME.expected (sqlite3 -header -csv); a query with its own
# scenario tests/queries/NAME.lua is checked on that one's database. A canned query with
# no expected file fails, as does an expected file with no data rows: a
# check that compares nothing proves nothing.
# Env: BIN, TMP, VG. Prints FAIL lines and ends with "N passed, N failed".
# To refresh after an intended change:
#   build/pipesim run tests/queries/scenario.lua -o /tmp/q.db
#   sqlite3 -header -csv /tmp/q.db < results/queries/NAME.sql \
#       > tests/queries/NAME.expected      (then check the diff by hand)
set -u
export LC_ALL=C
P=0
F=0
db="$TMP/queries.db"
rm -f "$db" "$db-wal" "$db-shm"
if ! $VG "$BIN" run tests/queries/scenario.lua -o "$db" >"$TMP/queries.out" 2>&1; then
    echo "FAIL tests/queries/scenario.lua: $(tail -n 3 "$TMP/queries.out")"
    echo "0 passed, 1 failed"
    exit 1
fi
for q in results/queries/*.sql; do
    name=$(basename "$q" .sql)
    want="tests/queries/$name.expected"
    if [ ! -f "$want" ]; then
        F=$((F + 1))
        echo "FAIL $name: no $want"
        continue
    fi
    if [ "$(wc -l <"$want")" -lt 2 ]; then
        F=$((F + 1))
        echo "FAIL $name: $want has no rows"
        continue
    fi
    qdb="$db"
    if [ -f "tests/queries/$name.lua" ]; then
        qdb="$TMP/queries-$name.db"
        rm -f "$qdb" "$qdb-wal" "$qdb-shm"
        if ! $VG "$BIN" run "tests/queries/$name.lua" -o "$qdb" >"$TMP/queries-$name.out" 2>&1; then
            F=$((F + 1))
            echo "FAIL tests/queries/$name.lua: $(tail -n 3 "$TMP/queries-$name.out")"
            continue
        fi
    fi
    if ! sqlite3 -bail -header -csv "$qdb" <"$q" >"$TMP/query-$name.out" 2>&1; then
        F=$((F + 1))
        echo "FAIL $name: $(head -n 3 "$TMP/query-$name.out")"
    elif diff -u "$want" "$TMP/query-$name.out" >"$TMP/query-$name.diff"; then
        P=$((P + 1))
    else
        F=$((F + 1))
        echo "FAIL $name: rows differ from $want:"
        head -n 20 "$TMP/query-$name.diff"
    fi
done
echo "$P passed, $F failed"
