-- expect: tests/errors/unknown_transformer_field.lua:4: transformer: unknown field 'hiden' (did you mean 'hidden'?)
local ps = require "pipesim"

ps.models.transformer{ layers = 2, hidden = 64, heads = 4, seq = 128, vocab = 100, hiden = 3 }
