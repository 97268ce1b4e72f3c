/* pipesim._core: the C core and its Lua front end inside the Python process
 * (no subprocess per run). One Lua state per process holds `require
 * "pipesim"` unsandboxed (the caller is Python code, trusted as a
 * --unsafe scenario is); Python values cross as Lua values (dicts and
 * lists as tables), plain result tables come back as dicts and lists, and
 * everything else (clusters, functions, tables with a metatable) as a
 * handle, a registry reference the Python side wraps (pipesim.LuaObject).
 * run_file runs a scenario file in a state of its own, sandboxed unless
 * asked otherwise, as `pipesim run` does. Every Lua error becomes
 * pipesim.Error with pipesim's one-line message. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

#include "base/limit.h"
#include "bind/bind.h"

#define MAX_DEPTH 64 /* nesting converted either way */

static lua_State *G;           /* the process's state, or NULL */
static char *g_luadir, *g_db;  /* its bind_session strings (owned) */
static bind_session g_session; /* must outlive G */
static PyObject *g_factory;    /* ref -> pipesim.LuaObject */
static PyObject *g_error;      /* pipesim.Error */

/* ---- Python to Lua ------------------------------------------------------ */

static int push_py(lua_State *L, PyObject *v, int depth);

static int push_table(lua_State *L, PyObject *v, int depth)
{
    lua_newtable(L);
    if (PyDict_Check(v)) {
        PyObject *k, *x;
        Py_ssize_t pos = 0;
        while (PyDict_Next(v, &pos, &k, &x)) {
            if (push_py(L, k, depth + 1) || push_py(L, x, depth + 1))
                return -1;
            if (lua_isnil(L, -2)) {
                PyErr_SetString(PyExc_TypeError, "a dict key is None");
                return -1;
            }
            lua_rawset(L, -3);
        }
        return 0;
    }
    PyObject *seq = PySequence_Fast(v, "expected a sequence");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (push_py(L, PySequence_Fast_GET_ITEM(seq, i), depth + 1)) {
            Py_DECREF(seq);
            return -1;
        }
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    Py_DECREF(seq);
    return 0;
}

/* ---- Python functions called from Lua ---------------------------------- */

static PyObject *to_py(lua_State *L, int idx, int depth);

#define PYFUNC_META "pipesim.pyfunc" /* the box of a Python callable */

static int pyfunc_gc(lua_State *L)
{
    PyObject **box = luaL_checkudata(L, 1, PYFUNC_META);
    Py_CLEAR(*box);
    return 0;
}

/* The Lua function standing for a Python callable (upvalue 1, its box):
 * its arguments converted, its result back (None: nothing); a Python
 * exception becomes a Lua error "python: Type: message". The GIL is held:
 * Lua runs only inside a _core call. */
static int pyfunc_call(lua_State *L)
{
    PyObject **box = lua_touserdata(L, lua_upvalueindex(1));
    int n = lua_gettop(L);
    PyObject *args = PyTuple_New(n), *res = NULL;
    for (int i = 0; args && i < n; i++) {
        PyObject *x = to_py(L, i + 1, 0);
        if (!x) {
            Py_CLEAR(args);
            break;
        }
        PyTuple_SET_ITEM(args, i, x);
    }
    if (args && *box)
        res = PyObject_Call(*box, args, NULL);
    Py_XDECREF(args);
    if (res && res != Py_None && push_py(L, res, 0) == 0) {
        Py_DECREF(res);
        return 1;
    }
    if (res == Py_None) {
        Py_DECREF(res);
        return 0;
    }
    Py_XDECREF(res);
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    lua_pushfstring(L, "python: %s: %s",
                    type ? ((PyTypeObject *)type)->tp_name : "error",
                    msg ? msg : "?");
    PyErr_Clear();
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return lua_error(L);
}

