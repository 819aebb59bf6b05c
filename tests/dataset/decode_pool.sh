#!/bin/sh
# decode_pool.sh - decoding on the decode pool (src/backends/pool.c, issue
# 14): the same `ferry dump --row-hash` with threads=1 (every chunk decoded
# inline, as before the pool) and threads=4 (chunks and inflate pieces
# decoded at once, reads deferred in groups of 4 extents), over 1 and 2
# ranks, on
#   - a savez_compressed archive whose deflated member has 5 inflate
#     checkpoint intervals, read with automatic chunks (the intervals),
#     chunks of 10,000 rows (reads cut into pieces at the checkpoints) and
#     of 3,000 rows (reads starting between checkpoints);
#   - a glob of 60 one-sample savez_compressed archives (DLIO's layout:
#     each file a part, inflated at once);
#   - Zarr v3 sharded stores (blosc-lz4 and zstd inner chunks, crc32c) and
#     an unsharded zstd one, with automatic chunks and reads of 700 rows
#     (several inner chunks and shards per read); a Zarr v2 store (Blosc
#     lz4, zarr-python 2) when zarr is installed.
# Every run's rows are checked against NumPy (tests/fixtures/
# dump_compare.py, whole rows through --row-hash), and the threads=4 output
# must equal the threads=1 output byte for byte.  Then corrupt data: a
# deflated member corrupt in its middle, two corrupt files of the glob,
# two corrupt inner chunks of a sharded store (zstd frame headers, then
# blosc chunks caught by their crc32c):
# each run fails with status 1 and rank 0's message is the same with
# threads=1 and threads=4 (the first error in read order, whatever the
# threads' timing).
#
# Bugs it pins: a piece inflated from the wrong checkpoint or into the
# wrong offset of the read buffer; a deferred read published before its
# decode finished; a lane's buffer reused while its chunk was decoding;
# an error that depends on which thread failed first.
#
# Environment (set by "make check"): FERRY, RUN_MPI, PYTHON_NUMPY,
# FERRY_TEST_TMPDIR, top_srcdir, top_builddir.  Exit 0 pass, 1 fail, 77
# skip (no ferry, no NumPy, no zlib).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init decode_pool
PY=${PYTHON_NUMPY:-}
if test -z "$PY"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the fixtures are written by NumPy"
  exit 77
fi
if ! "$FERRY" --version | grep '^zlib ' >/dev/null; then
  echo "SKIP: this build has no zlib (configure --with-zlib): savez_compressed's deflated members cannot be read"
  exit 77
fi
have_zarr=no
if "$FERRY" --version | grep '^backends:.* zarr' >/dev/null &&
   "$PY" -c 'import numcodecs' >/dev/null 2>&1; then
  have_zarr=yes
else
  echo "note: no zarr backend or no numcodecs: the Zarr cases are left out"
fi
fx=$tmp/fx
mkdir -p "$fx" || exit 1
if ! "$PY" - "$fx" "$top_srcdir/tests/fixtures" "$have_zarr" >"$tmp/make.log" 2>&1 <<'EOF'
import os, struct, sys, zipfile
import numpy as np
fx, fixtures, have_zarr = sys.argv[1:4]
rng = np.random.default_rng(7)
# 20,000 rows of 256 bytes: 5 MiB, checkpoints every 4096 rows (1 MiB)
x = (np.sin(np.arange(20000 * 64, dtype=np.float32) / 50) +
     rng.normal(0, 0.1, 20000 * 64).astype(np.float32)).round(2)
x = x.reshape(20000, 64)
y = rng.integers(-1000, 1000, (20000, 3), dtype=np.int16)
np.savez_compressed(os.path.join(fx, "big.npz"), x=x, y=y)
# the same archive with its x member's deflate stream corrupt in the middle
data = bytearray(open(os.path.join(fx, "big.npz"), "rb").read())
mid = len(data) // 4
for i in range(64):
    data[mid + i] ^= 0x5A
open(os.path.join(fx, "bad_member.npz"), "wb").write(bytes(data))
os.makedirs(os.path.join(fx, "files"))
os.makedirs(os.path.join(fx, "badfiles"))
for i in range(60):
    s = (rng.normal(0, 1, (1, 16, 8)).astype(np.float32)).round(3)
    p = os.path.join(fx, "files", "s%03d.npz" % i)
    np.savez_compressed(p, x=s)
    np.save(os.path.join(fx, "files", "s%03d.npy" % i), s)
    b = bytearray(open(p, "rb").read())
    if i in (7, 23):
        # the last 16 bytes of the member's deflate data: the .npy header,
        # at its start, still inflates (rank 0's describe reads it), the
        # rows do not
        info = zipfile.ZipFile(p).getinfo("x.npy")
        h = info.header_offset
        nlen, xlen = struct.unpack_from("<HH", b, h + 26)
        end = h + 30 + nlen + xlen + info.compress_size
        for k in range(end - 16, end):
            b[k] ^= 0xFF
    open(os.path.join(fx, "badfiles", "s%03d.npz" % i), "wb").write(bytes(b))
