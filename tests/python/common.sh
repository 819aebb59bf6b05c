# tests/python/common.sh - sourced by the tests of tests/python: skips (77)
# with the reason when the extension was not built or the interpreter it was
# built for lacks numpy, torch or mpi4py; sets PY (the interpreter), puts
# the build tree's package on PYTHONPATH and makes $tmp.
PY=${FERRY_PYTHON:-}
if test -z "$PY" || test -z "${FERRY_PY_EXT:-}"; then
  echo "SKIP: the Python package is not built (configure --without-python, or it found no Python 3 with headers)"
  exit 77
fi
if test ! -f "$FERRY_PYTHONPATH/ferry/_ferry$FERRY_PY_EXT"; then
  echo "SKIP: $FERRY_PYTHONPATH/ferry/_ferry$FERRY_PY_EXT is not built"
  exit 77
fi
for m in numpy torch mpi4py; do
  if ! "$PY" -c "import $m" >/dev/null 2>&1; then
    echo "SKIP: $PY cannot import $m (apt-get install python3-numpy python3-torch python3-mpi4py)"
    exit 77
  fi
done
PYTHONPATH=$FERRY_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH}
# The checks import tests/python/helpers.py from the source tree: no
# __pycache__ there (read-only under make distcheck, and not the test's).
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH PYTHONDONTWRITEBYTECODE
# a test that ran ferry_test_init first keeps its $tmp (NAME.PID of this
# shell) and its trap: another one here would leave that one behind
case ${tmp:-}:$$ in
  */*.$$:$$) test -d "$tmp" && keep_tmp=1 || keep_tmp= ;;
  *) keep_tmp= ;;
esac
if test -z "$keep_tmp"; then
  tmp=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/py.$$
  rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
  trap 'rm -rf "$tmp"' 0
fi
pydir=$top_srcdir/tests/python

# need_module MODULE WHY: skip (77) unless $PY imports MODULE (a framework
# the test is about: jax, lightning), saying why it may be missing.
need_module() {
  "$PY" -c "import $1" >/dev/null 2>&1 && return 0
  echo "SKIP: $1 not installed ($2)"
  exit 77
}

# megatron_saved N MEAN: a `ferry gen` Megatron corpus of N documents of
# about MEAN tokens in $tmp/c and its saved manifest $tmp/m.json (offsets
# in $tmp/m.json.roff); exits 1 saying why when either fails.
megatron_saved() {
  "${FERRY:-$top_builddir/ferry}" gen "$tmp/c" --format megatron \
    --samples "$1" --mean-len "$2" >"$tmp/gen.out" 2>&1 &&
    "${FERRY:-$top_builddir/ferry}" info "$tmp/c" \
      --save-manifest "$tmp/m.json" >>"$tmp/gen.out" 2>&1 ||
    {
      echo "FAIL: ferry gen / info --save-manifest"
      cat "$tmp/gen.out"
      exit 1
    }
}
