# Sourced by the command-line suites (tests/cli*.sh): pass/fail counters and
# expect_fail. The suite sets SUITE (its name in FAIL lines) and OUT (the
# prefix of the files $TMP/$OUT.stdout and $TMP/$OUT.stderr) first.
# Env from tests/run.sh: BIN, TMP, VG.
P=0
F=0
# SQL that takes schema 8's efficiency columns, schema 10's live-mode
# columns and schema 11's folded column out of a run table again, for the suites that make older
# databases to upgrade
DROP_V8="ALTER TABLE run DROP COLUMN model_flops; ALTER TABLE run DROP COLUMN hardware_flops;
    ALTER TABLE run DROP COLUMN tokens; ALTER TABLE run DROP COLUMN gpus;
    ALTER TABLE run DROP COLUMN peak_flops; ALTER TABLE run DROP COLUMN precision;
    ALTER TABLE run DROP COLUMN model_tflops_per_gpu; ALTER TABLE run DROP COLUMN mfu;
    ALTER TABLE run DROP COLUMN hardware_tflops_per_gpu;
    ALTER TABLE run DROP COLUMN tokens_per_s_per_gpu; ALTER TABLE run DROP COLUMN efficiency_note;
    ALTER TABLE run DROP COLUMN backend; ALTER TABLE run DROP COLUMN simulated;
    ALTER TABLE run DROP COLUMN folded;"
# ... and version 9's table: DROP_V8 then DROP_V9 make a version 7 file
DROP_V9="DROP TABLE rank_member;"
ok() { P=$((P + 1)); }
bad() { F=$((F + 1)); echo "FAIL $SUITE: $*"; }

# expect_fail "ARGS" "substring": non-zero exit, one stderr line with it
expect_fail() {
    args=$1 want=$2
    # shellcheck disable=SC2086
    if $VG "$BIN" $args >"$TMP/$OUT.stdout" 2>"$TMP/$OUT.stderr"; then
        bad "pipesim $args exited 0"
        return
    fi
    lines=$(wc -l <"$TMP/$OUT.stderr")
    got=$(cat "$TMP/$OUT.stderr")
    case "$got" in
    "pipesim: "*"$want"*) [ "$lines" -eq 1 ] && ok || bad "pipesim $args: $lines lines: $got" ;;
    *) bad "pipesim $args: got '$got', want 'pipesim: ...$want...'" ;;
    esac
}
