#!/bin/sh
# The layer map of core/README.md as a test: every #include "x.h" in core/
# goes to the same layer or one below, never up. Layers, top first:
#   7 command line   main
#   6 binding        bind_*
#   5 readers        report, export*, plot*, svg, merge, dbcheck
#   4 front ends     pipe*, sched*, dp, coll*, gen_coll, gen_pipe
#   3 recorder       rec* (implements the engine's completion hook, so
#                    it includes eng.h; the engine calls it through
#                    eng_sink at run time and never includes rec.h)
#   2 engine         eng*
#   1 model          prog, net*, mem, eq, fault, gen, gen_ring (what engine and
#                    recorder both read: programs, network, ledger)
#   0 base           err, unit, limit
# A file whose name fits no layer fails: a new module gets a place here
# and in core/README.md. Ends with "N passed, N failed".
set -u
P=0
F=0
layer() {
    case $1 in
    main) echo 7 ;;
    bind*) echo 6 ;;
    report | export* | plot* | svg | merge | dbcheck) echo 5 ;;
    pipe* | sched* | dp | coll* | gen_coll | gen_pipe) echo 4 ;;
    rec*) echo 3 ;;
    eng*) echo 2 ;;
    prog | net* | mem | eq | fault | gen | gen_ring) echo 1 ;;
    err | unit | limit) echo 0 ;;
    *) echo "" ;;
    esac
}
for f in core/*.c core/*.h; do
    from=$(basename "$f" | sed 's/\.[ch]$//')
    lf=$(layer "$from")
    if [ -z "$lf" ]; then
        F=$((F + 1))
        echo "FAIL $f: no layer (add it to tests/check_includes.sh and core/README.md)"
        continue
    fi
    for to in $(sed -n 's/^#include "\([a-z0-9_]*\)\.h".*/\1/p' "$f"); do
        lt=$(layer "$to")
        if [ -n "$lt" ] && [ "$lt" -le "$lf" ]; then
            P=$((P + 1))
        else
            F=$((F + 1))
            echo "FAIL $f (layer $lf) includes $to.h (layer ${lt:-none}): an arrow back up"
        fi
    done
done
echo "$P passed, $F failed"
[ "$F" -eq 0 ]
