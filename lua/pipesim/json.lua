-- pipesim.json: Lua values as JSON text, for run.params, run.tags and a
-- sweep's points (init.lua, sweep.lua, search.lua). One writer: plain data
-- goes through the binding's copy of it (core.json_plain), which writes
-- the same text.
local core = require "pipesim.core"

-- JSON text of v appended to out. seen holds the tables being written: a
-- table inside itself is an error, not a stack overflow. Kept in Lua
-- rather than SQLite's JSON functions (issue 11): the input is a Lua
-- table, which must be walked here either way, and only the recorder may
-- call SQLite (core/README.md), so using them would mean a second copy
-- of this walk in C. Every run's params go through it, so it keeps its
-- own count of out's entries and remembers each key's quoted form.
local QKEY, nqkey = {}, 0 -- key -> its quoted text and ":", at most 4096

local function escape(c)
    return string.format("\\u%04x", c:byte())
end

-- s as a JSON string: " \ and control characters escaped, each byte that
-- is not well-formed UTF-8 (utf8.len's check: no overlong forms, no
-- surrogates) as \ufffd, as core/base/json.c writes in C, so that
-- run.params and run.tags are valid JSON for any name or tag.
local function quote(s)
    if not s:find('[%c"\\\128-\255]') then return '"' .. s .. '"' end
    local parts, np, i = {}, 0, 1
    while true do
        local ok, bad = utf8.len(s, i)
        np = np + 1
        parts[np] = (ok and s:sub(i) or s:sub(i, bad - 1)):gsub('[%c"\\]', escape)
        if ok then break end
        np = np + 1; parts[np] = "\\ufffd"
        i = bad + 1
    end
    return '"' .. table.concat(parts) .. '"'
end

local function qkey(k)
    local q = QKEY[k]
    if q then return q end
    q = quote(k) .. ":"
    if nqkey < 4096 then QKEY[k], nqkey = q, nqkey + 1 end
    return q
end

-- Number texts: tostring and "%.17g" go through snprintf, and a sweep's
-- params repeat the same few numbers, so each text is kept (at most 4096
-- of each kind). Integers and floats apart: a float key with an integer
-- value is stored as that integer (2.0 and 2), and 2^60 prints otherwise
-- as a float; 0.0 and -0.0 are one key, so zero floats are not kept.
local ITEXT, FTEXT, ntext = {}, {}, 0

local function number_text(v)
    local int = math.type(v) == "integer"
    local s = (int and ITEXT or FTEXT)[v]
    if s then return s end
    if int then s = tostring(v) else s = string.format("%.17g", v) end
    if ntext < 8192 and (int or v ~= 0) then
        (int and ITEXT or FTEXT)[v], ntext = s, ntext + 1
    end
    return s
end

-- put(v, out, n, seen) -> n: v's text in out[n + 1 ...].
local function put(v, out, n, seen)
    local t = type(v)
    if t == "table" then
        if seen[v] then error("a table contains itself (cyclic tables cannot be recorded)", 0) end
        seen[v] = true
        local len = #v
        if len > 0 or next(v) == nil then
            n = n + 1; out[n] = "["
            for i = 1, len do
                if i > 1 then n = n + 1; out[n] = "," end
                n = put(v[i], out, n, seen)
            end
            n = n + 1; out[n] = "]"
        else
            local keys, nk = {}, 0
            for k in pairs(v) do
                nk = nk + 1
                keys[nk] = type(k) == "string" and k or tostring(k)
            end
            table.sort(keys)
            n = n + 1; out[n] = "{"
            for i = 1, nk do
                local k = keys[i]
                if i > 1 then n = n + 1; out[n] = "," end
                n = n + 1; out[n] = qkey(k)
                -- a number key is found again from its text
                local x = v[k]
                if x == nil then x = v[tonumber(k)] or nil end
                n = put(x, out, n, seen)
            end
            n = n + 1; out[n] = "}"
        end
        seen[v] = nil
    elseif t == "number" then
        n = n + 1
        if v ~= v or v == math.huge or v == -math.huge then
            out[n] = "null"
        else
            out[n] = number_text(v)
        end
    elseif t == "string" then
        n = n + 1; out[n] = quote(v)
    elseif t == "boolean" then
        n = n + 1; out[n] = tostring(v)
    else
        n = n + 1; out[n] = quote(tostring(v))
    end
    return n
end

local function json(v, out, seen)
    put(v, out, #out, seen or {})
    return out
end

-- json's text of v: for plain data (no metatables, userdata or strings to
-- escape) from the binding's copy of put (core/bind/sweep.c), about 10x
-- faster; put's own when the binding leaves it (nil).
local json_plain = core.json_plain
local function json_text(v)
    return json_plain(v) or table.concat(json(v, {}))
end

return { json = json, text = json_text, put = put, qkey = qkey }
