#!/bin/sh
# many_parts.sh - many small files (issue 12): 10,000 .npy parts of 100
# rows (float32[16], 64 B rows) in one directory, page cache warm.  In one
# run, ROUNDS times interleaved: a single Python process calling numpy.load
# on every part (the reference), `ferry bench` of the directory and of the
# glob of its files on 2 ranks (shuffle=chunks, 2 epochs).  Prints samples/s
# of each and ferry per rank / the numpy.load loop (target >= 1).
#
# usage: tests/bench/many_parts.sh BUILD_DIR WORK_DIR   (ROUNDS, default 3)
set -e
build=$(cd "${1:?usage: $0 BUILD_DIR WORK_DIR}" && pwd)
work=${2:?usage: $0 BUILD_DIR WORK_DIR}
rounds=${ROUNDS:-3}
py=${PYTHON:-/usr/bin/python3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$work"
if test ! -f "$work/parts/part-09999.npy"; then
  mkdir -p "$work/parts"
  "$py" -c "
import numpy as np
for i in range(10000):
    np.save('$work/parts/part-%05d.npy' % i, np.full((100, 16), i, np.float32))"
fi
cat "$work"/parts/*.npy >/dev/null
for r in $(seq "$rounds"); do
  "$py" -c "
import time, numpy as np
t = time.perf_counter()
for i in range(10000):
    np.load('$work/parts/part-%05d.npy' % i)
print('numpy', 1e6 / (time.perf_counter() - t))"
  for spec in "$work/parts" "$work/parts/*.npy"; do
    mpirun --oversubscribe -np 2 "$build/ferry" bench "$spec" --epochs 2 \
      --shuffle chunks --json | grep -o '"samples_per_s": [0-9.e+]*' | head -n 1 |
      sed 's/.*: /ferry /' |
      sed "s|^ferry|ferry_$(test "$spec" = "$work/parts" && echo dir || echo glob)|"
  done
done | tee "$work/many_parts.txt"
awk '{v[$1] = v[$1] " " $2; n[$1]++; s[$1] += $2}
     END {for (k in s) printf "%-11s mean %.0f samples/s over %d rounds:%s\n", k, s[k]/n[k], n[k], v[k];
          printf "ferry per rank / numpy.load loop: dir %.2f, glob %.2f\n",
            s["ferry_dir"]/n["ferry_dir"]/2/(s["numpy"]/n["numpy"]),
            s["ferry_glob"]/n["ferry_glob"]/2/(s["numpy"]/n["numpy"])}' "$work/many_parts.txt"
