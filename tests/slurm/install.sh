#!/bin/sh
# install.sh - ferry as a cluster user gets it: `make install` into the
# configured prefix, the generated modulefile loaded with Lmod (the .lua one,
# then the Tcl one), a program outside the source tree compiled with
# `mpicc prog.c $(pkg-config --cflags --libs ferry)` and run under srun, the
# installed ferry run under srun, and the generic job script loading the
# module itself (FERRY_MODULES=ferry) under sbatch --wait.
#
# Each module must set PATH, LD_LIBRARY_PATH, MANPATH, PKG_CONFIG_PATH,
# HDF5_PLUGIN_PATH and FERRY_ROOT to the prefix's directories, show its
# whatis and help, and unload cleanly.  The outside program must find
# libferry only through the module (it is not in the linker's default
# path) and print the README's exact count.
#
# It installs only into a scratch prefix inside the build tree, the one
# ./bootstrap check configures (--prefix=BUILD/prefix); with any other
# prefix (a developer's /usr/local, make distcheck's) it skips.
#
# Bugs it pins: a modulefile with the build tree's or a wrong prefix; a
# missing PKG_CONFIG_PATH or LD_LIBRARY_PATH (the outside program does not
# build or does not start); a ferry.pc that needs the source tree; a
# module that leaves PATH changed after unload.
#
# Environment: as tests/lib/common.sh's scripts, plus FERRY_TEST_SLURM_DIR (unset: skip).
# Exit 0 pass, 1 fail, 77 skip.

. "`dirname "$0"`/common.sh"
slurm_test_init install

