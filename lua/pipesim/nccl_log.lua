-- Reader of nccl-tests output (the tables all_reduce_perf and its siblings
-- print, NVIDIA/nccl-tests src/common.cu and src/util.cu), for
-- `pipesim calibrate` (lua/pipesim/calibrate.lua). One log may hold several
-- runs, each a header (`# nThread ...`), rank lines, the column header and
-- one row per size. Both layouts are read:
--   modern (nccl-tests 2.10+): size count type redop root  time algbw busbw
--                              #wrong  time algbw busbw #wrong
--   older:                     size count type [redop] [root] time algbw
--                              busbw error  time algbw busbw error
-- whichever columns the header names, with prefixes that launchers add
-- ("[1,0]<stdout>:", srun's "0: ", indentation) and NCCL INFO lines
-- between rows. Errors are one line naming the file and line.
local M = {}

-- nccl-tests' binaries (their names without _perf) -> pipesim's ops
M.OPS = {
    all_reduce = "allreduce", all_gather = "allgather", reduce_scatter = "reduce_scatter",
    broadcast = "broadcast", reduce = "reduce", alltoall = "alltoall", sendrecv = "sendrecv",
}
-- binaries pipesim has no collective for
local UNSUPPORTED = { gather = true, scatter = true, hypercube = true }

local function fail(where, fmt, ...)
    error(where .. ": " .. string.format(fmt, ...), 0)
end

-- The line without the prefixes launchers put before nccl-tests' output.
local function strip(line)
    line = line:gsub("\r$", "")
    line = line:gsub("^%s*%[%d+,%d+%]<std%a+>:", "") -- mpirun --tag-output
    line = line:gsub("^%s*%d+:%s", "")               -- srun --label
    return (line:gsub("^%s+", ""))
end

-- Whitespace-separated tokens of s.
local function tokens(s)
    local t = {}
    for w in s:gmatch("%S+") do t[#t + 1] = w end
    return t
end

-- The op a command or banner line names ("./build/all_gather_perf -b 8",
-- "# Collective test starting: all_reduce_perf"), or nil; unsupported
-- binaries raise.
local function op_named(line, where)
    for bin in line:gmatch("([%w_]+)_perf") do
        if M.OPS[bin] then return bin end
        if UNSUPPORTED[bin] then
            fail(where, "%s_perf: pipesim simulates all_reduce, all_gather, reduce_scatter, "
                .. "broadcast, reduce, alltoall and sendrecv", bin)
        end
    end
    return nil
end

-- The column header ("# size count type ... time algbw busbw ..."): the
-- index of each column, or nil when line is not one.
local function header(line)
    local body = line:match("^#(.*)$")
    if not body then return nil end
    local t = tokens(body)
    if t[1] ~= "size" or t[2] ~= "count" then return nil end
    local cols = { n = #t, names = table.concat(t, " ") }
    for i, name in ipairs(t) do
        if name == "time" then
            if not cols.time then cols.time = i else cols.time_ip = cols.time_ip or i end
        elseif name == "redop" or name == "root" or name == "type" then
            cols[name] = i
        end
    end
    if not cols.time then return nil end
    return cols
end

local function number(s)
    local v = tonumber(s)
    if v and v == v and v < math.huge and v > -math.huge then return v end
    return nil
end

-- One result row (tokens t under header cols) -> { size, count, type,
-- redop, root, oop, ip } in bytes and seconds.
local function row(t, cols, where)
    if #t ~= cols.n then
        fail(where, "expected %d columns as the header has (%s), got %d", cols.n, cols.names, #t)
    end
    local size, count = math.tointeger(tonumber(t[1])), math.tointeger(tonumber(t[2]))
    if not size or size < 0 then fail(where, "size '%s' is not a byte count", t[1]) end
    if not count or count < 0 then fail(where, "count '%s' is not an element count", t[2]) end
    local r = { size = size, count = count, type = cols.type and t[cols.type],
                redop = cols.redop and t[cols.redop],
                root = cols.root and math.tointeger(tonumber(t[cols.root])) }
    for _, k in ipairs { "time", "time_ip" } do
        local i = cols[k]
        if i then
            local v = number(t[i])
            if not v or v <= 0 then
                fail(where, "time '%s' (column %d) is not a positive number of microseconds", t[i], i)
            end
            r[k == "time" and "oop" or "ip"] = v * 1e-6
        end
    end
    return r
end

-- What the columns say the op is, given n ranks: nccl-tests prints the
-- per-rank count for all_gather, reduce_scatter and alltoall (size =
-- count x element x n), the whole array's for the others; redop is "sum"
-- for reductions and "none" otherwise, root -1 for unrooted ops. nil when
-- the columns leave it open.
local ELEMENT = { float = 4, int32 = 4, uint32 = 4, half = 2, bfloat16 = 2, double = 8,
                  int64 = 8, uint64 = 8, int8 = 1, uint8 = 1, fp8_e4m3 = 1, fp8_e5m2 = 1 }
local function infer(rows, n)
    local r
    for _, x in ipairs(rows) do if x.count > 0 then r = x; break end end
    if not r or not n or not r.redop then return nil end
    local e = ELEMENT[r.type]
    if not e then return nil end
    local whole = r.count * e == r.size
    local split = r.count * e * n == r.size and n > 1
    local reduces = r.redop ~= "none"
    local rooted = r.root and r.root >= 0
    if r.root == nil then return nil end
    if whole and reduces and not rooted then return "all_reduce" end
    if whole and reduces and rooted then return "reduce" end
    if whole and not reduces and rooted then return "broadcast" end
    if split and reduces and not rooted then return "reduce_scatter" end
    return nil -- all_gather and alltoall print the same columns
end

-- parse(text, name, opts) -> a list of runs { op (nccl-tests' name), ranks,
-- nodes, device, layout ("modern" | "older"), rows, where }. opts: ranks,
-- nodes, op (for logs that do not state them). Raises on a log with no
-- table, a malformed row, or a run whose op, ranks or nodes are unknown.
function M.parse(text, name, opts)
    opts = opts or {}
    local runs, cur, ctx = {}, nil, { ranks = {}, hosts = {}, nhosts = 0 }
    local pending_op
    local lineno = 0
    local function close()
        if cur then runs[#runs + 1] = cur; cur = nil end
    end
    for raw in (text .. "\n"):gmatch("([^\n]*)\n") do
        lineno = lineno + 1
        local where = name .. ":" .. lineno
        local line = strip(raw)
        local cols = header(line)
        if cols then
            close()
            cur = { cols = cols, rows = {}, where = where, op = pending_op, ctx = ctx,
                    layout = line:find("#wrong", 1, true) and "modern" or "older" }
            pending_op = nil
        elseif line:match("^#?%s*nThread%s") then
            close()
            ctx = { ranks = {}, hosts = {}, nhosts = 0 }
        elseif line:match("^#?%s*Rank%s+%d+") then
            local rank, host, dev = line:match("^#?%s*Rank%s+(%d+).-Pid%s+%d+%s+on%s+(%S+)%s+device%s+%d+%s+%b[]%s*(.-)%s*$")
            if rank then
                if not ctx.ranks[rank] then ctx.ranks[rank] = true; ctx.ranks[#ctx.ranks + 1] = rank end
                if not ctx.hosts[host] then ctx.hosts[host] = true; ctx.nhosts = ctx.nhosts + 1 end
                if dev ~= "" then
                    ctx.device = ctx.device == nil and dev or (ctx.device == dev and dev or false)
                end
            end
        elseif line:match("^%d") and cur then
            local t = tokens(line)
            if math.tointeger(tonumber(t[1])) and math.tointeger(tonumber(t[2] or "")) then
                cur.rows[#cur.rows + 1] = row(t, cur.cols, where)
                cur.rows[#cur.rows].line = lineno
            end
        elseif line:match("^%d+%s+%d+%s+%a") and not cur then
            fail(where, "a result row before nccl-tests' column header (# size count type ...)")
        elseif line:match("^#%s*Out of bounds") or line:match("^#%s*Avg bus bandwidth") then
            close()
        else
            pending_op = op_named(line, where) or pending_op
        end
    end
    close()
    if #runs == 0 then
        fail(name, "no nccl-tests table (a '# size count type ... time algbw busbw' header "
            .. "and its rows)")
    end
    local out = {}
    for _, r in ipairs(runs) do
        if #r.rows == 0 then fail(r.where, "a column header with no rows under it") end
        local c = r.ctx
        local ranks = opts.ranks or (#c.ranks > 0 and #c.ranks or nil)
        local nodes = opts.nodes or (c.nhosts > 0 and c.nhosts or nil)
        if not ranks then
            fail(r.where, "the log has no '# Rank N ... on HOST' lines: give the ranks and nodes "
                .. "it ran on (--ranks N --nodes N)")
        end
        nodes = nodes or 1
        if ranks % nodes ~= 0 then
            fail(r.where, "%d ranks do not split evenly over %d nodes", ranks, nodes)
        end
        local op = r.op or opts.op or infer(r.rows, ranks)
        if not op then
            fail(r.where, "cannot tell which collective this table measures: the log names no "
                .. "*_perf binary before it and its columns fit several; give --op")
        end
        if not M.OPS[op] then
            fail(r.where, "unknown op '%s' (expected all_reduce, all_gather, reduce_scatter, "
                .. "broadcast, reduce, alltoall, sendrecv)", op)
        end
        out[#out + 1] = { op = op, ranks = ranks, nodes = nodes, device = c.device or nil,
                          layout = r.layout, rows = r.rows, where = r.where,
                          in_place = r.cols.time_ip ~= nil }
    end
    return out
end

return M
