#!/bin/sh
# The recipes of docs/sweeps.md ("Sweeps on a cluster") run as written:
# the blocks named sweep.lua, parallel.sh, parallel-ssh.sh, sweep.sbatch,
# merge.sbatch and submit.sh are extracted from that page (tagged "no-run:
# ..." there, since tests/docs.sh leaves them to this script) and run with
# N = 4 shards; each
# merged database must hold exactly the rows of the unsharded run (every
# table, every column but run.created).
# Env: BIN (pipesim), TMP; RECIPES: "parallel" (default, tests/run.sh),
# "slurm" or "parallel,slurm"; the slurm part needs a running Slurm
# (SLURM_CONF, tests/slurm/start.sh). PIPESIM_RECIPES_REQUIRE=1 (.ci/run)
# makes a missing tool a failure instead of a skip.
set -u
BIN=${BIN:-build/pipesim}
TMP=${TMP:-$(mktemp -d)}
RECIPES=${RECIPES:-parallel}
REQUIRE=${PIPESIM_RECIPES_REQUIRE:-0}
P=0
F=0
ok() { P=$((P + 1)); }
bad() { F=$((F + 1)); echo "FAIL recipes: $*"; }
# skip WHAT WHY: a clear line, a failure when the tool is required
skip() {
    if [ "$REQUIRE" = 1 ]; then bad "$1: $2"; else echo "skip recipes: $1: $2"; fi
}

BINDIR=$(cd "$(dirname "$BIN")" && pwd)
export PATH="$BINDIR:$PATH"
export LC_ALL=C

# extract DIR FILE: every ```sh / ```lua block of FILE whose first line (or
# second, after a #! line) is "# NAME: ..." or "-- NAME: ..." becomes DIR/NAME
extract() {
    awk -v dir="$1" '
    function flush(   name, i, m) {
        name = ""
        for (i = 1; i <= 2 && i <= n; i++)
            if (match(buf[i], /^(#|--) [A-Za-z0-9_.-]+\.(sh|sbatch|lua): /)) {
                name = substr(buf[i], index(buf[i], " ") + 1)
                name = substr(name, 1, index(name, ":") - 1)
                break
            } else if (buf[i] !~ /^#!/)
                break
        if (name == "") return
        for (i = 1; i <= n; i++) print buf[i] > (dir "/" name)
        close(dir "/" name)
    }
    /^```/ {
        if (inblock) { flush(); inblock = 0; next }
        if ($0 ~ /^```(sh|lua)( no-run: .*)?$/) { inblock = 1; n = 0 }
        next
    }
    inblock { buf[++n] = $0 }' "$2"
}

# dump DB: every row of every table as text, sorted (run.created left out:
# it is the wall-clock time of the run)
dump() {
    for t in $(sqlite3 "$1" "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"); do
        cols=$(sqlite3 "$1" "SELECT group_concat(quote(name), ', ') FROM pragma_table_info('$t') WHERE NOT ('$t' = 'run' AND name = 'created')")
        sqlite3 -separator '|' "$1" "SELECT '$t', $(echo "$cols" | tr "'" '"') FROM \"$t\"" | sort
    done
}

# same_db WHAT A B: A and B hold the same rows, and some
same_db() {
    dump "$2" >"$2.dump"
    dump "$3" >"$3.dump"
    runs=$(grep -c '^run|' "$3.dump")
    if [ "$runs" -eq 0 ]; then bad "$1: the unsharded run recorded nothing"; return; fi
    if cmp -s "$2.dump" "$3.dump"; then ok; else
        bad "$1: $2 differs from the unsharded run $3:"
        diff "$2.dump" "$3.dump" | head -n 6
    fi
}

W="$TMP/recipes"
rm -rf "$W"
mkdir -p "$W"
extract "$W" docs/sweeps.md
for f in sweep.lua parallel.sh parallel-ssh.sh sweep.sbatch merge.sbatch submit.sh; do
    [ -s "$W/$f" ] && ok || bad "docs/sweeps.md has no block named $f"
done
# the reference: the same sweep unsharded
mkdir -p "$W/whole"
cp "$W/sweep.lua" "$W/whole/"
if (cd "$W/whole" && pipesim run sweep.lua --jobs 1 -o whole.db) >"$W/whole.out" 2>&1; then ok; else
    bad "unsharded sweep: $(tail -n 3 "$W/whole.out")"; fi
# sharding a sweep needs --shard K/N with K < N
(cd "$W/whole" && pipesim run sweep.lua --shard 3/2 -o x.db) >/dev/null 2>"$W/shard.err" &&
    bad "--shard 3/2 exited 0" || ok

# run_recipe NAME SCRIPT [ENV...]: runs SCRIPT in a fresh directory with
# sweep.lua and checks the merged sweep.db
run_recipe() {
    name=$1 script=$2
    shift 2
    d="$W/$name"
    mkdir -p "$d"
    cp "$W/sweep.lua" "$W/$script" "$d/"
    if (cd "$d" && env N=4 "$@" sh "$script") >"$d/out" 2>&1; then ok; else
        bad "$name: $script failed: $(tail -n 3 "$d/out")"
        return
    fi
    n=$(ls "$d"/part-*.db 2>/dev/null | wc -l)
    [ "$n" -eq 4 ] && ok || bad "$name: $n shard databases, want 4"
    same_db "$name" "$d/sweep.db" "$W/whole/whole.db"
}

case ",$RECIPES," in
*,parallel,*)
    if command -v parallel >/dev/null 2>&1 && parallel --version 2>/dev/null | grep -q 'GNU parallel'; then
        run_recipe parallel parallel.sh
        run_recipe parallel-ssh parallel-ssh.sh SSHLOGIN=2/:
        # a plot of the merged sweep, by a sweep coordinate
        pipesim plot "$W/parallel/sweep.db" --x microbatches --y makespan --by schedule \
            --where "stages = 4" --format csv >"$W/plot.csv" 2>"$W/plot.err"
        [ "$(wc -l <"$W/plot.csv")" -eq 13 ] && ok || bad "plot of the merged sweep: $(cat "$W/plot.err" "$W/plot.csv" | head -n 3)"
    else
        skip parallel "GNU parallel is not installed (apt-get install parallel); the GNU parallel recipe was not run"
    fi
    ;;
