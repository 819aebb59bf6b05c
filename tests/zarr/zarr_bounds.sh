#!/bin/sh
# zarr_bounds.sh - sizes in Zarr metadata that no store can honour, and N5
# containers (issue 30), on 1 and 2 ranks.  The fixtures are metadata
# written here (no chunk file is needed to judge them):
#
# - chunks reaching far past the array: a .zarray of 10 x 10 floats with
#   chunks [2^40, 10] (and the same in a v3 zarr.json, and as the inner
#   chunks of a shard) was accepted, and the first read failed with "out of
#   memory: 43980465111041 bytes for a band of chunks"; it must be refused
#   as corrupt metadata naming the field, before anything is allocated;
# - shapes of 2^62 and INT64_MAX rows made `ferry info` run for ever (CPU
#   bound, 1 and 2 ranks): refused naming the count and the limit (2^48
#   samples; 2^60 bytes), and a shape of 2^47 rows, which is served, answers
#   at once (ferry info walked its 2^29 chunks one by one);
# - an N5 container or dataset (attributes.json) was called a directory that
#   holds nothing ferry reads: it must say N5; a store of a pre-1.0 draft of
#   Zarr v3 (zarr_implementations' zarrita.zr3: its root zarr.json copied
#   here) was called corrupt metadata: it must say draft.
#
# Each refusal must be the same code and message on every rank
# (tests/sampling/test_mix_errors compares them), and `ferry info` must answer
# as fast as it refuses a .zarray that is not JSON (a served store as fast
# as a small good one), within FERRY_BOUNDS_SLACK_MS (3000 ms by default,
# on a shared machine).
#
# Environment (set by "make check"; see tests/README.md): FERRY, RUN_MPI,
# FERRY_TEST_TMPDIR, top_builddir.  Exit 0 pass, 1 fail, 77 skip (no zarr
# backend).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init zarr_bounds
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT:-30}
export FERRY_MPI_TIMEOUT
if ! "$FERRY" --version 2>/dev/null | grep '^backends:.* zarr' >/dev/null; then
  echo "SKIP: this ferry has no zarr backend"
  exit 77
fi
prog=`cd "${top_builddir:-.}" && pwd`/tests/sampling/test_mix_errors
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
slack=${FERRY_BOUNDS_SLACK_MS:-3000}

# zarray DIR SHAPE CHUNKS DTYPE: a v2 array of no chunk file.
zarray() {
  mkdir -p "$1" &&
  printf '{"zarr_format": 2, "shape": %s, "chunks": %s, "dtype": "%s", "order": "C", "compressor": null, "filters": null, "fill_value": 0}\n' \
    "$2" "$3" "$4" >"$1/.zarray"
}
# zjson DIR SHAPE CHUNKS DATA_TYPE CODECS: a v3 array of no chunk file.
LE='{"name": "bytes", "configuration": {"endian": "little"}}'
zjson() {
  mkdir -p "$1" &&
  printf '{"zarr_format": 3, "node_type": "array", "shape": %s, "data_type": "%s", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": %s}}, "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": %s}\n' \
    "$2" "$4" "$3" "$5" >"$1/zarr.json"
}
d=$tmp/fx
zarray "$d/good.zarr" '[10, 10]' '[5, 10]' '<f4'
mkdir -p "$d/broken.zarr" && echo '{"zarr_format": 2,' >"$d/broken.zarr/.zarray"
zarray "$d/pad.zarr" '[10, 10]' '[1099511627776, 10]' '<f4'
zjson "$d/pad3.zarr" '[10, 10]' '[1099511627776, 10]' float32 "[$LE]"
zjson "$d/padshard.zarr" '[10]' '[2199023255552]' float32 \
  "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [1099511627776], \"codecs\": [$LE], \"index_codecs\": [$LE], \"index_location\": \"end\"}}]"
zarray "$d/rows62.zarr" '[4611686018427387904]' '[1]' '<f4'
zarray "$d/rowsmax.zarr" '[9223372036854775807, 4]' '[1000, 4]' '<f8'
zjson "$d/rowsmax3.zarr" '[9223372036854775807]' '[1]' int8 "[$LE]"
zarray "$d/bytes61.zarr" '[1099511627776, 2097152]' '[1, 2097152]' '|u1'
zarray "$d/rows47.zarr" '[140737488355328]' '[1]' '<f4'
mkdir -p "$d/c.n5/raw/0" &&
  echo '{"n5": "2.0.0"}' >"$d/c.n5/attributes.json" &&
  echo '{"dimensions": [4, 3], "blockSize": [2, 2], "dataType": "uint8", "compression": {"type": "raw"}}' >"$d/c.n5/raw/attributes.json" &&
  printf 'xx' >"$d/c.n5/raw/0/0" &&
  mkdir -p "$d/draft.zr3/meta/root" &&
  echo '{"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0", "metadata_encoding": "https://purl.org/zarr/spec/protocol/core/3.0", "metadata_key_suffix": ".json", "extensions": []}' >"$d/draft.zr3/zarr.json" ||
  { echo "FAIL: cannot write the fixtures in $d"; exit 1; }

