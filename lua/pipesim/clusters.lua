-- ps.clusters: device and DGX-style node presets in the form ps.cluster
-- accepts. Numbers are in base units (FLOP/s, bytes, bytes/s, seconds);
-- each figure names its source. Bandwidths are per direction: a link
-- carries one direction's traffic at this rate (DESIGN.md, links).
local check = require "pipesim.argcheck"
local core = require "pipesim.core"

local M = {}

local GiB = 2 ^ 30

-- Default efficiency (achieved fraction of dense peak for layer compute).
-- Reported model FLOPs utilisation: Narayanan et al. 2021 (Megatron-LM,
-- Table 1) 44-52% of A100 peak; Korthikanti et al. 2022 up to 56%; Llama 3
-- (Dubey et al. 2024, Table 4) 38-43% on H100; Megatron-Core's README
-- reports ~41-47% on H100. MFU includes pipeline bubbles and exposed
-- communication, which pipesim simulates itself, so the figures are a lower
-- bound for per-layer efficiency; we take the upper half of each range.
local DEVICES = {
    a100 = {
        name = "A100 80GB SXM",
        -- NVIDIA A100 datasheet: 312 TFLOPS dense BF16 (624 with sparsity),
        -- 80GB HBM2e (nvidia-smi: 81920 MiB = 80 GiB).
        flops = 312e12, memory = 80 * GiB, efficiency = 0.5,
        -- NVLink 3: 12 links x 50 GB/s = 600 GB/s total, both directions
        -- added; 300 GB/s per direction.
        nvlink = 300e9,
        -- DGX A100: 8 x ConnectX-6 HDR InfiniBand 200 Gb/s for compute
        -- (plus 2 for storage, not modelled) = 25 GB/s per NIC.
        nic = 200e9 / 8, nics = 8,
    },
    h100 = {
        name = "H100 SXM",
        -- NVIDIA H100 datasheet (SXM5): 989 TFLOPS dense BF16 (1979 with
        -- sparsity), 80GB HBM3, taken as 80e9 B (conservative: nvidia-smi
        -- reports 81559 MiB).
        flops = 989e12, memory = 80e9, efficiency = 0.45,
        -- NVLink 4: 18 links x 50 GB/s = 900 GB/s total; 450 per direction.
        nvlink = 450e9,
        -- DGX H100: 8 x ConnectX-7 NDR 400 Gb/s = 50 GB/s per NIC.
        nic = 400e9 / 8, nics = 8,
    },
    h200 = {
        name = "H200 SXM",
        -- NVIDIA H200 datasheet: same compute as H100 SXM (989 TFLOPS dense
        -- BF16), 141GB HBM3e taken as 141e9 B; NVLink 4 (900 GB/s total).
        flops = 989e12, memory = 141e9, efficiency = 0.45,
        nvlink = 450e9,
        -- DGX H200: 8 x ConnectX-7 400 Gb/s, as DGX H100.
        nic = 400e9 / 8, nics = 8,
    },
}

-- Latencies, an assumption: NCCL's own cost model (src/graph/tuning.cc,
-- hwLat) puts one NVLink hop at ~0.5-3.4 us and one network hop at ~2.7-14
-- us depending on protocol; we take 2 us inside a node and 5 us between
-- nodes, for medium and large messages.
local INTRA_LATENCY = 2e-6
local INTER_LATENCY = 5e-6

-- Accepted spellings: case, spaces, '-' and '_' are ignored, so "H100",
-- "h100-sxm", "H100 SXM" and "dgx-h100" are the same device.
local ALIASES = {
    a100 = "a100", a10080gb = "a100", a100sxm = "a100", a10080gbsxm = "a100",
    a100sxm80gb = "a100", dgxa100 = "a100",
    h100 = "h100", h100sxm = "h100", h100sxm5 = "h100", h10080gb = "h100",
    dgxh100 = "h100",
    h200 = "h200", h200sxm = "h200", dgxh200 = "h200",
}

local function lookup(name, what)
    if type(name) ~= "string" then
        check.fail("%s: expected a device name, got %s", what, type(name))
    end
    local key = ALIASES[(name:lower():gsub("[%s_%-]", ""))]
    if not key then
        check.fail("%s: unknown device %s (known: A100, H100, H200)", what, check.show(name))
    end
    return DEVICES[key]
end

-- The tables inside a cluster that overrides merge into field by field,
-- and the list of known fields (core.fields, the binding's) of each.
local NESTED = { device = "device", intra = "link", inter = "link", link = "link" }

-- Merges overrides into t (a fresh table): fields are checked against the
-- same lists ps.cluster uses (`list` names one), so a typo in an override
-- is "dgx: overrides.device: unknown field 'eficiency' (did you mean
-- 'efficiency'?)" rather than a silent no-op.
local function merge(t, overrides, what, list)
    if overrides == nil then return t end
    if type(overrides) ~= "table" then
        check.fail("%s must be a table, got %s", what, type(overrides))
    end
    check.known_fields(overrides, core.fields[list], what)
    for k, v in pairs(overrides) do
        local sub_list = list == "cluster" and NESTED[k]
        if sub_list and type(v) == "table" and type(t[k]) == "table" then
            local sub = {}
            for kk, vv in pairs(t[k]) do sub[kk] = vv end
            t[k] = merge(sub, v, what .. "." .. k, sub_list)
        else
            t[k] = v
        end
    end
    return t
end

-- device(name, overrides) -> { name, flops, memory, efficiency }, the
-- `device` of ps.cluster. overrides replaces fields, e.g. { efficiency = 0.4 }.
M.device = check.public(function(name, overrides)
    local d = lookup(name, "device")
    return merge({ name = d.name, flops = d.flops, memory = d.memory,
                   efficiency = d.efficiency }, overrides, "device: overrides", "device")
end)

-- dgx(name, nodes, overrides) -> a ps.cluster table of `nodes` 8-GPU nodes:
-- intra = NVLink per direction, inter = one NIC per direction (a GPU's
-- rail), nics_per_node = 8. overrides are merged field by field, e.g.
-- { inter = { latency = 8e-6 }, device = { efficiency = 0.4 } }.
M.dgx = check.public(function(name, nodes, overrides)
    local d = lookup(name, "dgx")
    nodes = check.posint(nodes == nil and 1 or nodes, "dgx: nodes")
    return merge({
        name = "DGX " .. d.name .. " x" .. nodes,
        nodes = nodes,
        gpus_per_node = 8,
        device = { name = d.name, flops = d.flops, memory = d.memory,
                   efficiency = d.efficiency },
        intra = { bandwidth = d.nvlink, latency = INTRA_LATENCY },
        inter = { bandwidth = d.nic, latency = INTER_LATENCY },
        nics_per_node = d.nics,
    }, overrides, "dgx: overrides", "cluster")
end)

-- Names for listings: { "A100 80GB SXM", "H100 SXM", "H200 SXM" }.
function M.devices()
    return { DEVICES.a100.name, DEVICES.h100.name, DEVICES.h200.name }
end

return M
