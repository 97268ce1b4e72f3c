-- expect: tests/errors/unknown_preset_override.lua:4: preset 'toy': overrides: unknown field 'seqq' (did you mean 'seq'?)
local ps = require "pipesim"

ps.models.preset("toy", { seqq = 256 })
