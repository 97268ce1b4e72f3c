/* The binding's checking vocabulary: field readers that name the field and
 * quote the bad value, integers checked in 64 bits before they are narrowed,
 * lists checked for holes, and unknown keys rejected with a suggestion.
 * Lua modules use the same checker through core.check_fields (argcheck.lua),
 * so every "unknown field" message in pipesim has one format. */
#include "bind/bind.h"

#include <lauxlib.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unit.h"

/* --- names and values in messages --- */

const char *bind_join(char *buf, size_t n, const char *path, const char *key)
{
    if (!path || !*path)
        snprintf(buf, n, "%s", key);
    else
        snprintf(buf, n, "%s.%s", path, key);
    return buf;
}

/* The last component of a dotted field name: the key to read. */
static const char *key_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? dot + 1 : name;
}

/* [-0, +1] pushes the text it returns */
const char *bind_show(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        luaL_addchar(&b, '\'');
        for (size_t i = 0; i < len && i < 60; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c == 0)
                luaL_addstring(&b, "\\0");
            else if (c < 32 || c == 127) {
                char esc[8];
                snprintf(esc, sizeof esc, "\\x%02x", c);
                luaL_addstring(&b, esc);
            } else
                luaL_addchar(&b, (char)c);
        }
        if (len > 60)
            luaL_addstring(&b, "...");
        luaL_addchar(&b, '\'');
        luaL_pushresult(&b);
        break;
    }
    case LUA_TNUMBER:
    case LUA_TBOOLEAN:
    case LUA_TNIL: luaL_tolstring(L, idx, NULL); break;
    default: lua_pushfstring(L, "a %s", luaL_typename(L, idx)); break;
    }
    return lua_tostring(L, -1);
}

/* [-0, +0] raises */
void bind_field_error(lua_State *L, const char *name, const char *what,
                      int value)
{
    if (value) {
        value = lua_absindex(L, value);
        luaL_error(L, "field '%s' %s, got %s", name, what, bind_show(L, value));
    }
    luaL_error(L, "field '%s' %s", name, what);
}

/* --- unknown fields --- */

/* Levenshtein distance of two short strings (longer ones are cut at 63
 * characters: only names are compared). */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63)
        la = 63;
    if (lb > 63)
        lb = 63;
    size_t prev[64], cur[64];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (prev[j - 1] + cost < d)
                d = prev[j - 1] + cost;
            cur[j] = d;
        }
        memcpy(prev, cur, (lb + 1) * sizeof *prev);
    }
    return prev[lb];
}

const char *bind_suggest(const char *word, const char *const *known)
{
    const char *best = NULL;
    size_t best_d = 0, n = strlen(word);
    for (; *known; known++) {
        if ((*known)[0] == '[')
            continue; /* positional entries are not suggestions */
        size_t d = distance(word, *known);
        if (!best || d < best_d || (d == best_d && strcmp(*known, best) < 0)) {
            best = *known;
            best_d = d;
        }
    }
    size_t limit = n / 3 > 2 ? n / 3 : 2;
    return best && best_d <= limit && best_d < n ? best : NULL;
}

/* [-0, +1] Pushes the key at idx as a field name: a string as is, an integer as
 * "[3]" (list entries, which known lists spell that way too). */
static const char *key_name(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TSTRING)
        lua_pushvalue(L, idx);
    else if (lua_isinteger(L, idx))
        lua_pushfstring(L, "[%I]", lua_tointeger(L, idx));
    else
        lua_pushfstring(L, "[%s]", bind_show(L, idx));
    return lua_tostring(L, -1);
}

static int is_known(const char *k, const char *const *known)
{
    for (; *known; known++)
        if (strcmp(k, *known) == 0)
            return 1;
    return 0;
}

/* [-0, +0] Raises "<path>: unknown field 'k' (did you mean 'x'?)", or with the
 * known names when none is close. */
