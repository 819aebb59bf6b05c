#!/bin/sh
# install_prefix.sh - what `make install` leaves for the users of a cluster,
# installed into a scratch prefix (make install prefix=$tmp/prefix; no
# Slurm cluster needed, unlike tests/slurm/install.sh):
#
#  - the CMake package: a project outside the tree with
#    find_package(ferry 0.1 REQUIRED) and target_link_libraries(... 
#    ferry::ferry) configures, builds and runs under mpirun (the README's
#    example, exact count); find_package(ferry 9.0) is refused;
#  - the modulefiles' dependencies: installed with
#    FERRY_MODULE_DEPS="ferrytestdep/1.0", loading ferry with Lmod (the .lua
#    and the Tcl modulefile) loads that module and unloading ferry unloads it;
#  - the site files: modulefile.site.lua / .tcl in PREFIX/share/ferry are
#    read by the modulefiles, and a second make install leaves them as they
#    were (it rewrites the .sample files only).
#
# Bugs it pins: a ferryConfig.cmake with a wrong path or without MPI; a
# version file that accepts any version; a modulefile that forgets its
# dependencies or the site file; make install overwriting the site's edits.
#
# Parts whose tool is missing (cmake, Lmod) say SKIP; with neither the test
# skips.  Environment: as the scripts of tests/lib/common.sh (FERRY, RUN_MPI, top_builddir,
# top_srcdir).  Exit 0 pass, 1 fail, 77 skip.

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init install_prefix
show() {
  for f in "$@"; do
    test -f "$f" && sed 's/^/    /' "$f" | head -n 40
  done
}
lmod=${LMOD_CMD:-/usr/share/lmod/lmod/libexec/lmod}
have_lmod=yes
test -x "$lmod" || have_lmod=no
have_cmake=yes
command -v cmake >/dev/null 2>&1 || have_cmake=no
if test -z "${top_builddir:-}" || test ! -f "$top_builddir/Makefile"; then
  echo "SKIP: top_builddir is not a configured build tree (run under make check)"
  exit 77
fi
if test $have_lmod = no && test $have_cmake = no; then
  echo "SKIP: neither cmake nor Lmod is installed (Debian: apt-get install cmake lmod)"
  exit 77
fi
prefix=$tmp/prefix
version=`sed -n 's/^VERSION = //p' "$top_builddir/Makefile"`
site=$prefix/share/ferry

# make_install: into $prefix, with a module dependency.  The test runs inside
# "make check": the nested make must not join its jobserver.
make_install() {
  MAKEFLAGS= MFLAGS= MAKELEVEL= make -C "$top_builddir" install \
    prefix="$prefix" FERRY_MODULE_DEPS="ferrytestdep/1.0" >"$tmp/install.log" 2>&1 || {
    echo "FAIL: make install prefix=$prefix"
    tail -n 30 "$tmp/install.log" | sed 's/^/    /'
    exit 1
  }
}
make_install
for f in lib/cmake/ferry/ferryConfig.cmake lib/cmake/ferry/ferryConfigVersion.cmake \
         share/ferry/modulefile.site.lua.sample share/ferry/modulefile.site.tcl.sample \
         share/modulefiles/lua/ferry/$version.lua share/modulefiles/tcl/ferry/$version; do
  if test -f "$prefix/$f"; then
    echo "ok: make install wrote $f"
  else
    echo "FAIL: make install did not write $prefix/$f"
    fail=1
  fi
done
test $fail = 0 || exit 1

# ---- the site files survive a second make install --------------------------
printf 'setenv("FERRY_TEST_SITE", "lua")\n' >"$site/modulefile.site.lua"
printf 'setenv FERRY_TEST_SITE tcl\n' >"$site/modulefile.site.tcl"
cp "$site/modulefile.site.lua" "$tmp/site.lua"
cp "$site/modulefile.site.tcl" "$tmp/site.tcl"
echo '-- a hand edit' >>"$prefix/share/modulefiles/lua/ferry/$version.lua"
make_install
if cmp -s "$site/modulefile.site.lua" "$tmp/site.lua" &&
   cmp -s "$site/modulefile.site.tcl" "$tmp/site.tcl"; then
  echo "ok: a second make install left modulefile.site.lua and .tcl as they were"
else
  echo "FAIL: a second make install changed the site files"
  fail=1
fi
if grep -- '-- a hand edit' "$prefix/share/modulefiles/lua/ferry/$version.lua" >/dev/null; then
  echo "FAIL: make install did not rewrite the modulefile"
  fail=1
fi