/* [-0, +1] A Lua function calling the Python callable f. */
static void push_pyfunc(lua_State *L, PyObject *f)
{
    PyObject **box = lua_newuserdatauv(L, sizeof *box, 0);
    *box = NULL;
    if (luaL_newmetatable(L, PYFUNC_META)) {
        lua_pushcfunction(L, pyfunc_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    Py_INCREF(f);
    *box = f;
    lua_pushcclosure(L, pyfunc_call, 1);
}

/* Pushes v as a Lua value; returns 0, or -1 with a Python exception set
 * (the stack then holds partial values: the caller resets it). */
static int push_py(lua_State *L, PyObject *v, int depth)
{
    if (depth > MAX_DEPTH || !lua_checkstack(L, 4)) {
        PyErr_SetString(PyExc_ValueError,
                        "pipesim: a value nested too deeply (a cycle?)");
        return -1;
    }
    if (v == Py_None) {
        lua_pushnil(L);
    } else if (PyBool_Check(v)) {
        lua_pushboolean(L, v == Py_True);
    } else if (PyLong_Check(v)) {
        int over = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &over);
        if (over)
            lua_pushnumber(L, PyLong_AsDouble(v));
        else
            lua_pushinteger(L, (lua_Integer)x);
        if (PyErr_Occurred())
            return -1;
    } else if (PyFloat_Check(v)) {
        lua_pushnumber(L, PyFloat_AsDouble(v));
    } else if (PyUnicode_Check(v)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(v, &n);
        if (!s)
            return -1;
        lua_pushlstring(L, s, (size_t)n);
    } else if (PyBytes_Check(v)) {
        lua_pushlstring(L, PyBytes_AS_STRING(v), (size_t)PyBytes_GET_SIZE(v));
    } else if (PyObject_HasAttrString(v, "_pipesim_ref")) {
        PyObject *r = PyObject_GetAttrString(v, "_pipesim_ref");
        long ref = r ? PyLong_AsLong(r) : -1;
        Py_XDECREF(r);
        if (ref < 0 && PyErr_Occurred())
            return -1;
        lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    } else if (PyDict_Check(v) || PyList_Check(v) || PyTuple_Check(v)) {
        return push_table(L, v, depth);
    } else if (PyCallable_Check(v)) {
        push_pyfunc(L, v);
    } else {
        PyErr_Format(PyExc_TypeError,
                     "pipesim: cannot pass a %.100s to Lua (expected None, "
                     "bool, int, float, str, bytes, dict, list, tuple, a "
                     "function or a pipesim object)",
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    return 0;
}

/* ---- Lua to Python ------------------------------------------------------ */

/* A handle on the value at idx: the factory's object for a new registry
 * reference to it. */
static PyObject *handle(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    lua_pushvalue(L, idx);
    int ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return PyObject_CallFunction(g_factory, "i", ref);
}

static PyObject *to_py(lua_State *L, int idx, int depth);

/* A plain table as a list (keys 1..n, n > 0) or a dict. */
static PyObject *table_to_py(lua_State *L, int idx, int depth)
{
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx), count = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        count++;
        lua_pop(L, 1);
    }
    if (n > 0 && count == n) {
        PyObject *list = PyList_New((Py_ssize_t)n);
        for (lua_Integer i = 1; list && i <= n; i++) {
            lua_rawgeti(L, idx, i);
            PyObject *x = to_py(L, lua_gettop(L), depth + 1);
            lua_pop(L, 1);
            if (!x) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)i - 1, x);
        }
        return list;
    }
    PyObject *dict = PyDict_New();
    lua_pushnil(L);
    while (dict && lua_next(L, idx)) {
        PyObject *k = to_py(L, lua_gettop(L) - 1, depth + 1);
        PyObject *x = k ? to_py(L, lua_gettop(L), depth + 1) : NULL;
        lua_pop(L, 1);
        if (!x || PyDict_SetItem(dict, k, x)) {
            Py_XDECREF(k);
            Py_XDECREF(x);
            Py_CLEAR(dict);
            lua_pop(L, 1); /* the key: lua_next is not called again */
            break;
        }
        Py_DECREF(k);
        Py_DECREF(x);
    }
    return dict;
}

/* The value at idx as a Python value: plain tables converted (to depth
 * MAX_DEPTH), the rest as handles. NULL with an exception on failure. */
static PyObject *to_py(lua_State *L, int idx, int depth)
{
    idx = lua_absindex(L, idx);
    if (!lua_checkstack(L, 6))
        return PyErr_NoMemory();
    switch (lua_type(L, idx)) {
    case LUA_TNIL: Py_RETURN_NONE;
    case LUA_TBOOLEAN: return PyBool_FromLong(lua_toboolean(L, idx));
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            return PyLong_FromLongLong((long long)lua_tointeger(L, idx));
        return PyFloat_FromDouble((double)lua_tonumber(L, idx));
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "surrogateescape");
    }
    case LUA_TTABLE:
        if (depth < MAX_DEPTH && !lua_getmetatable(L, idx))
            return table_to_py(L, idx, depth);
        if (depth < MAX_DEPTH)
            lua_pop(L, 1);
        return handle(L, idx);
    default: return handle(L, idx);
    }
}

