-- ps.profile: per-layer measured costs from a CSV file, as a layer list for
-- ps.run with fwd_time / bwd_time in seconds (a profiled run uses these
-- times instead of FLOPs). Errors name the file and line: "prof.csv:3: ...".
--
-- Format: a header line, then one layer per line, in model order.
--   name       layer name (optional; default "layer <i>", from 0)
--   fwd_ms     forward time per microbatch, milliseconds     \ one of these
--   fwd_us     ... microseconds                               | per direction
--   fwd_s      ... seconds                                   /  is required
--   bwd_ms, bwd_us, bwd_s   backward time, same units (required)
--   wgt_ms, wgt_us, wgt_s   of the backward, the weight-gradient part (W of
--              a split backward; optional: without it B and W split evenly)
--   params     parameter count (optional, default 0)
--   act_bytes  activation bytes kept until the backward (optional, 0)
--   out_bytes  bytes sent to the next stage (optional, 0)
-- Fields are separated by commas and trimmed; a field may be double-quoted
-- ("a, b" and "say ""hi"""). Blank lines and lines starting with '#' are
-- skipped. Unknown columns are errors, so a typo does not silently become 0.
local check = require "pipesim.argcheck"

local M = {}

local TIME_SCALE = { ms = 1e-3, us = 1e-6, s = 1 }
local OPTIONAL = { params = true, act_bytes = true, out_bytes = true }
-- Every column a header may name (for suggestions).
local COLUMNS = { "name", "fwd_ms", "bwd_ms", "fwd_us", "bwd_us", "fwd_s", "bwd_s",
                  "wgt_ms", "wgt_us", "wgt_s", "params", "act_bytes", "out_bytes" }

local function trim(s)
    return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- Splits one CSV line into fields; nil, message on a malformed quote.
local function split(line)
    local fields, i, n = {}, 1, #line
    while true do
        while i <= n and line:sub(i, i):match("[ \t]") do i = i + 1 end
        if line:sub(i, i) == '"' then
            local buf, j = {}, i + 1
            while true do
                local q = line:find('"', j, true)
                if not q then return nil, "unterminated quoted field" end
                buf[#buf + 1] = line:sub(j, q - 1)
                if line:sub(q + 1, q + 1) == '"' then
                    buf[#buf + 1] = '"'
                    j = q + 2
                else
                    i = q + 1
                    break
                end
            end
            while i <= n and line:sub(i, i):match("[ \t]") do i = i + 1 end
            local c = line:sub(i, i)
            if c ~= "" and c ~= "," then return nil, "text after a quoted field" end
            fields[#fields + 1] = table.concat(buf)
        else
            local comma = line:find(",", i, true) or n + 1
            fields[#fields + 1] = trim(line:sub(i, comma - 1))
            i = comma
        end
        if i > n then break end
        i = i + 1 -- skip the comma
        if i > n then fields[#fields + 1] = ""; break end
    end
    return fields
end

-- Maps header names to column indexes; returns columns and the time
-- column (name, scale) chosen for fwd and bwd.
local function header(fields, where)
    local cols, time = {}, {}
    for idx, raw in ipairs(fields) do
        local name = raw:lower()
        local dir, unit = name:match("^(%a%a%a)_(%a+)$")
        if (dir == "fwd" or dir == "bwd" or dir == "wgt") and TIME_SCALE[unit] then
            if time[dir] then
                check.fail("%s: columns '%s' and '%s' both give the %s time", where,
                    time[dir].name, name, dir == "fwd" and "forward"
                        or dir == "bwd" and "backward" or "weight-gradient")
            end
            time[dir] = { name = name, scale = TIME_SCALE[unit], idx = idx }
        elseif name == "name" or OPTIONAL[name] then
            if cols[name] then check.fail("%s: duplicate column '%s'", where, name) end
            cols[name] = idx
        else
            check.fail("%s: unknown column %s%s", where, check.show(raw),
                check.hint(name, COLUMNS))
        end
    end
    for _, dir in ipairs { "fwd", "bwd" } do
        if not time[dir] then check.fail("%s: missing column '%s_ms'", where, dir) end
    end
    return cols, time
end

local function number(cell, col, where)
    local v = tonumber(cell)
    if v == nil or not check.is_finite(v) then
        check.fail("%s: column '%s' is not a number: '%s'", where, col, cell)
    end
    if v < 0 then check.fail("%s: column '%s' is negative: %s", where, col, cell) end
    return v
end

local function row(fields, cols, time, where, index)
    local l = {}
    l.name = cols.name and fields[cols.name] ~= "" and fields[cols.name]
        or ("layer " .. index)
    for _, dir in ipairs { "fwd", "bwd" } do
        local t = time[dir]
        local cell = fields[t.idx]
        if cell == "" then check.fail("%s: column '%s' is empty", where, t.name) end
        l[dir .. "_time"] = number(cell, t.name, where) * t.scale
    end
    if time.wgt then -- the W part of the backward (pipe_layer's)
        local cell = fields[time.wgt.idx]
        if cell == "" then check.fail("%s: column '%s' is empty", where, time.wgt.name) end
        l.bwd_weight_time = number(cell, time.wgt.name, where) * time.wgt.scale
        if l.bwd_weight_time > l.bwd_time then
            check.fail("%s: column '%s' is more than the backward", where, time.wgt.name)
        end
    end
    for name in pairs(OPTIONAL) do
        local idx = cols[name]
        local cell = idx and fields[idx] or ""
        l[name] = cell == "" and 0 or number(cell, name, where)
    end
    return l
end

local function load(path)
    if type(path) ~= "string" then
        check.fail("profile.load: expected a file name, got %s", type(path))
    end
    local f, err = io.open(path, "r")
    if not f then check.fail("profile: cannot open %s", err) end
    local lines = {}
    for line in f:lines() do lines[#lines + 1] = line end
    f:close()
    local layers, cols, time, width = {}, nil, nil, nil
    for lineno, line in ipairs(lines) do
        line = line:gsub("\r$", "")
        if not (line:match("^%s*$") or line:match("^%s*#")) then
            local where = path .. ":" .. lineno
            local fields, msg = split(line)
            if not fields then check.fail("%s: %s", where, msg) end
            if not cols then
                cols, time = header(fields, where)
                width = #fields
            elseif #fields ~= width then
                check.fail("%s: expected %d fields, got %d", where, width, #fields)
            else
                layers[#layers + 1] = row(fields, cols, time, where, #layers)
            end
        end
    end
    if not cols then check.fail("%s: empty file (a header line is required)", path) end
    if #layers == 0 then check.fail("%s: no layers after the header", path) end
    return layers
end

-- load(path) -> layer list { name, fwd_time, bwd_time, params, act_bytes,
-- out_bytes } in file order. Raises "<path>:<line>: <problem>" at the
-- caller's line.
M.load = check.public(load)

return M
