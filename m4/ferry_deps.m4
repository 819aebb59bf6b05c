# ferry_deps.m4 - the optional dependencies: --with-hdf5, --with-netcdf,
# --with-cuda and --with-nccl.  Each takes an optional PREFIX.  Without the
# option the dependency is used when found (auto); an explicit --with-X that
# cannot be satisfied stops configure; --without-X turns it off.  Each sets
# X_CPPFLAGS and X_LIBS, HAVE_X in config.h, the HAVE_X automake conditional,
# and ferry_X_summary for the summary block.

# FERRY_WITH_HDF5 - parallel HDF5 (it must provide H5Pset_fapl_mpio).
AC_DEFUN([FERRY_WITH_HDF5], [
  AC_REQUIRE([PKG_PROG_PKG_CONFIG])
  AC_ARG_WITH([hdf5],
    [AS_HELP_STRING([--with-hdf5@<:@=PREFIX@:>@],
      [read HDF5 files with parallel HDF5 (default: auto; looks for
       pkg-config hdf5-openmpi, hdf5-mpi, hdf5-mpich, hdf5, then
       $HDF5_DIR, $HDF5_ROOT)])],
    [], [with_hdf5=auto])
  FERRY_WITH_DEFAULT([hdf5])
  HDF5_CPPFLAGS=
  HDF5_LIBS=
  ferry_have_hdf5=no
  ferry_hdf5_summary="no (--without-hdf5)"
  AS_IF([test "x$with_hdf5" != xno], [
    ferry_cands=
    AS_CASE([$with_hdf5],
      [yes|auto], [
        FERRY_DEP_CANDIDATES([ferry_cands], [pc], [hdf5-openmpi hdf5-mpi hdf5-mpich hdf5])
        FERRY_DEP_CANDIDATES([ferry_cands], [dir], [$HDF5_DIR $HDF5_ROOT])
        ferry_cands="$ferry_cands plain:"],
      [ferry_cands="dir:$with_hdf5"])
    AC_MSG_CHECKING([for parallel HDF5 (H5Pset_fapl_mpio)])
    FERRY_FIND_DEP([$ferry_cands], [-lhdf5], [[#include <hdf5.h>]], [[
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
        H5Pclose(fapl);]])
    AC_MSG_RESULT([$ferry_dep_found${ferry_dep_where:+ ($ferry_dep_where)}])
    AS_IF([test "x$ferry_dep_found" = xyes], [
      ferry_have_hdf5=yes
      HDF5_CPPFLAGS=$ferry_dep_cppflags
      HDF5_LIBS=$ferry_dep_libs
      FERRY_PC_ADD([$ferry_dep_pc], [$ferry_dep_libs])
      ferry_save_CPPFLAGS=$CPPFLAGS
      CPPFLAGS="$CPPFLAGS $HDF5_CPPFLAGS"
      AC_COMPUTE_INT([ferry_h5_major], [H5_VERS_MAJOR], [[#include <hdf5.h>]], [ferry_h5_major=?])
      AC_COMPUTE_INT([ferry_h5_minor], [H5_VERS_MINOR], [[#include <hdf5.h>]], [ferry_h5_minor=?])
      AC_COMPUTE_INT([ferry_h5_release], [H5_VERS_RELEASE], [[#include <hdf5.h>]], [ferry_h5_release=?])
      CPPFLAGS=$ferry_save_CPPFLAGS
      ferry_hdf5_summary="yes (HDF5 $ferry_h5_major.$ferry_h5_minor.$ferry_h5_release, $ferry_dep_where)"
      AC_DEFINE([HAVE_HDF5], [1], [Define to 1 to build the parallel HDF5 backend.])
    ], [
      ferry_hdf5_summary="no (no parallel HDF5 found)"
      FERRY_DEP_MISSING([hdf5], [no parallel HDF5 with H5Pset_fapl_mpio was found (Debian: apt-get install libhdf5-openmpi-dev; HPC: module load hdf5 (its MPI build); or --with-hdf5=PREFIX; see config.log)])])
  ])
  AC_SUBST([HDF5_CPPFLAGS])
  AC_SUBST([HDF5_LIBS])
  AM_CONDITIONAL([HAVE_HDF5], [test "x$ferry_have_hdf5" = xyes])
])

# FERRY_WITH_NETCDF - netCDF-C with parallel I/O (nc_open_par); notes
# whether it has NCZarr (HAVE_NCZARR), the road to Zarr stores.
AC_DEFUN([FERRY_WITH_NETCDF], [
  AC_REQUIRE([PKG_PROG_PKG_CONFIG])
  AC_ARG_WITH([netcdf],
    [AS_HELP_STRING([--with-netcdf@<:@=PREFIX@:>@],
      [read netCDF and NCZarr stores with parallel netCDF-C (default: auto;
       looks for pkg-config netcdf-mpi, netcdf, then $NETCDF_DIR,
       $NETCDF_ROOT)])],
    [], [with_netcdf=auto])
  FERRY_WITH_DEFAULT([netcdf])
  NETCDF_CPPFLAGS=
  NETCDF_LIBS=
  ferry_have_netcdf=no
  ferry_have_nczarr=no
  ferry_netcdf_summary="no (--without-netcdf)"
  AS_IF([test "x$with_netcdf" != xno], [
    ferry_cands=
    AS_CASE([$with_netcdf],
      [yes|auto], [
        FERRY_DEP_CANDIDATES([ferry_cands], [pc], [netcdf-mpi netcdf])
        FERRY_DEP_CANDIDATES([ferry_cands], [dir], [$NETCDF_DIR $NETCDF_ROOT $NETCDF_C_DIR])
        ferry_cands="$ferry_cands plain:"],
      [ferry_cands="dir:$with_netcdf"])
    AC_MSG_CHECKING([for parallel netCDF-C (nc_open_par)])
    FERRY_FIND_DEP([$ferry_cands], [-lnetcdf -lnetcdf_mpi], [[
#include <netcdf.h>
#include <netcdf_meta.h>
#include <netcdf_par.h>
#if !defined(NC_HAS_PARALLEL) || !NC_HAS_PARALLEL
#error this netCDF-C was built without parallel I/O
#endif]], [[
        int ncid;
        return nc_open_par("x.nc", NC_NOWRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid);]])
    AC_MSG_RESULT([$ferry_dep_found${ferry_dep_where:+ ($ferry_dep_where)}])
    AS_IF([test "x$ferry_dep_found" = xyes], [
      ferry_have_netcdf=yes
      NETCDF_CPPFLAGS=$ferry_dep_cppflags
      NETCDF_LIBS=$ferry_dep_libs
      FERRY_PC_ADD([$ferry_dep_pc], [$ferry_dep_libs])
      ferry_save_CPPFLAGS=$CPPFLAGS
      CPPFLAGS="$CPPFLAGS $NETCDF_CPPFLAGS"
      AC_MSG_CHECKING([whether netCDF-C has NCZarr])
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include <netcdf_meta.h>
#if !defined(NC_HAS_NCZARR) || !NC_HAS_NCZARR
#error no NCZarr
#endif]], [])], [ferry_have_nczarr=yes])
      AC_MSG_RESULT([$ferry_have_nczarr])
      AC_COMPUTE_INT([ferry_nc_major], [NC_VERSION_MAJOR], [[#include <netcdf_meta.h>]], [ferry_nc_major=?])
      AC_COMPUTE_INT([ferry_nc_minor], [NC_VERSION_MINOR], [[#include <netcdf_meta.h>]], [ferry_nc_minor=?])
      AC_COMPUTE_INT([ferry_nc_patch], [NC_VERSION_PATCH], [[#include <netcdf_meta.h>]], [ferry_nc_patch=?])
      CPPFLAGS=$ferry_save_CPPFLAGS
      ferry_netcdf_summary="yes (netCDF-C $ferry_nc_major.$ferry_nc_minor.$ferry_nc_patch, $ferry_dep_where), nczarr: $ferry_have_nczarr"
      AC_DEFINE([HAVE_NETCDF], [1], [Define to 1 to build the parallel netCDF-C backend.])
      AS_IF([test "x$ferry_have_nczarr" = xyes],
        [AC_DEFINE([HAVE_NCZARR], [1], [Define to 1 when netCDF-C can open Zarr stores (NCZarr).])])
    ], [
      ferry_netcdf_summary="no (no parallel netCDF-C found)"
      FERRY_DEP_MISSING([netcdf], [no netCDF-C with parallel I/O (nc_open_par) was found (Debian: apt-get install libnetcdf-mpi-dev; HPC: module load netcdf-c (its MPI build); or --with-netcdf=PREFIX; see config.log)])])
  ])
  AC_SUBST([NETCDF_CPPFLAGS])
  AC_SUBST([NETCDF_LIBS])
  AM_CONDITIONAL([HAVE_NETCDF], [test "x$ferry_have_netcdf" = xyes])
  AM_CONDITIONAL([HAVE_NCZARR], [test "x$ferry_have_nczarr" = xyes])
])

# FERRY_WITH_CUDA - the CUDA runtime (cuda_runtime.h, -lcudart) for the
# device stage.  No nvcc is needed: ferry calls the runtime API from C.
# libferry does not link the runtime: it loads it at run time
# (src/gpu/cudalib.c), first by the soname of the headers found here
# (FERRY_CUDART_SONAME, e.g. libcudart.so.13), then in the library directory
# found here (FERRY_CUDA_LIBDIR).  CUDA_LIBS is for the tool's bench and the
# GPU test program only; DL_LIBS is what dlopen needs (empty on glibc 2.34+).
AC_DEFUN([FERRY_WITH_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=PREFIX@:>@],
      [copy batches to NVIDIA GPUs with the CUDA runtime (default: auto;
       looks in $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT, /usr/local/cuda, then
       the default paths)])],
    [], [with_cuda=auto])
  FERRY_WITH_DEFAULT([cuda])
  CUDA_CPPFLAGS=
  CUDA_LIBS=
  ferry_have_cuda=no
  ferry_cuda_prefix=
  ferry_cuda_summary="no (--without-cuda)"
  AS_IF([test "x$with_cuda" != xno], [
    ferry_cands=
    AS_CASE([$with_cuda],
      [yes|auto], [
        FERRY_DEP_CANDIDATES([ferry_cands], [dir], [$CUDA_HOME $CUDA_PATH $CUDA_ROOT])
        AS_IF([test -d /usr/local/cuda], [ferry_cands="$ferry_cands dir:/usr/local/cuda"])
        ferry_cands="$ferry_cands plain:"],
      [ferry_cands="dir:$with_cuda"])
    AC_MSG_CHECKING([for the CUDA runtime (cudart)])
    FERRY_FIND_DEP([$ferry_cands], [-lcudart], [[#include <cuda_runtime.h>]], [[
        int n = 0;
        return cudaGetDeviceCount(&n) == cudaSuccess ? 0 : 1;]])
    AC_MSG_RESULT([$ferry_dep_found${ferry_dep_where:+ ($ferry_dep_where)}])
    AS_IF([test "x$ferry_dep_found" = xyes], [
      ferry_have_cuda=yes
      ferry_cuda_prefix=$ferry_dep_prefix
      CUDA_CPPFLAGS=$ferry_dep_cppflags
      CUDA_LIBS=$ferry_dep_libs
      ferry_save_CPPFLAGS=$CPPFLAGS
      CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
      AC_COMPUTE_INT([ferry_cudart_version], [CUDART_VERSION], [[#include <cuda_runtime_api.h>]], [ferry_cudart_version=0])
      CPPFLAGS=$ferry_save_CPPFLAGS
      ferry_cudart_major=`expr $ferry_cudart_version / 1000`
      AS_IF([test "$ferry_cudart_major" -ge 12],
        [ferry_cudart_soname="libcudart.so.$ferry_cudart_major"],
        [test "$ferry_cudart_major" -ge 1],
        [ferry_cudart_soname="libcudart.so.$ferry_cudart_major.0"],
        [ferry_cudart_soname="libcudart.so"])
      AC_DEFINE_UNQUOTED([FERRY_CUDART_SONAME], ["$ferry_cudart_soname"],
        [The CUDA runtime libferry loads first (the soname of the headers found).])
      FERRY_LIBDIR_OF_LIBS([$CUDA_LIBS], [ferry_cuda_libdir])
      AC_DEFINE_UNQUOTED([FERRY_CUDA_LIBDIR], ["$ferry_cuda_libdir"],
        [Directory of the CUDA runtime configure found (empty: the default paths).])
      ferry_save_LIBS=$LIBS
      LIBS=
      AC_SEARCH_LIBS([dlopen], [dl], [DL_LIBS=$LIBS],
        [AC_MSG_ERROR([no dlopen: libferry loads the CUDA runtime with it (or configure --without-cuda)])])
      LIBS=$ferry_save_LIBS
      AS_IF([test -n "$DL_LIBS"], [FERRY_PC_ADD([], [$DL_LIBS])])
      # The ferry tool (bench's GPU step) links the static runtime when it
      # exists, so that the tool, like libferry, starts on a node without
      # the CUDA runtime (the static runtime finds the driver only when a
      # CUDA call is made).
      AS_IF([test -n "$ferry_cuda_libdir" &&
             test -f "$ferry_cuda_libdir/libcudart_static.a"],
        [TOOL_CUDA_LIBS="-L$ferry_cuda_libdir -lcudart_static -lrt -lpthread $DL_LIBS"],
        [TOOL_CUDA_LIBS=$CUDA_LIBS])
      ferry_cuda_summary="yes (CUDA runtime `expr $ferry_cudart_version / 1000`.`expr $ferry_cudart_version % 1000 / 10` headers, $ferry_dep_where; loaded at run time: $ferry_cudart_soname)"
      AC_DEFINE([HAVE_CUDA], [1], [Define to 1 to build the CUDA device stage.])
    ], [
      ferry_cuda_summary="no (no CUDA runtime found)"
      FERRY_DEP_MISSING([cuda], [no CUDA runtime (cuda_runtime.h and libcudart) was found (HPC: module load cuda; or --with-cuda=PREFIX, e.g. /usr/local/cuda; see config.log)])])
  ])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([TOOL_CUDA_LIBS])
  AC_SUBST([DL_LIBS])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$ferry_have_cuda" = xyes])
])

# FERRY_WITH_NCCL - NCCL (nccl.h, -lnccl) for device-side collectives.  Needs
# CUDA; the NCCL that ships inside a CUDA installation counts.
AC_DEFUN([FERRY_WITH_NCCL], [
  AC_REQUIRE([FERRY_WITH_CUDA])
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl@<:@=PREFIX@:>@],
      [use NCCL for GPU collectives (default: auto; needs CUDA; looks in
       $NCCL_HOME, $NCCL_ROOT, the CUDA prefix, then the default paths)])],
    [], [with_nccl=auto])
  FERRY_WITH_DEFAULT([nccl])
  NCCL_CPPFLAGS=
  NCCL_LIBS=
  ferry_have_nccl=no
  ferry_nccl_summary="no (--without-nccl)"
  AS_IF([test "x$with_nccl" != xno], [
    AS_IF([test "x$ferry_have_cuda" != xyes], [
      ferry_nccl_summary="no (needs CUDA)"
      FERRY_DEP_MISSING([nccl], [NCCL needs CUDA, which is disabled or was not found (add --with-cuda=PREFIX)])
    ], [
      ferry_cands=
      AS_CASE([$with_nccl],
        [yes|auto], [
          FERRY_DEP_CANDIDATES([ferry_cands], [dir], [$NCCL_HOME $NCCL_ROOT $NCCL_DIR $ferry_cuda_prefix])
          ferry_cands="$ferry_cands plain:"],
        [ferry_cands="dir:$with_nccl"])
      ferry_save_CPPFLAGS=$CPPFLAGS
      ferry_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
      LIBS="$CUDA_LIBS $LIBS"
      AC_MSG_CHECKING([for NCCL])
      FERRY_FIND_DEP([$ferry_cands], [-lnccl], [[#include <nccl.h>]], [[
          int version = 0;
          return ncclGetVersion(&version) == ncclSuccess ? 0 : 1;]])
      AC_MSG_RESULT([$ferry_dep_found${ferry_dep_where:+ ($ferry_dep_where)}])
      AS_IF([test "x$ferry_dep_found" = xyes], [
        CPPFLAGS="$CPPFLAGS $ferry_dep_cppflags"
        AC_COMPUTE_INT([ferry_nccl_version], [NCCL_VERSION_CODE], [[#include <nccl.h>]], [ferry_nccl_version=0])
      ])
      CPPFLAGS=$ferry_save_CPPFLAGS
      LIBS=$ferry_save_LIBS
      AS_IF([test "x$ferry_dep_found" = xyes], [
        ferry_have_nccl=yes
        NCCL_CPPFLAGS=$ferry_dep_cppflags
        NCCL_LIBS=$ferry_dep_libs
        FERRY_LIBDIR_OF_LIBS([$NCCL_LIBS], [ferry_nccl_libdir])
        AC_DEFINE_UNQUOTED([FERRY_NCCL_LIBDIR], ["$ferry_nccl_libdir"],
          [Directory of the NCCL configure found (empty: the default paths).])
        AS_IF([test "$ferry_nccl_version" -ge 10000 2>/dev/null],
          [ferry_nccl_v="`expr $ferry_nccl_version / 10000`.`expr $ferry_nccl_version % 10000 / 100`.`expr $ferry_nccl_version % 100`"],
          [ferry_nccl_v="`expr $ferry_nccl_version / 1000`.`expr $ferry_nccl_version % 1000 / 100`.`expr $ferry_nccl_version % 100`"])
        ferry_nccl_summary="yes (NCCL $ferry_nccl_v headers, $ferry_dep_where; loaded at run time: libnccl.so.2)"
        AC_DEFINE([HAVE_NCCL], [1], [Define to 1 to use NCCL for GPU collectives.])
      ], [
        ferry_nccl_summary="no (not found)"
        FERRY_DEP_MISSING([nccl], [no NCCL (nccl.h and libnccl) was found (HPC: module load nccl; or --with-nccl=PREFIX; see config.log)])])
    ])
  ])
  AC_SUBST([NCCL_CPPFLAGS])
  AC_SUBST([NCCL_LIBS])
  AM_CONDITIONAL([HAVE_NCCL], [test "x$ferry_have_nccl" = xyes])
])

# FERRY_LIBDIR_OF_LIBS(LIBS, VARIABLE)
# The first -L directory of a list of link flags into VARIABLE (empty if
# none): where configure found a library that libferry loads at run time.
AC_DEFUN([FERRY_LIBDIR_OF_LIBS], [
  $2=
  for ferry_word in $1; do
    ferry_ldir=`expr "x$ferry_word" : 'x-L\(.*\)'`
    AS_IF([test -z "$$2" && test -n "$ferry_ldir"], [$2=$ferry_ldir])
  done
])

# FERRY_PC_ADD(PKG-CONFIG-NAME, LIBS)
# Record a dependency for ferry.pc: by package name when pkg-config found
# it, else by its link flags.  Only static linking needs these.
AC_DEFUN([FERRY_PC_ADD], [
  AS_IF([test -n "$1"],
    [FERRY_PC_REQUIRES_PRIVATE="$FERRY_PC_REQUIRES_PRIVATE${FERRY_PC_REQUIRES_PRIVATE:+, }$1"],
    [FERRY_PC_LIBS_PRIVATE="$FERRY_PC_LIBS_PRIVATE $2"])
])