/* ---- calls -------------------------------------------------------------- */

/* Raises pipesim.Error with the message on top of L's stack. */
static PyObject *lua_failure(lua_State *L, int base)
{
    const char *msg = lua_tostring(L, -1);
    PyErr_SetString(g_error, msg ? msg : "(error object is not a string)");
    lua_settop(L, base);
    return NULL;
}

static int need_state(void)
{
    if (G)
        return 0;
    PyErr_SetString(g_error, "pipesim: the library is not started (import "
                             "pipesim starts it)");
    return -1;
}

static PyObject *core_start(PyObject *self, PyObject *args)
{
    (void)self;
    const char *luadir, *db;
    PyObject *factory;
    if (!PyArg_ParseTuple(args, "ssO", &luadir, &db, &factory))
        return NULL;
    if (G)
        Py_RETURN_NONE;
    limit_set_memory(limit_default_memory());
    lua_State *L = bind_newstate();
    if (!L)
        return PyErr_NoMemory();
    luaL_openlibs(L);
    g_luadir = strdup(luadir);
    g_db = strdup(db);
    if (!g_luadir || !g_db) {
        lua_close(L);
        return PyErr_NoMemory();
    }
    g_session = (bind_session){g_db, "<python>", NULL, 0, 1, 0, 0};
    bind_setup(L, g_luadir, &g_session);
    Py_INCREF(factory);
    g_factory = factory;
    G = L;
    Py_RETURN_NONE;
}

/* _core.root(): a handle on require "pipesim". */
static PyObject *core_root(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    if (need_state())
        return NULL;
    int base = lua_gettop(G);
    lua_getglobal(G, "require");
    lua_pushstring(G, "pipesim");
    if (lua_pcall(G, 1, 1, 0) != LUA_OK)
        return lua_failure(G, base);
    PyObject *h = handle(G, -1);
    lua_settop(G, base);
    return h;
}

/* [-0, +1] the value of a handle */
static void push_ref(lua_State *L, int ref)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
}

static int index_k(lua_State *L)
{
    lua_gettable(L, 1);
    return 1;
}

/* _core.index(ref, key): obj[key], converted; tables too stay handles
 * when nav is true (pipesim.models.preset, ...). */
static PyObject *core_index(PyObject *self, PyObject *args)
{
    (void)self;
    int ref, nav = 1;
    PyObject *key;
    if (!PyArg_ParseTuple(args, "iO|p", &ref, &key, &nav) || need_state())
        return NULL;
    int base = lua_gettop(G);
    lua_pushcfunction(G, index_k);
    push_ref(G, ref);
    if (push_py(G, key, 0)) {
        lua_settop(G, base);
        return NULL;
    }
    if (lua_pcall(G, 2, 1, 0) != LUA_OK)
        return lua_failure(G, base);
    PyObject *v =
        nav && lua_type(G, -1) == LUA_TTABLE ? handle(G, -1) : to_py(G, -1, 0);
    lua_settop(G, base);
    return v;
}

/* _core.call(ref, args, kwargs): the function's results (None, one value
 * or a tuple); kwargs, when given, as one table after args. */
static PyObject *core_call(PyObject *self, PyObject *args)
{
    (void)self;
    int ref;
    PyObject *pos, *kw;
    if (!PyArg_ParseTuple(args, "iO!O", &ref, &PyTuple_Type, &pos, &kw) ||
        need_state())
        return NULL;
    int base = lua_gettop(G);
    push_ref(G, ref);
    Py_ssize_t n = PyTuple_GET_SIZE(pos);
    for (Py_ssize_t i = 0; i < n; i++)
        if (push_py(G, PyTuple_GET_ITEM(pos, i), 0)) {
            lua_settop(G, base);
            return NULL;
        }
    int has_kw = kw != Py_None && PyDict_Size(kw) > 0;
    if (has_kw && push_py(G, kw, 0)) {
        lua_settop(G, base);
        return NULL;
    }
    if (lua_pcall(G, (int)n + has_kw, LUA_MULTRET, 0) != LUA_OK)
        return lua_failure(G, base);
    int nres = lua_gettop(G) - base;
    PyObject *out = NULL;
    if (nres == 0) {
        out = Py_NewRef(Py_None);
    } else if (nres == 1) {
        out = to_py(G, base + 1, 0);
    } else if ((out = PyTuple_New(nres))) {
        for (int i = 0; i < nres; i++) {
            PyObject *x = to_py(G, base + 1 + i, 0);
            if (!x) {
                Py_CLEAR(out);
                break;
            }
            PyTuple_SET_ITEM(out, i, x);
        }
    }
    lua_settop(G, base);
    return out;
}

