"""pipesim in Python: the simulator's C core and Lua front end in this
process (no subprocess per run).

    import pipesim
    c = pipesim.cluster(ranks=4, device={"flops": "312 TFLOPS", "memory": "80 GiB"})
    r = pipesim.run(cluster=c, layers=[...], stages=4, microbatches=8, db="x.db")
    r.makespan, r["bubble"]

pipesim.run, .collective, .search, .cluster, .sweep, .nccl_tests take the keyword
arguments of the Lua tables (docs/python.md); any other ps.* is reachable
as an attribute (pipesim.models.preset("llama3-8b"), pipesim.clusters.dgx(
"h100", 2), pipesim.partition...). Results are dicts (Result: also by
attribute); clusters, functions and other Lua objects are LuaObject
handles that pass back as they came; Python functions pass as Lua
functions (a sweep's run). Errors raise pipesim.Error with
pipesim's one-line message.
"""
import atexit
import os
import sqlite3

from . import _core

__all__ = ["Error", "LuaObject", "Result", "run", "collective", "search",
           "cluster", "sweep", "nccl_tests", "run_file", "read", "close", "LUA_DIR",
           "__version__"]

Error = _core.Error
__version__ = _core.version
LUA_DIR = os.environ.get("PIPESIM_LUA") or os.path.join(os.path.dirname(__file__), "lua")
# where runs go unless db= says otherwise, as results/<scenario>.db for pipesim run
DEFAULT_DB = os.path.join("results", "python.db")


class LuaObject:
    """A Lua value held by pipesim (a cluster, a function, a table with
    methods): attributes and items read its fields, calling it calls it
    (keyword arguments become one table argument, as Lua's f{...})."""

    __slots__ = ("_pipesim_ref", "__weakref__")

    def __init__(self, ref):
        self._pipesim_ref = ref

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _core.index(self._pipesim_ref, name)

    def __getitem__(self, key):
        return _core.index(self._pipesim_ref, key, False)

    def __call__(self, *args, **kwargs):
        return _wrap(_core.call(self._pipesim_ref, args, kwargs))

    def __del__(self):
        try:
            _core.unref(self._pipesim_ref)
        except Exception:  # the interpreter is shutting down
            pass

    def __repr__(self):
        return "<pipesim.LuaObject %d>" % self._pipesim_ref


class Result(dict):
    """A result table of ps.run, ps.collective or ps.search, and every table
    inside one: a dict whose keys also read as attributes (r.makespan,
    s.best.step_time)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def frame(self, table="run"):
        """This run's rows of table (run, event, transfer, memory, stage,
        rank_stat, collective, ...) as read() returns them."""
        key = "id" if table == "run" else "run"
        return read(self.get("db") or DEFAULT_DB, table, where="%s = %d" % (key, self["id"]))


def _wrap(v):
    """Dicts as Results, at any depth (search's best, a sweep's points)."""
    if isinstance(v, dict):
        return Result((k, _wrap(x)) for k, x in v.items())
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    return v


_core.start(LUA_DIR, DEFAULT_DB, LuaObject)
_ps = _core.root()
atexit.register(lambda: close())


def _call(name, spec, kwargs):
    if spec is not None and not isinstance(spec, dict):
        raise TypeError("pipesim.%s: expected keyword arguments or one dict, got %s"
                        % (name, type(spec).__name__))
    if _ps is None:
        raise Error("pipesim: closed (pipesim.close() was called)")
    table = dict(spec or {})
    table.update(kwargs)
    if table.get("db") is None:
        # the default database's directory, as pipesim run makes results/
        os.makedirs(os.path.dirname(DEFAULT_DB), exist_ok=True)
    return _wrap(getattr(_ps, name)(table))


def run(spec=None, **kwargs):
    """One simulated training step: ps.run{...} (cluster, layers or model,
    stages, microbatches, schedule, db, ...). Returns a Result with id,
    makespan, bubble, stage_bubble, peak_memory, ..."""
    return _call("run", spec, kwargs)


def collective(spec=None, **kwargs):
    """One collective: ps.collective{...} (cluster, op, bytes, algorithm,
    ...). Returns a Result with id, time, bytes_sent, ..."""
    return _call("collective", spec, kwargs)


def search(spec=None, **kwargs):
    """Plan search: ps.search{...} (model, cluster, gpus, global_batch,
    space, ...). Returns a Result with best, pareto, dropped, ..."""
    return _call("search", spec, kwargs)


def cluster(spec=None, **kwargs):
    """A cluster: ps.cluster{...}, or ps.cluster(preset) for a table such
    as pipesim.clusters.dgx("h100", 2) returns. A LuaObject."""
    return _call("cluster", spec, kwargs)


def sweep(spec=None, **kwargs):
    """A sweep: ps.sweep{...} (name, space or points, base or run; run may
    be a Python function of the point returning the run's fields). Returns
    the list of its Results, in point order."""
    return [_wrap(r) for r in _call("sweep", spec, kwargs)]


def nccl_tests(spec=None, **kwargs):
    """nccl-tests' table on a simulated cluster: ps.nccl_tests{...}."""
    return _call("nccl_tests", spec, kwargs)


def __getattr__(name):
    """Any other field of the Lua module: pipesim.models, .clusters,
    .partition, .schedule, .show, .version, ..."""
    if name.startswith("__") or _ps is None:
        raise AttributeError(name)
    return _core.index(_ps._pipesim_ref, name)


def run_file(path, db=None, args=None, unsafe=False, jobs=1):
    """Runs a scenario file as `pipesim run PATH [-o DB] [-D k=v]...`
    does, in a Lua state of its own, sandboxed unless unsafe. Returns a
    dict: runs (added), db (the default database's path) and total (runs
    in that file, -1 when unknown)."""
    if db is None:
        base = os.path.basename(path)
        db = os.path.join("results", (base[:-4] if base.endswith(".lua") else base) + ".db")
    parent = os.path.dirname(db)
    if parent:
        os.makedirs(parent, exist_ok=True)
    defs = ["%s=%s" % (k, str(v).lower() if isinstance(v, bool) else v)
            for k, v in (args or {}).items()]
    runs, written, total = _core.run_file(LUA_DIR, os.fspath(path), os.fspath(db), defs,
                                          bool(unsafe), int(jobs))
    return {"runs": runs, "db": written, "total": total}


def read(db=None, table="run", where=None):
    """Rows of a pipesim database: a pandas DataFrame when pandas is
    installed, else a list of dicts. table is a table or view name (run,
    event, transfer, memory, stage, rank_stat, collective, bubble,
    memory_peak) or a SELECT statement; where filters a table."""
    db = db or DEFAULT_DB
    if not os.path.exists(db):
        raise Error("%s: no such file" % db)
    sql = table if table.lstrip().lower().startswith(("select", "with")) else \
        'SELECT * FROM "%s"%s' % (table.replace('"', '""'), " WHERE " + where if where else "")
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        try:
            import pandas
        except ImportError:
            pandas = None
        if pandas is not None:
            return pandas.read_sql_query(sql, con)
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]
    except sqlite3.Error as e:
        raise Error("%s: %s" % (db, e)) from None
    finally:
        con.close()


def close():
    """Commits and closes the databases this process wrote (also at exit);
    returns the runs recorded. Later calls start a new state."""
    global _ps
    if _ps is None:
        return 0
    _ps = None
    return _core.finish()
