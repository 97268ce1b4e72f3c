-- Megatron-LM's split of a model's layers over pipeline stages and model
-- chunks, as ps.run's partition (a layer count per model stage, stage =
-- chunk x p + rank, the embedding counted with the first and the head with
-- the last). Megatron-Core 0.20.0 (d98e8a64dd):
-- megatron/core/transformer/transformer_block.py get_num_layers_to_build,
-- transformer_config.py's checks of the same, and
-- megatron/training/arguments.py's derivation of the virtual pipeline size.
local check = require "pipesim.argcheck"

local M = {}

local function opt_int(a, k)
    local v = a[k]
    if v == nil then return nil end
    return check.posint(v, "megatron: " .. k)
end

-- The virtual pipeline size: --num-virtual-stages-per-pipeline-rank, or
-- from --num-layers-per-virtual-pipeline-stage (the layers of a stage,
-- counting the embedding and loss "layers" accounted in the split, over
-- that; arguments.py refuses it with an uneven first or last stage).
local function virtual_size(a, L, pp, extra, uneven)
    local nv = opt_int(a, "num_virtual_stages_per_pipeline_rank")
    local per = opt_int(a, "num_layers_per_virtual_pipeline_stage")
    if nv and per then
        check.fail("megatron: give num_virtual_stages_per_pipeline_rank or " ..
            "num_layers_per_virtual_pipeline_stage, not both")
    end
    if nv then return nv end
    if not per then return 1 end
    if uneven then
        check.fail("megatron: with decoder_first/last_pipeline_num_layers give the virtual " ..
            "pipeline size as num_virtual_stages_per_pipeline_rank (Megatron: \"please use " ..
            "--num-virtual-stages-per-pipeline-rank ... when enable uneven pipeline parallelism\")")
    end
    local stage = (L + extra) // pp
    if (L + extra) % pp ~= 0 or stage % per ~= 0 then
        check.fail("megatron: num_layers_per_virtual_pipeline_stage (%d) does not divide the %d " ..
            "layers of a pipeline stage", per, (L + extra) / pp)
    end
    return stage // per
end

-- blocks[r][c]: transformer blocks of model chunk c on pipeline rank r
-- (both from 0).
local function blocks_per_chunk(a, L, pp, v, emb, loss)
    local first = opt_int(a, "decoder_first_pipeline_num_layers")
    local last = opt_int(a, "decoder_last_pipeline_num_layers")
    local per_rank = {}
    if first or last then
        if emb or loss then
            check.fail("megatron: decoder_first/last_pipeline_num_layers cannot be set with " ..
                "account_for_embedding/loss_in_pipeline_split (Megatron: \"num_layers_in_first_" ..
                "pipeline_stage and num_layers_in_last_pipeline_stage cannot be set at the same " ..
                "time with account_for_embedding_in_pipeline_split ...\")")
        end
        local rest, left = L, pp
        if first then rest, left = rest - first, left - 1 end
        if last then rest, left = rest - last, left - 1 end
        if rest < 0 or (rest > 0) ~= (left > 0) or (left > 0 and rest % left ~= 0) then
            check.fail("megatron: decoder_first/last_pipeline_num_layers (%s, %s) leave %d " ..
                "layers for %d middle stages: they must split evenly", tostring(first),
                tostring(last), rest, left)
        end
        for r = 0, pp - 1 do per_rank[r] = left > 0 and rest // left or 0 end
        if first then per_rank[0] = first end
        if last then per_rank[pp - 1] = last end
    else
        local n = L + (emb and 1 or 0) + (loss and 1 or 0)
        if n % pp ~= 0 then
            check.fail("megatron: num_layers (%d)%s is not divisible by " ..
                "pipeline_model_parallel_size (%d)", L,
                (emb or loss) and " with the embedding/loss accounted" or "", pp)
        end
        for r = 0, pp - 1 do per_rank[r] = n // pp end
    end
    local blocks = {}
    for r = 0, pp - 1 do
        if per_rank[r] % v ~= 0 then
            check.fail("megatron: the %d layers of pipeline stage %d do not split into %d " ..
                "virtual stages", per_rank[r], r, v)
        end
        blocks[r] = {}
        for c = 0, v - 1 do blocks[r][c] = per_rank[r] // v end
    end
    -- the embedding (loss) takes a layer's place in the first (last) chunk
    if emb then blocks[0][0] = blocks[0][0] - 1 end
    if loss then blocks[pp - 1][v - 1] = blocks[pp - 1][v - 1] - 1 end
    if blocks[0][0] < 0 or blocks[pp - 1][v - 1] < 0 then
        check.fail("megatron: not enough layers in the first/last virtual pipeline stage for " ..
            "the embedding/loss accounted in the split")
    end
    return blocks
end

-- partition(flags, L, pp) -> ps.run's partition (counts per model stage,
-- embedding and head included) and the virtual pipeline size.
function M.partition(a, L, pp)
    local emb = a.account_for_embedding_in_pipeline_split == true
    local loss = a.account_for_loss_in_pipeline_split == true
    local uneven = a.decoder_first_pipeline_num_layers ~= nil or
        a.decoder_last_pipeline_num_layers ~= nil
    local v = virtual_size(a, L, pp, (emb and 1 or 0) + (loss and 1 or 0), uneven)
    if v > 1 and pp == 1 then
        check.fail("megatron: a virtual pipeline needs pipeline_model_parallel_size > 1")
    end
    local blocks = blocks_per_chunk(a, L, pp, v, emb, loss)
    local partition = {}
    for c = 0, v - 1 do
        for r = 0, pp - 1 do
            local s = c * pp + r
            local n = blocks[r][c] + (s == 0 and 1 or 0) + (s == pp * v - 1 and 1 or 0)
            if n == 0 then
                check.fail("megatron: model chunk %d of pipeline stage %d holds no layer", c, r)
            end
            partition[s + 1] = n
        end
    end
    return partition, v
end

return M