static void unknown_field(lua_State *L, const char *path, const char *k,
                          const char *const *known)
{
    const char *hint = k[0] != '[' ? bind_suggest(k, known) : NULL;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    if (*path) {
        luaL_addstring(&b, path);
        luaL_addstring(&b, ": ");
    }
    luaL_addstring(&b, "unknown field ");
    if (k[0] == '[') {
        luaL_addstring(&b, k);
    } else {
        luaL_addchar(&b, '\'');
        luaL_addstring(&b, k);
        luaL_addchar(&b, '\'');
    }
    if (hint) {
        luaL_addstring(&b, " (did you mean '");
        luaL_addstring(&b, hint);
        luaL_addstring(&b, "'?)");
    } else {
        const char *sep = " (known: ";
        for (; *known; known++) {
            if ((*known)[0] == '[')
                continue;
            luaL_addstring(&b, sep);
            luaL_addstring(&b, *known);
            sep = ", ";
        }
        if (sep[0] == ',')
            luaL_addchar(&b, ')');
    }
    luaL_pushresult(&b);
    lua_error(L);
}

/* [-0, +0] */
/* [-0, +1] The names of a static list as a set table { name = true },
 * built once and kept in the registry under the list's address: the run
 * table's ~15 keys then cost one hash lookup each instead of a strcmp
 * against every name of a 50-name list (a sweep checks every run). */
static int known_set(lua_State *L, const char *const *known)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, known) == LUA_TTABLE)
        return lua_gettop(L);
    lua_pop(L, 1);
    lua_newtable(L);
    for (const char *const *k = known; *k; k++) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, *k);
    }
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, known);
    return lua_gettop(L);
}

/* bind_check_fields; set is the stack index of known's set (known_set), or
 * 0 for a list that is not static (core.check_fields's). */
static void check_fields(lua_State *L, int idx, const char *path,
                         const char *const *known, int set)
{
    idx = lua_absindex(L, idx);
    int bad = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        /* fast path: most keys are short strings that match */
        if (lua_type(L, -1) == LUA_TSTRING) {
            int hit;
            if (set) {
                lua_pushvalue(L, -1);
                hit = lua_rawget(L, set) != LUA_TNIL;
                lua_pop(L, 1);
            } else {
                hit = is_known(lua_tostring(L, -1), known);
            }
            if (hit)
                continue;
        }
        if (!is_known(key_name(L, -1), known))
            bad = 1;
        lua_pop(L, 1);
    }
    if (!bad)
        return;
    /* report the first unknown key in sorted order: table order varies
     * from run to run, the message should not */
    int top = lua_gettop(L);
    lua_pushnil(L); /* slot for the smallest unknown name */
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        const char *k = key_name(L, -1);
        if (!is_known(k, known) &&
            (lua_isnil(L, top + 1) || strcmp(k, lua_tostring(L, top + 1)) < 0))
            lua_replace(L, top + 1);
        else
            lua_pop(L, 1);
    }
    unknown_field(L, path, lua_tostring(L, top + 1), known);
}

void bind_check_fields(lua_State *L, int idx, const char *path,
                       const char *const *known)
{
    idx = lua_absindex(L, idx);
    check_fields(L, idx, path, known, known_set(L, known));
    lua_pop(L, 1);
}

/* --- lists --- */

/* [-0, +0] */
lua_Integer bind_list_len(lua_State *L, int idx, const char *name)
{
    idx = lua_absindex(L, idx);
    lua_Integer n = 0, max = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1) {
            const char *k = key_name(L, -1);
            luaL_error(L, "field '%s' must be a list, but has the key %s", name,
                       k[0] == '[' ? k : lua_pushfstring(L, "'%s'", k));
        }
        lua_Integer i = lua_tointeger(L, -1);
        if (i > max)
            max = i;
        n++;
    }
    if (n != max) {
        lua_Integer hole = 1;
        while (lua_geti(L, idx, hole) != LUA_TNIL) {
            lua_pop(L, 1);
            hole++;
        }
        luaL_error(L,
                   "field '%s' must be a list without holes: %s[%I] is nil "
                   "but %s[%I] is set",
                   name, name, hole, name, max);
    }
    return n;
}