if have_zarr == "yes":
    sys.path.insert(0, fixtures)
    from zarr3_writer import codec, write_array
    z = (np.cos(np.arange(5000 * 32, dtype=np.float32) / 30) +
         rng.normal(0, 0.1, 5000 * 32).astype(np.float32)).round(3)
    z = z.reshape(5000, 32)
    np.save(os.path.join(fx, "z.npy"), z)
    sharded = {
        "blosc": [codec("bytes", endian="little"),
                  codec("blosc", cname="lz4", clevel=5, shuffle="shuffle",
                        typesize=4, blocksize=0), codec("crc32c")],
        "zstd": [codec("bytes", endian="little"), codec("zstd", level=3)],
    }
    for name, cs in sharded.items():
        write_array(os.path.join(fx, name + ".zarr"), z, (1000, 32),
                    [codec("sharding_indexed", chunk_shape=[100, 32],
                           codecs=cs,
                           index_codecs=[codec("bytes", endian="little"),
                                         codec("crc32c")],
                           index_location="end")], write_empty=True)
    write_array(os.path.join(fx, "plain.zarr"), z, (100, 32),
                [codec("bytes", endian="little"), codec("zstd", level=3),
                 codec("crc32c")], write_empty=True)
    # copies with inner chunks 3 and 7 of shard 1 corrupt
    import shutil
    for name in sharded:
        bad = os.path.join(fx, "bad_" + name + ".zarr")
        shutil.copytree(os.path.join(fx, name + ".zarr"), bad)
        shard = None
        for root, _, files in os.walk(bad):
            for f in files:
                rel = os.path.relpath(os.path.join(root, f), bad)
                if rel.replace(os.sep, "/") == "c/1/0":
                    shard = os.path.join(root, f)
        b = bytearray(open(shard, "rb").read())
        ix = b[len(b) - 10 * 16 - 4:len(b) - 4]
        for k in (3, 7):
            off, n = struct.unpack_from("<QQ", ix, 16 * k)
            # zstd frames carry no checksum here: break the frame's magic
            # number; blosc's chunks end with a crc32c: break their middle
            at = 0 if name == "zstd" else n // 2
            for i in range(at, at + 8):
                b[off + i] ^= 0xA5
        open(shard, "wb").write(bytes(b))
    try:
        import zarr
        import numcodecs
        a2 = zarr.open(os.path.join(fx, "v2.zarr"), mode="w", shape=z.shape,
                       chunks=(200, 32), dtype="f4",
                       compressor=numcodecs.Blosc(cname="lz4", clevel=5,
                                                  shuffle=1))
        a2[:] = z
        open(os.path.join(fx, "v2.txt"), "w").write("yes\n")
    except ImportError as e:
        print("no zarr-python 2:", e)
EOF
then
  echo "FAIL: the fixtures were not written"
  sed 's/^/    /' "$tmp/make.log"
  exit 1
fi
echo "ok: fixtures written"

BATCH=7
common="--epoch 0 --tail partial --batch-size $BATCH --shuffle chunks --shuffle-buffer 4 --seed 3 --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
export FERRY
# pair LABEL NP DATASET VAR "OPTIONS" NPY...: the same dump with threads=1
# and threads=4, both checked against NumPy; their outputs compared later.
pairs=
pair() {
  p_label=$1 p_np=$2 p_ds=$3 p_var=$4 p_opts=$5
  shift 5
  dump_queue "" "$p_label threads=1" "$p_np" spread "$p_ds" "$p_var" "$p_opts --threads 1" "$@"
  p_one=$njobs
  dump_queue "" "$p_label threads=4" "$p_np" spread "$p_ds" "$p_var" "$p_opts --threads 4 --max-open-files 8" "$@"
  pairs="$pairs $p_one:$njobs:`echo "$p_label" | tr ' ' '_'`_np=$p_np"
}
parts=
for i in `seq 0 59`; do
  parts="$parts $fx/files/s`printf %03d $i`.npy"
