-- expect: tests/errors/sandbox_require_native.lua:2: require of native module 'non_numeric' ('tests/errors/data/non_numeric.csv') is not allowed in a sandboxed scenario (run with --unsafe to allow it)
package.cpath = "tests/errors/data/?.csv"; require "non_numeric"
