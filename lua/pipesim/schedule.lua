-- ps.schedule: pipeline schedules as files. load_pytorch reads PyTorch's
-- schedule CSV, the format torch.distributed.pipelining's
-- _PipelineScheduleRuntime._load_csv reads (and _dump_csv writes): one row
-- per pipeline rank, cells "<stage><type><microbatch>" with the global
-- stage index and F (forward), I (input-gradient backward), W (weight
-- gradient), B (full backward); empty cells are idle time steps. Comm and
-- FSDP actions (SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD,
-- REDUCE_GRAD) are read and skipped: pipesim inserts its own transfers.
-- An overlapped "(0F3;3B1)OVERLAP_F_B" becomes one FB action ("FB3/1.c1"),
-- timed by overlap_fb / fb_interference (README "Overlapped forward and
-- backward").
-- `pipesim export DB RUN --format pytorch-csv` writes the format.
local check = require "pipesim.argcheck"

local M = {}

local COMM = { SEND_F = true, RECV_F = true, SEND_B = true, RECV_B = true,
               UNSHARD = true, RESHARD = true, REDUCE_GRAD = true }

-- "3F12" -> 3, "F", 12; comm actions -> nil, "SEND_F"; else nil.
local function parse_action(cell)
    local stage, kind, mb = cell:match("^(%d+)([FIBW])(%d+)$")
    if stage then return tonumber(stage), kind, tonumber(mb) end
    local s2, comm = cell:match("^(%d+)([%u_]+)%d*$")
    if s2 and COMM[comm] then return nil, comm end
    return nil
end

local function split_row(line)
    local cells = {}
    for cell in (line .. ","):gmatch("([^,]*),") do
        cells[#cells + 1] = cell:match("^%s*(.-)%s*$")
    end
    return cells
end

local function load_pytorch(path, opts)
    if type(path) ~= "string" then
        check.fail("load_pytorch: expected a file name, got %s", type(path))
    end
    opts = opts or {}
    if type(opts) ~= "table" then
        check.fail("load_pytorch: options must be a table, got %s", type(opts))
    end
    check.known_fields(opts, { stages = true }, "load_pytorch options")
    local f, err = io.open(path, "r")
    if not f then check.fail("load_pytorch: cannot open %s", err) end
    local rows = {} -- rows[r] = list of { stage, kind, mb, where }
    local lineno = 0
    for line in f:lines() do
        lineno = lineno + 1
        line = line:gsub("\r$", "")
        local acts = {}
        for c, cell in ipairs(split_row(line)) do
            local where = string.format("%s:%d: cell %d", path, lineno, c)
            local subs = { cell }
            local inner = cell:match("^%((.*)%)OVERLAP_F_B$")
            if inner then
                subs = {}
                for s in inner:gmatch("[^;]+") do subs[#subs + 1] = s:match("^%s*(.-)%s*$") end
            end
            if inner and #subs ~= 2 then
                check.fail("%s: bad action '%s' (OVERLAP_F_B holds a forward and a backward,"
                    .. " as in (0F3;3B1)OVERLAP_F_B)", where, cell)
            end
            for i, sub in ipairs(subs) do
                if sub ~= "" then
                    local stage, kind, mb = parse_action(sub)
                    local want = i == 1 and { F = true } or { B = true, I = true }
                    if inner and stage and not want[kind] then
                        check.fail("%s: bad action '%s' (OVERLAP_F_B holds a forward, then a"
                            .. " backward, as in (0F3;3B1)OVERLAP_F_B)", where, cell)
                    end
                    if stage then
                        -- the halves of one FB carry the same overlap mark
                        acts[#acts + 1] = { stage = stage, kind = kind, mb = mb, where = where,
                                            overlap = inner and i or nil }
                    elseif not kind then
                        check.fail("%s: bad action '%s' (expected <stage><F|I|B|W><microbatch>"
                            .. " such as 0F0 or 1I0, a comm action or an empty cell)", where, sub)
                    end
                end
            end
        end
        rows[#rows + 1] = acts
    end
    f:close()
    if #rows == 0 then check.fail("%s: empty file (one row per pipeline rank)", path) end
    local p = #rows
    if opts.stages ~= nil and opts.stages ~= p then
        check.fail("%s: %d rows but %d pipeline ranks (stages)", path, p, opts.stages)
    end
    -- each stage on one rank (PyTorch's _validate_schedule)
    local rank_of, nstages, m = {}, 0, 0
    for r, acts in ipairs(rows) do
        for _, a in ipairs(acts) do
            if rank_of[a.stage] and rank_of[a.stage] ~= r - 1 then
                check.fail("%s: stage %d is on rows %d and %d", a.where, a.stage,
                           rank_of[a.stage] + 1, r)
            end
            rank_of[a.stage] = r - 1
            nstages = math.max(nstages, a.stage + 1)
            m = math.max(m, a.mb + 1)
        end
    end
    if nstages == 0 then check.fail("%s: no compute actions", path) end
    if nstages % p ~= 0 then
        check.fail("%s: %d stages on %d rows: expected a multiple of the rows", path, nstages, p)
    end
    local v = nstages // p
    local function fits(place)
        for s = 0, nstages - 1 do
            local c, i = s // p, s % p
            local want = (place == "v" and c % 2 == 1) and (p - 1 - i) or i
            if rank_of[s] ~= want then return false end
        end
        return true
    end
    -- a rank's chunks are its stages in ascending order (PyTorch's stage_index_to_group_rank)
    local chunk_of, count = {}, {}
    for s = 0, nstages - 1 do
        local r = rank_of[s]
        if r == nil then check.fail("%s: no row runs stage %d", path, s) end
        chunk_of[s] = count[r] or 0
        count[r] = chunk_of[s] + 1
    end
    for r = 0, p - 1 do
        if count[r] ~= v then
            check.fail("%s: row %d holds %d stages, expected %d (each row the same number)",
                       path, r + 1, count[r] or 0, v)
        end
    end
    local placement = fits("loop") and "loop" or (v == 2 and fits("v") and "v")
    if not placement then -- an explicit list: { rank, chunk } per stage
        placement = {}
        for s = 0, nstages - 1 do placement[s + 1] = { rank_of[s], chunk_of[s] } end
    end
    -- I needs its W and W its I (PyTorch: equal counts per stage)
    local seen = {}
    for _, acts in ipairs(rows) do
        for _, a in ipairs(acts) do seen[a.stage .. a.kind .. a.mb] = a end
    end
    for _, acts in ipairs(rows) do
        for _, a in ipairs(acts) do
            local other = a.kind == "I" and "W" or a.kind == "W" and "I"
            if other and not seen[a.stage .. other .. a.mb] then
                check.fail("%s: %d%s%d has no %d%s%d", a.where, a.stage, a.kind, a.mb,
                           a.stage, other, a.mb)
            end
        end
    end
    local order = {}
    for r, acts in ipairs(rows) do
        local list = {}
        local function unit(a)
            local c = chunk_of[a.stage]
            return a.mb .. (c > 0 and (".c" .. c) or "")
        end
        for i, a in ipairs(acts) do
            if a.overlap == 1 then -- FB<f>/<b>, sched/sched.h's overlapped action
                list[#list + 1] = "FB" .. unit(a) .. "/" .. unit(acts[i + 1])
            elseif a.overlap ~= 2 then
                list[#list + 1] = (a.kind == "I" and "B" or a.kind) .. unit(a)
            end
        end
        order[r] = list
    end
    return order, { stages = p, virtual_stages = v, microbatches = m,
                    chunk_placement = placement }
end

-- load_pytorch(path [, { stages = p }]) -> order, info: order is a custom
-- schedule for ps.run (one list of actions per rank, "B" for I, chunks
-- as ".c<k>"), info { stages, virtual_stages, microbatches,
-- chunk_placement } for the matching ps.run fields. Errors name the file,
-- line and cell: "x.csv:2: cell 5: bad action 'Q1' ...".
M.load_pytorch = check.public(load_pytorch)

return M
