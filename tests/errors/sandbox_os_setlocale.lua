-- expect: tests/errors/sandbox_os_setlocale.lua:2: os.setlocale with a locale is not allowed in a sandboxed scenario (run with --unsafe to allow it)
os.setlocale("de_DE.UTF-8", "numeric")
