#!/usr/bin/env python3
"""The layer map at link level: every call (an undefined symbol of one core
object resolved by another) goes to the same layer or below, as includes do
(tests/check_includes.sh), and no two files call each other, directly or
around a circle (STYLE.md: "a circle means a piece belongs below both").

Reads the objects of BUILD/core/<layer>/*.o with nm. Circles that exist
today are listed in KNOWN below, each to be broken (issue 26); a circle not
listed fails, and so does a listed one that is gone (so the list stays
true). Ends with "checks: N passed, N failed" (one per call and circle)
and the case's line: "1 passed, 0 failed", or every failure counted.
Usage: check_links.py BUILD"""
import os
import subprocess
import sys

# tests/check_includes.sh's layers, top first
LAYERS = {"cli": 10, "bind": 9, "run": 8, "out": 7, "step": 6, "par": 5,
          "sched": 4, "coll": 4, "rec": 3, "sim": 2, "live": 2, "net": 1,
          "base": 0}

# Circles of files found when the folders were made (issue 26 lists them),
# each as its sorted files; breaking one means removing it here. Broken so
# far: bind/core <-> pool <-> sandbox <-> sweep <-> worker (the session's
# database hook, run/proc.c's proc_is_worker, run/version.c); the 12 files
# of rec/ (rec/sql.c under every writer, the timeline's INSERTs and
# rec_rows_insert in rec/rows.c; the schema's statements on the connection
# as it is, rec_exec_conn; a copy's publish and begin in rec/txn.c;
# rec_write's shipping in rec/ship.c above rec_write_run, and
# rec_stream_cancel in rec/rec.c below rec/stream.c). None is left.
KNOWN = set()


def nm(path, *flags):
    out = subprocess.run(["nm", *flags, path], capture_output=True,
                         text=True, check=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if parts:
            syms.add(parts[-1])
    return syms


def sccs(graph):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(tuple(sorted(comp)))
    return out


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    root = os.path.join(build, "core")
    objs = {}
    for layer in sorted(os.listdir(root)):
        d = os.path.join(root, layer)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            # an object whose source is gone (a file moved to another
            # folder, an old build) is no part of the tree
            src = os.path.join("core", layer, f[:-2] + ".c")
            if f.endswith(".o") and f != "embed_tool.o" and \
                    os.path.exists(src):
                objs[layer + "/" + f[:-2]] = os.path.join(d, f)
    passed = failed = 0
    if not objs:
        print(f"FAIL no objects under {root}: build first")
        print("checks: 0 passed, 1 failed")
        print("0 passed, 1 failed")
        return 1
    defined, undefined = {}, {}
    for name, path in objs.items():
        for s in nm(path, "-g", "--defined-only"):
            defined.setdefault(s, name)
        undefined[name] = nm(path, "-u")
    graph = {name: set() for name in objs}
    for name, syms in undefined.items():
        lf = LAYERS.get(name.split("/")[0])
        if lf is None:
            failed += 1
            print(f"FAIL {name}: folder is no layer")
            continue
        for s in sorted(syms):
            to = defined.get(s)
            if to is None or to == name:
                continue
            graph[name].add(to)
            lt = LAYERS[to.split("/")[0]]
            if lt <= lf:
                passed += 1
            else:
                failed += 1
                print(f"FAIL {name} (layer {lf}) calls {s} of {to} "
                      f"(layer {lt}): a call back up")
    found = set(sccs(graph))
    for c in sorted(found):
        if c in KNOWN:
            passed += 1
            print(f"known circle (to break): {' <-> '.join(c)}")
        else:
            failed += 1
            print(f"FAIL a circle of files: {' <-> '.join(c)}")
    for c in sorted(KNOWN - found):
        failed += 1
        print(f"FAIL circle {' <-> '.join(c)} is gone: remove it from "
              f"KNOWN in tests/check_links.py")
    print(f"checks: {passed} passed, {failed} failed")
    print(f"{0 if failed else 1} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
