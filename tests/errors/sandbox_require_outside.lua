-- expect: tests/errors/sandbox_require_outside.lua:2: require 'harness' from 'tests/lua/harness.lua' (outside the scenario's directory and pipesim's lua/) is not allowed in a sandboxed scenario (run with --unsafe to allow it)
package.path = "tests/lua/?.lua;" .. package.path; require "harness"