/* [-0, +(0|1)] pushes the table when it returns 1 */
int bind_table(lua_State *L, int idx, const char *name, const char *hint)
{
    int t = lua_getfield(L, idx, key_of(name));
    if (t == LUA_TTABLE)
        return 1;
    if (t != LUA_TNIL) {
        int value = lua_gettop(L); /* before the message is pushed */
        bind_field_error(L, name,
                         hint ? lua_pushfstring(L, "must be a table %s", hint)
                              : "must be a table",
                         value);
    }
    lua_pop(L, 1);
    return 0;
}

/* --- field readers --- */

/* [-0, +0] */
int bind_parse_quantity(lua_State *L, int idx, int kind, double *out,
                        ps_err *err)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    return unit_parse_len(s, len, (enum unit_kind)kind, out, err);
}

/* The name of field key of the table at path, pushed: built only for
 * messages (a sweep reads thousands of fields per second). [-0, +1] */
static const char *push_name(lua_State *L, const char *path, const char *key)
{
    if (!path || !*path)
        lua_pushstring(L, key);
    else
        lua_pushfstring(L, "%s.%s", path, key);
    return lua_tostring(L, -1);
}

/* [-0, +0] The quantity at the top of the stack (not nil) into *out; must be >
 * min (strict) or >= min unless min is -INFINITY. */
static void quantity_at_top(lua_State *L, const char *path, const char *key,
                            int kind, double min, int strict, double *out)
{
    int v = lua_gettop(L);
    if (lua_type(L, v) == LUA_TNUMBER) {
        *out = lua_tonumber(L, v);
        if (!isfinite(*out))
            bind_field_error(L, push_name(L, path, key),
                             "must be a finite number", v);
    } else if (lua_type(L, v) == LUA_TSTRING) {
        ps_err err;
        if (bind_parse_quantity(L, v, kind, out, &err))
            luaL_error(L, "field '%s': %s", push_name(L, path, key), err.msg);
    } else {
        const char *name = push_name(L, path, key);
        bind_field_error(L, name,
                         lua_pushfstring(L,
                                         "must be a number or a string with "
                                         "units such as %s",
                                         unit_example((enum unit_kind)kind)),
                         v);
    }
    if (strict ? !(*out > min) : !(*out >= min)) {
        char what[64];
        if (min == 0)
            snprintf(what, sizeof what, "%s",
                     strict ? "must be positive" : "must not be negative");
        else
            snprintf(what, sizeof what, "must be %s %g",
                     strict ? ">" : ">=", min);
        bind_field_error(L, push_name(L, path, key), what, v);
    }
}

/* [-0, +0] */
void bind_quantity(lua_State *L, int idx, const char *name, int kind,
                   double *out)
{
    /* "link.bandwidth": read "bandwidth", name the whole path in errors */
    if (lua_getfield(L, idx, key_of(name)) != LUA_TNIL)
        quantity_at_top(L, NULL, name, kind, -INFINITY, 0, out);
    lua_pop(L, 1);
}

/* [-0, +0] */
int bind_quantity_min(lua_State *L, int idx, const char *name, int kind,
                      double min, int strict, double *out)
{
    return bind_quantity_in(L, idx, NULL, name, kind, min, strict, out);
}

