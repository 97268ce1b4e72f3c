-- Profile CSVs: good files in every accepted shape, and bad files whose
-- errors name the file and line.
-- run with --unsafe: it writes its CSV files to temporary files
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local profile = require "pipesim.profile"

local temps = {}
local function write(text)
    local path = os.tmpname()
    temps[#temps + 1] = path
    local f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
    return path
end

-- all columns, comments, blank lines, quoting, CRLF, empty optional cells
local good = write(table.concat({
    "# measured with torch.profiler, 1 microbatch",
    "name,fwd_ms,bwd_ms,params,act_bytes,out_bytes",
    "",
    "embedding, 0.5, 1.0, 1000, 0, 4096",
    "\"block, 0\",2,4.5,2e6,1e8,4096\r",
    "head,1.25,2.5,,,",
}, "\n") .. "\n")
local L = profile.load(good)
H.eq(#L, 3, "three layers")
H.eq(L[1].name, "embedding")
H.near(L[1].fwd_time, 0.5e-3); H.near(L[1].bwd_time, 1.0e-3)
H.eq(L[1].params, 1000); H.eq(L[1].out_bytes, 4096)
H.eq(L[2].name, "block, 0", "quoted name with a comma")
H.near(L[2].bwd_time, 4.5e-3)
H.eq(L[2].params, 2e6); H.eq(L[2].act_bytes, 1e8)
H.eq(L[3].params, 0, "empty optional cell is 0")
H.eq(L[3].act_bytes, 0); H.eq(L[3].out_bytes, 0)
H.eq(L[1].fwd_flops, nil, "profiled layers carry times, not FLOPs")

-- minimal: required columns only, in another order, other time units
local minimal = profile.load(write("bwd_us,fwd_s\n300,0.0001\n600,0.0002\n"))
H.eq(#minimal, 2)
H.eq(minimal[1].name, "layer 0", "default names count from 0")
H.eq(minimal[2].name, "layer 1")
H.near(minimal[1].fwd_time, 1e-4); H.near(minimal[1].bwd_time, 3e-4)
H.eq(minimal[2].params, 0)
local upper = profile.load(write("Name,FWD_MS,BWD_MS\nx,1,2\n"))
H.near(upper[1].fwd_time, 1e-3, nil, "header names are case-insensitive")

-- errors: "<file>:<line>: ..."
local function bad(text, want, msg)
    local path = write(text)
    H.raises(function() profile.load(path) end, path .. want, msg)
end
bad("name,fwd_ms,bwd_ms\nx,1,2\ny,abc,2\n", ":3: column 'fwd_ms' is not a number: 'abc'")
bad("name,bwd_ms\nx,1\n", ":1: missing column 'fwd_ms'")
bad("name,fwd_ms\nx,1\n", ":1: missing column 'bwd_ms'")
bad("# comment\nname,fwd_ms,bwd_ms,parms\nx,1,2,3\n", ":2: unknown column 'parms'")
bad("name,fwd_ms,bwd_ms\nx,1,2,3\n", ":2: expected 3 fields, got 4")
bad("name,fwd_ms,bwd_ms\nx,,2\n", ":2: column 'fwd_ms' is empty")
bad("name,fwd_ms,bwd_ms\nx,-1,2\n", ":2: column 'fwd_ms' is negative")
bad("name,fwd_ms,bwd_ms,params\nx,1,2,1e999\n", ":2: column 'params' is not a number: '1e999'")
bad("name,fwd_ms,fwd_s,bwd_ms\n", ":1: columns 'fwd_ms' and 'fwd_s' both give the forward time")
bad("name,fwd_ms,bwd_ms\n\"x,1,2\n", ":2: unterminated quoted field")
bad("name,fwd_ms,bwd_ms\n", ": no layers after the header")
bad("", ": empty file")
H.raises(function() profile.load("/nonexistent/prof.csv") end,
    "cannot open /nonexistent/prof.csv: No such file or directory")
H.raises(function() profile.load(42) end, "expected a file name")

for _, p in ipairs(temps) do os.remove(p) end
H.done()
