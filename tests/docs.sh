#!/bin/sh
# The manual's code blocks run, as jq's manual examples do (docs/hacking.md,
# "The docs test", is the convention this script implements):
#   ```lua          a scenario: run sandboxed with -D quick=1 (its own DB);
#                   a first line "-- NAME.lua: ..." also leaves it as NAME.lua
#                   for the page's later blocks
#   ```sh           commands: run with sh -e, in order, in one scratch
#                   directory per page (build/pipesim is BIN; lua/,
#                   scenarios/, tests/ and results/queries/ link to the
#                   tree; results/ is empty)
#   ```sql DB       a query: run by sqlite3 on DB (a file an earlier block
#                   of the page made); a bare ```sql is an error
#   ```output       right after a ```sh or ```sql block: what it prints
#                   (stdout and stderr); a line "..." stands for any number
#                   of lines
#   ```lua no-run: WHY (also sh, sql)   shown, not run; WHY is required
# Any other block (```text, untagged) is text. Also checked: every
# relative link points at a file, and every #anchor at a heading of it;
# README.md stays under 300 lines. Last, a self-check: a page with one mistake
# of each kind must fail each of them.
# Env: BIN (pipesim), TMP; DOCS_UPDATE=1 rewrites each output block that
# differs (and has no "..." line) with what its block printed, for a change
# that moves a figure on purpose (review the diff). Prints "N passed, N failed".
set -u
BIN=${BIN:-build/pipesim}
TMP=${TMP:-$(mktemp -d)}
export LC_ALL=C
ROOT=$(pwd)
BINDIR=$(cd "$(dirname "$BIN")" && pwd)
export PATH="$BINDIR:$PATH"
P=0
F=0
ok() { P=$((P + 1)); }
bad() { F=$((F + 1)); echo "FAIL docs: $*"; }

# DOCS_PAGES: other pages (the self-check below), without the README check
PAGES=${DOCS_PAGES:-"README.md $(ls docs/*.md docs/reference/*.md 2>/dev/null)"}

# extract PAGE DIR: each fenced block of PAGE as DIR/NNN.TAG (TAG lua, sh,
# output, norun, bad), and DIR/list with "NNN TAG LINE" per block
extract() {
    awk -v dir="$2" '
    function out(tag) {
        f = sprintf("%s/%03d.%s", dir, ++k, tag)
        printf "" > f
        for (i = 1; i <= n; i++) print buf[i] > f
        close(f)
        printf "%03d %s %d %s\n", k, tag, start, db > (dir "/list")
    }
    /^ *```/ {
        if (inblock) {
            inblock = 0
            if (tag != "") out(tag)
            next
        }
        inblock = 1; n = 0; start = NR
        # a fence indented in a list item: its lines lose that indent
        ind = match($0, /[^ ]/) - 1
        info = $0; sub(/^ *```/, "", info)
        lang = info; sub(/ .*/, "", lang)
        rest = substr(info, length(lang) + 1); sub(/^ +/, "", rest)
        tag = ""; db = ""
        if (lang == "lua" || lang == "sh") {
            if (rest == "") tag = lang
            else if (rest ~ /^no-run: [^ ]/) tag = "norun"
            else tag = "bad"
        } else if (lang == "sql") {
            if (rest ~ /^no-run: [^ ]/) tag = "norun"
            else if (rest ~ /^[^ ]+$/) { tag = "sql"; db = rest }
            else tag = "bad"
        } else if (lang == "output")
            tag = "output"
        next
    }
    inblock {
        l = $0
        for (i = 0; i < ind && substr(l, 1, 1) == " "; i++) l = substr(l, 2)
        buf[++n] = l
    }
    END { printf "" >> (dir "/list") }' "$1"
}

# matches EXPECTED ACTUAL: ACTUAL has the lines of EXPECTED (trailing blanks
# ignored), where a line "..." in EXPECTED stands for any number of lines
matches() {
    awk 'NR == FNR { sub(/[ \t]+$/, ""); e[++ne] = $0; next }
         { sub(/[ \t]+$/, ""); a[++na] = $0 }
         END {
             j = 1
             for (i = 1; i <= ne; i++) {
                 if (e[i] == "...") {
                     if (i == ne) { j = na + 1; break }
                     while (j <= na && a[j] != e[i + 1]) j++
                     continue
                 }
                 if (j > na || a[j] != e[i]) exit 1
                 j++
             }
             exit (j == na + 1) ? 0 : 1
         }' "$1" "$2"
}

# scratch PAGE: a fresh directory for the page's blocks
scratch() {
    d="$TMP/docs/$(echo "$1" | tr '/.' '__')"
    rm -rf "$d"
    mkdir -p "$d/results" "$d/blocks"
    # build/pipesim is the binary under test (BIN: build-san/pipesim
    # under make SAN=... test), as is pipesim on PATH
    mkdir -p "$d/build"
    ln -s "$BINDIR/$(basename "$BIN")" "$d/build/pipesim"
    for x in lua scenarios tests; do ln -s "$ROOT/$x" "$d/$x"; done
    ln -s "$ROOT/results/queries" "$d/results/queries"
    echo "$d"
}

