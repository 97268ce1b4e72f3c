-- The Megatron-Bridge 25.11 table (scenarios/bridge_validation.lua) and
-- the CP 2 Llama 3.1 table (scenarios/cp_validation.lua, its first part),
-- docs/fidelity.md and docs/parallelism.md, pinned: every row's simulated
-- step as the docs print it, and every published run fitting (issue 23:
-- "no published run reported as not fitting"; the Bridge Llama 3 8B
-- FP8-CS row on 8 H100 fits since the scenario sets the recipes'
-- fp8_param_gather, docs/fidelity.md). A change of the model that moves a
-- row fails here until the docs are rerun. Runs under `pipesim run`.
-- run with --unsafe: it loads the scenarios from scenarios/, outside the
-- test's directory (the sandbox allows its own directory and lua/ only)
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"

local BRIDGE = {
    { "Llama 3 8B FP8-CS", "H100", 9.275267 },
    { "Llama 3 70B FP8-CS", "H100", 10.466260 },
    { "Llama 3.1 405B FP8-CS", "H100", 12.025281 },
    { "Llama 3.1 405B FP8-CS", "B200", 5.169883 },
    { "Llama 3.1 405B MXFP8", "B200", 5.449444 },
    { "Llama 3 70B MXFP8", "GB200", 3.898080 },
    { "Llama 3.1 405B MXFP8", "GB200", 5.289047 },
}
local rows = dofile("scenarios/bridge_validation.lua")
H.eq(#rows, #BRIDGE, "every Bridge row")
for i, p in ipairs(BRIDGE) do
    local r = rows[i] or {}
    H.eq({ r.name, r.device }, { p[1], p[2] }, "Bridge row " .. i)
    H.near(r.pipesim or 0, p[3], 1e-6, p[1] .. " on " .. p[2])
    H.eq(r.fits, true, p[1] .. " on " .. p[2] .. " fits")
end

-- dgxc-benchmarking v25.02's Llama 3.1 rows with CP 2, the 405B on 576
-- H100 (TP 8, PP 9, VP 7, GBS 252, the GPT-2 tokenizer) among them
local CP = {
    { "Llama 3.1 8B BF16", 12.874578 },
    { "Llama 3.1 8B FP8", 8.903266 },
    { "Llama 3.1 70B BF16", 14.575571 },
    { "Llama 3.1 70B FP8", 9.539109 },
    { "Llama 3.1 405B BF16", 17.329185 },
    { "Llama 3.1 405B FP8", 10.652727 },
}
local cp = dofile("scenarios/cp_validation.lua")
H.eq(#cp, #CP, "every CP 2 row")
for i, p in ipairs(CP) do
    local r = cp[i] or {}
    H.eq(r.name, p[1], "CP row " .. i)
    H.near(r.pipesim or 0, p[2], 1e-6, p[1])
    H.eq(r.fits, true, p[1] .. " fits")
    H.eq(r.cp, 2, p[1] .. " runs CP 2")
end
H.done()
