# package.py - Spack recipe for ferry.
#
# Copy it into a Spack repository of your own and install:
#
#   spack repo create $HOME/spack-ferry ferry_site   (once)
#   mkdir -p $HOME/spack-ferry/packages/ferry
#   cp slurm/package.py $HOME/spack-ferry/packages/ferry/package.py
#   spack repo add $HOME/spack-ferry
#   spack install ferry ^openmpi      (or ^mpich, or the site's MPI as an external)
#   spack load ferry                  (or: module load ferry, from Spack's modules)
#
# The tarball is the one "make dist" writes (ferry-VERSION.tar.gz); SITE:
# put it where Spack can fetch it (a URL or a mirror: spack mirror add).
# Its checksum: "make recipes" in a build directory writes the tarball and
# recipes/package.py, this file with the tarball's sha256 in place of the
# zeros below (copy that one, not this one).  "spack install ferry@main"
# builds the main branch of the git repository instead.  docs/install.md has
# the whole walk-through.

import glob
import os

from spack.package import *


class Ferry(AutotoolsPackage):
    """MPI-native training-data loader for HPC clusters: libferry (C) and the
    ferry tool. Every rank reads only its own chunks through MPI-IO; every
    sample is served exactly once per epoch."""

    # SITE: where your copy of the ferry-VERSION.tar.gz of "make dist" lives,
    # and the git repository of ferry's sources.
    homepage = "https://example.org/ferry"
    url = "https://example.org/ferry/ferry-0.1.0.tar.gz"
    git = "https://example.org/ferry/ferry.git"

    # The sha256 of ferry-0.1.0.tar.gz: filled in by "make recipes" (the
    # zeros are its placeholder).
    version("0.1.0", sha256="0000000000000000000000000000000000000000000000000000000000000000")
    # The main branch: a git checkout, built after ./bootstrap's autoreconf.
    version("main", git=git, branch="main")

    variant("hdf5", default=True, description="Read HDF5 and netCDF-4 files (parallel HDF5)")
    variant("zarr", default=False, description="Read Zarr stores through netCDF-C's NCZarr")
    variant("cuda", default=False, description="CUDA stage: batches delivered in GPU memory")
    variant("nccl", default=False, description="NCCL for the CUDA stage")
    variant("python", default=True,
            description="The Python package (import ferry; ferry.torch, ferry.lightning, ferry.jax)")

    depends_on("c", type="build")
    depends_on("pkgconfig", type="build")
    # A git checkout has no configure yet: Spack's autoreconf phase makes it.
    with when("@main"):
        depends_on("autoconf", type="build")
        depends_on("automake", type="build")
        depends_on("libtool", type="build")
    depends_on("mpi")
    depends_on("jansson")
    # Parquet's SNAPPY pages (src/codecs/page.c): without it they are refused
    depends_on("snappy")
    depends_on("hdf5+mpi", when="+hdf5")
    depends_on("netcdf-c+mpi", when="+zarr")
    depends_on("c-blosc", when="+zarr")
    depends_on("zstd", when="+zarr")
    depends_on("lz4", when="+zarr")
    depends_on("zlib-api", when="+zarr")
    depends_on("cuda", when="+cuda")
    depends_on("nccl", when="+nccl")
    # The package is a C extension built against this Python (its headers);
    # mpi4py, numpy and torch are the user's choice, not dependencies.
    depends_on("python@3.8:", when="+python", type=("build", "link", "run"))
    conflicts("+nccl", when="~cuda", msg="the NCCL stage needs +cuda")

    def configure_args(self):
        spec = self.spec
        # ferry compiles everything with the MPI wrapper (configure's MPICC).
        args = ["MPICC=" + spec["mpi"].mpicc]
        args += self.with_or_without("hdf5", activation_value="prefix")
        args += self.with_or_without("netcdf", variant="zarr",
                                     activation_value=lambda _: spec["netcdf-c"].prefix)
        args += self.with_or_without("cuda", activation_value="prefix")
        args += self.with_or_without("nccl", activation_value="prefix")
        # Spack's Python, not whatever python3 configure would find first.
        if spec.satisfies("+python"):
            args.append("--with-python=" + spec["python"].command.path)
        else:
            args.append("--without-python")
        return args

    def setup_run_environment(self, env):
        # What ferry's own modulefiles set beyond PATH, LD_LIBRARY_PATH,
        # MANPATH and PKG_CONFIG_PATH (Spack's modules set those).
        env.set("FERRY_ROOT", self.prefix)
        env.prepend_path("HDF5_PLUGIN_PATH", join_path(self.prefix.lib, "ferry", "plugins"))
        # The Python package: prefix/lib/pythonX.Y/site-packages/ferry (as
        # ferry's own modulefiles add it to PYTHONPATH).
        for site in glob.glob(join_path(self.prefix, "lib*", "python*", "*-packages")):
            if os.path.isdir(join_path(site, "ferry")):
                env.prepend_path("PYTHONPATH", site)

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_installed_tool(self):
        Executable(join_path(self.prefix.bin, "ferry"))("--version")
