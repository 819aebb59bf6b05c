#!/bin/bash
# device.sh - ferry's GPU checks on a bare GPU machine (the `device` tool
# of these sessions, or any GPU node without Debian's MPI stack), in one go.
#
# usage (on the GPU machine, in the source tree's root):
#   tests/gpu/device.sh BUILD_DIR DEBS_DIR STEP...
#
#   BUILD_DIR  a build made on the Debian machine with CUDA and nvcc
#              (configure says "cuda ... yes", "nvcc ... yes"), its
#              programs run once there so that libtool's wrappers need no
#              relinking; carried to the GPU machine as it is
#   DEBS_DIR   Debian 12's run-time packages of Open MPI, HDF5, netCDF-C,
#              jansson, blosc and their dependencies, as `apt-get download`
#              left them (docs/gpu.md lists them); unpacked into
#              /opt/ferry-root, never over the machine's own files
#   STEP       facts | real | bench | python | pybench | profile (in the
#              order given; profile: nsys over ResNet-50's batches streamed
#              and under its 224 ms step, when nsys is installed; probe:
#              tests/gpu/h2d_probe.py, a pinned copy with and without a
#              kernel running on another stream)
#
# Results go to $OUT (the device tool's output folder) or ./gpu-out.
# The environment it builds: PATH and LD_LIBRARY_PATH into /opt/ferry-root
# (libraries the machine already has are left to the machine's copy),
# Open MPI's and PMIx's directories linked where Debian's build looks for
# them when the machine has none, the build tree's absolute path linked to
# BUILD_DIR when it was made elsewhere, FERRY_NCCL/FERRY_CUDART when the
# libraries are only inside the Python packages.
set -u
if test $# -lt 3; then
  sed -n 2,25p "$0" >&2
  exit 2
fi
src=$(pwd)
build=$(cd "$1" && pwd)
debs=$(cd "$2" && pwd)
shift 2
out=${OUT:-$src/gpu-out}
mkdir -p "$out"
R=/opt/ferry-root
ML=usr/lib/x86_64-linux-gnu
status=0