esac

case ",$RECIPES," in
*,slurm,*)
    if ! command -v sbatch >/dev/null 2>&1; then
        skip slurm "sbatch not found (apt-get install slurm-wlm munge, then tests/slurm/start.sh)"
    elif [ "$(sinfo -h -o %t 2>/dev/null | head -n 1)" != idle ]; then
        skip slurm "no idle Slurm node answers (SLURM_CONF=${SLURM_CONF:-unset}; start one with tests/slurm/start.sh)"
    else
        d="$W/slurm"
        mkdir -p "$d"
        cp "$W/sweep.lua" "$W/sweep.sbatch" "$W/merge.sbatch" "$W/submit.sh" "$d/"
        if (cd "$d" && N=4 sh submit.sh) >"$d/submit.out" 2>&1; then ok; else
            bad "slurm: submit.sh failed: $(cat "$d/submit.out")"; fi
        job=$(tail -n 1 "$d/submit.out" | cut -d';' -f1)
        # wait for the merge job: at most 300 s
        i=0 state=""
        while [ "$i" -lt 300 ]; do
            info=$(scontrol -o show job "$job" 2>/dev/null)
            state=$(echo "$info" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
            case "$state" in
            COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;;
            esac
            case "$info" in *DependencyNeverSatisfied*) state=DependencyNeverSatisfied; break ;; esac
            sleep 1
            i=$((i + 1))
        done
        if [ "$state" = COMPLETED ]; then ok; else
            bad "slurm: merge job $job ended '$state' after ${i} s: $(cat "$d"/slurm-*.out 2>/dev/null | head -n 5)"
        fi
        n=$(ls "$d"/slurm-*_*.out 2>/dev/null | wc -l)
        [ "$n" -eq 4 ] && ok || bad "slurm: $n array task logs, want 4"
        [ "$state" = COMPLETED ] && same_db slurm "$d/sweep.db" "$W/whole/whole.db"
    fi
    ;;
esac

echo "$P passed, $F failed"
[ "$F" -eq 0 ]
