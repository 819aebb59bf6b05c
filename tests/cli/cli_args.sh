#!/bin/sh
# cli_args.sh - the ferry tool's own argument handling: --help of every
# command exits 0, an unknown or abbreviated option exits 2 and is named, a
# bad value exits 2 (command line) or 1 (environment, config file) and names
# the option, the precedence defaults < --config < FERRY_* < command line
# holds, and `ferry gen` writes .npy files that NumPy reads back with the
# promised shapes, dtypes, byte orders, header versions and values.
#
# Environment (set by "make check"; see tests/README.md): FERRY (the tool),
# RUN_MPI, PYTHON_NUMPY, FERRY_TEST_TMPDIR.  Run by hand:
#   FERRY=/path/to/ferry sh tests/cli/cli_args.sh
# Exit 0 pass, 1 fail, 77 skip (no ferry program).

if test -z "${FERRY:-}" || test ! -x "$FERRY"; then
  echo "SKIP: FERRY is not set to the ferry program"
  exit 77
fi
here=`dirname "$0"`
if test -z "${RUN_MPI:-}"; then
  if test -f "$here/../run-mpi.sh"; then
    RUN_MPI="sh $here/../run-mpi.sh"
  else
    RUN_MPI="timeout 100 mpirun --oversubscribe -np"
  fi
fi
# Under "make check" PYTHON_NUMPY is set, empty when configure found none.
if test -z "${PYTHON_NUMPY+set}" &&
   python3 -c 'import numpy' >/dev/null 2>&1; then
  PYTHON_NUMPY=python3
fi
if test "`id -u 2>/dev/null`" = 0; then
  OMPI_ALLOW_RUN_AS_ROOT=1
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
# The loader options of the caller's environment would change the results.
. "$here/../lib/common.sh"
ferry_clear_options

tmp=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/cli_args.$$
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' 0
fail=0
MEM='mem:N=100,vars=x:float32:4,y:int64'

# expect STATUS TEXT COMMAND...: COMMAND exits STATUS and its output
# (stdout and stderr) holds TEXT (a fixed string; empty: anything).
expect() {
  want=$1 text=$2
  shift 2
  "$@" >"$tmp/out" 2>&1 </dev/null
  got=$?
  if test "$got" != "$want"; then
    echo "FAIL: $* -> exit $got, expected $want"
    sed 's/^/    /' "$tmp/out" | head -20
    fail=1
  elif test -n "$text" && ! grep -F -e "$text" "$tmp/out" >/dev/null; then
    echo "FAIL: $* -> output lacks '$text'"
    sed 's/^/    /' "$tmp/out" | head -20
    fail=1
  else
    echo "ok: $*"
  fi
}

# ---- help and version ----------------------------------------------------
expect 0 'Commands:' "$FERRY" --help
expect 0 'Commands:' "$FERRY" help
expect 0 'backends:' "$FERRY" --version
expect 0 '--batch-size VALUE' "$FERRY" help options
expect 2 'Usage: ferry' "$FERRY"
# --help needs no DATASET, and wins wherever it is.
for c in gen info plan dump bench verify; do
  expect 0 "Usage: ferry $c" "$FERRY" $c --help
  expect 0 "Usage: ferry $c" "$FERRY" help $c
done
expect 0 '--shuffle VALUE' "$FERRY" verify "$MEM" --epochs 3 -h
expect 0 '--config FILE' "$FERRY" help bench

# ---- unknown options and commands ----------------------------------------
expect 2 "unknown command 'bogus'" "$FERRY" bogus
expect 2 "unknown command 'bogus'" "$FERRY" help bogus
expect 2 "unknown option '--bogus'" "$FERRY" --bogus
for c in info verify; do
  expect 2 "unknown option '--bogus'" "$FERRY" $c "$MEM" --bogus
done
expect 2 "unknown option '--nope'" "$FERRY" gen "$tmp/x" --samples 1 --nope=3
expect 2 "unknown option '-z'" "$FERRY" info "$MEM" -z
# Abbreviations are refused, with the full name suggested.
expect 2 "did you mean '--batch-size'" "$FERRY" info "$MEM" --batch 4
expect 2 "unknown option '--epoch'" "$FERRY" bench "$MEM" --epoch 2
# gen takes no loader options.
expect 2 "unknown option '--batch-size'" "$FERRY" gen "$tmp/x" --samples 1 --batch-size 4
expect 2 "option '--batch-size' needs a value" "$FERRY" info "$MEM" --batch-size
expect 2 "option '--json' takes no value" "$FERRY" info "$MEM" --json=1
expect 2 'missing DATASET' "$FERRY" info
expect 2 'missing DIR' "$FERRY" gen --samples 3
expect 2 "unexpected argument 'extra'" "$FERRY" info "$MEM" extra

