-- The frontier steps of make bench (issue 28, tests/bench/llama405.lua and
-- dense1t.lua): one Megatron-LM step on -D nodes=N DGX H100 nodes with
-- summary recording, every replica with -D fold=false, ZeRO's stage with
-- -D zero=N; prints the step.
-- flags(nodes) gives ps.models.megatron's flags but the cluster and the
-- world size.
local ps = require "pipesim"
ps.progress(false)

return function(name, default_nodes, flags)
    local nodes = ps.args.nodes or default_nodes
    local f = flags(nodes)
    f.cluster = ps.cluster(ps.clusters.dgx("H100", nodes))
    f.world_size = nodes * 8
    local run = ps.models.megatron(f)
    run.record = "summary"
    run.fold = ps.args.fold ~= false and ps.args.fold ~= "false"
    if ps.args.zero then -- -D zero=2 or 3: ZeRO's stage (its all-gather
        -- follows the optimizer step: no overlap_param_gather)
        run.zero = tonumber(ps.args.zero)
        if run.zero >= 2 then run.grad_sync.overlap_param_gather = nil end
    end
    local r = ps.run(run)
    print(string.format("%s on %d GPUs: step %.6f s, folded %s", name, nodes * 8, r.makespan,
        tostring(r.folded)))
end
