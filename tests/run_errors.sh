#!/bin/sh
# Error-message cases: every DIR/*.lua must exit non-zero with exactly one
# line on stderr containing the text of its "-- expect: " line. A case
# without an expect line fails (it would otherwise pass any error).
# Usage: sh tests/run_errors.sh DIR; env BIN (pipesim), VG (valgrind prefix
# or empty), TMP (scratch directory). Prints FAIL lines and ends with
# "N passed, N failed".
set -u
dir=$1
P=0
F=0
for t in "$dir"/*.lua; do
    [ -f "$t" ] || continue
    want=$(sed -n 's/^-- expect: //p' "$t" | head -n 1)
    if [ -z "$want" ]; then
        F=$((F + 1))
        echo "FAIL $t: no '-- expect: ' line with the message it must give"
        continue
    fi
    # shellcheck disable=SC2086
    if $VG "$BIN" run "$t" -o "$TMP/err.db" >"$TMP/err.out" 2>"$TMP/err.txt"; then
        F=$((F + 1))
        echo "FAIL $t: exited 0, expected an error"
        continue
    fi
    got=$(cat "$TMP/err.txt")
    lines=$(wc -l <"$TMP/err.txt")
    case "$got" in
    *"$want"*)
        if [ "$lines" -eq 1 ]; then P=$((P + 1)); else
            F=$((F + 1))
            echo "FAIL $t: error is $lines lines, expected one: $got"
        fi ;;
    *)
        F=$((F + 1))
        echo "FAIL $t: got '$got', expected it to contain '$want'" ;;
    esac
done
echo "$P passed, $F failed"
