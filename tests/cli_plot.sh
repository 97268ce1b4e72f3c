#!/bin/sh
# pipesim plot: the SVG chart and its CSV table from a scenario's database
# (scenarios/bubble.lua, quick), sweep coordinates in run.point, rank_stat
# aggregates, and every argument error as one line.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=plot OUT=plot
. tests/lib_cli.sh

DB="$TMP/plot-bubble.db"
rm -f "$DB" "$DB-wal" "$DB-shm"
if $VG "$BIN" run scenarios/bubble.lua -D quick=1 -o "$DB" >"$TMP/plot.run" 2>&1; then ok; else
    bad "bubble.lua: $(tail -n 3 "$TMP/plot.run")"; fi

# the plot of docs/reference/pipesim-plot.md: three lines in scenario order, each with its dashed
# closed form, valid XML, the bubble axis in percent
S="$TMP/plot.svg"
if $VG "$BIN" plot "$DB" --x microbatches --y bubble --by schedule \
    --dashed closed_form_bubble --dashed-label "closed form" -o "$S" 2>"$TMP/plot.err"; then ok; else
    bad "plot svg: $(cat "$TMP/plot.err")"; fi
[ ! -s "$TMP/plot.err" ] && ok || bad "plot svg wrote to stderr: $(cat "$TMP/plot.err")"
xmllint --noout "$S" 2>"$TMP/plot.xml" && ok || bad "svg is not XML: $(head -n 3 "$TMP/plot.xml")"
got=$(grep -o 'class="series" data-label="[^"]*"' "$S" | sed 's/.*data-label="//; s/"$//' | tr '\n' ' ')
[ "$got" = "gpipe 1f1b interleaved " ] && ok || bad "series: '$got'"
n=$(grep -c 'polyline.*stroke-dasharray' "$S")
[ "$n" -eq 3 ] && ok || bad "dashed closed forms: $n, want 3"
grep -q '>bubble (%)<' "$S" && ok || bad "y axis title in percent"
grep -q '>microbatches<' "$S" && ok || bad "x axis title"
grep -q '>closed form<' "$S" && ok || bad "dashed legend entry"
# one marker per run (3 schedules x 3 microbatch counts)
n=$(grep -c '<title>' "$S")
[ "$n" -eq 9 ] && ok || bad "markers: $n, want 9"

# CSV: each simulated bubble is its closed form, (p-1)/(m+p-1) for GPipe
# and 1F1B, (p-1)/(v m+p-1) for interleaved with v = 2, p = 4
C="$TMP/plot.csv"
$VG "$BIN" plot "$DB" --x microbatches --y bubble --by schedule \
    --dashed closed_form_bubble --format csv >"$C" 2>"$TMP/plot.err" && ok || bad "csv: $(cat "$TMP/plot.err")"
[ "$(head -n 1 "$C")" = "schedule,microbatches,bubble,closed_form_bubble" ] && ok || bad "csv header: $(head -n 1 "$C")"
[ "$(sed -n 2p "$C" | cut -d, -f1,2)" = "gpipe,4" ] && ok || bad "csv first row: $(sed -n 2p "$C")"
got=$(awk -F, 'NR > 1 { v = $1 == "interleaved" ? 2 : 1; cf = 3 / (v * $2 + 3);
        d = $3 - cf; if (d < 0) d = -d; e = $4 - cf; if (e < 0) e = -e
        if (d < 1e-12 && e < 1e-12) n++ } END { print n + 0 }' "$C")
[ "$got" = 9 ] && ok || bad "csv rows matching the closed forms: $got of 9"
# -o FILE.csv picks the format
$VG "$BIN" plot "$DB" --x microbatches --y bubble --by schedule --dashed closed_form_bubble -o "$TMP/plot2.csv" 2>/dev/null
cmp -s "$C" "$TMP/plot2.csv" && ok || bad "-o x.csv differs from --format csv"
# without -o: SVG on stdout
$VG "$BIN" plot "$DB" --x microbatches --y bubble --by schedule >"$TMP/plot.stdout" 2>/dev/null
head -n 2 "$TMP/plot.stdout" | grep -q '<svg' && ok || bad "svg on stdout"

