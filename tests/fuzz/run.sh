#!/bin/sh
# `make fuzz`: runs each libFuzzer target named on the command line for
# FUZZ_TIME seconds, from its seed corpus (tests/fuzz/corpus/NAME, read
# only) plus a working corpus in FUZZ_BUILD/corpus/NAME that keeps what the
# fuzzer finds. A crash, leak, timeout or out-of-memory fails the target;
# its input is saved as FUZZ_BUILD/artifacts/NAME-crash-... and the report
# printed. Ends with "fuzz: N passed, N failed".
# The random seed is fixed (FUZZ_SEED, default 1): from an empty working
# corpus, as in CI, a run explores a prefix of what a longer run with the
# same binary explored, so a clean longer run vouches for CI's.
# Env: FUZZ_BUILD, FUZZ_TIME, FUZZ_SEED, BIN (pipesim, for fuzz_db's seed).
set -u
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
T=${FUZZ_TIME:-60}
SEED=${FUZZ_SEED:-1}
BIN=${BIN:-build/pipesim}
export LC_ALL=C
PIPESIM_LUA="$PWD/lua"
export PIPESIM_LUA
mkdir -p "$FUZZ_BUILD/corpus" "$FUZZ_BUILD/artifacts"

# fuzz_db edits a database pipesim makes now, so it has the current schema;
# small pages keep it (and the raw-mode seed) small
seed="$FUZZ_BUILD/seed.db"
rm -f "$seed" "$seed-wal" "$seed-shm"
if ! "$BIN" run tests/fuzz/seed_db.lua -o "$seed" >/dev/null ||
    ! sqlite3 "$seed" "PRAGMA journal_mode=DELETE; PRAGMA page_size=512; VACUUM;" >/dev/null; then
    echo "fuzz: cannot make the seed database $seed"
    exit 1
fi
PIPESIM_FUZZ_DB_SEED="$PWD/$seed"
export PIPESIM_FUZZ_DB_SEED

P=0
F=0
for name in "$@"; do
    work="$FUZZ_BUILD/corpus/$name"
    mkdir -p "$work"
    if [ "$name" = db ]; then
        { printf '\000'; cat "$seed"; } >"$work/raw-seed"
    fi
    log="$FUZZ_BUILD/fuzz_$name.log"
    if "$FUZZ_BUILD/fuzz_$name" -max_total_time="$T" -seed="$SEED" -timeout=30 \
        -rss_limit_mb=2560 -print_final_stats=1 \
        -artifact_prefix="$FUZZ_BUILD/artifacts/$name-" \
        "$work" "tests/fuzz/corpus/$name" >"$log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "fuzz_$name: $execs inputs in $T s, no crash"
        P=$((P + 1))
    else
        echo "FAIL fuzz_$name (log $log):"
        grep -E -A40 '^==[0-9]+==|runtime error|^(scenario|profile|driver|fuzz)|Test unit written|ALARM|out-of-memory' "$log" | head -n 60
        F=$((F + 1))
    fi
done
echo "fuzz: $P passed, $F failed"
[ "$F" -eq 0 ]
