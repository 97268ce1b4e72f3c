/* libFuzzer target: the profile CSV reader (lua/pipesim/profile.lua),
 * driven as a scenario drives it: the input is written to a file, read by
 * ps.profile.load in a Lua state (fuzz_state: kept for 256 inputs), and an
 * accepted profile is run through ps.run. Checks: a failure is a one-line
 * message; an accepted profile is a non-empty list of layers with finite times
 * >= 0. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char driver[] =
    "return function(path)\n"
    "local ok, layers = pcall(ps.profile.load, path)\n"
    "if not ok then\n"
    "  assert(type(layers) == 'string' and not layers:find('\\n'),\n"
    "         'not a one-line message: ' .. tostring(layers))\n"
    "  return\n"
    "end\n"
    "assert(type(layers) == 'table' and #layers >= 1, 'no layers')\n"
    "for i, l in ipairs(layers) do\n"
    "  for _, k in ipairs{'fwd_time', 'bwd_time', 'params', 'act_bytes',\n"
    "                     'out_bytes'} do\n"
    "    local v = l[k]\n"
    "    assert(type(v) == 'number' and v >= 0 and v < math.huge,\n"
    "           'layer ' .. i .. ' ' .. k .. ' = ' .. tostring(v))\n"
    "  end\n"
    "end\n"
    "local stages = math.min(#layers, 3)\n"
    "local ok2, err = pcall(ps.run, { layers = layers, stages = stages,\n"
    "  microbatches = 2, record = 'none' })\n"
    "assert(ok2 or (type(err) == 'string' and not err:find('\\n')),\n"
    "       'ps.run: ' .. tostring(err))\n"
    "end\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_state fs = {.uses = 256};
    const char *p = fuzz_file("profile.csv", data, size);
    if (!p)
        return 0;
    char path[256];
    snprintf(path, sizeof path, "%s", p);
    lua_State *L = fuzz_state_get(&fs, "profile.db", driver);
    lua_pushstring(L, path);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        fprintf(stderr, "profile: %s\n", lua_tostring(L, -1));
        abort();
    }
    unlink(path);
    fuzz_state_done(&fs);
    return 0;
}