done
for np in 1 2; do
  for cs in 0 10000 3000; do
    pair "big.npz x chunk_samples=$cs" $np "$fx/big.npz" x "--chunk-samples $cs" "$fx/big.npz::x"
  done
  pair "big.npz y" $np "$fx/big.npz" y "--chunk-samples 3000" "$fx/big.npz::y"
  # shellcheck disable=SC2086 # $parts: one argument per part
  pair "60 one-sample archives" $np "$fx/files/*.npz" x "--chunk-samples 0" $parts
  if test $have_zarr = yes; then
    for s in blosc zstd plain; do
      for cs in 0 700; do
        pair "$s.zarr chunk_samples=$cs" $np "$fx/$s.zarr" "$s" "--chunk-samples $cs" "$fx/z.npy"
      done
    done
    if test -f "$fx/v2.txt"; then
      pair "v2.zarr chunk_samples=700" $np "$fx/v2.zarr" v2 "--chunk-samples 700" "$fx/z.npy"
    fi
  fi
done
dump_run
"$PY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" || fail=1
for p in $pairs; do
  a=${p%%:*}
  rest=${p#*:}
  b=${rest%%:*}
  label=${rest#*:}
  if test -s "$tmp/dump.$a" && cmp -s "$tmp/dump.$a" "$tmp/dump.$b"; then
    echo "ok: $label: threads=4 serves the same rows as threads=1 (`wc -l <"$tmp/dump.$a"` lines)"
  else
    echo "FAIL: $label: threads=4 and threads=1 differ"
    diff "$tmp/dump.$a" "$tmp/dump.$b" | head -5 | sed 's/^/    /'
    fail=1
  fi
done

# ---- corrupt data: the same first error with threads=1 and threads=4 -----
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT:-60}
export FERRY_MPI_TIMEOUT
# same_error NP TEXT DATASET OPTIONS...: exit status 1 on every rank, and
# rank 0's message holds TEXT and is the same with threads 1 and 4; no
# sanitizer report (in an ASan or TSan build, the dumps above fail on any
# output on stderr).
same_error() {
  e_np=$1 e_t=$2 e_ds=$3
  shift 3
  e_what=`printf 'np=%s %s %s' "$e_np" "$e_ds" "$*" | sed "s|$fx|FX|g"`
  for t in 1 4; do
    $RUN_MPI "$e_np" "$FERRY" dump "$e_ds" --epoch 0 --batch-size 5 \
      --shuffle chunks --seed 1 --threads $t "$@" \
      >"$tmp/e$t.out" 2>"$tmp/e$t.err"
    echo $? >"$tmp/e$t.st"
  done
  m1=`grep '^ferry:' "$tmp/e1.err"`
  m4=`grep '^ferry:' "$tmp/e4.err"`
  if test "`cat "$tmp/e1.st"`" = 0 || test "`cat "$tmp/e4.st"`" = 0; then
    echo "FAIL: $e_what: exit status 0 (threads=1: `cat "$tmp/e1.st"`, threads=4: `cat "$tmp/e4.st"`)"
    fail=1
  elif grep -l -e 'Sanitizer' -e 'runtime error' "$tmp/e1.err" "$tmp/e4.err" >/dev/null; then
    echo "FAIL: $e_what: a sanitizer reported (sanitizer build)"
    grep -h -A5 -e 'Sanitizer' -e 'runtime error' "$tmp/e1.err" "$tmp/e4.err" | head -12 | sed 's/^/    /'
    fail=1
  elif ! printf '%s\n' "$m1" | grep -F -e "$e_t" >/dev/null; then
    echo "FAIL: $e_what: the message lacks '$e_t'"
    sed 's/^/    /' "$tmp/e1.err" | head -5
    fail=1
  elif test "$m1" != "$m4"; then
    echo "FAIL: $e_what: threads=1 and threads=4 report different errors"
    printf '    threads=1: %s\n    threads=4: %s\n' "$m1" "$m4"
    fail=1
  else
    echo "ok: $e_what: `printf '%s' "$m1" | sed "s|$fx|FX|g" | head -1`"
  fi
}
for np in 1 2; do
  same_error $np "variable x" "$fx/bad_member.npz" --chunk-samples 3000
  same_error $np "s007.npz" "$fx/badfiles/*.npz" --shuffle none --chunk-samples 0
  same_error $np "badfiles/s0" "$fx/badfiles/*.npz" --chunk-samples 0
  if test $have_zarr = yes; then
    same_error $np "cannot be decoded with zstd" "$fx/bad_zstd.zarr" --chunk-samples 700
    same_error $np "fails its crc32c" "$fx/bad_blosc.zarr" --chunk-samples 700
  fi
done
exit $fail
