#!/bin/sh
# Every text pipesim writes for other programs is valid for any run name
# (issue 26): a run named with bytes that are not UTF-8, and tags with such
# keys and values, give a Chrome trace and run.params / run.tags that a
# strict JSON reader takes, SVGs xmllint accepts and CSVs that decode as
# UTF-8; each such byte is U+FFFD, a valid name is kept as it is.
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_utf8 OUT=utf8
. tests/lib_cli.sh

cat >"$TMP/utf8.lua" <<'LUA'
local ps = require "pipesim"
local l = {}
for i = 1, 4 do l[i] = { fwd_time = 0.01, bwd_time = 0.02 } end
local c = ps.cluster{ ranks = 2 }
-- 0xff, a lone lead byte, a surrogate, past U+10FFFF, an overlong '/'
ps.run{ cluster = c, layers = l, stages = 2, microbatches = 4,
        name = "bad\xff <&> \xc3( \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf",
        tags = { who = "x\xe9y", ["k\xff"] = 1 } }
ps.run{ cluster = c, layers = l, stages = 2, microbatches = 8, name = "ok \xc3\xa9" }
LUA
rm -f "$TMP/utf8.db"
$VG "$BIN" run "$TMP/utf8.lua" -o "$TMP/utf8.db" >/dev/null 2>"$TMP/utf8.err" && ok ||
    bad "recording: $(cat "$TMP/utf8.err")"
R=$(printf '\357\277\275')
WANT="bad$R <&> $R( $R$R$R $R$R$R$R $R$R"

# strict: the bytes must decode as UTF-8 before JSON reads them
py_json() { # FILE EXPR: EXPR of d (the document) is true
    python3 -c "import json,sys; d=json.loads(open(sys.argv[1],'rb').read().decode('utf-8')); assert $2, d" "$1"
}
"$BIN" export "$TMP/utf8.db" 1 --format chrome -o "$TMP/u.json" 2>"$TMP/utf8.err" &&
    py_json "$TMP/u.json" "d['otherData']['run']['name'] == '$WANT'" 2>>"$TMP/utf8.err" && ok ||
    bad "chrome trace: $(tail -n 2 "$TMP/utf8.err")"
sqlite3 "$TMP/utf8.db" "SELECT params FROM run WHERE id = 1" >"$TMP/p.json"
py_json "$TMP/p.json" "d['name'] == '$WANT'" 2>"$TMP/utf8.err" && ok || bad "run.params: $(tail -n 1 "$TMP/utf8.err")"
sqlite3 "$TMP/utf8.db" "SELECT tags FROM run WHERE id = 1" >"$TMP/t.json"
py_json "$TMP/t.json" "d == {'who': 'x${R}y', 'k$R': 1}" 2>"$TMP/utf8.err" && ok ||
    bad "run.tags: $(tail -n 1 "$TMP/utf8.err")"
sqlite3 "$TMP/utf8.db" "SELECT params FROM run WHERE id = 2" >"$TMP/p2.json"
py_json "$TMP/p2.json" "d['name'] == 'ok \\u00e9'" 2>"$TMP/utf8.err" && ok ||
    bad "a valid name changed: $(tail -n 1 "$TMP/utf8.err")"

"$BIN" export "$TMP/utf8.db" 1 --format svg -o "$TMP/u.svg" 2>"$TMP/utf8.err" &&
    xmllint --noout "$TMP/u.svg" 2>>"$TMP/utf8.err" && ok || bad "export svg: $(head -n 2 "$TMP/utf8.err")"
grep -q "bad$R &lt;&amp;&gt; $R(" "$TMP/u.svg" && ok || bad "export svg: the name not found"
"$BIN" plot "$TMP/utf8.db" --x microbatches --y makespan --by name -o "$TMP/p.svg" 2>"$TMP/utf8.err" &&
    xmllint --noout "$TMP/p.svg" 2>>"$TMP/utf8.err" && ok || bad "plot svg: $(head -n 2 "$TMP/utf8.err")"

utf8_csv() { # FILE: decodes as UTF-8 and holds the name
    python3 -c "import sys; t=open(sys.argv[1],'rb').read().decode('utf-8'); assert sys.argv[2] in t, t" "$1" "$WANT"
}
"$BIN" plot "$TMP/utf8.db" --x microbatches --y makespan --by name --format csv -o "$TMP/p.csv" \
    2>"$TMP/utf8.err" && utf8_csv "$TMP/p.csv" 2>>"$TMP/utf8.err" && ok ||
    bad "plot csv: $(tail -n 1 "$TMP/utf8.err")"
"$BIN" report "$TMP/utf8.db" --csv >"$TMP/r.csv" 2>"$TMP/utf8.err" && utf8_csv "$TMP/r.csv" 2>>"$TMP/utf8.err" &&
    ok || bad "report csv: $(tail -n 1 "$TMP/utf8.err")"
echo "$P passed, $F failed"
