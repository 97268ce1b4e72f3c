"""pipesim's Python package: the C core (core/, every layer but cli/) and
the Lua front end (lua/) built into one extension, pipesim._core, with the
Lua library copied into the package (pipesim/lua). Lua 5.4 and SQLite come
from pkg-config, as for the command line; the built-in bytecode
(build/embed_data.c) is made by the top Makefile.

    python3 -m venv --system-site-packages venv   # Debian's setuptools, wheel
    venv/bin/pip install --no-build-isolation ./python
"""
import glob
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PKGS = ["lua5.4", "sqlite3"]
with open(os.path.join(ROOT, "VERSION")) as f:
    VERSION = f.read().strip()


def pkg_config(flag):
    return subprocess.check_output(["pkg-config", flag] + PKGS, text=True).split()


class BuildExt(build_ext):
    """Makes build/embed_data.c (lua/ precompiled, the new-database bytes)
    with the top Makefile before compiling."""

    def run(self):
        subprocess.check_call(["make", "-s", "-C", ROOT, "build/embed_data.c"])
        super().run()


class BuildPy(build_py):
    """Copies lua/ into the package as pipesim/lua."""

    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "pipesim", "lua")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(os.path.join(ROOT, "lua"), dest)


core = sorted(p for p in glob.glob(os.path.join(ROOT, "core", "*", "*.c"))
              if os.sep + "cli" + os.sep not in p)
ext = Extension(
    "pipesim._core",
    sources=[os.path.join(HERE, "pipesim", "_core.c")] + core
    + [os.path.join(ROOT, "build", "embed_data.c")],
    include_dirs=[os.path.join(ROOT, "core")]
    + [f[2:] for f in pkg_config("--cflags-only-I")],
    define_macros=[("PS_VERSION", '"%s"' % VERSION)],
    extra_compile_args=["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-pthread",
                        "-Wall", "-Wextra"],
    libraries=[f[2:] for f in pkg_config("--libs-only-l")] + ["m"],
    library_dirs=[f[2:] for f in pkg_config("--libs-only-L")],
    extra_link_args=["-pthread"],
)

# Build files under the checkout's build/python, not beside the sources.
BUILD = os.environ.get("PIPESIM_PY_BUILD", os.path.join(ROOT, "build", "python"))
os.makedirs(BUILD, exist_ok=True)

setup(
    name="pipesim",
    options={"build": {"build_base": BUILD}, "egg_info": {"egg_base": BUILD},
             "build_ext": {"parallel": 2}},
    version=VERSION,
    description="pipesim: pipeline-parallel LLM training and NCCL collectives, "
    "simulated in process, recorded in SQLite",
    packages=["pipesim"],
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExt, "build_py": BuildPy},
    python_requires=">=3.10",
    extras_require={"pandas": ["pandas"]},
)
