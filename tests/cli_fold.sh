#!/bin/sh
# Replica folding keeps one replica's communication (core/par/fold_stream.c,
# issue 28): a dense step on 1,000 DGX H100 nodes (tests/bench/dense1t.lua:
# TP 8, PP 20, DP 50) runs folded within a --max-memory that every
# replica's gradient-sync rings exceed (0.7 M ops, more than 37.5 MiB as
# arrays, besides the rest).
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_fold OUT=fold
. tests/lib_cli.sh

# shellcheck disable=SC2086
if $VG "$BIN" run --unsafe --max-memory 64MiB tests/bench/dense1t.lua -D nodes=1000 \
    -o "$TMP/fold.db" >"$TMP/fold.stdout" 2>"$TMP/fold.stderr"; then
    grep -q "dense 1T on 8000 GPUs: step 16.716903 s, folded true" "$TMP/fold.stdout" && ok ||
        bad "folded run: $(cat "$TMP/fold.stdout")"
else
    bad "folded run within 64 MiB failed: $(cat "$TMP/fold.stderr")"
fi
expect_fail "run --unsafe --max-memory 64MiB tests/bench/dense1t.lua -D nodes=1000 -D fold=false -o $TMP/fold2.db" \
    "memory limit of 64 MiB reached (--max-memory): the run's programs need more than"

# ZeRO-2 (core/par/fsdp.c: a reduce-scatter after every microbatch's
# backward) streams too: Llama 3 405B's layout on 128 nodes (DP 8) within
# 96 MiB folded; every replica's reduce-scatters need more
# shellcheck disable=SC2086
if $VG "$BIN" run --unsafe --max-memory 96MiB tests/bench/llama405.lua -D nodes=128 -D zero=2 \
    -o "$TMP/fold3.db" >"$TMP/fold3.stdout" 2>"$TMP/fold3.stderr"; then
    grep -q "llama3-405b on 1024 GPUs: step 6.433768 s, folded true" "$TMP/fold3.stdout" && ok ||
        bad "folded ZeRO-2 run: $(cat "$TMP/fold3.stdout")"
else
    bad "folded ZeRO-2 run within 96 MiB failed: $(cat "$TMP/fold3.stderr")"
fi
# unfolded, the limit is reached while the programs grow (under the
# sanitizers, seen once, in the Lua before them)
expect_fail "run --unsafe --max-memory 96MiB tests/bench/llama405.lua -D nodes=128 -D zero=2 -D fold=false -o $TMP/fold4.db" \
    "memory limit of 96 MiB reached (--max-memory)"

echo "$P passed, $F failed"
[ "$F" -eq 0 ]
