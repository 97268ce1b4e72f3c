#!/bin/sh
# The layer map of core/README.md as a test: a file's layer is its folder,
# and every #include "dir/x.h" in core/ goes to the same layer or one
# below, never up. Layers, top first:
#   10 cli     the command line and the build-time embed tool
#    9 bind    the Lua binding (the only Lua code besides cli)
#    8 run     sessions, sweeps, worker processes
#    7 out     readers: report, exports, plots, merge, dbcheck
#    6 step    one training step: costs, lowering, data parallelism
#    5 par     the parallel layout and one pass per dimension
#    4 sched coll   generators of programs (schedules, collectives)
#    3 rec     the recorder (the only SQLite code)
#    2 sim live     programs, the engine, memory, faults; the live executor
#    1 net     links, routes, sharing
#    0 base    errors, units, limits, the embedded data, the event queue
# A file in a folder that is no layer, or an include without its folder,
# fails: a new folder gets a place here and in core/README.md, and so does
# a file that core/README.md does not name.
# Ends with "checks: N passed, N failed" (one per include) and the case's
# line: "1 passed, 0 failed", or every failure counted.
set -u
P=0
F=0
layer() {
    case $1 in
    cli) echo 10 ;;
    bind) echo 9 ;;
    run) echo 8 ;;
    out) echo 7 ;;
    step) echo 6 ;;
    par) echo 5 ;;
    sched | coll) echo 4 ;;
    rec) echo 3 ;;
    sim | live) echo 2 ;;
    net) echo 1 ;;
    base) echo 0 ;;
    *) echo "" ;;
    esac
}
for f in core/*.c core/*.h; do
    [ -e "$f" ] || continue
    F=$((F + 1))
    echo "FAIL $f: a file outside the layer folders"
done
for f in core/*/*.c core/*/*.h; do
    dir=$(basename "$(dirname "$f")")
    lf=$(layer "$dir")
    if [ -z "$lf" ]; then
        F=$((F + 1))
        echo "FAIL $f: folder $dir is no layer (add it to tests/check_includes.sh and core/README.md)"
        continue
    fi
    for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
        to=${inc%%/*}
        lt=""
        [ "$to" != "$inc" ] && [ -f "core/$inc" ] && lt=$(layer "$to")
        if [ -z "$lt" ]; then
            F=$((F + 1))
            echo "FAIL $f includes \"$inc\": not a core header named by its folder"
        elif [ "$lt" -le "$lf" ]; then
            P=$((P + 1))
        else
            F=$((F + 1))
            echo "FAIL $f (layer $lf, $dir) includes $inc (layer $lt, $to): an arrow back up"
        fi
    done
done
# core/README.md is the map: it names every file in backticks (`rec/txn.c`),
# a header only where it has no .c of its own (a module is its .c and .h)
for f in core/*/*.c core/*/*.h; do
    case $f in *.h) [ -f "${f%.h}.c" ] && continue ;; esac
    if grep -qF "\`${f#core/}\`" core/README.md; then
        P=$((P + 1))
    else
        F=$((F + 1))
        echo "FAIL $f: not in core/README.md's map (name it as \`${f#core/}\`)"
    fi
done
echo "checks: $P passed, $F failed"
if [ "$F" -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, $F failed"; fi
[ "$F" -eq 0 ]
