#!/bin/sh
# The help of every command (core/cli/help.c): pipesim help COMMAND and
# pipesim COMMAND --help for each command main.c dispatches, the one-line
# error with a suggestion for an unknown command, the man page (groff's
# warnings, man -l) and the bash and zsh completions written from the same
# text (bash exercised through compgen; zsh parsed by zsh -n and driven in
# a pseudo-terminal when zsh is present).
# Env from tests/run.sh: BIN, TMP, VG.
set -u
SUITE=cli_help OUT=help
. tests/lib_cli.sh

# every command main.c dispatches has a help text, the same both ways
cmds=$(sed -n 's/.*strcmp(cmd, "\([a-z][a-z-]*\)") == 0.*/\1/p' core/cli/main.c)
[ "$(echo "$cmds" | wc -w)" -ge 7 ] && ok || bad "main.c dispatches only: $cmds"
for c in $cmds; do
    if $VG "$BIN" help "$c" >"$TMP/help.$c" 2>"$TMP/help.err"; then ok; else
        bad "pipesim help $c: $(cat "$TMP/help.err")"; continue
    fi
    [ "$(head -n 1 "$TMP/help.$c" | cut -c1-$((15 + ${#c})))" = "usage: pipesim $c" ] &&
        ok || bad "pipesim help $c starts: $(head -n 1 "$TMP/help.$c")"
    grep -q '^Options:$' "$TMP/help.$c" && grep -q '^Examples:$' "$TMP/help.$c" &&
        ok || bad "pipesim help $c has no Options or Examples"
    for h in --help -h; do
        "$BIN" "$c" $h >"$TMP/help.$c$h" 2>&1
        cmp -s "$TMP/help.$c" "$TMP/help.$c$h" && ok || bad "pipesim $c $h differs from pipesim help $c"
    done
    # listed in pipesim --help with its synopsis
    "$BIN" --help | grep -q "^ *pipesim $c " && ok || bad "pipesim --help does not list $c"
    # no line wider than a terminal
    awk 'length > 79 { print FILENAME ": " $0; n++ } END { exit n > 0 }' "$TMP/help.$c" &&
        ok || bad "pipesim help $c has lines over 79 columns"
done
# the options each command parses are in its help
for o in --timeout --max-memory --jobs --shard --unsafe -D; do
    grep -q -- "^  $o " "$TMP/help.run" && ok || bad "pipesim help run lacks $o"
done
for o in --csv --width; do
    grep -q -- "^  $o" "$TMP/help.report" && ok || bad "pipesim help report lacks $o"
done
for o in --xunit --dashed-label --agg --log; do
    grep -q -- "^  $o " "$TMP/help.plot" && ok || bad "pipesim help plot lacks $o"
done
# --help wins wherever it stands, but not after --
"$BIN" run nope.lua -o x.db --help | head -n 1 | grep -q '^usage: pipesim run' && ok || bad "run ... --help"
expect_fail "run -- --help" "--help: No such file or directory"

# unknown commands: one line, with the nearest command when one is close
expect_fail "rn" "unknown command 'rn' (did you mean 'run'? try pipesim help)"
expect_fail "expotr" "unknown command 'expotr' (did you mean 'export'?"
expect_fail "nccl" "unknown command 'nccl' (did you mean 'nccl-tests'?"
expect_fail "frobnicate" "unknown command 'frobnicate' (expected run, report, export, plot, merge, nccl-tests or help; try pipesim help)"
expect_fail "help repot" "unknown command 'repot' (did you mean 'report'?"
expect_fail "help run report" "help: one command at a time ('run' and 'report')"
expect_fail "help --bogus" "help: unknown option '--bogus'"
expect_fail "help --completion fish" "help: --completion fish: expected bash or zsh"
if [ -w /dev/full ]; then
    "$BIN" run --help >/dev/full 2>"$TMP/help.err" && bad "run --help >/dev/full exited 0" ||
        { [ "$(cat "$TMP/help.err")" = "pipesim: writing to standard output: No space left on device" ] &&
            ok || bad "run --help >/dev/full: $(cat "$TMP/help.err")"; }
fi

# the man page: a section per command, every option, no groff warning
"$BIN" help --man >"$TMP/pipesim.1" && ok || bad "help --man"
for c in $cmds; do
    grep -qF ".SS \"$(echo "$c" | sed 's/-/\\-/g')\"" "$TMP/pipesim.1" && ok || bad "man page has no section for $c"
