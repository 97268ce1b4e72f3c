-- pipesim.validation: what the validation scenarios (scenarios/*_validation
-- .lua) share: Llama 3's Megatron flags, and the tally of each published
-- row against pipesim's prediction with its per-device error summary.
local V = {}

-- Llama 3 / 3.1 as Megatron-LM's flags: RMSNorm, SwiGLU, RoPE, no biases,
-- no dropout, untied embeddings, vocabulary 128,256, sequence 8192, 8 query
-- groups, the fused cross-entropy, and the distributed optimizer with
-- overlapped gradient reduce (in bf16) and parameter gather; MBS 1.
-- extra: the recipe's own flags, set over these.
function V.llama3(L, h, ffn, heads, extra)
    local f = {
        num_layers = L, hidden_size = h, ffn_hidden_size = ffn, num_attention_heads = heads,
        group_query_attention = true, num_query_groups = 8, swiglu = true, seq_length = 8192,
        max_position_embeddings = 8192, vocab_size = 128256, bf16 = true,
        position_embedding_type = "rope", normalization = "RMSNorm",
        untie_embeddings_and_output_weights = true, disable_bias_linear = true,
        attention_dropout = 0, hidden_dropout = 0, cross_entropy_loss_fusion = true,
        use_distributed_optimizer = true, overlap_grad_reduce = true,
        overlap_param_gather = true, grad_reduce_in_bf16 = true, micro_batch_size = 1,
    }
    for k, v in pairs(extra or {}) do f[k] = v end
    return f
end

-- mean and max of |e| over list (0, 0 for none)
function V.stats(list)
    local sum, max = 0, 0
    for _, e in ipairs(list) do
        sum = sum + math.abs(e)
        max = math.max(max, math.abs(e))
    end
    return #list > 0 and sum / #list or 0, max
end

-- A tally of rows per device, in the devices' order for the summary.
function V.tally(devices)
    local t = { devices = devices, groups = {}, results = {} }
    for _, d in ipairs(devices) do t.groups[d] = {} end
    return t
end

-- Adds a row's run r against its published seconds; returns the relative
-- error (r.makespan - published) / published.
function V.add(t, name, device, published, r)
    local err = (r.makespan - published) / published
    t.results[#t.results + 1] = { name = name, device = device, published = published,
                                  pipesim = r.makespan, fits = r.fits }
    local g = t.groups[device]
    g[#g + 1] = err
    return err
end

-- Prints "H100: 3 runs, mean |error| 4.2%, max 7.0%" per device with rows.
function V.summary(t)
    for _, device in ipairs(t.devices) do
        local list = t.groups[device]
        if #list > 0 then
            local mean, max = V.stats(list)
            print(string.format("%s: %d runs, mean |error| %.1f%%, max %.1f%%", device, #list,
                100 * mean, 100 * max))
        end
    end
end

return V