# DATASET<TAB>TEXT: each refusal and a word of its message.
cat >"$tmp/bad.txt" <<EOF
$d/pad.zarr	chunks (1099511627776, 10) reaches past the array's shape (10, 10)
$d/pad3.zarr	chunk_grid chunk_shape (1099511627776, 10) reaches past
$d/padshard.zarr	sharding_indexed chunk_shape (1099511627776,) reaches past
$d/rows62.zarr	4611686018427387904 samples, more than ferry serves (2^48
$d/rowsmax.zarr	9223372036854775807 samples, more than ferry serves (2^48
$d/rowsmax3.zarr	9223372036854775807 samples, more than ferry serves (2^48
$d/bytes61.zarr	samples of 2097152 bytes, more than the 2^60 bytes
$d/c.n5	is an N5 container
$d/c.n5/raw	is an N5 dataset
$d/draft.zr3	is a draft of Zarr v3 older than its 1.0
EOF
tab=`printf '\t'`

# ms: milliseconds since the epoch.
ms() { echo $((`date +%s%N` / 1000000)); }

for np in 1 2; do
  # The same code and message on every rank.
  set --
  while IFS=$tab read -r ds text; do
    set -- "$@" "$ds" "$text"
  done <"$tmp/bad.txt"
  if $RUN_MPI $np "$prog" "$@" >"$tmp/errs.$np" 2>&1; then
    echo "ok: np=$np: every refusal the same on every rank"
  else
    echo "FAIL: np=$np: test_mix_errors:"
    sed 's/^/    /' "$tmp/errs.$np"
    fail=1
  fi
  # ferry info: status 1 and one message, as fast as the refusal of a
  # .zarray that is not JSON (mpirun takes longer to end a failed job) and a
  # served store as fast as a small good one.
  t0=`ms`
  $RUN_MPI $np "$FERRY" info "$d/broken.zarr" >"$tmp/base.out" 2>&1
  st=$?
  base=$((`ms` - t0))
  test $st = 1 || { echo "FAIL: np=$np: ferry info broken.zarr: status $st"; cat "$tmp/base.out"; fail=1; }
  t0=`ms`
  $RUN_MPI $np "$FERRY" info "$d/good.zarr" >"$tmp/good.out" 2>&1
  st=$?
  good=$((`ms` - t0))
  test $st = 0 || { echo "FAIL: np=$np: ferry info good.zarr: status $st"; cat "$tmp/good.out"; fail=1; }
  while IFS=$tab read -r ds text; do
    t0=`ms`
    $RUN_MPI $np "$FERRY" info "$ds" >"$tmp/info.out" 2>"$tmp/info.err"
    st=$? took=$((`ms` - t0))
    n=`grep -c '^ferry' "$tmp/info.err"`
    why=
    test $st = 1 || why="status $st, not 1"
    test "$n" = 1 || why="$why; $n messages, not 1"
    grep -F -e "$text" "$tmp/info.err" >/dev/null || why="$why; no '$text'"
    test $took -le $((base + slack)) ||
      why="$why; took $took ms, a corrupt .zarray $base ms"
    if test -z "$why"; then
      echo "ok: np=$np: `basename "$ds"`: $took ms (a corrupt .zarray $base ms)"
    else
      echo "FAIL: np=$np: ferry info $ds: $why"
      sed 's/^/    /' "$tmp/info.err" | head -5
      fail=1
    fi
  done <"$tmp/bad.txt"
  # 2^47 rows are served, and described at once.
  t0=`ms`
  $RUN_MPI $np "$FERRY" info "$d/rows47.zarr" >"$tmp/info.out" 2>&1
  st=$? took=$((`ms` - t0))
  if test $st = 0 && grep '^samples  *140737488355328$' "$tmp/info.out" >/dev/null &&
     test $took -le $((good + slack)); then
    echo "ok: np=$np: rows47.zarr served, described in $took ms (good store $good ms)"
  else
    echo "FAIL: np=$np: ferry info rows47.zarr: status $st, $took ms (good store $good ms)"
    sed 's/^/    /' "$tmp/info.out" | head -20
    fail=1
  fi
done
exit $fail
