-- expect: tests/errors/unknown_links_entry_field.lua:4: ps.cluster: links[1]: unknown field 'duplx' (did you mean 'duplex'?)
local ps = require "pipesim"

ps.cluster{ ranks = 2, links = { { 0, 1, bandwidth = "50 GB/s", duplx = false } } }