# --where, and a rank_stat aggregate with its unit: each rank computes
# m (F + B) = m x 4 layers x 30 ms
$VG "$BIN" plot "$DB" --x microbatches --y "max(rank_stat.busy)" --by schedule \
    --where "schedule = '1f1b'" --format csv >"$C" 2>"$TMP/plot.err" || bad "aggregate: $(cat "$TMP/plot.err")"
got=$(awk -F, 'NR > 1 { d = $3 - $2 * 0.120; if (d < 0) d = -d; if (d < 1e-9) n++ } END { print NR - 1 ":" n + 0 }' "$C")
[ "$got" = "3:3" ] && ok || bad "max(rank_stat.busy) rows: $got, want 3:3 ($(cat "$C"))"
$VG "$BIN" plot "$DB" --x microbatches --y "max(rank_stat.busy)" --by schedule -o "$S" 2>/dev/null
grep -q '>max(rank_stat.busy) (s)<' "$S" && ok || bad "seconds axis for busy"

# one line without --by needs one run per x, else --agg
expect_fail "plot $DB --x microbatches --y bubble" "3 runs have microbatches = 4: choose one with --where"
$VG "$BIN" plot "$DB" --x microbatches --y bubble --agg max --format csv >"$C" 2>/dev/null
[ "$(sed -n 2p "$C")" = "bubble,4,0.4285714285714286" ] && ok || bad "--agg max: $(sed -n 2p "$C")"

# sweep coordinates: a name that is no run column is looked up in
# run.point (added here by hand until the sweep's column exists)
PDB="$TMP/plot-point.db"
cp "$DB" "$PDB"
sqlite3 "$PDB" "ALTER TABLE run ADD COLUMN point TEXT" 2>/dev/null
sqlite3 "$PDB" "UPDATE run SET point = json_object('mb', microbatches, 'sched', schedule)"
$VG "$BIN" plot "$PDB" --x mb --y bubble --by sched --format csv >"$TMP/plot-point.csv" 2>"$TMP/plot.err" || bad "point: $(cat "$TMP/plot.err")"
[ "$(head -n 1 "$TMP/plot-point.csv")" = "sched,mb,bubble" ] && ok || bad "point header: $(head -n 1 "$TMP/plot-point.csv")"
[ "$(tail -n +2 "$TMP/plot-point.csv")" = "$($VG "$BIN" plot "$DB" --x microbatches --y bubble --by schedule --format csv | tail -n +2)" ] && ok || bad "point rows differ from the column rows"
expect_fail "plot $PDB --x nope --y bubble" "--x nope: no run column or sweep coordinate of that name in $PDB (sweep coordinates: mb, sched"

# a log x axis of powers of two is ticked at them
$VG "$BIN" plot "$DB" --x microbatches --y bubble --by schedule --log x -o "$S" 2>/dev/null
for t in 4 8 16; do grep -q ">$t</text>" "$S" && ok || bad "log x tick $t"; done

