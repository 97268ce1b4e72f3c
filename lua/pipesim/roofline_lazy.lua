-- pipesim.roofline_lazy: models/roofline.lua as a table that loads it on
-- first use. models/roofline.lua, and clusters.lua behind it, load late
-- (issue 12, the fixed cost of a process: a run without model layers, TP
-- or recompute never reads them; they were a fifth of the bytecode a
-- 2-rank run loaded), with the package.path this module was loaded with,
-- as init.lua's lazy fields. Shared by the lowering's modules
-- (parallel.lua, block.lua, finish.lua).
local package_, LOAD_PATH = package, package.path
local roofline = setmetatable({}, { __index = function(t, k)
    local path = package_.path
    package_.path = LOAD_PATH
    local ok, m = pcall(require, "pipesim.models.roofline")
    package_.path = path
    if not ok then error(m, 0) end
    setmetatable(t, { __index = m })
    return m[k]
end })

return roofline
