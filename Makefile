# pipesim: plain Makefile. `make demo`, `make test`, `make bench`.
# make SAN=address,undefined test   sanitizer build in build-san/
# make test VALGRIND=1              every test binary under valgrind
# make WERROR=0                     keep warnings as warnings
# make RELEASE=1                    -DNDEBUG: asserts compiled out (build-release/)
# make fuzz [FUZZ_TIME=60]          libFuzzer targets (clang), FUZZ_TIME s each

PKGS      := lua5.4 sqlite3
DEB_DEPS  := build-essential pkg-config liblua5.4-dev libsqlite3-dev sqlite3 lua5.4 libxml2-utils python3 lua-check \
            python3-dev python3-venv python3-setuptools python3-wheel python3-pip
CC        ?= cc
WERROR    ?= 1
SAN       ?=
VALGRIND  ?=
RELEASE   ?=

WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
        -Wmissing-prototypes -Wwrite-strings -Wundef -Wvla
ifeq ($(WERROR),1)
WARN += -Werror
endif

ifneq ($(SAN),)
BUILD   := build-san
SANFLAGS := -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
OPT     := -O1 -g
else ifeq ($(RELEASE),1)
BUILD   := build-release
SANFLAGS :=
OPT     := -O2 -g -DNDEBUG
else
BUILD   := build
SANFLAGS :=
OPT     := -O2 -g
endif
# Asserts guard invariants (the engine's lane states, sealed programs):
# on in the default and sanitizer builds that `make test` and CI run,
# compiled out by RELEASE=1, so they cost a release build nothing.

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# Lua and SQLite linked from their static libraries, the .a files the same
# Debian -dev packages ship (issue 12, the fixed cost of a process): the
# dynamic loader's symbol lookups for the two shared libraries were 1.3 M
# of a one-run process's 8 M instructions. Their own dependencies (-lm,
# -ldl) stay shared; without both .a files, or with STATIC_LIBS=0, the
# shared libraries as pkg-config names them.
STATIC_LIBS ?= 1
PKG_LIBDIRS = $(sort $(foreach p,$(PKGS),$(shell pkg-config --variable=libdir $(p) 2>/dev/null)))
PKG_ARCHIVES = $(foreach l,$(patsubst -l%,%,$(shell pkg-config --libs-only-l $(PKGS) 2>/dev/null)),\
               $(firstword $(wildcard $(PKG_LIBDIRS:%=%/lib$(l).a))))
ifeq ($(STATIC_LIBS),1)
ifeq ($(words $(PKG_ARCHIVES)),$(words $(shell pkg-config --libs-only-l $(PKGS) 2>/dev/null)))
PKG_LIBS   = $(shell pkg-config --libs-only-L $(PKGS) 2>/dev/null) -Wl,-Bstatic \
             $(shell pkg-config --libs-only-l $(PKGS) 2>/dev/null) -Wl,-Bdynamic -ldl
endif
endif
CFLAGS  := -std=c11 -D_POSIX_C_SOURCE=200809L -pthread $(WARN) $(OPT) $(SANFLAGS) \
           -DPS_VERSION='"$(shell cat VERSION)"'
# -pthread: the recorder's writer thread (core/rec/writer.c)
LDLIBS   = $(PKG_LIBS) -lm -pthread

