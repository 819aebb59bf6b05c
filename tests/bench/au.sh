#!/bin/sh
# au.sh - accelerator utilisation (AU) of the three MLPerf Storage training
# workloads on host batches (issue 12): `ferry bench --compute-ms STEP`
# (the step emulated by a sleep, so the CPU stays free for the loader as it
# would beside an accelerator) on 1, 2 and 4 ranks, REPEAT runs each; AU
# mean, standard deviation and minimum per workload and rank count, a
# Markdown table and a plot with error bars (AU_PLOT, default
# docs/perf-au.png when run from the source tree; AU_PLOT= for none).
#
# usage: tests/bench/au.sh BUILD_DIR WORK_DIR [RESULTS_FILE]
#
# The workloads (MLPerf Storage v1.0 training: sample size, batch, step
# time on an H100), scaled to this machine (2 cores, 23 GiB shared by
# several users): a 3D U-Net batch is 7 x 146.6 MB = 1 GB per rank, and 4
# ranks with 4 batches in flight each would need 16 GB, so U-Net's sample
# and its step time are both divided by UNET_SCALE (default 8: 18.3 MB
# samples, 40.4 ms steps).  Dividing both keeps what AU measures, the bytes
# per second each accelerator asks for (3.18 GB/s), and makes the loader's
# fixed per-step costs 8 times larger relative to the step: a harder test,
# not an easier one.  ResNet-50 and CosmoFlow run at their own sizes.
#   unet3d     7 samples of 146.6 MB / UNET_SCALE, step 323 ms / UNET_SCALE
#   resnet50   400 samples of 114.7 KB (uint8), step 224 ms
#   cosmoflow  1 sample of 2.83 MB (int16), step 3.5 ms
# Datasets: `ferry gen` .npy files in WORK_DIR (about 4 GB in all; page
# cache warm), 3 epochs per run (AU leaves out the first step of each).
# Weak scaling, as MLPerf Storage runs it: every rank (accelerator) takes
# the same number of steps whatever the rank count, so NP ranks read the
# fraction NP/4 of the dataset (option fraction; 4 = the largest of RANKS):
# 4 steps per rank and epoch for U-Net, 5 for ResNet-50, 100 for CosmoFlow.
#
# Environment: REPEAT (default 5), RANKS (default "1 2 4"), EPOCHS (3),
# UNET_SCALE (8), IO (the io option, default: the library's), WORKLOADS
# (default "unet3d resnet50 cosmoflow"), MPIRUN.
set -eu
if test $# -lt 2; then
  echo "usage: $0 BUILD_DIR WORK_DIR [RESULTS_FILE]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
work=$2
ferry="$build/ferry"
here=$(cd "$(dirname "$0")" && pwd)
repeat=${REPEAT:-5}
ranks=${RANKS:-1 2 4}
epochs=${EPOCHS:-3}
scale=${UNET_SCALE:-8}
only=${WORKLOADS:-unet3d resnet50 cosmoflow}
mpirun=${MPIRUN:-mpirun}
py=/usr/bin/python3
test -x "$py" || py=python3
mkdir -p "$work"
work=$(cd "$work" && pwd)
out=${3:-$work/au.jsonl}
: >"$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
maxnp=$(for n in $ranks; do echo "$n"; done | sort -n | tail -n 1)
io_opt=
test -z "${IO:-}" || io_opt="--io $IO"

# name samples batch step_ms var: unet3d's row of 146.6 MB / scale is
# float32[36,650,000 / scale]; sample counts give each rank at least 4
# steps per epoch on 4 ranks
unet_elems=$((36650000 / scale))
unet_step=$(awk -v s="$scale" 'BEGIN {printf "%.2f", 323 / s}')
workloads="
unet3d    112  7   $unet_step samples:float32:$unet_elems
resnet50  8000 400 224        samples:uint8:114700
cosmoflow 400  1   3.5        samples:int16:1415000
"
echo "$workloads" | while read -r w n b c var; do
  test -n "$w" || continue
  d="$work/$w"
  if test "$(cat "$d.made" 2>/dev/null)" != "$n $var"; then
    echo "== gen $w: $n samples of $var"
    rm -rf "$d" "$d.made"
    "$ferry" gen "$d" --samples "$n" --var "$var" >/dev/null
    echo "$n $var" >"$d.made"
  fi
  cat "$d"/*.npy >/dev/null # page cache warm
done

echo "== $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $epochs epochs, $repeat repeats"
echo "$workloads" | while read -r w n b c var; do
  test -n "$w" || continue
  case " $only " in *" $w "*) ;; *) continue ;; esac
  for np in $ranks; do
    frac=$(awk -v n="$np" -v m="$maxnp" 'BEGIN {print n / m}')
    i=0
    while test $i -lt "$repeat"; do
      i=$((i + 1))
      # shellcheck disable=SC2086 # io_opt is empty or two words
      j=$($mpirun --oversubscribe -np "$np" "$ferry" bench "$work/$w" \
            --epochs "$epochs" --batch-size "$b" --compute-ms "$c" --json \
            --fraction "$frac" \
            $io_opt </dev/null 2>"$work/err" | tail -n 1) || true
      case $j in
        "{"*) ;;
        *) echo "   $w np=$np run $i: FAILED: $(head -n 3 "$work/err" | tr '\n' ' ')"
           continue ;;
      esac
      echo "{\"workload\":\"$w\",\"ranks\":$np,\"batch\":$b,\"compute_ms\":$c,\"run\":$i,\"ferry\":$j}" >>"$out"
      echo "$j" | "$py" -c '
import json, sys
f = json.loads(sys.stdin.read())
print("   %-9s np=%s run %s: AU %.3f (min over ranks %.3f), wait fraction %.3f, %.2f GB/s" % (
    sys.argv[1], sys.argv[2], sys.argv[3], f["au"], f["au_min"], f["wait_fraction"],
    f["bytes_per_s"] / 1e9))' "$w" "$np" "$i"
    done
  done
done

plot=${AU_PLOT-}
if test -z "${AU_PLOT+set}" && test -d "$here/../../docs"; then
  plot=$(cd "$here/../../docs" && pwd)/perf-au.png
fi
# the plot needs Debian's matplotlib (./bootstrap deps installs it)
if test -n "$plot" && ! "$py" -c 'import matplotlib' 2>/dev/null; then
  if test "$(id -u)" = 0 && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -q python3-matplotlib >/dev/null 2>&1 || true
  fi
  "$py" -c 'import matplotlib' 2>/dev/null ||
    { echo "note: no matplotlib for $py: table only"; plot=; }
fi
"$py" "$here/au_plot.py" "$out" "$plot" "$scale"
