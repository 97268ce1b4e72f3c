#!/bin/sh
# Live mode from the command line (core/live/): the run table's backend
# and simulated columns, the measured timeline, the JSON Lines byte log of
# the ring (2 (N - 1) / N of the array per rank) on both backends and
# --bytes-log, and the bounds: a killed worker fails the run naming its
# rank, SIGINT and --timeout stop every worker, and no worker outlives its
# run. Env from tests/run.sh: BIN, TMP, VG.
SUITE=cli_live
OUT=live
. tests/lib_cli.sh
# absolute paths: the runs below start in $D
case "$BIN" in /*) ;; *) BIN="$(pwd)/$BIN" ;; esac
case "$TMP" in /*) ;; *) TMP="$(pwd)/$TMP" ;; esac
D="$TMP/live"
rm -rf "$D"
mkdir -p "$D"

cat >"$D/ring.lua" <<'EOF'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "1 GB/s", latency = "20 us" } }
ps.collective{ cluster = c, op = "allreduce", algorithm = "ring", bytes = 4 * 1024,
               backend = "tcp", iterations = 3, warmup = 1, bytes_log = "ring.jsonl" }
ps.collective{ cluster = c, op = "allreduce", algorithm = "ring", bytes = 4 * 1024,
               bytes_log = "sim.jsonl" }
EOF
(cd "$D" && $VG "$BIN" run ring.lua -o ring.db >ring.out 2>&1) && ok || bad "ring run: $(cat "$D/ring.out")"

q() { sqlite3 "$1" "$2"; }
got=$(q "$D/ring.db" "SELECT backend || ':' || (simulated IS NOT NULL) || ':' || (makespan > 0) FROM run ORDER BY id")
[ "$got" = "tcp:1:1
sim:0:1" ] && ok || bad "run.backend and run.simulated: $got"
# the measured timeline: every rank's transfers, each ending after it starts
got=$(q "$D/ring.db" "SELECT count(*), sum(t_end >= t_start), count(DISTINCT src), sum(bytes) FROM transfer WHERE run = 1")
[ "$got" = "24|24|4|24576.0" ] && ok || bad "live transfers: $got"

# the byte log: the last line of each rank in each iteration says
# 2 (N - 1) / N x 4096 = 6144 bytes sent and received
check_log() {
    file=$1 iters=$2
    got=$(python3 -c '
import json, sys
last = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    last[(o["rank"], o["iteration"])] = (o["sent"], o["received"])
v = list(last.values())
print(len(last), min(x[0] for x in v), max(x[0] for x in v), min(x[1] for x in v), max(x[1] for x in v))
' "$file")
    [ "$got" = "$((4 * iters)) 6144.0 6144.0 6144.0 6144.0" ] && ok || bad "$file: ring counts $got"
}
check_log "$D/ring.jsonl" 3
check_log "$D/sim.jsonl" 1
got=$(head -n 1 "$D/ring.jsonl")
case "$got" in
'{"run":1,"iteration":0,"rank":'*'"kind":"coll"'*) ok ;;
*) bad "first log line: $got" ;;
esac
# --bytes-log: the runs that name no file
cat >"$D/cli.lua" <<'EOF'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 2, link = { bandwidth = "1 GB/s", latency = "20 us" } }
ps.collective{ cluster = c, op = "allreduce", algorithm = "ring", bytes = 64,
               backend = "tcp", iterations = 1, warmup = 0, record = "none" }
EOF
(cd "$D" && $VG "$BIN" run cli.lua -o cli.db --bytes-log cli.jsonl >cli.out 2>&1) && ok || bad "--bytes-log: $(cat "$D/cli.out")"
[ "$(wc -l <"$D/cli.jsonl")" -eq 8 ] && ok || bad "--bytes-log lines: $(cat "$D/cli.jsonl")"

# no worker outlives its run: children of the pipesim process
children() { pgrep -P "$1" 2>/dev/null | tr '\n' ' '; }
gone() { for p in $1; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }

cat >"$D/long.lua" <<'EOF'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "1 GB/s", latency = "20 us" } }
ps.collective{ cluster = c, op = "allreduce", algorithm = "ring", bytes = "256 KB",
               backend = "tcp", iterations = 100000, warmup = 0 }
EOF
# wait_children PID: the workers of PID once all 4 run (at most 10 s)
wait_children() {
    n=0
    while [ $n -lt 100 ]; do
        kids=$(children "$1")
        [ "$(echo "$kids" | wc -w)" -ge 4 ] && return 0
        sleep 0.1
        n=$((n + 1))
    done
    return 1
}

# a killed worker fails the run, naming its rank
(cd "$D" && exec "$BIN" run long.lua -o kill.db >kill.out 2>&1) &
pid=$!
if wait_children $pid; then
    kids=$(children $pid)
    victim=$(echo "$kids" | awk '{print $2}')
    kill -9 "$victim"
    wait $pid
    rc=$?
    [ $rc -ne 0 ] && grep -q "its worker died (killed by signal 9)" "$D/kill.out" && ok || bad "killed worker: rc $rc $(cat "$D/kill.out")"
    gone "$kids" && ok || bad "workers left after a killed worker: $kids"
    got=$(q "$D/kill.db" "SELECT status || ':' || backend FROM run")
    [ "$got" = "failed:tcp" ] && ok || bad "the failed live run is recorded: $got"
else
    bad "no workers to kill"
    kill $pid
fi

# SIGINT stops every worker and leaves no rows
(cd "$D" && exec "$BIN" run long.lua -o int.db >int.out 2>&1) &
pid=$!
if wait_children $pid; then
    kids=$(children $pid)
    kill -INT $pid
    wait $pid
    rc=$?
    [ $rc -ne 0 ] && grep -q "interrupted" "$D/int.out" && ok || bad "SIGINT: rc $rc $(cat "$D/int.out")"
    gone "$kids" && ok || bad "workers left after SIGINT: $kids"
    [ ! -e "$D/int.db" ] || [ "$(q "$D/int.db" "SELECT count(*) FROM run")" = 0 ] && ok || bad "an interrupted run left rows"
else
    bad "no workers to interrupt"
    kill $pid
fi

# --timeout bounds a live run
(cd "$D" && exec "$BIN" run long.lua -o to.db --timeout 1 >to.out 2>&1) &
pid=$!
wait_children $pid
kids=$(children $pid)
wait $pid
rc=$?
[ $rc -ne 0 ] && grep -q "time limit of 1 s reached" "$D/to.out" && ok || bad "--timeout: rc $rc $(cat "$D/to.out")"
gone "$kids" && ok || bad "workers left after --timeout: $kids"

# pipesim calibrate: a cluster file ps.cluster takes and a profile
# ps.profile.load reads (with the W column)
(cd "$D" && $VG "$BIN" calibrate --live -o cal.lua --profile cal.csv --layers 2 --width 8 >cal.out 2>&1) &&
    grep -q "^latency .* us, bandwidth .* GB/s" "$D/cal.out" && ok || bad "calibrate: $(cat "$D/cal.out")"
cat >"$D/use.lua" <<'EOF'
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.load("cal.lua"))
local p = ps.profile.load("cal.csv")
assert(c.ranks == 2 and #p == 2 and p[2].bwd_weight_time > 0 and p[2].bwd_time >= p[2].bwd_weight_time)
local r = ps.run{ cluster = c, layers = p, stages = 2, microbatches = 2, record = "none" }
print(r.makespan > 0)
EOF
(cd "$D" && $VG "$BIN" run --unsafe use.lua -o use.db 2>&1 | grep -q "^true") && ok || bad "calibrated files: $(cd "$D" && "$BIN" run --unsafe use.lua -o use.db 2>&1)"
expect_fail "calibrate --live --bogus 1" "calibrate: unknown option '--bogus'"

# several hosts as workers on this one: pipesim worker --rendezvous, the

# a send posted before a compute op leaves before it runs: GPipe's stage 1
# starts F0 while stage 0 still computes its later forwards (the worker
# used to write its queued sends only once its lane blocked, after F3)
cat >"$D/gpipe.lua" <<'EOF'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 2, link = { bandwidth = "1 GB/s", latency = "20 us" } }
local layers = {}
for i = 1, 4 do layers[i] = { fwd_time = "1 ms" } end
ps.run{ cluster = c, layers = layers, stages = 2, microbatches = 4, schedule = "gpipe",
        backend = "tcp", compute = { model = "mlp", width = 256, samples = 64 } }
EOF
(cd "$D" && $VG "$BIN" run gpipe.lua -o gpipe.db >gpipe.out 2>&1) && ok || bad "gpipe run: $(cat "$D/gpipe.out")"
got=$(q "$D/gpipe.db" "SELECT (SELECT t_start FROM event WHERE rank = 1 AND kind = 'F' AND mb = 0) < (SELECT t_end FROM event WHERE rank = 0 AND kind = 'F' AND mb = 3)")
[ "$got" = "1" ] && ok || bad "stage 1's F0 before stage 0's F3 ends: $got"
# coordinator sends them the scenario; one worker takes itself for
# another host and aligns its clock by pings (an error bound > 0)
cat >"$D/rdv.lua" <<'EOF'
local ps = require "pipesim"
local c = ps.cluster{ ranks = 4, link = { bandwidth = "1 GB/s", latency = "20 us" } }
local r = ps.collective{ cluster = c, op = "allreduce", algorithm = "ring", bytes = 4096,
    backend = "tcp", iterations = 2, warmup = 0, data = function(rank, i) return rank + i end }
print("coll", r.outputs[1][1], r.outputs[4][4], r.clock_error > 0 and r.clock_error < 0.01)
local layers = {}
for i = 1, 4 do layers[i] = { fwd_time = "1 ms" } end
local p = ps.run{ cluster = c, layers = layers, stages = 2, microbatches = 4, backend = "tcp",
                  compute = { model = "mlp", width = 8 } }
print("pipe", p.grad_error < 1e-12)
EOF
PORT=$((20000 + $$ % 20000))
wpids=""
for k in 1 2 3 4; do
    if [ $k = 4 ]; then
        (cd "$D" && PIPESIM_TEST_BOOT_ID=elsewhere exec "$BIN" worker --rendezvous 127.0.0.1:$PORT --timeout 30 >w$k.out 2>&1) &
    else
        (cd "$D" && exec "$BIN" worker --rendezvous 127.0.0.1:$PORT --timeout 30 >w$k.out 2>&1) &
    fi
    wpids="$wpids $!"
done
(cd "$D" && $VG "$BIN" run rdv.lua -o rdv.db --rendezvous 127.0.0.1:$PORT --workers 4 --timeout 60 >rdv.out 2>&1) && ok || bad "rendezvous run: $(cat "$D/rdv.out")"
grep -q "^coll	6.0	18.0	true$" "$D/rdv.out" && grep -q "^pipe	true$" "$D/rdv.out" && ok || bad "rendezvous results: $(cat "$D/rdv.out")"
for p in $wpids; do wait "$p" || bad "a worker failed: $(cat "$D"/w*.out)"; done
[ "$(q "$D/rdv.db" "SELECT group_concat(backend) FROM run")" = "tcp,tcp" ] && ok || bad "rendezvous runs recorded"
expect_fail "worker --rendezvous nohost" "worker: --rendezvous nohost: expected HOST:PORT"

echo "$P passed, $F failed"