setup() {
  # A machine with its own Open MPI 4 (Ubuntu's, say: its plugins in
  # /usr/lib/x86_64-linux-gnu/openmpi, which Debian's mpirun would load
  # against Debian's PMIx and fail) runs with its own: same libmpi.so.40 ABI.
  own_mpi=no
  if test -d "/$ML/openmpi/lib/openmpi3" && test ! -L "/$ML/openmpi" &&
     ldconfig -p | grep -q 'libmpi\.so\.40 ' && command -v mpirun >/dev/null; then
    own_mpi=yes
  fi
  if test ! -d "$R/$ML"; then
    mkdir -p "$R"
    for d in "$debs"/*.deb; do dpkg -x "$d" "$R" || return 1; done
    # the libraries tests/gpu/gather.sh collected (the build's closure)
    if test -f "$debs/root.tar.xz"; then tar -C "$R" -xJf "$debs/root.tar.xz" || return 1; fi
    # The machine's own copy of a general library wins (newer); Open MPI's,
    # HDF5's and netCDF's stay ours.
    for f in "$R/$ML"/lib*.so.*; do
      test -f "$f" || continue
      case $own_mpi:$(basename "$f") in
        no:libmpi*|no:libopen-*|no:libmca_*|no:liboshmem*|no:libpmix*|*:libhdf5*|*:libnetcdf*) continue ;;
      esac
      so=$(basename "$f" | sed 's/\(\.so\.[0-9]*\).*/\1/')
      if ldconfig -p | grep -q "/$so\$"; then rm -f "$f"; fi
    done
    if test $own_mpi = yes; then
      # the machine's mpirun and plugins; Debian's headers and libmpi.so
      # (soname libmpi.so.40) stay for building the Python extension
      rm -f "$R"/usr/bin/mpi* "$R"/usr/bin/orte* "$R"/usr/bin/orted "$R/$ML"/libmpi.so.*
    else
      for d in "$ML/openmpi" "$ML/pmix2" usr/share/openmpi usr/share/pmix etc/openmpi; do
        test -e "/$d" || test ! -e "$R/$d" || ln -s "$R/$d" "/$d"
      done
      ln -sf orterun "$R/usr/bin/mpirun"
    fi
  fi
  echo "device.sh: Open MPI: $(test $own_mpi = yes && echo "the machine's" || echo "Debian's, carried")"
  export PATH="$PATH:$R/usr/bin"
  if test $own_mpi = yes; then
    export LD_LIBRARY_PATH="$R/$ML/hdf5/openmpi:$R/$ML${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  else
    export PATH="$R/usr/bin:$PATH" OPAL_PREFIX="$R/usr"
    export LD_LIBRARY_PATH="$R/$ML/openmpi/lib:$R/$ML/hdf5/openmpi:$R/$ML${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  # libtool's wrappers and run paths name the build's absolute path.
  made=$(sed -n 's/^abs_top_builddir = //p' "$build/Makefile")
  if test -n "$made" && test "$made" != "$build" && test ! -e "$made"; then
    mkdir -p "$(dirname "$made")" && ln -s "$build" "$made"
  fi
  madesrc=$(sed -n 's/^abs_top_srcdir = //p' "$build/Makefile")
  if test -n "$madesrc" && test ! -e "$madesrc/include/ferry.h"; then
    test -e "$madesrc" || { mkdir -p "$(dirname "$madesrc")" && ln -s "$src" "$madesrc"; }
  fi
  # absolute: mpirun may put its own bin folder (and /usr/bin/python3) first
  PY=$(command -v "${PYTHON:-python3}")
  site=$("$PY" -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
  if ! ldconfig -p | grep -q 'libnccl\.so\.2'; then
    f=$(ls "$site"/nvidia/nccl/lib/libnccl.so.2 2>/dev/null | head -1)
    test -n "$f" && export FERRY_NCCL="$f"
  fi
  if ! ldconfig -p | grep -q 'libcudart\.so\.13'; then
    f=$(ls /usr/local/cuda/lib64/libcudart.so.13 "$site"/nvidia/cu13/lib/libcudart.so.13 \
          "$site"/nvidia/cuda_runtime/lib/libcudart.so.13 2>/dev/null | head -1)
    test -n "$f" && export FERRY_CUDART="$f"
  fi
  # test_device links the CUDA runtime and NCCL: their folders on the path
  for f in "${FERRY_NCCL:-}" "${FERRY_CUDART:-}" /usr/local/cuda/lib64/x; do
    test -n "$f" && test -d "$(dirname "$f")" && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$f")"
  done
  export FERRY="$build/ferry" top_builddir="$build" top_srcdir="$src"
  export RUN_MPI="sh $src/tests/run-mpi.sh" PYTHON_NUMPY="$PY"
}

step_facts() {
  {
    echo "== facts"
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    nvcc --version 2>/dev/null | tail -2
    cat /etc/os-release 2>/dev/null | head -2
    nproc; free -g | head -2
    "$PY" -c 'import sys, sysconfig; print(sys.version); print(sysconfig.get_paths()["include"])'
    "$PY" -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.is_available())'
    echo "FERRY_NCCL=${FERRY_NCCL:-} FERRY_CUDART=${FERRY_CUDART:-}"
    mpirun --version | head -1
    "$FERRY" --version
  } 2>&1 | tee "$out/facts.txt"
}

step_real() {
  echo "== tests/gpu/real.sh"
  bash "$src/tests/gpu/real.sh" >"$out/real.log" 2>&1
  rc=$?
  cat "$out/real.log" | tail -60
  echo "real.sh exit $rc"
  test $rc = 0 || status=1
}

step_bench() {
  echo "== tests/bench/gpu.sh"
  REPEAT=${REPEAT:-1} sh "$src/tests/bench/gpu.sh" "$build" /tmp/ferry-gpu "$out/gpu.jsonl" \
    >"$out/bench.log" 2>&1
  rc=$?
  tail -40 "$out/bench.log"
  echo "gpu.sh exit $rc"
  test $rc = 0 || status=1
}

