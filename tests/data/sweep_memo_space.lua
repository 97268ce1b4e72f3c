-- The layers and cluster that tests/data/sweep_memo.lua (the scenario of
-- tests/cli_sweep_memo.sh) and tests/lua/test_sweep_memo.lua sweep over:
-- one DGX A100 node's GPUs as a mesh, Llama 2 7B's layers, and 8 plain
-- layers with unit strings. Returns { cluster =, model =, plain = }; each
-- load builds new tables.
local ps = require "pipesim"

local node = ps.clusters.dgx("A100", 1)
local plain = {}
for i = 1, 8 do
    plain[i] = { fwd_time = string.format("%d ms", i), bwd_time = 2e-3 * i, params = 1e8,
                 act_bytes = "1 MB", out_bytes = 4096 * i }
end
return {
    cluster = ps.cluster{ ranks = 8, device = node.device, link = node.intra },
    model = ps.models.preset("llama2-7b", { seq = 2048, microbatch = 1 }),
    plain = plain,
}
