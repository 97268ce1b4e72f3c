-- expect: tests/errors/syntax_error.lua:3:
local ps = require "pipesim"
local x = = 1
