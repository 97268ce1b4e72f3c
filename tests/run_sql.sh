#!/bin/sh
# SQL invariants: each SQLDIR/*.sql is a query that must return no rows on
# every database it applies to. Its "-- applies: SELECT ..." line counts
# what it checks; on a database where that count is 0 the invariant does
# not apply (a collective sweep has no pipeline events), and an invariant
# that applies to none of the databases fails, as does a file without an
# applies line: a check that finds nothing to check proves nothing. The
# queries also return a row when there is nothing to check, so run by hand
# on an empty database they fail too.
# Usage: sh tests/run_sql.sh SQLDIR DB...; prints FAIL lines and ends with
# "N passed, N failed".
set -u
dir=$1
shift
P=0
F=0
for q in "$dir"/*.sql; do
    [ -f "$q" ] || continue
    name=$(basename "$q")
    applies=$(sed -n 's/^-- applies: //p' "$q" | head -n 1)
    if [ -z "$applies" ]; then
        F=$((F + 1))
        echo "FAIL $name: no '-- applies: SELECT ...' line (what does it check?)"
        continue
    fi
    used=0
    for db in "$@"; do
        if [ ! -f "$db" ]; then
            F=$((F + 1))
            echo "FAIL $name: no database $db"
            continue
        fi
        if ! n=$(sqlite3 -bail "$db" "$applies" 2>&1); then
            F=$((F + 1))
            echo "FAIL $name on $(basename "$db"): applies query failed: $n"
            continue
        fi
        [ "$n" -gt 0 ] 2>/dev/null || continue
        used=$((used + 1))
        if out=$(sqlite3 -bail "$db" <"$q" 2>&1) && [ -z "$out" ]; then
            P=$((P + 1))
        else
            F=$((F + 1))
            echo "FAIL $name on $(basename "$db"): $(echo "$out" | head -n 3)"
        fi
    done
    if [ "$used" -eq 0 ]; then
        F=$((F + 1))
        echo "FAIL $name: applies to none of the $# databases, so it checked nothing"
    fi
done
echo "$P passed, $F failed"