done
grep -q '^\\fB\\-\\-max\\-memory\\fR \\fISIZE\\fR$' "$TMP/pipesim.1" && ok || bad "man page lacks --max-memory"
if command -v groff >/dev/null; then
    groff -man -Tutf8 -ww -z "$TMP/pipesim.1" >"$TMP/groff.out" 2>&1 && [ ! -s "$TMP/groff.out" ] &&
        ok || bad "groff warns: $(head -n 3 "$TMP/groff.out")"
    MANWIDTH=80 man -l "$TMP/pipesim.1" 2>/dev/null | grep -q '^ *pipesim run SCENARIO.lua' &&
        ok || bad "man -l does not render the synopsis"
else
    echo "skip: groff absent, the man page is not rendered"
fi

# bash: complete words as bash would, through the generated function
"$BIN" help --completion bash >"$TMP/pipesim.bash" && ok || bad "help --completion bash"
mkdir -p "$TMP/comp/sub"
: >"$TMP/comp/a.lua"
: >"$TMP/comp/b.db"
: >"$TMP/comp/c.txt"
# complete_bash "WORDS..." (the last word is the one completed): the
# candidates, sorted, on one line
complete_bash() {
    script=$(cd "$TMP" && pwd)/pipesim.bash
    (cd "$TMP/comp" && bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _pipesim; [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | LC_ALL=C sort | tr "\n" " "' \
        sh "$script" "$@")
}
check_bash() {
    want=$1
    shift
    got=$(complete_bash "$@")
    [ "$got" = "$want" ] && ok || bad "bash completion of '$*': got '$got', want '$want'"
}
check_bash "report run " pipesim r
check_bash "nccl-tests " pipesim nc
check_bash "--help --version " pipesim --
check_bash "--max-memory " pipesim run --m
check_bash "a.lua sub " pipesim run ""
check_bash "b.db sub " pipesim report ""
check_bash "b.db sub " pipesim run a.lua -o ""
check_bash "chrome " pipesim export b.db 1 --format c
check_bash "a.lua b.db c.txt sub " pipesim export b.db 1 -o ""
check_bash "min " pipesim plot b.db --agg mi
check_bash "all_gather all_reduce alltoall " pipesim nccl-tests al
check_bash "" pipesim run --timeout ""
check_bash "export " pipesim help ex
check_bash "--completion " pipesim help --comp

# zsh: the script parses (zsh absent: skipped, saying so)
"$BIN" help --completion zsh >"$TMP/_pipesim" && ok || bad "help --completion zsh"
head -n 1 "$TMP/_pipesim" | grep -qx '#compdef pipesim' && ok || bad "zsh script lacks #compdef"
if command -v zsh >/dev/null; then
    zsh -n "$TMP/_pipesim" && ok || bad "zsh -n _pipesim"
    # an interactive zsh in a pseudo-terminal (zsh/zpty): each line typed,
    # TAB, then ^X, bound to a widget that appends the completed line to a
    # file; a unique completion ends in a space
    mkdir -p "$TMP/zfp" && cp "$TMP/_pipesim" "$TMP/zfp/_pipesim"
    mkdir -p "$TMP/zbin" && ln -sf "$(cd "$(dirname "$BIN")" && pwd)/pipesim" "$TMP/zbin/pipesim"
    cat >"$TMP/zdrive.zsh" <<'ZSH'
zmodload zsh/zpty || exit 2
zpty -b z 'zsh -f -i'
zpty -w z "fpath=($ZT/zfp \$fpath); autoload -U compinit; compinit -u -D; cd $ZT/comp; PATH=$ZT/zbin:\$PATH; dump() { print -r -- \"\$BUFFER\" >>$ZT/zbufs; BUFFER=; }; zle -N dump; bindkey '^X' dump"
n=0
for w in "$@"; do
    zpty -w -n z "$w"$'\t'
    sleep 0.3
    zpty -w -n z $'\x18'
    n=$((n + 1))
    for i in {1..100}; do
        [[ -f $ZT/zbufs && $(wc -l <$ZT/zbufs) -ge $n ]] && break
        sleep 0.1
    done
done
zpty -d z
ZSH
    rm -f "$TMP/zbufs"
    ZT="$TMP" timeout 60 zsh -f "$TMP/zdrive.zsh" 'pipesim rep' 'pipesim run --max-' 'pipesim run a' \
        'pipesim report b' 'pipesim export b.db 1 --format ch' 'pipesim nccl-tests all_r' >/dev/null 2>&1
    printf '%s\n' 'pipesim report ' 'pipesim run --max-memory ' 'pipesim run a.lua ' 'pipesim report b.db ' \
        'pipesim export b.db 1 --format chrome ' 'pipesim nccl-tests all_reduce ' >"$TMP/zwant"
    cmp -s "$TMP/zwant" "$TMP/zbufs" && ok || bad "zsh completion: got $(tr '\n' '|' <"$TMP/zbufs" 2>/dev/null)"
else
    echo "skip: zsh absent, the zsh completion is not parsed"
fi
echo "$P passed, $F failed"
[ "$F" -eq 0 ]