# The extension for the machine's Python, built against the carried build.
build_ext() {
  pyd=/tmp/ferry-py/ferry
  mkdir -p "$pyd"
  cp "$src"/python/ferry/*.py "$pyd"/
  inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  ext=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  if test ! -f "$inc/Python.h"; then
    echo "no Python.h under $inc: the extension cannot be built here"
    return 1
  fi
  cc -O2 -shared -fPIC -I"$inc" -I"$src/include" -I"$build" \
    -I"$R/$ML/openmpi/include" "$src"/python/ferry/_ferry.c \
    "$src"/python/ferry/_ferry_array.c "$src"/python/ferry/_ferry_batch.c \
    "$src"/python/ferry/_ferry_loader.c \
    -L"$build/.libs" -lferry -L"$R/$ML/openmpi/lib" -lmpi -lpthread \
    -Wl,-rpath,"$build/.libs" -o "$pyd/_ferry$ext" || return 1
  export FERRY_PYTHON="$PY" FERRY_PY_EXT="$ext" FERRY_PYTHONPATH=/tmp/ferry-py
}

step_python() {
  echo "== Python on the GPU"
  build_ext || { status=1; return; }
  for t in ${PY_TESTS:-test_gpu test_torch_front test_lightning test_jax loader state errors}; do
    sh "$src/tests/python/$t.sh" >"$out/py-$t.log" 2>&1
    rc=$?
    echo "tests/python/$t.sh exit $rc"
    tail -15 "$out/py-$t.log"
    case $rc in 0|77) ;; *) status=1 ;; esac
  done
}

step_pybench() {
  echo "== tests/bench/python.sh"
  build_ext || { status=1; return; }
  # python.sh takes the package from BUILD_DIR/python
  mkdir -p /tmp/ferry-pyb && ln -sfn "$build/ferry" /tmp/ferry-pyb/ferry &&
    ln -sfn /tmp/ferry-py /tmp/ferry-pyb/python
  PYTHON=$PY sh "$src/tests/bench/python.sh" /tmp/ferry-pyb /tmp/ferry-pybench 1GiB \
    >"$out/pybench.log" 2>&1 || status=1
  tail -12 "$out/pybench.log"
}

# nsys over ResNet-50's batches (400 x 114.7 KB), streamed and under its
# 224 ms step: the memory kinds and durations of the loader's copies
# (performance.md: 0.887 of a plain copy streamed, 0.267 under the step).
step_profile() {
  echo "== nsys: ResNet-50 streamed and under its step"
  nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys \
           /usr/local/cuda/nsight-systems-*/bin/nsys 2>/dev/null | head -1)
  if test -z "$nsys"; then echo "no nsys on this machine: profile not run"; return; fi
  w=/tmp/ferry-prof
  mkdir -p "$w"
  "$FERRY" gen "$w/resnet50" --samples 8000 --var samples:uint8:224x512 >/dev/null ||
    { status=1; return; }
  cat "$w"/resnet50/*.npy >/dev/null
  for c in 0 224; do
    mpirun -np 1 --oversubscribe --bind-to none "$nsys" profile -t cuda,osrt -f true \
      -o "$w/r$c" "$FERRY" bench "$w/resnet50" --device cuda --epochs 1 \
      --batch-size 400 --seed 1 --compute-ms $c >"$out/prof-r$c.log" 2>&1 || status=1
    tail -5 "$out/prof-r$c.log"
    "$nsys" stats -q -r cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,cuda_api_sum \
      "$w/r$c.nsys-rep" >"$out/prof-r$c-sum.txt" 2>&1
    "$nsys" stats -q -r cuda_gpu_trace -f csv "$w/r$c.nsys-rep" 2>/dev/null |
      grep -i 'memcpy\|Start' | head -80 >"$out/prof-r$c-copies.csv"
    head -40 "$out/prof-r$c-sum.txt"
    head -12 "$out/prof-r$c-copies.csv"
  done
}

step_probe() {
  echo "== tests/gpu/h2d_probe.py"
  "$PY" "$src/tests/gpu/h2d_probe.py" 2>&1 | tee "$out/probe.txt"
  "$PY" "$src/tests/gpu/h2d_probe.py" 2867200 2>&1 | tee -a "$out/probe.txt"
  # ferry's own copies of the same size, streamed and under a 224 ms step
  w=/tmp/ferry-probe
  "$FERRY" gen "$w" --samples ${PROBE_SAMPLES:-4000} --var samples:uint8:224x512 >/dev/null || return
  for c in 0 224; do
    mpirun -np 1 --oversubscribe --bind-to none "$FERRY" bench "$w" --device cuda \
      --epochs ${PROBE_EPOCHS:-1} --batch-size 400 --seed 1 --compute-ms $c --json 2>&1 | tail -1 |
      tr ',' '\n' | grep -i 'h2d\|memcpy\|au\b\|"au' | tr '\n' ' ' | sed "s/^/compute-ms $c: /"
    echo
  done 2>&1 | tee -a "$out/probe.txt"
}

setup || { echo "device.sh: setting up /opt/ferry-root failed"; exit 1; }
for s in "$@"; do
  case $s in
    facts|real|bench|python|pybench|profile|probe) "step_$s" ;;
    *) echo "device.sh: unknown step $s" >&2; exit 2 ;;
  esac
done
exit $status
