"""Build the ferry package against an installed libferry, for pip:

    python3 -m venv --system-site-packages venv
    venv/bin/pip install --no-build-isolation --no-index ./python

libferry is found with pkg-config (ferry.pc: its include and library
directories, and the MPI compiler wrapper it was built with, which compiles
and links the extension); FERRY_PREFIX=/path/to/prefix points pkg-config at
PREFIX/lib/pkgconfig (and lib64) first.  Nothing is downloaded.  The
project's own build (configure; make install) installs the same package
without pip.
"""
import os
import shlex
import subprocess

from setuptools import Extension, setup


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config"] + list(args) + ["ferry"],
                             check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(
            "ferry's Python package needs an installed libferry found by "
            "pkg-config (ferry.pc): set FERRY_PREFIX=/its/prefix or "
            "PKG_CONFIG_PATH (%s)" % e)
    return out.stdout.strip()


prefix = os.environ.get("FERRY_PREFIX")
if prefix:
    dirs = [os.path.join(prefix, sub, "pkgconfig") for sub in ("lib", "lib64")]
    old = os.environ.get("PKG_CONFIG_PATH")
    os.environ["PKG_CONFIG_PATH"] = os.pathsep.join(dirs + ([old] if old else []))

version = pkg_config("--modversion")
include_dirs = [f[2:] for f in shlex.split(pkg_config("--cflags-only-I"))]
library_dirs = [f[2:] for f in shlex.split(pkg_config("--libs-only-L"))]
mpicc = pkg_config("--variable=mpicc")
# ferry.h includes <mpi.h>: compile and link with ferry's MPI wrapper.
if mpicc and "CC" not in os.environ:
    os.environ["CC"] = mpicc
    os.environ.setdefault("LDSHARED", mpicc + " -shared")

setup(
    name="ferry",
    version=version,
    description="MPI-native training-data loader (Python front of libferry)",
    packages=["ferry"],
    ext_modules=[
        Extension(
            "ferry._ferry",
            sources=[
                "ferry/_ferry.c",
                "ferry/_ferry_array.c",
                "ferry/_ferry_batch.c",
                "ferry/_ferry_loader.c",
            ],
            depends=["ferry/_ferry.h"],
            include_dirs=include_dirs,
            library_dirs=library_dirs,
            runtime_library_dirs=library_dirs,
            libraries=["ferry"],
            extra_compile_args=["-std=gnu11"],
        )
    ],
    python_requires=">=3.8",
    zip_safe=False,
)
