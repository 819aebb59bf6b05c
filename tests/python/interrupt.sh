#!/bin/sh
# interrupt.sh - Ctrl-C during iteration (tests/python/interrupt_check.py):
# a real SIGINT while the loop waits in ferry_next raises KeyboardInterrupt,
# the loader is abandoned cleanly, the process can open another loader and
# exits normally, within a minute (no hang).  One process, an MPI singleton
# (mpirun would turn Ctrl-C into killing the job instead of forwarding it).
. "$top_srcdir/tests/python/common.sh"
"$PY" "$pydir/make_npy.py" "$tmp/data" 5000 || exit 1
if command -v timeout >/dev/null 2>&1; then to="timeout 120"; else to=; fi
$to "$PY" "$pydir/interrupt_check.py" "$tmp/data" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
if test $rc -ne 0 || ! grep '^interrupt_check.py: KeyboardInterrupt' "$tmp/out" >/dev/null; then
  echo "FAIL: interrupt_check.py (status $rc)"
  exit 1
fi