prefix=`sed -n 's/^prefix = //p' "$top_builddir/Makefile"`
version=`sed -n 's/^VERSION = //p' "$top_builddir/Makefile"`
case $prefix in
  "$top_builddir"/*) ;;
  *)
    echo "SKIP: the configured prefix '$prefix' is not a scratch prefix in the build tree (./bootstrap check configures --prefix=BUILD/prefix); not installing there"
    exit 77 ;;
esac
lmod=${LMOD_CMD:-/usr/share/lmod/lmod/libexec/lmod}
if test ! -x "$lmod"; then
  echo "SKIP: Lmod is not installed (Debian: apt-get install lmod; or set LMOD_CMD)"
  exit 77
fi
for t in pkg-config mpicc; do
  if ! command -v $t >/dev/null 2>&1; then
    echo "SKIP: $t not found"
    exit 77
  fi
done

# ---- make install ----------------------------------------------------------
# The test runs inside "make check": the nested make must not join its
# jobserver.
rm -rf "$prefix"
if MAKEFLAGS= MFLAGS= MAKELEVEL= make -C "$top_builddir" install \
     >"$tmp/install.log" 2>&1; then
  echo "ok: make install into $prefix"
else
  echo "FAIL: make install into $prefix"
  tail -n 30 "$tmp/install.log" | sed 's/^/    /'
  exit 1
fi
libdir=$prefix/lib
for f in bin/ferry include/ferry.h lib/pkgconfig/ferry.pc \
         share/modulefiles/lua/ferry/$version.lua share/modulefiles/tcl/ferry/$version; do
  if test ! -f "$prefix/$f"; then
    echo "FAIL: make install did not install $prefix/$f"
    fail=1
  fi
done
test -d "$libdir/ferry/plugins" || {
  echo "FAIL: make install did not make $libdir/ferry/plugins"
  fail=1
}
ls "$libdir"/libferry.so* >/dev/null 2>&1 || {
  echo "FAIL: no $libdir/libferry.so"
  fail=1
}
test $fail = 0 || exit 1

# ---- the modulefiles, loaded with Lmod ------------------------------------
# A clean environment: the module alone must make ferry usable.  Lmod's
# "sh" mode prints shell commands to eval.
clean_env() {
  unset LD_LIBRARY_PATH PKG_CONFIG_PATH HDF5_PLUGIN_PATH FERRY_ROOT MANPATH \
    LOADEDMODULES _LMFILES_ _ModuleTable_ _ModuleTable001_ __LMOD_REF_COUNT_PATH
  PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
  export PATH
}
module() {
  eval "`$lmod sh "$@"`"
}

# has VAR DIR: DIR is the first element of $VAR.
has() {
  eval "val=\${$1:-}"
  case $val in
    "$2"|"$2":*) return 0 ;;
  esac
  echo "FAIL: $1='$val' does not start with $2"
  return 1
}

check_module() {
  kind=$1
  (
    clean_env
    MODULEPATH=$prefix/share/modulefiles/$kind
    export MODULEPATH
    module load ferry 2>"$tmp/load.err" || exit 1
    ok=0
    has PATH "$prefix/bin" || ok=1
    has LD_LIBRARY_PATH "$libdir" || ok=1
    has MANPATH "$prefix/share/man" || ok=1
    has PKG_CONFIG_PATH "$libdir/pkgconfig" || ok=1
    has HDF5_PLUGIN_PATH "$libdir/ferry/plugins" || ok=1
    test "${FERRY_ROOT:-}" = "$prefix" || {
      echo "FAIL: FERRY_ROOT='${FERRY_ROOT:-}', not $prefix"; ok=1; }
    test "`command -v ferry`" = "$prefix/bin/ferry" || {
      echo "FAIL: ferry on PATH is '`command -v ferry`'"; ok=1; }
    ferry --version >"$tmp/version.out" 2>&1 || {
      echo "FAIL: the installed ferry --version"; show "$tmp/version.out"; ok=1; }
    test "`pkg-config --modversion ferry 2>&1`" = "$version" || {
      echo "FAIL: pkg-config --modversion ferry: `pkg-config --modversion ferry 2>&1`"; ok=1; }
    $lmod sh whatis ferry >"$tmp/whatis.out" 2>&1
    grep 'Description: MPI-native training-data loader' "$tmp/whatis.out" >/dev/null || {
      echo "FAIL: module whatis ferry"; show "$tmp/whatis.out"; ok=1; }
    $lmod sh help ferry >"$tmp/help.out" 2>&1
    grep "pkg-config --cflags --libs ferry" "$tmp/help.out" >/dev/null || {
      echo "FAIL: module help ferry"; show "$tmp/help.out"; ok=1; }
    module unload ferry
    case :$PATH: in
      *":$prefix/bin:"*) echo "FAIL: PATH still holds $prefix/bin after unload"; ok=1 ;;
    esac
    test -z "${FERRY_ROOT:-}" || { echo "FAIL: FERRY_ROOT set after unload"; ok=1; }
    exit $ok
  )
}
for kind in lua tcl; do
  if check_module $kind; then
    echo "ok: Lmod loads the $kind modulefile: PATH, LD_LIBRARY_PATH, MANPATH, PKG_CONFIG_PATH, HDF5_PLUGIN_PATH, FERRY_ROOT; whatis, help, unload"
  else
    echo "FAIL: the $kind modulefile (module load ferry with MODULEPATH=$prefix/share/modulefiles/$kind)"
    show "$tmp/load.err"
    fail=1
  fi
done

# ---- an outside program, built with pkg-config, run under srun -------------
mkdir -p "$tmp/outside" && cp "$top_srcdir/tests/example.c" "$tmp/outside/prog.c" || exit 99
"$FERRY" gen "$tmp/data" --samples 1013 --var samples:float32:8 --var targets:int64 \
  >/dev/null 2>&1 || { echo "FAIL: ferry gen"; exit 1; }
(
  clean_env
  MODULEPATH=$prefix/share/modulefiles/lua
  export MODULEPATH
  module load ferry 2>/dev/null
  cd "$tmp/outside" || exit 1
  flags=`pkg-config --cflags --libs ferry` || exit 1
  echo "mpicc prog.c $flags -o prog"
  # shellcheck disable=SC2086 # pkg-config's output is a list of words
  mpicc prog.c $flags -o prog || exit 1
  ldd ./prog | grep "libferry.so.* => $libdir/" >/dev/null || {
    echo "libferry is not resolved in $libdir:"; ldd ./prog; exit 1; }
  slurm_run "${FERRY_MPI_TIMEOUT:-100}" srun -n 3 --mpi=pmix ./prog "$tmp/data"
) >"$tmp/outside.out" 2>&1
st=$?
want="served 2026 samples in 2 epochs of 1013"
if test $st = 0 && test "`tail -n 1 "$tmp/outside.out"`" = "$want"; then
  echo "ok: outside program built with pkg-config --cflags --libs ferry, under srun -n 3: $want"
else
  echo "FAIL: outside program (status $st), expected last line '$want'"
  show "$tmp/outside.out"
  fail=1
fi

# ---- the installed ferry: srun, and sbatch loading the module itself --------
(
  clean_env
  MODULEPATH=$prefix/share/modulefiles/lua
  export MODULEPATH
  module load ferry 2>/dev/null
  slurm_run "${FERRY_MPI_TIMEOUT:-100}" srun -n 2 --mpi=pmix ferry verify "$tmp/data" \
    --epochs 1 --tail partial
) >"$tmp/srun.out" 2>&1
st=$?
if test $st = 0 && grep '^ferry verify: PASS' "$tmp/srun.out" >/dev/null; then
  echo "ok: the module's ferry under srun -n 2: `grep '^ferry verify: PASS' "$tmp/srun.out"`"
else
  echo "FAIL: the module's ferry under srun -n 2 (status $st)"
  show "$tmp/srun.out"
  fail=1
fi

(
  clean_env
  unset FERRY
  MODULEPATH=$prefix/share/modulefiles/lua FERRY_MODULES=ferry
  export MODULEPATH FERRY_MODULES
  cd "$tmp" || exit 1
  slurm_run 200 sbatch --wait --output="$tmp/job.out" \
    "$top_srcdir/slurm/ferry-generic.sbatch" verify "$tmp/data" --epochs 1 --tail partial
) >"$tmp/sbatch.out" 2>&1
st=$?
if test $st = 0 && grep '^ferry verify: PASS' "$tmp/job.out" >/dev/null &&
   grep "run 1 on .*: ferry verify" "$tmp/job.out" >/dev/null; then
  echo "ok: sbatch --wait ferry-generic.sbatch with FERRY_MODULES=ferry: the job loaded the module and `grep '^ferry verify: PASS' "$tmp/job.out"`"
else
  echo "FAIL: sbatch of the template loading the module (status $st)"
  show "$tmp/sbatch.out" "$tmp/job.out"
  fail=1
fi

exit $fail