# ---- modulefiles: dependency and site file, with Lmod ----------------------
module() {
  eval "`$lmod sh "$@"`"
}
check_module() {
  kind=$1
  (
    unset LOADEDMODULES _LMFILES_ _ModuleTable_ _ModuleTable001_ FERRY_TEST_DEP FERRY_TEST_SITE
    MODULEPATH=$prefix/share/modulefiles/$kind:$tmp/mods-$kind
    export MODULEPATH
    module load ferry 2>"$tmp/load.err" || exit 1
    ok=0
    test "${FERRY_TEST_DEP:-}" = 1.0 || {
      echo "FAIL: $kind: module load ferry did not load ferrytestdep/1.0 (FERRY_TEST_DEP='${FERRY_TEST_DEP:-}')"; ok=1; }
    case :${LOADEDMODULES:-}: in
      *:ferrytestdep/1.0:*) ;;
      *) echo "FAIL: $kind: ferrytestdep/1.0 not in LOADEDMODULES='${LOADEDMODULES:-}'"; ok=1 ;;
    esac
    test "${FERRY_TEST_SITE:-}" = $kind || {
      echo "FAIL: $kind: the site file was not read (FERRY_TEST_SITE='${FERRY_TEST_SITE:-}')"; ok=1; }
    test "${FERRY_ROOT:-}" = "$prefix" || {
      echo "FAIL: $kind: FERRY_ROOT='${FERRY_ROOT:-}'"; ok=1; }
    module unload ferry 2>>"$tmp/load.err"
    test -z "${FERRY_TEST_DEP:-}" || {
      echo "FAIL: $kind: ferrytestdep still loaded after module unload ferry"; ok=1; }
    test -z "${FERRY_TEST_SITE:-}" || {
      echo "FAIL: $kind: FERRY_TEST_SITE set after unload"; ok=1; }
    exit $ok
  )
}
if test $have_lmod = yes; then
  mkdir -p "$tmp/mods-lua/ferrytestdep" "$tmp/mods-tcl/ferrytestdep" || exit 99
  printf 'setenv("FERRY_TEST_DEP", "1.0")\n' >"$tmp/mods-lua/ferrytestdep/1.0.lua"
  printf '#%%Module1.0\nsetenv FERRY_TEST_DEP 1.0\n' >"$tmp/mods-tcl/ferrytestdep/1.0"
  for kind in lua tcl; do
    if check_module $kind; then
      echo "ok: Lmod, $kind modulefile: module load ferry loads ferrytestdep/1.0 and reads modulefile.site.$kind; unload unloads both"
    else
      echo "FAIL: the $kind modulefile's dependency or site file"
      show "$tmp/load.err"
      fail=1
    fi
  done
else
  echo "SKIP part: Lmod is not installed (Debian: apt-get install lmod; or set LMOD_CMD): modulefiles not loaded"
fi

# ---- the CMake package -----------------------------------------------------
if test $have_cmake = yes && ! ls "$prefix"/lib/libferry.so* >/dev/null 2>&1; then
  have_cmake=no
  echo "SKIP part: no shared libferry (configure --disable-shared?): ferryConfig.cmake refuses a static-only install"
elif test $have_cmake = no; then
  echo "SKIP part: cmake is not installed (Debian: apt-get install cmake): find_package(ferry) not tried"
fi
if test $have_cmake = yes; then
  proj=$tmp/cmake-proj
  mkdir -p "$proj" && cp "$top_srcdir/tests/example.c" "$proj/prog.c" || exit 99
  cat >"$proj/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.10)
project(ferry_outside LANGUAGES C)
find_package(ferry 0.1 REQUIRED)
add_executable(prog prog.c)
target_link_libraries(prog PRIVATE ferry::ferry)
EOF
  if (cd "$proj" && cmake -S . -B build -DCMAKE_PREFIX_PATH="$prefix" &&
      cmake --build build) >"$tmp/cmake.out" 2>&1; then
    echo "ok: cmake: find_package(ferry 0.1 REQUIRED) and ferry::ferry build prog.c"
  else
    echo "FAIL: cmake of a project using find_package(ferry) and ferry::ferry"
    show "$tmp/cmake.out"
    fail=1
  fi
  if test -x "$proj/build/prog"; then
    ldd "$proj/build/prog" >"$tmp/ldd.out" 2>&1
    grep "libferry.so.* => $prefix/lib/" "$tmp/ldd.out" >/dev/null || {
      echo "FAIL: prog does not load libferry from $prefix/lib"; show "$tmp/ldd.out"; fail=1; }
    "$FERRY" gen "$tmp/data" --samples 1013 --var samples:float32:8 --var targets:int64 \
      >/dev/null 2>&1 || { echo "FAIL: ferry gen"; exit 1; }
    $RUN_MPI 3 "$proj/build/prog" "$tmp/data" >"$tmp/prog.out" 2>&1
    st=$?
    want="served 2026 samples in 2 epochs of 1013"
    if test $st = 0 && test "`tail -n 1 "$tmp/prog.out"`" = "$want"; then
      echo "ok: the CMake-built program on 3 ranks: $want"
    else
      echo "FAIL: the CMake-built program (status $st), expected last line '$want'"
      show "$tmp/prog.out"
      fail=1
    fi
  fi
  sed -i 's/find_package(ferry 0.1 REQUIRED)/find_package(ferry 9.0 REQUIRED)/' "$proj/CMakeLists.txt"
  if (cd "$proj" && rm -rf build2 && cmake -S . -B build2 -DCMAKE_PREFIX_PATH="$prefix") \
       >"$tmp/cmake9.out" 2>&1; then
    echo "FAIL: find_package(ferry 9.0 REQUIRED) accepted ferry $version"
    fail=1
  elif grep "version: $version" "$tmp/cmake9.out" >/dev/null; then
    echo "ok: find_package(ferry 9.0 REQUIRED) is refused, naming version $version"
  else
    echo "FAIL: find_package(ferry 9.0) failed without naming the version found"
    show "$tmp/cmake9.out"
    fail=1
  fi
fi
exit $fail
