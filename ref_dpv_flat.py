import sys, importlib.util
spec = importlib.util.spec_from_file_location("ref_pt", "/tmp/sched/ref_pt.py")
ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
p, m = int(sys.argv[1]), int(sys.argv[2])
for r in range(p):
    acts = ref.dualpipev(p, m, r)
    flat = []
    for a in acts:
        if a.sub_actions is not None:
            flat.extend(a.sub_actions)
        else:
            flat.append(a)
    print(" ".join(repr(a) for a in flat))
