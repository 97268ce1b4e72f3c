-- expect: tests/errors/runtime_error.lua:3: attempt to call a nil value (field 'rn')
local ps = require "pipesim"
ps.rn{}
