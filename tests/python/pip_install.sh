#!/bin/sh
# pip_install.sh - python/setup.py: pip install --no-build-isolation
# --no-index of a copy of python/ into a fresh venv (--system-site-packages,
# no network), against libferry of the build tree seen as an installed
# prefix (FERRY_PREFIX: its headers, libraries and a ferry.pc); then import
# it from the venv (not the build tree) and serve an epoch.
. "$top_srcdir/tests/python/common.sh"
unset PYTHONPATH
if ! "$PY" -c 'import venv, ensurepip, setuptools' >/dev/null 2>&1; then
  echo "SKIP: $PY lacks venv/ensurepip or setuptools (apt-get install python3-venv python3-setuptools)"
  exit 77
fi
p=$tmp/prefix
mkdir -p "$p/lib/pkgconfig" "$p/include" || exit 1
cp "$top_srcdir/include/ferry.h" "$p/include/" || exit 1
cp -P "$top_builddir"/.libs/libferry.so* "$p/lib/" || exit 1
sed -e "s|^prefix=.*|prefix=$p|" -e 's|^exec_prefix=.*|exec_prefix=${prefix}|' \
    -e 's|^libdir=.*|libdir=${prefix}/lib|' \
    -e 's|^includedir=.*|includedir=${prefix}/include|' \
    "$top_builddir/ferry.pc" >"$p/lib/pkgconfig/ferry.pc" || exit 1
cp -R "$top_srcdir/python" "$tmp/src" || exit 1
"$PY" -m venv --system-site-packages "$tmp/venv" || exit 1
FERRY_PREFIX=$p "$tmp/venv/bin/pip" install --no-build-isolation --no-index \
  --disable-pip-version-check -q "$tmp/src" >"$tmp/pip.log" 2>&1 ||
  { cat "$tmp/pip.log"; echo "FAIL: pip install"; exit 1; }
cd "$tmp" || exit 1
$RUN_MPI 2 "$tmp/venv/bin/python" -c "
import ferry, numpy as np
assert ferry.__file__.startswith('$tmp/venv/'), ferry.__file__
with ferry.Loader('mem:N=100,vars=x:int32:2', batch_size=8, tail='partial') as L:
    n = sum(b.size for b in L)
    rank = L.rank
from mpi4py import MPI
assert MPI.COMM_WORLD.allreduce(n) == 100
if rank == 0: print('pip install: imported', ferry.__file__)
"
