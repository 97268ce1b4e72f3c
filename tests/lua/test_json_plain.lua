-- core.json_plain (core/bind/sweep.c), the binding's copy of init.lua's
-- JSON encoder for plain data that run.params and run.point go through:
-- the texts the Lua encoder writes (sorted keys, integers as integers,
-- floats with 17 digits, non-finite numbers as null), and nil (the Lua
-- encoder's turn) for everything it leaves to it.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local core = require "pipesim.core"

local J = core.json_plain
H.eq(J(1), "1")
H.eq(J(-0.0), "-0")
H.eq(J(2.0), "2", "a float with an integer value as %.17g")
H.eq(J(0.1), "0.10000000000000001")
H.eq(J(2 ^ 60), "1.152921504606847e+18")
H.eq(J(1 << 60), "1152921504606846976")
H.eq(J(math.mininteger), "-9223372036854775808")
-- integers are written without snprintf (core/bind/sweep.c int_text): as
-- tostring gives them, at the edges and around powers of ten
H.eq(J(math.maxinteger), "9223372036854775807")
H.eq(J(0), "0")
H.eq(J(-7), "-7")
for _, v in ipairs({ 9, 10, 99, 100, -10, -101, 1000000007, -(1 << 62) }) do
    H.eq(J(v), tostring(v), "integer " .. tostring(v))
end
H.eq(J(0 / 0), "null")
H.eq(J(-math.huge), "null")
H.eq(J(true), "true")
H.eq(J("é x"), '"é x"')
H.eq(J({}), "[]")
H.eq(J({ 3, 1.5, "a", false }), '[3,1.5,"a",false]')
H.eq(J({ 1, 2, x = 3 }), "[1,2]", "a list with other keys is the list, as put writes it")
H.eq(J({ b = 1, a = { c = {}, B = 2 }, A = "x" }), '{"A":"x","a":{"B":2,"c":[]},"b":1}')
H.eq(J({ partition = { 1, 1, 2, 30 } }), '{"partition":[1,1,2,30]}')
-- left to the Lua encoder
H.eq(J('a"b'), nil, "a quote to escape")
H.eq(J("a\nb"), nil, "a control character")
H.eq(J("a\\b"), nil, "a backslash")
H.eq(J({ [1.5] = 1 }), nil, "a number key")
H.eq(J({ [2] = 1 }), nil, "an integer key outside a list")
H.eq(J({ ['k"'] = 1 }), nil, "a key to escape")
H.eq(J("a\xffb"), nil, "a byte that is not UTF-8")
H.eq(J("\xed\xa0\x80"), nil, "a surrogate")
H.eq(J({ ["k\xc3("] = 1 }), nil, "a key that is not UTF-8")
H.eq(J(setmetatable({}, {})), nil, "a metatable")
H.eq(J({ f = print }), nil, "a function")
H.eq(J({ c = ps.cluster{ ranks = 2 } }), nil, "userdata")
local cyc = {}
cyc.self = cyc
H.eq(J(cyc), nil, "a cycle")
local deep = {}
for _ = 1, 40 do deep = { deep } end
H.eq(J(deep), nil, "deeper than the fast path goes")
H.eq(J(string.rep("x", 20000)), nil, "longer than its buffer")

H.done()
