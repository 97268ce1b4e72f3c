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
CHECKS_PASSED=0
CHECKS_FAILED=0
VG=""
if [ -n "${VALGRIND:-}" ]; then
    # sweep workers (core/bind/pool.c) are checked too: they close their
    # Lua state before _exit, and a worker's leak (its exit code 99) fails
    # the sweep ("a worker process ended with status 99"); tests/valgrind.supp
    # says what of SQLite's a worker keeps
    VG="valgrind -q --suppressions=$(pwd)/tests/valgrind.supp --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,possible"
fi

# add_counts FILE: adds the last "N passed, N failed" line of FILE to the
# cases, and its last "checks: N passed, N failed" line to the checks (a
# part without one, a shell script whose every check is written out, adds
# its cases there too)
add_counts() {
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
    if [ -z "$line" ]; then
        FAILED=$((FAILED + 1))
        CHECKS_FAILED=$((CHECKS_FAILED + 1))
        return
    fi
    p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
    checks=$(grep -E '^checks: [0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
    if [ -n "$checks" ]; then
        p=$(echo "$checks" | sed -E 's/^checks: ([0-9]+) passed.*/\1/')
        f=$(echo "$checks" | sed -E 's/^checks: [0-9]+ passed, ([0-9]+) failed.*/\1/')
    fi
    CHECKS_PASSED=$((CHECKS_PASSED + p))
    CHECKS_FAILED=$((CHECKS_FAILED + f))
}

pass() { PASSED=$((PASSED + 1)); CHECKS_PASSED=$((CHECKS_PASSED + 1)); }
fail() { FAILED=$((FAILED + 1)); CHECKS_FAILED=$((CHECKS_FAILED + 1)); echo "FAIL $*"; }

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
# tests/run_sql.sh: each invariant on every scenario database it applies
# to; one that applies to none fails
sh tests/run_sql.sh tests/sql "$TMP"/scenario-*.db >"$TMP/sql.out" 2>&1
grep -E '^FAIL' "$TMP/sql.out"
add_counts "$TMP/sql.out"

echo "== canned queries"
# tests/run_queries.sh: results/queries/*.sql against expected rows
BIN="$BIN" TMP="$TMP" VG="$VG" sh tests/run_queries.sh >"$TMP/queries-check.out" 2>&1
grep -E '^FAIL|^[-+]' "$TMP/queries-check.out"
add_counts "$TMP/queries-check.out"

echo "== error messages"
BIN="$BIN" TMP="$TMP" VG="$VG" sh tests/run_errors.sh tests/errors >"$TMP/errors.out" 2>&1
grep -E '^FAIL' "$TMP/errors.out"
add_counts "$TMP/errors.out"
for c in tests/cli.sh tests/cli_*.sh; do
    [ -f "$c" ] || continue
    echo "== $(basename "$c" .sh)"
    name=$(basename "$c" .sh)
    BIN="$BIN" TMP="$TMP" VG="$VG" sh "$c" >"$TMP/$name.out" 2>&1
    grep -E '^FAIL' "$TMP/$name.out"
    add_counts "$TMP/$name.out"
done

if [ -f tests/cluster_recipes.sh ]; then
    # docs/sweeps.md's GNU parallel recipe (skipped, saying so, without
    # parallel); .ci/run adds the Slurm one
    echo "== cluster recipes"
    BIN="$BIN" TMP="$TMP" sh tests/cluster_recipes.sh >"$TMP/recipes.out" 2>&1
    grep -E '^FAIL|^skip' "$TMP/recipes.out"
    add_counts "$TMP/recipes.out"
fi

echo "== docs"
# tests/docs.sh: the manual's lua and sh blocks run, their shown output
# matches, its links resolve (docs/hacking.md, "The docs test")
BIN="$BIN" TMP="$TMP" sh tests/docs.sh >"$TMP/docs.out" 2>&1
grep -E '^FAIL' "$TMP/docs.out"
add_counts "$TMP/docs.out"

echo "== include layers"
# tests/check_includes.sh: core/README.md's map, no include back up
sh tests/check_includes.sh >"$TMP/includes.out" 2>&1
grep -E '^FAIL' "$TMP/includes.out"
add_counts "$TMP/includes.out"

echo "== link layers"
# tests/check_links.py: no call back up a layer, no new circle of files
python3 tests/check_links.py "$BUILD" >"$TMP/links.out" 2>&1
grep -E '^FAIL' "$TMP/links.out"
add_counts "$TMP/links.out"

echo "== function length"
# tests/check_funclen.py: no function in core/ over 100 lines (STYLE.md),
# but for the listed ones, each with its reason; no source file over 800
python3 tests/check_funclen.py . >"$TMP/funclen.out" 2>&1
grep -E '^FAIL' "$TMP/funclen.out"
add_counts "$TMP/funclen.out"

echo "== luacheck"
# Lua lint (.luacheckrc), fatal: one warning fails the suite (Debian
# lua-check; make deps installs it)
if luacheck --no-color -q lua tests/lua scenarios >"$TMP/luacheck.out" 2>&1; then
    pass
else
    cat "$TMP/luacheck.out"
    fail "luacheck lua tests/lua scenarios"
fi

if [ -f tests/concurrency.sh ]; then
    echo "== concurrency"
    BIN="$BIN" TMP="$TMP" VG="$VG" sh tests/concurrency.sh >"$TMP/concurrency.out" 2>&1
    grep -E '^FAIL|^race' "$TMP/concurrency.out"
    add_counts "$TMP/concurrency.out"
fi

# the checks run (loops counted per iteration), then the closing line: the
# cases, each check written in a test (a unit test's CHECK, a Lua test's
# H.check, a script's check), failed when any of its runs failed
echo "checks: $CHECKS_PASSED passed, $CHECKS_FAILED failed"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