static PyObject *core_unref(PyObject *self, PyObject *args)
{
    (void)self;
    int ref;
    if (!PyArg_ParseTuple(args, "i", &ref))
        return NULL;
    if (G)
        luaL_unref(G, LUA_REGISTRYINDEX, ref);
    Py_RETURN_NONE;
}

/* _core.finish(): commits and closes the databases the process wrote
 * (bind_finish) and the state; returns the runs recorded. */
static PyObject *core_finish(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    if (!G)
        return PyLong_FromLong(0);
    long runs = 0;
    const char *path = NULL;
    ps_err err;
    int rc = bind_finish(G, &runs, &path, &err);
    lua_close(G);
    G = NULL;
    free(g_luadir);
    free(g_db);
    g_luadir = g_db = NULL;
    if (rc) {
        PyErr_SetString(g_error, err.msg);
        return NULL;
    }
    return PyLong_FromLong(runs);
}

/* ---- run_file ----------------------------------------------------------- */

/* _core.run_file(luadir, path, db, defs, unsafe, jobs): the scenario in a
 * state of its own, as pipesim run runs it; returns (runs, db path or
 * None, runs in the file or -1). */
static PyObject *core_run_file(PyObject *self, PyObject *args)
{
    (void)self;
    const char *luadir, *path, *db;
    PyObject *defs;
    int unsafe, jobs;
    if (!PyArg_ParseTuple(args, "sssO!pi", &luadir, &path, &db, &PyList_Type,
                          &defs, &unsafe, &jobs))
        return NULL;
    Py_ssize_t nd = PyList_GET_SIZE(defs);
    const char **dv = calloc((size_t)nd + 1, sizeof *dv);
    if (!dv)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < nd; i++)
        if (!(dv[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(defs, i)))) {
            free(dv);
            return NULL;
        }
    lua_State *L = bind_newstate();
    if (!L) {
        free(dv);
        return PyErr_NoMemory();
    }
    luaL_openlibs(L);
    bind_session s = {db, path, dv, (int)nd, jobs, 0, 0};
    bind_setup(L, luadir, &s);
    if (!unsafe)
        bind_sandbox(L, luadir, path, db);
    int status = bind_load_scenario(L, path, !unsafe);
    if (status == LUA_OK)
        status = lua_pcall(L, 0, 0, 0);
    PyObject *out = NULL;
    char msg[sizeof((ps_err *)0)->msg] = "";
    if (status != LUA_OK) {
        const char *m = lua_tostring(L, -1);
        snprintf(msg, sizeof msg, "%s", m ? m : "(error object)");
    }
    long runs = 0;
    const char *written = NULL;
    ps_err err;
    int finish = bind_finish(L, &runs, &written, &err);
    if (status == LUA_OK && finish)
        snprintf(msg, sizeof msg, "%s", err.msg);
    if (*msg)
        PyErr_SetString(g_error, msg);
    else
        out = Py_BuildValue("(lsL)", runs, written ? written : db,
                            (long long)bind_finish_total(L));
    lua_close(L);
    free(dv);
    return out;
}

static PyMethodDef core_methods[] = {
    {"start", core_start, METH_VARARGS,
     "start(luadir, default_db, factory): the process's Lua state"},
    {"root", core_root, METH_NOARGS, "a handle on require 'pipesim'"},
    {"index", core_index, METH_VARARGS, "index(ref, key[, nav]): obj[key]"},
    {"call", core_call, METH_VARARGS, "call(ref, args, kwargs): obj(...)"},
    {"unref", core_unref, METH_VARARGS, "unref(ref): drop a handle"},
    {"finish", core_finish, METH_NOARGS, "commit, close; the runs recorded"},
    {"run_file", core_run_file, METH_VARARGS,
     "run_file(luadir, path, db, defs, unsafe, jobs): a scenario file"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    "pipesim._core",
    "pipesim's C core and Lua front end, in process",
    -1,
    core_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__core(void); /* the one exported name */
PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *m = PyModule_Create(&core_module);
    if (!m)
        return NULL;
    g_error = PyErr_NewExceptionWithDoc(
        "pipesim.Error", "a pipesim error: its one-line message", NULL, NULL);
    if (!g_error || PyModule_AddObjectRef(m, "Error", g_error) ||
        PyModule_AddStringConstant(m, "version", PS_VERSION)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
