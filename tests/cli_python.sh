#!/bin/sh
# The Python package (python/): make wheel builds it offline (Debian's
# python3-setuptools, python3-wheel, python3-dev), pip installs the wheel
# into a fresh virtual environment, and tests/python/check_pipesim.py runs
# pipesim in process from an empty directory. Without a Python toolchain the
# suite says "skip" and passes, unless PIPESIM_PYTHON_REQUIRE=1 (.ci/run).
# Env from tests/run.sh: BIN, TMP, PS_MAKE_ARGS.
set -u
SUITE=cli_python OUT=python
. tests/lib_cli.sh
unset MAKEFLAGS MFLAGS MAKELEVEL
SRC=$(pwd)
PY=""
for p in python3 /usr/bin/python3; do
    if $p -c 'import setuptools, wheel, pip, venv, sysconfig, os, sys
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null; then
        PY=$p
        break
    fi
done
if [ -z "$PY" ]; then
    if [ "${PIPESIM_PYTHON_REQUIRE:-0}" = 1 ]; then
        bad "no python3 with setuptools, wheel, venv and Python.h (Debian: python3-dev python3-venv python3-setuptools python3-wheel python3-pip)"
    else
        echo "skip: no python3 with setuptools, wheel, venv and Python.h; the Python package is not tested"
    fi
    echo "$P passed, $F failed"
    [ "$F" -eq 0 ]
    exit
fi
# shellcheck disable=SC2086
if make -s --no-print-directory PYTHON="$PY" wheel >"$TMP/wheel.log" 2>&1; then ok; else
    bad "make wheel: $(tail -n 5 "$TMP/wheel.log")"
fi
whl=$(ls build/wheel/pipesim-*.whl 2>/dev/null | head -n 1)
[ -n "$whl" ] && ok || bad "make wheel made no build/wheel/pipesim-*.whl"
# --system-site-packages: pandas from Debian (python3-pandas) where installed
# (no pip inside it: the system's pip installs into it, --python, faster)
"$PY" -m venv --without-pip --system-site-packages "$TMP/venv" >"$TMP/venv.log" 2>&1 && ok || bad "venv: $(tail -n 3 "$TMP/venv.log")"
"$PY" -m pip --python "$TMP/venv/bin/python" install -q --no-index --no-deps "$whl" >"$TMP/pip.log" 2>&1 && ok ||
    bad "pip install $whl: $(tail -n 3 "$TMP/pip.log")"
mkdir -p "$TMP/pywork"
(cd "$TMP/pywork" && "$TMP/venv/bin/python" "$SRC/tests/python/check_pipesim.py" "$SRC") >"$TMP/py.out" 2>&1
grep -E '^FAIL|^skip|Error|Traceback' "$TMP/py.out" | head -n 20
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$TMP/py.out" | tail -n 1)
if [ -n "$line" ]; then
    P=$((P + ${line%% passed*}))
    f=${line#*passed, }
    F=$((F + ${f%% failed*}))
else
    bad "check_pipesim.py ended early: $(tail -n 5 "$TMP/py.out")"
fi
# docs/python.md's examples, each from an empty directory
n=0
for b in $(awk -v d="$TMP/pydoc" '/^```python$/ { f = 1; n++; next } /^```$/ { f = 0 }
        f { print > (d n ".py") } END { for (i = 1; i <= n; i++) print d i ".py" }' docs/python.md); do
    n=$((n + 1))
    rm -rf "$TMP/pydocdir" && mkdir -p "$TMP/pydocdir"
    (cd "$TMP/pydocdir" && "$TMP/venv/bin/python" "$b") >"$TMP/pydoc.out" 2>&1 && ok ||
        bad "docs/python.md example $n: $(tail -n 3 "$TMP/pydoc.out")"
done
[ "$n" -ge 2 ] && ok || bad "docs/python.md has $n python examples"
grep -qx "ps.run: unknown field 'schedul' (did you mean 'schedule'?)" "$TMP/pydoc.out" && ok ||
    bad "docs/python.md's error example printed: $(cat "$TMP/pydoc.out")"
"$PY" -m pip --python "$TMP/venv/bin/python" uninstall -y -q pipesim >/dev/null 2>&1 && ok || bad "pip uninstall pipesim"
echo "$P passed, $F failed"
[ "$F" -eq 0 ]