for page in $PAGES; do
    d=$(scratch "$page")
    extract "$page" "$d/blocks"
    last=""
    lastout=""
    while read -r k tag line db; do
        f="$d/blocks/$k.$tag"
        where="$page:$line"
        case $tag in
        lua)
            name=$(sed -n '1s/^-- \([A-Za-z0-9_.-]*\.lua\): .*/\1/p' "$f")
            [ -n "$name" ] && cp "$f" "$d/$name"
            if (cd "$d" && pipesim run "blocks/$k.lua" -D quick=1 \
                -o "blocks/$k.db") </dev/null >"$d/blocks/$k.log" 2>&1; then ok; else
                bad "$where: the lua block fails: $(tail -n 3 "$d/blocks/$k.log")"
            fi
            last=lua
            ;;
        sh)
            if (cd "$d" && sh -e "blocks/$k.sh") </dev/null >"$d/blocks/$k.log" 2>&1; then ok; else
                bad "$where: the sh block fails: $(tail -n 3 "$d/blocks/$k.log")"
            fi
            last=sh
            lastout="$d/blocks/$k.log"
            ;;
        sql)
            if [ ! -f "$d/$db" ]; then
                bad "$where: the sql block's database $db does not exist (an earlier block of the page makes it)"
            elif (cd "$d" && sqlite3 -bail "$db" <"blocks/$k.sql") </dev/null >"$d/blocks/$k.log" 2>&1; then ok; else
                bad "$where: the sql block fails on $db: $(tail -n 3 "$d/blocks/$k.log")"
            fi
            last=sh
            lastout="$d/blocks/$k.log"
            ;;
        output)
            if [ "$last" != sh ]; then
                bad "$where: an output block follows no sh or sql block"
            elif matches "$f" "$lastout"; then ok; else
                bad "$where: the output differs from what the block above prints:"
                diff "$f" "$lastout" | head -n 10
                # DOCS_UPDATE=1: the block becomes what was printed (not
                # where it has "..." lines: those are edited by hand)
                if [ -n "${DOCS_UPDATE:-}" ] && ! grep -qx '\.\.\.' "$f"; then
                    echo "$line $lastout" >>"$d/updates"
                fi
            fi
            last=""
            ;;
        norun) last="" ;;
        bad)
            bad "$where: a lua, sh or sql block tagged neither as the convention says nor 'no-run: WHY'"
            last=""
            ;;
        esac
    done <"$d/blocks/list"
    # apply the updates bottom up, so that the lines above stay where they are
    if [ -s "$d/updates" ]; then
        sort -rn "$d/updates" | while read -r line out; do
            awk -v start="$line" -v out="$out" '
                NR == start { print; while ((getline l < out) > 0) { sub(/[ \t]+$/, "", l); print l }
                              skip = 1; next }
                skip && /^ *```/ { skip = 0 }
                !skip { print }' "$page" >"$d/page.new" && cat "$d/page.new" >"$page"
        done
        echo "updated: $page (check git diff)"
    fi
done

# links: every relative target exists, every #anchor is a heading there
# (anchors as GitHub makes them: lower case, punctuation dropped, spaces
# to dashes)
anchors() {
    awk '/^ *```/ { inb = !inb; next }
         !inb && /^#+ / {
             h = $0; sub(/^#+ /, "", h); h = tolower(h)
             gsub(/[^a-z0-9_ -]/, "", h); gsub(/ /, "-", h); print h
         }' "$1"
}
links=0
for page in $PAGES; do
    dir=$(dirname "$page")
    # ](target) outside code blocks
    awk '/^ *```/ { inb = !inb; next }
         !inb { s = $0
                while (match(s, /\]\([^) ]+\)/)) {
                    print substr(s, RSTART + 2, RLENGTH - 3)
                    s = substr(s, RSTART + RLENGTH)
                } }' "$page" >"$TMP/docs/links"
    while read -r t; do
        case $t in http://* | https://* | mailto:*) continue ;; esac
        links=$((links + 1))
        file=${t%%#*}
        frag=""
        case $t in *#*) frag=${t#*#} ;; esac
        if [ -z "$file" ]; then target=$page; else target="$dir/$file"; fi
        if [ ! -e "$target" ]; then
            bad "$page: link to $t: no file $target"
        elif [ -n "$frag" ] && ! anchors "$target" | grep -qx -- "$frag"; then
            bad "$page: link to $t: no heading #$frag in $target"
        else ok; fi
    done <"$TMP/docs/links"
done
[ "$links" -gt 0 ] || bad "no relative link checked"

if [ -z "${DOCS_PAGES:-}" ]; then
    n=$(wc -l <README.md)
    [ "$n" -lt 300 ] && ok || bad "README.md has $n lines (the limit is 299)"

    # the self-check: a page with one mistake of each kind fails each of
    # them, and its good blocks pass (a checker that cannot fail is none)
    S="$TMP/docs-self"
    mkdir -p "$S/pages"
    cat >"$S/pages/self.md" <<'PAGE'
# Self-check

```sh
echo one; echo two; echo three
```

```output
one
...
three
```

```sh
echo one
```

```output
two
```

```sh
false
```

```lua
error("a failing scenario")
```

```lua no-run
```

```sql
SELECT 1;
```

[a link](nowhere.md) and [an anchor](#self-check), [a wrong one](#nothing)
PAGE
    DOCS_PAGES="$S/pages/self.md" BIN="$BIN" TMP="$S" sh "$0" >"$S/out" 2>&1
    if [ "$(tail -n 1 "$S/out")" = "4 passed, 7 failed" ]; then ok; else
        bad "self-check: expected '4 passed, 7 failed', got:"
        cat "$S/out"
    fi
fi

echo "$P passed, $F failed"
