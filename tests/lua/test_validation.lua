-- The Hopper and Blackwell validation table (scenarios/nemo_validation.lua,
-- docs/fidelity.md) pinned: every row's simulated step as the docs print
-- it, and the published Nemotron-4 340B FP8 recipe on 128 H100 fitting.
-- A change of the model that moves a row fails here until the docs are
-- rerun (the GEMM rates of each die in FLOP/s and Blackwell's attention
-- backward bound moved every row; cuDNN's measured attention rates of
-- each Blackwell part moved the B200 and GB200 rows: docs/fidelity.md).
-- Runs under `pipesim run`.
-- run with --unsafe: it loads the scenario from scenarios/, outside the
-- test's directory (the sandbox allows its own directory and lua/ only)
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"

local rows = dofile("scenarios/nemo_validation.lua")
local PINNED = {
    { "GPT-3 175B BF16", "H100", 8.395700, true },
    { "GPT-3 175B FP8", "H100", 5.076553, true },
    { "Nemotron-4 15B BF16", "H100", 2.781987, true },
    { "Nemotron-4 15B FP8", "H100", 1.920235, true },
    { "Nemotron-4 340B FP8", "H100", 2.975625, true },
    { "Llama 3 8B FP8-CS", "B200", 3.927827, true },
    { "Llama 3 8B MXFP8", "B200", 3.977428, true },
    { "Llama 3 8B FP8-CS", "GB200", 3.699673, true },
    { "Nemotron-4 340B BF16", "GB200", 1.805991, true },
    { "Nemotron-4 340B FP8", "GB200", 1.333766, true },
}
H.eq(#rows, #PINNED, "every row of the table")
for i, p in ipairs(PINNED) do
    local r = rows[i] or {}
    H.eq({ r.name, r.device }, { p[1], p[2] }, "row " .. i)
    H.near(r.pipesim or 0, p[3], 1e-6, p[1] .. " on " .. p[2])
    H.eq(r.fits, p[4], p[1] .. " fits")
end
H.done()
