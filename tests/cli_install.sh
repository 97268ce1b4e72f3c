#!/bin/sh
# make install / make uninstall into temporary prefixes: the installed
# binary runs a scenario from another directory with its installed Lua
# library (not the source tree's), the man page renders, the completions
# are in place, a DESTDIR stage works where it lands, and uninstall leaves
# no file behind. Env from tests/run.sh: BIN, TMP, VG, PS_MAKE_ARGS (the
# make variables of the build under test: SAN=..., RELEASE=...).
set -u
SUITE=cli_install OUT=install
. tests/lib_cli.sh
# a make of its own (make test's jobserver is not ours to share)
unset MAKEFLAGS MFLAGS MAKELEVEL
SRC=$(pwd)
MK="make -s --no-print-directory BUILD=$(dirname "$BIN") ${PS_MAKE_ARGS:-}"

P1="$TMP/inst/prefix"
# shellcheck disable=SC2086
$MK install PREFIX="$P1" >"$TMP/install.log" 2>&1 && ok || { bad "make install: $(tail -n 3 "$TMP/install.log")"; }
for f in bin/pipesim share/pipesim/lua/pipesim/init.lua share/man/man1/pipesim.1 \
    share/bash-completion/completions/pipesim share/zsh/site-functions/_pipesim; do
    [ -f "$P1/$f" ] && ok || bad "make install left no $f"
done
[ -x "$P1/bin/pipesim" ] && ok || bad "installed pipesim is not executable"
# every Lua file of the library, byte for byte (so its built-in bytecode is used)
same=0 differ=""
for f in $(cd lua && find . -name '*.lua'); do
    if cmp -s "lua/$f" "$P1/share/pipesim/lua/$f"; then same=$((same + 1)); else differ="$differ $f"; fi
done
[ "$same" -ge 10 ] && [ -z "$differ" ] && ok || bad "installed Lua library: $same same, differ:$differ"

# a scenario from another directory: the installed library, closed-form time
mkdir -p "$TMP/inst/work"
cat >"$TMP/inst/work/two.lua" <<'EOF'
local ps = require "pipesim"
print("path " .. package.path)
local c = ps.cluster{ ranks = 2, device = { flops = "100 TFLOPS", efficiency = 1, memory = "80 GiB" } }
local layers = {}
for i = 1, 4 do layers[i] = { fwd_flops = "1 TFLOP", params = 1e6, act_bytes = "1 GiB" } end
local r = ps.run{ cluster = c, layers = layers, stages = 2, microbatches = 4, schedule = "1f1b" }
print(string.format("makespan %.9g", r.makespan))
EOF
if (cd "$TMP/inst/work" && env -u PIPESIM_LUA $VG "$P1/bin/pipesim" run two.lua >run.out 2>&1); then ok; else
    bad "installed pipesim run: $(tail -n 3 "$TMP/inst/work/run.out")"
fi
# 1F1B, p = 2, m = 4, F = 0.02 s, B = 0.04 s: (F + B)(m + p - 1) = 0.3 s
grep -qx 'makespan 0.3' "$TMP/inst/work/run.out" && ok || bad "installed run: $(cat "$TMP/inst/work/run.out")"
grep -q "^path $P1/bin/../share/pipesim/lua/?.lua;" "$TMP/inst/work/run.out" && ok ||
    bad "installed pipesim does not use its library: $(grep '^path' "$TMP/inst/work/run.out")"
grep "^path" "$TMP/inst/work/run.out" | grep -qF "$SRC/lua/" && bad "installed pipesim's package.path names the source tree" || ok
[ -f "$TMP/inst/work/results/two.db" ] && ok || bad "installed run wrote no results/two.db"
"$P1/bin/pipesim" report "$TMP/inst/work/results/two.db" 1 >/dev/null 2>&1 && ok || bad "installed pipesim report"
# no file of the source tree is opened (where strace is)
if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
    (cd "$TMP/inst/work" && env -u PIPESIM_LUA strace -f -e trace=open,openat,stat,access,readlink \
        -o "$TMP/inst/trace" "$P1/bin/pipesim" run two.lua -o t2.db >/dev/null 2>&1)
    # (TMP may lie inside the checkout: its library, build and scenarios count)
    if grep -E "\"$SRC/(lua|build|core|scenarios)" "$TMP/inst/trace" >"$TMP/inst/src_opens"; then
        bad "installed pipesim touches the source tree: $(head -n 2 "$TMP/inst/src_opens")"
    else ok; fi
else
    echo "skip: strace absent, the source tree's files are not traced"
fi
if command -v man >/dev/null; then
    MANWIDTH=80 man -M "$P1/share/man" pipesim 2>/dev/null | grep -q '^ *pipesim run SCENARIO.lua' &&
        ok || bad "man -M PREFIX/share/man pipesim does not render"
fi
bash -c ". '$P1/share/bash-completion/completions/pipesim'; COMP_WORDS=(pipesim nccl); COMP_CWORD=1; _pipesim; echo \"\${COMPREPLY[*]}\"" \
    2>&1 | grep -qx nccl-tests && ok || bad "installed bash completion"

# DESTDIR: staged under PREFIX=/usr/local, runs where it lies
P2="$TMP/inst/stage"
# shellcheck disable=SC2086
$MK install PREFIX=/usr/local DESTDIR="$P2" >"$TMP/install.log" 2>&1 && ok || bad "make install DESTDIR: $(tail -n 3 "$TMP/install.log")"
(cd "$TMP/inst/work" && env -u PIPESIM_LUA "$P2/usr/local/bin/pipesim" run two.lua -o staged.db >staged.out 2>&1) &&
    grep -qx 'makespan 0.3' "$TMP/inst/work/staged.out" && ok || bad "staged pipesim run: $(tail -n 2 "$TMP/inst/work/staged.out")"

# uninstall leaves no file (directories shared with other software may stay)
# shellcheck disable=SC2086
$MK uninstall PREFIX="$P1" >"$TMP/install.log" 2>&1 && ok || bad "make uninstall: $(tail -n 3 "$TMP/install.log")"
# shellcheck disable=SC2086
$MK uninstall PREFIX=/usr/local DESTDIR="$P2" >"$TMP/install.log" 2>&1 && ok || bad "make uninstall DESTDIR"
left=$(find "$P1" "$P2" ! -type d | head -n 3)
[ -z "$left" ] && ok || bad "make uninstall left: $left"
[ ! -e "$P1/share/pipesim" ] && ok || bad "make uninstall left share/pipesim"
echo "$P passed, $F failed"
[ "$F" -eq 0 ]
