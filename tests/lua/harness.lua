-- A tiny counting test harness for the Lua tests. Each failure prints one
-- "FAIL file:line: message" line; done() prints "checks: N passed, N
-- failed" (every check run, a loop's counted per iteration) and then "N
-- passed, N failed" for the cases (each check written in a test file,
-- failed when any of its runs failed), which the test runner (tests/run.sh)
-- adds up. It never exits the process,
-- so the same file runs under lua5.4 and under `pipesim run`.
-- Every test names it H: `local H = require "harness"`.
local M = { passed = 0, failed = 0 }
local cases, ncases, nbad = {}, 0, 0 -- "file:line" -> true (passed) / false

-- The first Lua frame outside this file: the test line that checked. Read
-- from debug.traceback, the one debug function a sandboxed run allows.
local function where()
    local tb = debug.traceback("", 2)
    for src, line in tb:gmatch("\n%s*([^\n]-):(%d+):") do
        if not src:find("harness.lua", 1, true) then return src .. ":" .. line end
    end
    return "?"
end

local function record(ok, msg)
    local at = where()
    local seen = cases[at]
    if seen == nil then ncases = ncases + 1 end
    if ok then
        M.passed = M.passed + 1
        if seen == nil then cases[at] = true end
    else
        M.failed = M.failed + 1
        if seen ~= false then nbad = nbad + 1; cases[at] = false end
        print("FAIL " .. at .. ": " .. tostring(msg))
    end
    return ok
end

-- Renders a value for messages; tables shallowly, as {a, b, k=v}.
local function show(v)
    if type(v) == "string" then return string.format("%q", v) end
    if type(v) ~= "table" then return tostring(v) end
    local parts = {}
    for i = 1, #v do parts[#parts + 1] = show(v[i]) end
    local keys = {}
    for k in pairs(v) do
        if not (math.type(k) == "integer" and k >= 1 and k <= #v) then keys[#keys + 1] = k end
    end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. "=" .. show(v[k]) end
    return "{" .. table.concat(parts, ", ") .. "}"
end
M.show = show

local function deep_eq(a, b)
    if type(a) ~= "table" or type(b) ~= "table" then return a == b end
    for k, v in pairs(a) do if not deep_eq(v, b[k]) then return false end end
    for k in pairs(b) do if a[k] == nil then return false end end
    return true
end
-- same(a, b): eq's comparison, for a test that needs the answer
M.same = deep_eq

-- check(cond, msg): passes when cond is truthy.
function M.check(cond, msg)
    return record(cond and true or false, msg or "check failed")
end

-- eq(got, want, msg): equality, tables compared deeply (1 == 1.0).
function M.eq(got, want, msg)
    return record(deep_eq(got, want),
        (msg and msg .. ": " or "") .. "got " .. show(got) .. ", want " .. show(want))
end

-- near(got, want, rel, msg): |got - want| <= rel * max(|want|, tiny);
-- rel defaults to 1e-9.
function M.near(got, want, rel, msg)
    rel = rel or 1e-9
    local ok = type(got) == "number" and type(want) == "number"
        and math.abs(got - want) <= rel * math.max(math.abs(want), 1e-300)
    return record(ok, string.format("%sgot %.17g, want %.17g (rel %g)",
        msg and msg .. ": " or "", tonumber(got) or 0 / 0, tonumber(want) or 0 / 0, rel))
end

-- raises(fn, substring, msg): fn() must raise an error whose message
-- contains substring (plain match). Returns the message.
function M.raises(fn, substring, msg)
    local ok, err = pcall(fn)
    if ok then
        record(false, (msg and msg .. ": " or "") .. "no error, expected one containing '" .. substring .. "'")
        return nil
    end
    err = tostring(err)
    record(err:find(substring, 1, true) ~= nil,
        (msg and msg .. ": " or "") .. "error '" .. err .. "' does not contain '" .. substring .. "'")
    return err
end

-- done(): prints the checks' line and the closing cases' line.
function M.done()
    print(string.format("checks: %d passed, %d failed", M.passed, M.failed))
    print(string.format("%d passed, %d failed", ncases - nbad, nbad))
    return M.failed == 0
end

return M