CORE_SRC := $(filter-out core/cli/%,$(wildcard core/*/*.c))
CORE_HDR := $(wildcard core/*/*.h)
# The data built into every binary (core/base/embed.h): lua/ precompiled and a
# new database's bytes, written by embed_tool, a build-time program linked
# with the core objects and nothing embedded (BASE_OBJ).
LUA_SRC  := $(shell find lua -name '*.lua' | LC_ALL=C sort)
BASE_OBJ := $(CORE_SRC:%.c=$(BUILD)/%.o)
EMBED_TOOL := $(BUILD)/embed_tool
CORE_OBJ := $(BASE_OBJ) $(BUILD)/embed_data.o
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BIN      := $(BUILD)/pipesim
BENCH    := $(BUILD)/bench
REC_BENCH := $(BUILD)/rec_bench
# The SimGrid side of make bench's comparison, only where pkg-config finds
# simgrid (Debian's libsimgrid-dev); make test builds it too, so that
# tests/cli_simgrid.sh checks both sides simulate the same times. CI does
# not install it.
CXX      ?= c++
SIMGRID_BENCH := $(if $(shell pkg-config --exists simgrid 2>/dev/null && echo y),$(BUILD)/simgrid_bench)

# The man page and the shell completions, written at build time by the
# binary from the help text they share (core/cli/help_text.c).
MAN_PAGE    := $(BUILD)/pipesim.1
COMPLETIONS := $(BUILD)/completions/pipesim.bash $(BUILD)/completions/_pipesim

.PHONY: all deps demo test unit bench stress clean format format-check \
        fuzz fuzz-deps install uninstall wheel
all: deps $(BIN) $(MAN_PAGE) $(COMPLETIONS)

# Installs the Debian build dependencies when pkg-config cannot find them.
deps:
	@pkg-config --exists $(PKGS) && command -v sqlite3 >/dev/null && command -v xmllint >/dev/null && command -v python3 >/dev/null && command -v luacheck >/dev/null || \
	  { echo "pipesim: installing build dependencies: $(DEB_DEPS)"; \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(DEB_DEPS) >/dev/null; }

$(BUILD)/%.o: %.c $(CORE_HDR)
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore -c $< -o $@

$(EMBED_TOOL): $(BUILD)/core/cli/embed_tool.o $(BASE_OBJ)
	@echo "LD $@"
	@$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/embed_data.c: $(EMBED_TOOL) $(LUA_SRC)
	@echo "EMBED $@"
	@$(EMBED_TOOL) $@ lua $(LUA_SRC)

$(BUILD)/embed_data.o: $(BUILD)/embed_data.c core/base/embed.h
	@echo "CC $<"
	@$(CC) $(CFLAGS) -Icore -c $< -o $@

CLI_OBJ  := $(BUILD)/core/cli/main.o $(BUILD)/core/cli/help.o \
            $(BUILD)/core/cli/help_text.o $(BUILD)/core/cli/help_comp.o
$(BIN): $(CORE_OBJ) $(CLI_OBJ)
	@echo "LD $@"
	@$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(MAN_PAGE): $(BIN)
	@echo "MAN $@"
	@$(BIN) help --man >$@.tmp && mv $@.tmp $@

$(BUILD)/completions/pipesim.bash: $(BIN)
	@mkdir -p $(dir $@)
	@echo "GEN $@"
	@$(BIN) help --completion bash >$@.tmp && mv $@.tmp $@

$(BUILD)/completions/_pipesim: $(BIN)
	@mkdir -p $(dir $@)
	@echo "GEN $@"
	@$(BIN) help --completion zsh >$@.tmp && mv $@.tmp $@

# make install [PREFIX=/usr/local] [DESTDIR=stage]: the binary, its Lua
# library (found at run time as ../share/pipesim/lua beside bin/, so the
# installed tree can move), the man page and the bash and zsh completions.
# make uninstall removes exactly those files (tests/cli_install.sh).
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR      = $(DESTDIR)$(PREFIX)/bin
SHAREDIR    = $(DESTDIR)$(PREFIX)/share
LUADIR      = $(SHAREDIR)/pipesim/lua
MAN1DIR     = $(SHAREDIR)/man/man1
BASHCOMPDIR = $(SHAREDIR)/bash-completion/completions
ZSHCOMPDIR  = $(SHAREDIR)/zsh/site-functions

install: all
	install -d $(BINDIR) $(MAN1DIR) $(BASHCOMPDIR) $(ZSHCOMPDIR)
	install -m 755 $(BIN) $(BINDIR)/pipesim
	for f in $(LUA_SRC:lua/%=%); do \
	    install -D -m 644 lua/$$f $(LUADIR)/$$f || exit 1; done
	install -m 644 $(MAN_PAGE) $(MAN1DIR)/pipesim.1
	install -m 644 $(BUILD)/completions/pipesim.bash $(BASHCOMPDIR)/pipesim
	install -m 644 $(BUILD)/completions/_pipesim $(ZSHCOMPDIR)/_pipesim

uninstall:
	rm -f $(BINDIR)/pipesim $(MAN1DIR)/pipesim.1 $(BASHCOMPDIR)/pipesim \
	      $(ZSHCOMPDIR)/_pipesim
	rm -rf $(SHAREDIR)/pipesim

# make wheel: the Python package (python/, docs/python.md) as a wheel in
# build/wheel, built offline by Debian's python3-setuptools, python3-wheel
# and python3-dev (no package index); tests/cli_python.sh installs it into
# a virtual environment. PYTHON: the first of python3, /usr/bin/python3 with
# setuptools and wheel.
PYTHON ?= $(shell for p in python3 /usr/bin/python3; do \
            $$p -c 'import setuptools, wheel' 2>/dev/null && { echo $$p; break; }; done)
PY_SRC := $(wildcard python/pipesim/*.py python/pipesim/*.c) python/setup.py python/pyproject.toml
wheel: build/wheel/.stamp
build/wheel/.stamp: $(CORE_SRC) $(CORE_HDR) $(LUA_SRC) $(PY_SRC) VERSION
	@test -n "$(PYTHON)" || { echo "pipesim: make wheel needs python3 with setuptools and wheel (Debian: python3-setuptools python3-wheel python3-dev)"; exit 1; }
	@rm -rf build/wheel && mkdir -p build/wheel
	@echo "WHEEL build/wheel"
	@$(PYTHON) -m pip wheel -q --no-build-isolation --no-index --no-deps -w build/wheel ./python
	@touch $@

$(BUILD)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(CORE_OBJ)
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore -Itests/unit $< $(CORE_OBJ) -o $@ $(LDLIBS)

$(BENCH): tests/bench/bench.c tests/bench/bench_util.h $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore $< $(CORE_OBJ) -o $@ $(LDLIBS)

$(BUILD)/simgrid_bench: tests/bench/simgrid_bench.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 $(shell pkg-config --cflags simgrid) $< -o $@ $(shell pkg-config --libs simgrid)

$(REC_BENCH): tests/bench/rec_bench.c tests/bench/bench_util.h $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore $< $(CORE_OBJ) -o $@ $(LDLIBS)

unit: deps $(UNIT_BIN)

demo: all
	@mkdir -p results
	$(BIN) run scenarios/demo.lua

# The benchmarks are built (not run) by make test, so a change to a core
# struct cannot leave make bench broken unnoticed.
test: all unit $(BENCH) $(REC_BENCH) $(SIMGRID_BENCH)
	@BUILD=$(BUILD) VALGRIND="$(VALGRIND)" PS_MAKE_ARGS="SAN=$(SAN) RELEASE=$(RELEASE)" sh tests/run.sh

bench: deps $(BIN) $(BENCH) $(REC_BENCH) $(SIMGRID_BENCH)
	@$(BENCH)
	@echo
	@$(REC_BENCH)
	@echo
	@python3 tests/bench/targets.py $(BUILD) $(SIMGRID_BENCH)
	@echo
	@rm -f /tmp/pipesim-sweep.db /tmp/pipesim-sweep.db-wal /tmp/pipesim-sweep.db-shm
	$(BIN) run --unsafe tests/bench/sweep.lua -o /tmp/pipesim-sweep.db
	@echo
	@echo "ring_vs_tree sweep (scenarios/ring_vs_tree.lua, summary recording):"
	@$(BIN) run scenarios/ring_vs_tree.lua -o /tmp/pipesim-bench-ring_vs_tree.db | tail -n 2
	@rm -f /tmp/pipesim-bench-ring_vs_tree.db /tmp/pipesim-bench-ring_vs_tree.db-*
	@echo
	@rm -f /tmp/pipesim-gpt3.db /tmp/pipesim-gpt3.db-*
	@$(BIN) run --unsafe tests/bench/gpt3_1024.lua -o /tmp/pipesim-gpt3.db | head -n 3
	@rm -f /tmp/pipesim-gpt3.db /tmp/pipesim-gpt3.db-*
	@echo
	@echo "fair sharing, one solve per instant (issue 28; tests/bench/coll_dgx.lua):"
	@$(BIN) run tests/bench/coll_dgx.lua -o /tmp/pipesim-bench-coll_dgx.db | head -n 1
	@rm -f /tmp/pipesim-bench-coll_dgx.db /tmp/pipesim-bench-coll_dgx.db-*
	@echo
	@echo "streaming engine, whole process (issue 12; tests/bench/whole_process.sh):"
	@sh tests/bench/whole_process.sh $(BIN)
	@echo
	@echo "the fixed cost of a process (issue 12; tests/bench/startup.py):"
	@python3 tests/bench/startup.py $(BIN)
	@echo
	@echo "PyTorch's gloo against live mode's ring (issue 25; tests/bench/gloo_vs_live.py):"
	@python3 tests/bench/gloo_vs_live.py $(BIN)

# libFuzzer targets (tests/fuzz/): clang with ASan and UBSan, the core in
# build-fuzz/ with -fsanitize=fuzzer-no-link. Warnings stay warnings here:
# clang warns where gcc does not, and `make fuzz` should fuzz, not lint.
FUZZ_CC      ?= clang
FUZZ_TIME    ?= 60
FUZZ_NAMES   := unit action profile scenario db calibrate wire view
FUZZ_BUILD   := build-fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer
FUZZ_CFLAGS   = -std=c11 -D_POSIX_C_SOURCE=200809L $(filter-out -Werror,$(WARN)) \
                -g -O1 $(FUZZ_SAN) -DPS_VERSION='"$(shell cat VERSION)"' \
                -DREC_CREATE_WAIT_S=0 -DREC_BUSY_LIMIT_S=1
FUZZ_CORE_OBJ := $(CORE_SRC:%.c=$(FUZZ_BUILD)/%.o) $(FUZZ_BUILD)/embed_data.o
FUZZ_BIN     := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)
.SECONDARY: $(FUZZ_CORE_OBJ)

$(FUZZ_BUILD)/core/%.o: core/%.c $(CORE_HDR)
	@mkdir -p $(dir $@)
	@echo "CC $< (fuzz)"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(PKG_CFLAGS) -Icore -c $< -o $@

# the data the default build generated (fuzz: all)
$(FUZZ_BUILD)/embed_data.o: build/embed_data.c core/base/embed.h
	@mkdir -p $(dir $@)
	@echo "CC $< (fuzz)"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -Icore -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_CORE_OBJ)
	@echo "LD $@"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(PKG_CFLAGS) -Icore -Itests/fuzz $< $(FUZZ_CORE_OBJ) -o $@ $(LDLIBS)

# Installs clang and its fuzzer runtime (libclang-rt-dev: clang itself only
# recommends it) when clang cannot link a libFuzzer target.
FUZZ_DEPS    := clang libclang-rt-dev
fuzz-deps:
	@printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }\n' | \
	  $(FUZZ_CC) -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null || \
	  { echo "pipesim: installing fuzzing dependencies: $(FUZZ_DEPS)"; \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(FUZZ_DEPS) >/dev/null; }

$(FUZZ_CORE_OBJ) $(FUZZ_BIN): | fuzz-deps

fuzz: all $(FUZZ_BIN)
	@BIN=$(BIN) FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_TIME=$(FUZZ_TIME) sh tests/fuzz/run.sh $(FUZZ_NAMES)

# 8 writers x 3000 and x 12000 runs on one database, and a merge of 1,000
# shards (minutes; not in test)
stress: all
	@BUILD=$(BUILD) sh tests/stress.sh
	@BUILD=$(BUILD) sh tests/stress_merge.sh

format:
	clang-format -i core/*/*.c core/*/*.h tests/unit/*.c tests/unit/*.h tests/fuzz/*.c tests/fuzz/*.h

format-check:
	clang-format --dry-run -Werror core/*/*.c core/*/*.h tests/unit/*.c tests/unit/*.h tests/fuzz/*.c tests/fuzz/*.h

clean:
	rm -rf build build-san build-fuzz build-release
