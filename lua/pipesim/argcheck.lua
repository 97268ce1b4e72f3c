-- Argument checks shared by the pure-Lua pipesim modules. Internal code
-- raises plain messages with error(msg, 0); public functions are wrapped by
-- `public`, which re-raises at the caller's line, so a bad argument points
-- at the user's scenario, not at library internals.
local core = require "pipesim.core"

local M = {}

-- Wraps fn so that an error raised inside it is reported at the line that
-- called the wrapper (level 2 as seen from the wrapper).
function M.public(fn)
    return function(...)
        local res = table.pack(pcall(fn, ...))
        if not res[1] then
            local err = res[2]
            if type(err) == "string" then error(err, 2) end
            error(err, 0)
        end
        return table.unpack(res, 2, res.n)
    end
end

function M.fail(fmt, ...)
    error(string.format(fmt, ...), 0)
end

local function is_finite(x)
    return type(x) == "number" and x == x and x ~= math.huge and x ~= -math.huge
end
M.is_finite = is_finite

-- A positive integer (integral float accepted: 2.0 is 2; one beyond the
-- integers, 1e300, is not: it would not format as %d).
function M.posint(v, what)
    if type(v) ~= "number" or v ~= math.floor(v) or v < 1 or not is_finite(v)
        or not math.tointeger(v) then
        M.fail("%s must be a positive integer, got %s", what, M.show(v))
    end
    return math.tointeger(v) or v
end

function M.nonneg(v, what)
    if not is_finite(v) or v < 0 then
        M.fail("%s must be a non-negative number, got %s", what, M.show(v))
    end
    return v
end

-- v when a boolean, else "<what> must be a boolean, got <v>".
function M.bool(v, what)
    if type(v) ~= "boolean" then M.fail("%s must be a boolean, got %s", what, M.show(v)) end
    return v
end

function M.show(v)
    if type(v) == "string" then return string.format("'%s'", v) end
    return tostring(v)
end

-- Sorted, comma-separated keys of a table, for "(known: ...)" messages.
function M.keys(t)
    local ks = {}
    for k in pairs(t) do ks[#ks + 1] = tostring(k) end
    table.sort(ks)
    return table.concat(ks, ", ")
end

-- Rejects fields of t that are not in allowed (a set or a list of
-- names): "<what>: unknown field 'k' (did you mean 'x'?)". The checker is
-- the C binding's (core/bind/check.c), so Lua and C tables report unknown
-- fields alike.
function M.known_fields(t, allowed, what)
    if next(t) == nil and type(allowed) == "table" then return end -- nothing to reject
    local ok, err = pcall(core.check_fields, t, what or "", allowed)
    if not ok then error(err, 0) end
end

-- v as an integer in lo..hi (an integral float is an integer), else
-- "<what>: field '<name>' must be an integer in lo..hi, got <v>": the
-- binding's check and message (core/bind/check.c).
function M.int(v, what, name, lo, hi)
    local ok, res = pcall(core.check_int, v, name, lo, hi)
    if not ok then error(what and (what .. ": " .. res) or res, 0) end
    return res
end

-- The closest name in known (a set or a list) to word, or nil.
function M.suggest(word, known)
    return core.suggest(word, known)
end

-- " (did you mean 'x'?)" for word among known, or "".
function M.hint(word, known)
    local s = core.suggest(word, known)
    return s and string.format(" (did you mean '%s'?)", s) or ""
end

return M