# argument and data errors: one line each
expect_fail "plot" "plot: no database given"
expect_fail "plot $DB --y bubble" "plot: --x is missing"
expect_fail "plot $DB --x microbatches" "plot: --y is missing"
expect_fail "plot $DB --x microbatches --y bubble --frob 1" "plot: unknown option '--frob'"
expect_fail "plot $DB --x microbatches --y" "plot: --y needs a value"
expect_fail "plot $DB --x= --y bubble" "plot: --x: the value is empty"
expect_fail "plot $DB $DB --x microbatches --y bubble" "plot: unexpected argument"
expect_fail "plot $TMP/none.db --x microbatches --y bubble" "none.db: no such file"
expect_fail "plot $DB --x nope --y bubble" "plot: --x nope: no run column or sweep coordinate of that name"
expect_fail "plot $DB --x microbatches --y busy" "plot: --y busy: a per-rank column; plot an aggregate over the ranks, such as max(rank_stat.busy)"
expect_fail "plot $DB --x microbatches --y rank_stat.busy" "plot: --y rank_stat.busy: one value per rank"
expect_fail "plot $DB --x microbatches --y bubble --where stages=" "plot: --where stages=: $DB: cannot read:"
expect_fail "plot $DB --x microbatches --y bubble --where 0" "plot: $DB: no runs to plot (9 runs in all; a plot takes those with status 'ok' that match --where)"
# a text --x is categories, in the order the runs first have them (issue
# 27 item 15: it was refused as "'1f1b' is not a number")
$VG "$BIN" plot "$DB" --x schedule --y bubble --by microbatches -o "$TMP/cat.svg" 2>"$TMP/plot.err" && ok || bad "categorical x: $(cat "$TMP/plot.err")"
xmllint --noout "$TMP/cat.svg" 2>/dev/null && ok || bad "categorical x: not XML"
got=$(grep -o 'text-anchor="middle" fill="#52606d">[^<]*<' "$TMP/cat.svg" | sed 's/.*">//; s/<$//' | tr '\n' ' ')
[ "$got" = "gpipe 1f1b interleaved " ] && ok || bad "categorical x: tick labels '$got'"
$VG "$BIN" plot "$DB" --x schedule --y bubble --by microbatches --format csv >"$TMP/cat.csv" 2>"$TMP/plot.err" && ok || bad "categorical x csv: $(cat "$TMP/plot.err")"
[ "$(sed -n 2,4p "$TMP/cat.csv" | cut -d, -f1,2 | tr '\n' ' ')" = "4,gpipe 4,1f1b 4,interleaved " ] && ok || bad "categorical x csv: $(head -n 4 "$TMP/cat.csv")"
[ "$(grep -c ',1f1b,' "$TMP/cat.csv")" = 3 ] && ok || bad "categorical x csv: $(cat "$TMP/cat.csv")"
expect_fail "plot $DB --x schedule --y bubble" "plot: 3 runs have schedule = gpipe: choose one with --where, group them with --by, or combine them with --agg min|max|mean"
expect_fail "plot $DB --x schedule --y bubble --by microbatches --log x" "plot: --log x: --x schedule holds categories ('gpipe', ...), which have no scale"
expect_fail "plot $DB --x microbatches --y schedule --by schedule" "plot: --y schedule: the value 'gpipe' is not a number"
expect_fail "plot $DB --x microbatches --y bubble-bubble --by schedule --log y" "plot: --log y: bubble-bubble = 0 (gpipe at microbatches = 4) cannot be on a log axis"
expect_fail "plot $DB --x microbatches --y bubble --format png" "plot: --format png: expected svg or csv"
expect_fail "plot $DB --x microbatches --y bubble --agg median" "plot: --agg median: expected min, max or mean"
expect_fail "plot $DB --x microbatches --y bubble --log z" "plot: --log z: expected x, y or xy"
expect_fail "plot $DB --x microbatches --y bubble --yunit parsecs" "plot: --yunit parsecs: expected s, bytes, B/s, fraction or none"
expect_fail "plot $DB --x microbatches --y bubble --by schedule -o $TMP/no/such/dir/p.svg" "plot: $TMP/no/such/dir/p.svg: No such file or directory"

# that page's figure is what its command draws today
FULL="$TMP/plot-bubble-full.db"
rm -f "$FULL"
$VG "$BIN" run scenarios/bubble.lua -o "$FULL" >/dev/null 2>&1
$VG "$BIN" plot "$FULL" --x microbatches --y bubble --by schedule --dashed closed_form_bubble \
    --dashed-label "closed form" --title "Pipeline bubble, 4 stages: simulated and closed form" \
    -o "$TMP/plot-readme.svg" 2>/dev/null
cmp -s "$TMP/plot-readme.svg" results/bubble.svg && ok || bad "results/bubble.svg is not what docs/reference/pipesim-plot.md's command draws (regenerate it)"

echo "$P passed, $F failed"
[ "$F" -eq 0 ]
