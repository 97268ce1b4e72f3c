-- luacheck (Debian lua-check) over the Lua library, the Lua tests and the
-- scenarios: `luacheck lua tests/lua scenarios` (a step of .ci/run).
std = "lua54"
-- Test and scenario tables are wide; 160 keeps them one entry a line.
max_line_length = 160
ignore = {
  -- `not (x > 0)` is the NaN-safe form used on purpose throughout: it is
  -- true for NaN, where `x <= 0` is false.
  "581",
}
