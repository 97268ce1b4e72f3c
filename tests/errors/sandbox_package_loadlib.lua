-- expect: tests/errors/sandbox_package_loadlib.lua:2: package.loadlib is not allowed in a sandboxed scenario (run with --unsafe to allow it)
local f = package.loadlib("libc.so.6", "system")
