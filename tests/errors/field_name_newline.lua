-- expect: tests/errors/field_name_newline.lua:5: ps.run: unknown field 'a\nb'
-- A field name with a newline in it (found by fuzz_scenario) printed a
-- two-line message; control characters are written as escapes.
local ps = require "pipesim"
ps.run{ ["a\nb"] = 1 }
