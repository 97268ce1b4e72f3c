#!/bin/sh
# The whole test suite: C unit tests, Lua tests, every scenario, SQL checks
# on the scenarios' databases, and error-message tests. Each part reports
# "N passed, N failed"; this script sums them and ends with the same line.
# Env: BUILD (build dir), VALGRIND=1 to run binaries under valgrind.
set -u
export LC_ALL=C
BUILD=${BUILD:-build}
BIN="$BUILD/pipesim"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pipesim-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
PASSED=0
FAILED=0
VG=""
if [ -n "${VALGRIND:-}" ]; then
    VG="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite"
fi

# add_counts FILE: adds the last "N passed, N failed" line of FILE
add_counts() {
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
    if [ -z "$line" ]; then
        FAILED=$((FAILED + 1))
        return
    fi
    p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
}

pass() { PASSED=$((PASSED + 1)); }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $*"; }

echo "== unit tests"
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    if (cd "$TMP" && $VG "$OLDPWD/$t") >"$TMP/$name.out" 2>&1; then :; else
        echo "-- $name exited non-zero"; fi
    grep -E '^FAIL' "$TMP/$name.out" | head -n 20
    add_counts "$TMP/$name.out"
    # a binary that crashed before printing its line counted one failure
    grep -qE '^[0-9]+ passed, 0 failed' "$TMP/$name.out" || tail -n 5 "$TMP/$name.out"
done

echo "== lua tests"
for t in tests/lua/test_*.lua; do
    [ -f "$t" ] || continue
    name=$(basename "$t" .lua)
    # tests run sandboxed, as scenarios do, unless they say why they cannot
    unsafe=""
    grep -q '^-- run with --unsafe' "$t" && unsafe="--unsafe"
    $VG "$BIN" run $unsafe "$t" -o "$TMP/$name.db" >"$TMP/$name.out" 2>&1 || echo "-- $name exited non-zero"
    grep -E '^FAIL' "$TMP/$name.out" | head -n 20
    add_counts "$TMP/$name.out"
    grep -qE '^[0-9]+ passed, 0 failed' "$TMP/$name.out" || tail -n 5 "$TMP/$name.out"
done

echo "== scenarios"
for s in scenarios/*.lua; do
    name=$(basename "$s" .lua)
    if $VG "$BIN" run "$s" -o "$TMP/scenario-$name.db" -D quick=1 \
        >"$TMP/scenario-$name.out" 2>&1; then
        pass
    else
        fail "scenario $s:"
        tail -n 5 "$TMP/scenario-$name.out"
    fi
done

echo "== sql checks"
# Each tests/sql/*.sql is one invariant: a query that must return no rows on
# the database of every scenario.
for db in "$TMP"/scenario-*.db; do
    [ -f "$db" ] || continue
    for q in tests/sql/*.sql; do
        [ -f "$q" ] || continue
        if out=$(sqlite3 -bail "$db" <"$q" 2>&1) && [ -z "$out" ]; then
            pass
        else
            fail "$(basename "$q") on $(basename "$db"): $(echo "$out" | head -n 3)"
        fi
    done
done

echo "== error messages"
for t in tests/errors/*.lua; do
    [ -f "$t" ] || continue
    want=$(sed -n 's/^-- expect: //p' "$t" | head -n 1)
    if $VG "$BIN" run "$t" -o "$TMP/err.db" >"$TMP/err.out" 2>"$TMP/err.txt"; then
        fail "$t: exited 0, expected an error"
        continue
    fi
    got=$(cat "$TMP/err.txt")
    lines=$(wc -l <"$TMP/err.txt")
    case "$got" in
    *"$want"*)
        if [ "$lines" -eq 1 ]; then pass; else
            fail "$t: error is $lines lines, expected one: $got"; fi ;;
    *) fail "$t: got '$got', expected it to contain '$want'" ;;
    esac
done
if [ -f tests/cli.sh ]; then
    echo "== cli"
    BIN="$BIN" TMP="$TMP" VG="$VG" sh tests/cli.sh >"$TMP/cli.out" 2>&1
    grep -E '^FAIL' "$TMP/cli.out"
    add_counts "$TMP/cli.out"
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
