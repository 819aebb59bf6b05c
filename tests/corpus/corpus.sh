#!/bin/sh
# corpus.sh - real files from other projects' test suites (tests/corpus/files,
# origins in SOURCES.md): each is served with the values of its reference
# reader or refused with one line naming it and a reason, never a crash, a
# hang or different values; the outcomes must be those of expect.txt.
# tests/corpus/corpus.py does the work (its docstring says how).
#
#   tests/corpus/corpus.sh [ENTRY...]      check (all entries, or these)
#   tests/corpus/corpus.sh --update        rewrite expect.txt from this run
#
# By hand it uses build/ferry and build/tests/lib/test_dump unless FERRY and
# top_builddir say otherwise.  Exit 0 pass, 1 fail, 77 skip (no numpy).
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$here/../..}
top_builddir=${top_builddir:-$top_srcdir/build}
FERRY=${FERRY:-$top_builddir/ferry}
if test ! -x "$FERRY"; then
  echo "SKIP: FERRY is not set to the ferry program (build it, or set FERRY)"
  exit 77
fi
TEST_DUMP=${TEST_DUMP:-$top_builddir/tests/lib/test_dump}
if test ! -x "$TEST_DUMP"; then
  echo "FAIL: $TEST_DUMP not built (make check builds it)"
  exit 1
fi
RUN_MPI=${RUN_MPI:-sh $top_srcdir/tests/run-mpi.sh}
# The python3 first on PATH may lack numpy, h5py, zarr and netCDF4: Debian's
# has them.  Without numpy nothing can be checked; without one of the others
# the entries it would check are only checked for consistency ("unchecked").
PY=/usr/bin/python3
if ! $PY -c 'import numpy' >/dev/null 2>&1; then
  echo "SKIP: $PY lacks numpy (apt-get install python3-numpy)"
  exit 77
fi
for m in h5py netCDF4 zarr numcodecs; do
  $PY -c "import $m" >/dev/null 2>&1 ||
    echo "note: $PY lacks $m: the entries it reads are served unchecked"
done
# Loader options from the caller's environment would change the results.
. "$top_srcdir/tests/lib/common.sh"
ferry_clear_options FERRY_CORPUS_
# The codec plugins of this build tree, not an installed ferry's.
if test -d "$top_builddir/src/plugins/.libs"; then
  FERRY_PLUGIN_DIR=$top_builddir/src/plugins/.libs
  export FERRY_PLUGIN_DIR
fi
CORPUS_TMP=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/corpus.$$
rm -rf "$CORPUS_TMP" && mkdir -p "$CORPUS_TMP" || exit 1
trap 'rm -rf "$CORPUS_TMP"' 0
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FERRY TEST_DUMP RUN_MPI CORPUS_TMP OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
$PY "$here/corpus.py" "$@"
