/* libFuzzer target: the readers of `pipesim calibrate`
 * (lua/pipesim/nccl_log.lua, calibrate.parse_gemm). The first byte picks
 * the reader (even: an nccl-tests log, odd: a GEMM CSV) and, for logs,
 * whether --ranks/--nodes/--op are given; the rest is the file's text,
 * parsed in a Lua state (fuzz_state: kept for 256 inputs). Checks: a
 * failure is a one-line message; an accepted log is runs of a known op
 * with ranks a multiple of nodes and rows of sizes >= 0 and finite times
 * > 0; an accepted CSV rows of positive integers, a known dtype and
 * positive seconds. No fit runs: the readers are the parsers. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char driver[] =
    "local P = require 'pipesim.nccl_log'\n"
    "local C = require 'pipesim.calibrate'\n"
    "local function one_line(ok, e)\n"
    "  assert(ok or (type(e) == 'string' and e ~= '' and not e:find('\\n')),\n"
    "         'not a one-line message: ' .. tostring(e))\n"
    "  return ok\n"
    "end\n"
    "return function(mode, text)\n"
    "  if mode % 2 == 1 then\n"
    "    local ok, rows = pcall(C.parse_gemm, text, 'g.csv')\n"
    "    if not one_line(ok, rows) then return end\n"
    "    assert(#rows >= 1, 'no rows')\n"
    "    for _, r in ipairs(rows) do\n"
    "      assert(math.type(r.m) == 'integer' and r.m > 0 and r.n > 0 and r.k "
    "> 0)\n"
    "      assert(r.seconds > 0 and r.seconds < math.huge, 'seconds')\n"
    "      assert(r.dtype == 'bf16' or r.dtype == 'fp16', 'dtype')\n"
    "    end\n"
    "    return\n"
    "  end\n"
    "  local opts = {}\n"
    "  if mode & 2 ~= 0 then opts.ranks = 8 end\n"
    "  if mode & 4 ~= 0 then opts.nodes = 2 end\n"
    "  if mode & 8 ~= 0 then opts.op = 'all_reduce' end\n"
    "  local ok, runs = pcall(P.parse, text, 'x.log', opts)\n"
    "  if not one_line(ok, runs) then return end\n"
    "  assert(#runs >= 1, 'no runs')\n"
    "  for _, r in ipairs(runs) do\n"
    "    assert(P.OPS[r.op], 'op ' .. tostring(r.op))\n"
    "    assert(r.ranks >= 1 and r.nodes >= 1 and r.ranks % r.nodes == 0)\n"
    "    assert(#r.rows >= 1, 'rows')\n"
    "    for _, row in ipairs(r.rows) do\n"
    "      assert(math.type(row.size) == 'integer' and row.size >= 0)\n"
    "      assert(row.oop > 0 and row.oop < math.huge, 'time')\n"
    "    end\n"
    "    local pts = C.points_of(runs)\n"
    "    for _, p in ipairs(pts) do assert(p.bytes > 0 and p.bytes % 4 == 0) "
    "end\n"
    "  end\n"
    "end\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_state fs = {.uses = 256};
    if (size < 1)
        return 0;
    lua_State *L = fuzz_state_get(&fs, "calibrate.db", driver);
    lua_pushinteger(L, data[0]);
    lua_pushlstring(L, (const char *)data + 1, size - 1);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
        fprintf(stderr, "calibrate: %s\n", lua_tostring(L, -1));
        abort();
    }
    fuzz_state_done(&fs);
    return 0;
}