/* [-0, +0] */
int bind_quantity_in(lua_State *L, int idx, const char *path, const char *key,
                     int kind, double min, int strict, double *out)
{
    /* with no path, key may be a dotted name: read its last component */
    if (lua_getfield(L, idx, path ? key : key_of(key)) == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    quantity_at_top(L, path, key, kind, min, strict, out);
    lua_pop(L, 1);
    return 1;
}

/* [-0, +0] leaves the value on top */
void bind_quantity_top(lua_State *L, const char *path, const char *key,
                       int kind, double min, int strict, double *out)
{
    quantity_at_top(L, path, key, kind, min, strict, out);
}

/* [-0, +0] */
const char *bind_string_in(lua_State *L, int idx, const char *path,
                           const char *key)
{
    int t = lua_getfield(L, idx, key);
    const char *s = NULL;
    if (t == LUA_TSTRING) {
        size_t len;
        s = lua_tolstring(L, -1, &len);
        if (strlen(s) != len)
            bind_field_error(L, push_name(L, path, key),
                             "must not contain a NUL byte", -2);
    } else if (t != LUA_TNIL) {
        bind_field_error(L, push_name(L, path, key), "must be a string", -2);
    }
    lua_pop(L, 1); /* the table keeps the string alive */
    return s;
}

/* [-0, +0] */
void bind_integer(lua_State *L, int idx, const char *name, long long *out)
{
    lua_getfield(L, idx, key_of(name));
    if (!lua_isnil(L, -1)) {
        int ok;
        lua_Integer v = lua_tointegerx(L, -1, &ok);
        if (!ok || lua_type(L, -1) != LUA_TNUMBER)
            bind_field_error(L, name, "must be an integer", -1);
        *out = v;
    }
    lua_pop(L, 1);
}

/* [-0, +0] */
int bind_int(lua_State *L, int idx, const char *name, long long lo,
             long long hi, long long *out)
{
    lua_getfield(L, idx, key_of(name));
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return 0;
    }
    bind_check_int(L, -1, name, lo, hi, out);
    lua_pop(L, 1);
    return 1;
}

/* [-0, +0] */
void bind_check_int(lua_State *L, int idx, const char *name, long long lo,
                    long long hi, long long *out)
{
    int ok;
    /* lua_tointegerx takes integral floats (2.0, 2^32 + 8) as they are,
     * in 64 bits; the range check comes before any narrowing */
    lua_Integer v = lua_tointegerx(L, idx, &ok);
    if (!ok || lua_type(L, idx) != LUA_TNUMBER || v < lo || v > hi) {
        char what[96];
        if (hi == LLONG_MAX)
            snprintf(what, sizeof what, "must be an integer >= %lld", lo);
        else
            snprintf(what, sizeof what, "must be an integer in %lld..%lld", lo,
                     hi);
        bind_field_error(L, name, what, idx);
    }
    *out = v;
}