# ---- bad values name the option ------------------------------------------
expect 2 "batch_size" "$FERRY" info "$MEM" --batch-size abc
expect 2 "batch_size" "$FERRY" info "$MEM" --batch-size 0
expect 2 "shuffle" "$FERRY" plan "$MEM" --shuffle sideways
expect 2 "fraction" "$FERRY" dump "$MEM" --fraction 2
expect 2 "tail" "$FERRY" verify "$MEM" --tail=some
expect 2 "--epoch" "$FERRY" plan "$MEM" --epoch -1
expect 2 "--epoch" "$FERRY" dump "$MEM" --epoch x
expect 2 "--epochs" "$FERRY" bench "$MEM" --epochs 0
expect 2 "--epochs" "$FERRY" verify "$MEM" --epochs two
case `"$FERRY" --version 2>/dev/null` in
  *features:*cuda*)
    expect 2 "--device cpu" "$FERRY" verify "$MEM" --device cuda ;;
esac
expect 2 "--compute-ms" "$FERRY" bench "$MEM" --compute-ms -1
expect 2 "--compute-mode" "$FERRY" bench "$MEM" --compute-mode fast
expect 2 "--samples" "$FERRY" gen "$tmp/x" --samples 0
expect 2 "--size" "$FERRY" gen "$tmp/x" --size 12Q
expect 2 "--npy-version" "$FERRY" gen "$tmp/x" --samples 4 --npy-version 4
expect 2 "--parts" "$FERRY" gen "$tmp/x" --samples 4 --parts 0
expect 2 "--parts 5 is more than the 4 samples" "$FERRY" gen "$tmp/x" --samples 4 --parts 5
expect 2 "unknown dtype 'complex64'" "$FERRY" gen "$tmp/x" --samples 4 --var z:complex64
expect 2 "bad dimension 'q'" "$FERRY" gen "$tmp/x" --samples 4 --var z:int8:3xq
expect 2 "given twice" "$FERRY" gen "$tmp/x" --samples 4 --var z:int8 --var z:int16
expect 2 "exactly one of --samples N and --size SIZE" "$FERRY" gen "$tmp/x"
expect 2 "exactly one of --samples N and --size SIZE" "$FERRY" gen "$tmp/x" --samples 3 --size 1K
FERRY_BATCH_SIZE=0 expect 1 "FERRY_BATCH_SIZE" "$FERRY" info "$MEM"
printf 'seed = 3\nbatch_size = -3\n' >"$tmp/bad.conf"
expect 1 "line 2" "$FERRY" info "$MEM" --config "$tmp/bad.conf"
expect 1 "$tmp/missing.conf" "$FERRY" info "$MEM" --config "$tmp/missing.conf"
expect 1 "ferry: info:" "$FERRY" info "$tmp/no-such-dataset"

# ---- precedence: defaults < --config < FERRY_* < command line ------------
printf '# comment\nbatch_size = 5\nseed = 7\n\nshuffle = block\n' >"$tmp/good.conf"
expect 0 '"batch_size": "64"' "$FERRY" info "$MEM" --json
expect 0 '"batch_size": "5"' "$FERRY" info "$MEM" --json --config "$tmp/good.conf"
FERRY_BATCH_SIZE=6 expect 0 '"batch_size": "6"' "$FERRY" info "$MEM" --json --config "$tmp/good.conf"
FERRY_BATCH_SIZE=6 expect 0 '"batch_size": "9"' "$FERRY" info "$MEM" --config "$tmp/good.conf" --batch-size 9 --json
FERRY_BATCH_SIZE=6 expect 0 '"seed": "7"' "$FERRY" info --batch-size=9 --config="$tmp/good.conf" --json "$MEM"
expect 0 '"shuffle": "block"' "$FERRY" info "$MEM" --json --config "$tmp/good.conf"
# The last of repeated options wins.
expect 0 '"batch_size": "4"' "$FERRY" info "$MEM" --batch-size 3 --batch-size 4 --json

