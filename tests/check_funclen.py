#!/usr/bin/env python3
"""No function in core/ over LIMIT lines, and no source file in core/, lua/,
tests/ or python/ over FILE_LIMIT lines (STYLE.md, issue 26).

A function is counted from the first line of its signature to its closing
brace, both included (clang-format's Linux braces put a function's `{` and
`}` alone at column 0, which is what this reads; `make format-check` keeps
it so). Functions in EXCEPT are allowed over the limit, each with its
reason; one listed that is no longer long fails, so the list stays exact.
Ends with "checks: N passed, N failed" (one per function, one for the
files, or one per file too long) and the case's
line. Usage: check_funclen.py [ROOT]; check_funclen.py --list N [ROOT]
prints every function over N lines, longest first, and their count."""
import os
import re
import sys

LIMIT = 100
FILE_LIMIT = 800
SOURCE = (".c", ".h", ".lua", ".sh", ".py")

# (file, function): why it may stay long for now. Every entry must be
# long, so the list stays exact. Empty: the last four (core_run,
# read_shape, pipe_stage_costs, export_main) were split after the merges
# of issue 26's round.
EXCEPT = {}

SIG_STOP = ("}", "/*", " *", "#")


def functions(path):
    """Yields (name, first line number, length) of every function."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{" and i > 0:
            j = i - 1
            while (j > 0 and lines[j - 1].strip()
                   and not lines[j - 1].startswith(SIG_STOP)
                   and not lines[j - 1].rstrip().endswith((";", "{", "}"))):
                j -= 1
            sig = " ".join(lines[j:i])
            m = re.search(r"(\w+)\s*\(", sig)
            k = i + 1
            while k < len(lines) and lines[k] != "}":
                k += 1
            if m and "=" not in sig.split("(")[0]:
                yield m.group(1), j + 1, k - j + 1
            i = k
        i += 1


def all_functions(core):
    """Yields (path under core/, name, line, length) of every function."""
    for layer in sorted(os.listdir(core)):
        d = os.path.join(core, layer)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            rel = layer + "/" + f
            for name, line, n in functions(os.path.join(d, f)):
                yield rel, name, line, n


def long_files(root):
    """Yields (path, lines) of every source file over FILE_LIMIT lines."""
    for top in ("core", "lua", "tests", "python"):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
            for f in sorted(files):
                if not f.endswith(SOURCE):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    n = sum(1 for _ in fh)
                if n > FILE_LIMIT:
                    yield os.path.relpath(path, root), n


def list_long(over, root):
    """Every function over `over` lines, longest first, then the count."""
    found = [f for f in all_functions(os.path.join(root, "core"))
             if f[3] > over]
    for rel, name, line, n in sorted(found, key=lambda f: -f[3]):
        print(f"{n:4d} core/{rel}:{line}: {name}")
    print(f"{len(found)} functions over {over} lines")
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--list":
        return list_long(int(sys.argv[2]),
                         sys.argv[3] if len(sys.argv) > 3 else ".")
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    core = os.path.join(root, "core")
    passed = failed = 0
    seen = set()
    for rel, name, line, n in all_functions(core):
        key = (rel, name)
        if n <= LIMIT:
            passed += 1
        elif key in EXCEPT:
            seen.add(key)
            passed += 1
            print(f"known long function: core/{rel}:{line}: "
                  f"{name} {n} lines ({EXCEPT[key]})")
        else:
            failed += 1
            print(f"FAIL core/{rel}:{line}: {name} is {n} lines "
                  f"(at most {LIMIT}): split it into named steps")
    for rel, name in sorted(set(EXCEPT) - seen):
        failed += 1
        print(f"FAIL core/{rel}: {name} is in EXCEPT but not over {LIMIT} "
              f"lines (or gone): remove it from EXCEPT in "
              f"tests/check_funclen.py")
    long = list(long_files(root))
    for path, n in long:
        print(f"FAIL {path} is {n} lines (at most {FILE_LIMIT}): split it "
              f"by job (a new file in core/ goes in core/README.md's map)")
    failed += len(long)
    passed += 0 if long else 1  # the one check that every file is short
    if passed + failed < 100:
        failed += 1
        print(f"FAIL only {passed + failed} functions found under {core}")
    print(f"checks: {passed} passed, {failed} failed")
    print(f"{0 if failed else 1} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