/* [-0, +0] */
void bind_boolean(lua_State *L, int idx, const char *name, int *out)
{
    lua_getfield(L, idx, key_of(name));
    if (!lua_isnil(L, -1)) {
        if (!lua_isboolean(L, -1))
            bind_field_error(L, name, "must be true or false", -1);
        *out = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
}

/* [-0, +0] */
const char *bind_string(lua_State *L, int idx, const char *name)
{
    lua_getfield(L, idx, key_of(name));
    const char *s = NULL;
    if (!lua_isnil(L, -1)) {
        size_t len;
        if (lua_type(L, -1) != LUA_TSTRING)
            bind_field_error(L, name, "must be a string", -1);
        s = lua_tolstring(L, -1, &len);
        if (strlen(s) != len)
            bind_field_error(L, name, "must not contain a NUL byte", -1);
    }
    lua_pop(L, 1); /* the table keeps the string alive */
    return s;
}

/* [-0, +0] */
enum eng_p2p bind_p2p(lua_State *L, int idx, int *pytorch)
{
    const char *p2p = bind_string(L, idx, "p2p");
    if (pytorch)
        *pytorch = 0;
    if (!p2p || strcmp(p2p, "rendezvous") == 0)
        return ENG_RENDEZVOUS;
    if (strcmp(p2p, "eager") == 0)
        return ENG_EAGER;
    if (pytorch && strcmp(p2p, "pytorch") == 0) {
        *pytorch = 1;
        return ENG_RENDEZVOUS;
    }
    luaL_error(L, "field 'p2p': unknown mode '%s' (expected %s)", p2p,
               pytorch ? "rendezvous, eager or pytorch"
                       : "rendezvous or eager");
    return ENG_RENDEZVOUS;
}

/* [-0, +0] */
int bind_record(lua_State *L, int idx, enum rec_level *level)
{
    const char *r = bind_string(L, idx, "record");
    *level = REC_EVENTS;
    if (!r || strcmp(r, "events") == 0)
        return 1;
    if (strcmp(r, "summary") == 0) {
        *level = REC_SUMMARY;
        return 1;
    }
    if (strcmp(r, "none") == 0)
        return 0;
    luaL_error(L,
               "field 'record': unknown level '%s' (expected events, "
               "summary or none)",
               r);
    return 0;
}

/* [-0, +0] */
const char *bind_params_json(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    if (lua_getfield(L, idx, "params_json") == LUA_TFUNCTION) {
        lua_call(L, 0, 1);
        lua_pushvalue(L, -1);
        lua_setfield(L, idx, "params_json"); /* the table keeps it alive */
    }
    lua_pop(L, 1);
    return bind_string(L, idx, "params_json");
}

/* --- the Lua side: core.check_fields and core.suggest --- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of a Lua list or set at idx as a NULL-terminated array in a
 * userdata pushed on the stack: a list's in its order, a set's sorted (its
 * traversal order changes from run to run, as Lua seeds its string
 * hashes, and an error's "known:" list should not). The strings stay
 * alive with the table. [-0, +1] */
static const char **known_from_lua(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    luaL_checktype(L, idx, LUA_TTABLE);
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        n++;
        lua_pop(L, 1);
    }
    const char **k = lua_newuserdatauv(L, (n + 1) * sizeof *k, 0);
    size_t i = 0;
    int set = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        /* a list {"a", "b"} or a set {a = true} */
        int v = lua_type(L, -1) == LUA_TSTRING ? -1 : -2;
        set |= v == -2;
        if (lua_type(L, v) == LUA_TSTRING && i < n)
            k[i++] = lua_tostring(L, v);
        lua_pop(L, 1);
    }
    k[i] = NULL;
    if (set)
        qsort(k, i, sizeof *k, by_name);
    return k;
}

/* [-0, +0] core.check_fields(t, path, known): raises "<path>: unknown field 'k'
 * (did you mean 'x'?)" for the first key of t (in sorted order, so the
 * message does not depend on table order) not in known (a list or a set of
 * names). */
static int core_check_fields(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    const char *path = luaL_optstring(L, 2, "");
    const char **known = known_from_lua(L, 3); /* stays on the stack */
    check_fields(L, 1, path, known, 0);        /* not static: no cached set */
    return 0;
}

/* [-0, +1] core.check_int(v, name, lo, hi) -> v as an integer, or raises "field
 * 'name' must be an integer in lo..hi, got v": the Lua modules' integer
 * fields get the binding's check and message. */
static int core_check_int(lua_State *L)
{
    const char *name = luaL_checkstring(L, 2);
    long long lo = luaL_checkinteger(L, 3), hi = luaL_checkinteger(L, 4), v;
    bind_check_int(L, 1, name, lo, hi, &v);
    lua_pushinteger(L, (lua_Integer)v);
    return 1;
}

/* [-0, +1] */
static int core_suggest(lua_State *L)
{
    const char *word = luaL_checkstring(L, 1);
    const char **known = known_from_lua(L, 2);
    const char *s = bind_suggest(word, known);
    if (s)
        lua_pushstring(L, s);
    else
        lua_pushnil(L);
    return 1;
}

const luaL_Reg bind_check_funcs[] = {
    {"check_fields", core_check_fields},
    {"suggest", core_suggest},
    {"check_int", core_check_int},
    {NULL, NULL},
};