# ---- gen: files NumPy reads back -----------------------------------------
expect 0 'wrote 1000 samples' "$FERRY" gen "$tmp/g1" --samples 1000
expect 0 'wrote 1016 samples' "$FERRY" gen "$tmp/gsize" --size 1MiB
expect 0 'wrote 1 samples' "$FERRY" gen "$tmp/gtiny" --size 1
vars='--var b:bool --var i8:int8:3 --var u8:uint8:2x2 --var i16:int16:5
--var u16:uint16 --var i32:int32:2,3 --var u32:uint32 --var i64:int64:4
--var u64:uint64 --var f16:float16:7 --var f32:float32:3 --var f64:float64:2'
expect 0 'wrote 777 samples' $RUN_MPI 2 "$FERRY" gen "$tmp/g2" --samples 777 --parts 3 --npy-version 2 --big-endian $vars
expect 0 'wrote 50 samples' "$FERRY" gen "$tmp/g3" --samples 50 --npy-version 3 $vars
# Regenerating replaces an earlier gen output; a foreign directory is refused.
expect 0 'wrote 10 samples' "$FERRY" gen "$tmp/g1b" --samples 10 --var old:int8
expect 0 'wrote 12 samples' "$FERRY" gen "$tmp/g1b" --samples 12 --var new:int16
if test -e "$tmp/g1b/old.npy"; then
  echo "FAIL: gen left old.npy of the earlier output"; fail=1
fi
mkdir -p "$tmp/foreign" && echo hi >"$tmp/foreign/notes.txt"
expect 1 'not empty' "$FERRY" gen "$tmp/foreign" --samples 4

if test -z "${PYTHON_NUMPY:-}"; then
  echo "note: no python with numpy: .npy read-back skipped"
else
  cat >"$tmp/check.py" <<'EOF'
import glob, json, sys
import numpy as np

M = {'bool': 2, 'int8': 2**7, 'uint8': 2**8, 'int16': 2**15, 'uint16': 2**16,
     'int32': 2**31, 'uint32': 2**32, 'int64': 2**62, 'uint64': 2**62,
     'float16': 2**11, 'float32': 2**24, 'float64': 2**53}

def check(d, version, big):
    meta = json.load(open(d + '/FERRY_GEN'))
    n = meta['samples']
    parts = sorted(glob.glob(d + '/part-*')) or [d]
    assert len(parts) == meta['parts'], (d, parts)
    for var in meta['vars']:
        arrays = []
        for p in parts:
            f = '%s/%s.npy' % (p, var['name'])
            raw = open(f, 'rb').read(16)
            assert raw[:6] == b'\x93NUMPY' and raw[6] == version, (f, raw[:8])
            hlen = (int.from_bytes(raw[8:10], 'little') + 10 if version == 1
                    else int.from_bytes(raw[8:12], 'little') + 12)
            assert hlen % 64 == 0, (f, hlen)
            a = np.load(f)
            if a.dtype.itemsize > 1:
                want = '>' if big else '<'
                got = a.dtype.byteorder
                if got == '=':
                    got = '<' if sys.byteorder == 'little' else '>'
                assert got == want, (f, a.dtype)
            arrays.append(a)
        a = np.concatenate(arrays)
        assert a.dtype.name == var['dtype'], (var, a.dtype)
        assert a.shape == (n,) + tuple(var['shape']), (var, a.shape)
        k = int(np.prod(var['shape'], dtype=np.int64))
        i = np.arange(n, dtype=np.uint64)[:, None]
        e = np.arange(k, dtype=np.uint64)[None, :]
        want = ((i + e) % np.uint64(M[var['dtype']])).astype(var['dtype'])
        assert (a.reshape(n, k) == want).all(), (d, var['name'])
    print('read back', d, n, 'samples', len(meta['vars']), 'variables')

d = sys.argv[1]
check(d + '/g1', 1, False)
check(d + '/gsize', 1, False)
check(d + '/g2', 2, True)
check(d + '/g3', 3, False)
check(d + '/g1b', 1, False)
EOF
  if "$PYTHON_NUMPY" "$tmp/check.py" "$tmp"; then
    echo "ok: gen output read back with numpy"
  else
    echo "FAIL: gen output does not read back"; fail=1
  fi
fi

exit $fail
