-- The sandbox (README "Safety and limits") from the inside: what a
-- sandboxed scenario may still do works as in plain Lua, and each refusal
-- is an error at the calling line naming the function and --unsafe (the
-- one-line messages of a whole run are in tests/errors/sandbox_*.lua).
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"

local HINT = "is not allowed in a sandboxed scenario (run with --unsafe to allow it)"

-- reading files, as profiles and data files need
local CSV = "scenarios/data/llama-8b-a100.csv"
local f = io.open(CSV, "r")
H.check(f ~= nil, "io.open 'r'")
if f then H.check(f:read("l") ~= nil, "read a line"); f:close() end
f = io.open(CSV, "rb")
H.check(f ~= nil, "io.open 'rb'")
if f then f:close() end
local n = 0
for _ in io.lines(CSV) do n = n + 1 end
H.check(n > 30, "io.lines reads the file")
H.eq(#ps.profile.load(CSV), 34, "ps.profile.load")
local missing, msg = io.open("/nonexistent-pipesim/x.csv")
H.check(missing == nil and msg:find("No such file", 1, true), "a missing file is nil plus a message")
io.output(io.stdout)
io.write("") -- standard output is fine

-- text chunks, the pipesim modules, the harmless libraries
H.eq(load("return 1 + 1")(), 2, "load of text")
H.eq(load("return ...", "=chunk", "t", {})(5), 5, "load with mode and env")
local env = {}
load("x = 3", "=chunk", "bt", env)()
H.eq(env.x, 3, "mode 'bt' is narrowed to 't', text still loads")
H.check(type(string.dump(function() end)) == "string", "string.dump")
H.check(type(require "pipesim.partition") == "table", "require a shipped module")
H.check(debug.traceback("x"):find("test_sandbox.lua", 1, true), "debug.traceback")
H.check(type(os.clock()) == "number" and type(os.time()) == "number", "os.clock, os.time")
H.check(type(os.date("%Y")) == "string", "os.date")
H.check(type(os.setlocale()) == "string", "os.setlocale() queries")

-- coroutines go through pipesim's wrappers and behave as Lua's own
local gen = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) return b * 2 end)
H.eq({ gen(1), gen(5) }, { 2, 10 }, "coroutine.wrap yields and returns")
local co = coroutine.create(function() error({ code = 7 }) end)
local ok, e = coroutine.resume(co)
H.check(not ok and type(e) == "table" and e.code == 7, "resume returns the error object")
H.eq({ coroutine.resume(co) }, { false, "cannot resume dead coroutine" })
H.raises(function() coroutine.resume(5) end, "(thread expected, got number)")
local line = 50 -- the error() below
local boom = coroutine.wrap(function() error("boom") end)
H.raises(boom, "test_sandbox.lua:" .. line .. ": boom", "a wrapped error keeps its position")

-- refusals: at this file's line, naming the function
local function refused(fn, what)
    local err = H.raises(fn, what .. " " .. HINT, what)
    H.check(err and err:find("test_sandbox.lua:%d+: "), what .. " is raised at the calling line: " .. tostring(err))
end
refused(function() os.execute("true") end, "os.execute")
refused(function() io.popen("true") end, "io.popen")
refused(function() io.open("/nonexistent-pipesim/x", "w") end, "io.open with mode 'w'")
refused(function() io.open("/nonexistent-pipesim/x", "a+") end, "io.open with mode 'a+'")
refused(function() debug.getinfo(1) end, "debug.getinfo")
refused(function() load(string.dump(function() end)) end, "load of a binary chunk")
refused(function() os.setlocale("C") end, "os.setlocale with a locale")
H.eq(load(function() return nil end) ~= nil, true, "load from a reader function")

H.done()
