#!/bin/sh
# The SimGrid comparison of make bench (issue 12) compares like with like:
# tests/bench/simgrid_bench.cpp, where it is built (libsimgrid-dev), gives
# the simulated times pipesim gives for the same ring all-reduce and 1F1B
# step, on small sizes: to the nine decimals both print, within one unit
# of the last (a rounding apart; SimGrid's solver precision is 1e-9
# relative). Without the bench nothing is counted: it is optional.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_simgrid OUT=cli_simgrid
. tests/lib_cli.sh
SG=$(dirname "$BIN")/simgrid_bench
if [ ! -x "$SG" ]; then
    echo "skip: $SG not built (libsimgrid-dev not installed)"
    echo "$P passed, $F failed"
    exit 0
fi
# the number after "simulated" on the line that has it
sim() { sed -n 's/.*simulated \([0-9.e+-]*\) s.*/\1/p' "$1" | head -n 1; }
same() { # name, simgrid's output, pipesim's output
    a=$(sim "$2") b=$(sim "$3")
    if [ -n "$a" ] && [ -n "$b" ] &&
        awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-9 + 1e-12) }'; then
        ok
    else
        bad "$1: simgrid '$a', pipesim '$b'"
    fi
}
for n in 2 8 13; do
    "$SG" ring $n 1073741824 >"$TMP/sg.out" 2>/dev/null
    rm -f "$TMP/sg.db"*
    $VG "$BIN" run tests/bench/ring.lua -D ranks=$n -o "$TMP/sg.db" >"$TMP/ps.out" 2>&1
    same "ring $n" "$TMP/sg.out" "$TMP/ps.out"
done
for pm in "2 1" "4 8" "8 32"; do
    set -- $pm
    "$SG" 1f1b "$1" "$2" >"$TMP/sg.out" 2>/dev/null
    rm -f "$TMP/sg.db"*
    $VG "$BIN" run tests/bench/pipe_1f1b.lua -D p="$1" -D m="$2" -o "$TMP/sg.db" \
        >"$TMP/ps.out" 2>&1
    same "1f1b p=$1 m=$2" "$TMP/sg.out" "$TMP/ps.out"
done
rm -f "$TMP/sg.db"*
echo "$P passed, $F failed"
