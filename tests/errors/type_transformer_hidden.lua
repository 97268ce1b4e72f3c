-- expect: tests/errors/type_transformer_hidden.lua:4: transformer: field 'hidden' must be an integer in 1..9007199254740992, got '64'
local ps = require "pipesim"

ps.models.transformer{ layers = 2, hidden = "64", heads = 4, seq = 128, vocab = 100 }
