"""Builds tformer's C library with its own Makefile, then the CPython extension against it.

The library is built by `make` (not by setuptools compiling its sources) so that it gets exactly the
flags, kernels (AVX2 / AVX-512 files with their own -m flags), feature switches and dependency list of
the CLI's build; setuptools only compiles the one extension file. The objects go to build/pylib (not
build/, the Makefile's own), without MPI (MPI=0): the wheel needs no mpirun or libmpi. The extension
links libtformer.a statically and the system libraries the Makefile names (`make print-ldlibs`).
"""
import os
import re
import shlex
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
LIB_BUILD = os.environ.get("TFORMER_PY_BUILD", "build/pylib")
# Sanitizer flags (make python-test-sanitize: "-fsanitize=address,undefined ..."): the library and the
# extension compiled and linked with them, the library at -O1 (the Makefile's test-sanitize).
SAN = os.environ.get("TFORMER_PY_SAN", "")


def make(*args):
    """Runs make in the repository root with the Python build's settings; returns its output."""
    jobs = os.environ.get("TFORMER_JOBS", str(min(os.cpu_count() or 1, 2)))
    san = ["SAN=" + SAN, "OPT=-O1"] if SAN else []
    cmd = ["make", "--no-print-directory", "-j" + jobs, "BUILD=" + LIB_BUILD, "MPI=0", *san, *args]
    return subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout


class BuildWithLibrary(build_ext):
    """build_ext that first brings build/pylib/libtformer.a up to date (make is incremental)."""

    def run(self):
        # The extension's few files are always compiled and linked again: build/lib* and build/temp* are
        # shared by the plain and the sanitizer builds, whose objects must never mix.
        self.force = True
        make(LIB_BUILD + "/libtformer.a")
        libs = shlex.split(make("-s", "print-ldlibs").strip())
        lib = os.path.join(ROOT, LIB_BUILD, "libtformer.a")
        for ext in self.extensions:
            ext.extra_objects = [lib]
            ext.depends = ext.depends + [lib]  # relinked when the library changed, not only the sources
            ext.extra_link_args = libs + ["-Wl,--exclude-libs,ALL"] + (shlex.split(SAN) if SAN else ["-Wl,--strip-debug"])
            ext.extra_compile_args = ext.extra_compile_args + shlex.split(SAN)
        super().run()


def version():
    """TF_VERSION of cli/verbs.c, the CLI's --version."""
    with open(os.path.join(ROOT, "cli", "verbs.c"), encoding="utf-8") as f:
        return re.search(r'#define TF_VERSION "([^"]+)"', f.read()).group(1)


setup(
    version=version(),
    ext_modules=[
        Extension(
            "tformer._tformer",
            sources=["python/tformer/_tformer.c", "python/tformer/_text.c", "python/tformer/_tokenizer.c",
                     "python/tformer/_stream.c", "python/tformer/_train.c", "python/tformer/_classify.c"],
            depends=["python/tformer/_tformer.h"],
            include_dirs=["include"],
            define_macros=[("_POSIX_C_SOURCE", "200809L")],
            extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Wno-unused-parameter",
                                "-fvisibility=hidden"],
        )
    ],
    cmdclass={"build_ext": BuildWithLibrary},
)
