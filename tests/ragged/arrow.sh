#!/bin/sh
# arrow.sh - Arrow IPC files (src/backends/arrow.c, docs/ragged.md) written
# by the npm apache-arrow package (tests/ragged/make_arrow.mjs): a Hugging
# Face save_to_disk directory (an IPC stream of 4 record batches: list<int32>
# input_ids, list<int8> attention_mask, int64 label, utf8 text,
# fixed_size_list<float32, 4> emb, a bool column skipped), the IPC file
# format with large_list<float32>, large_binary, large_utf8, binary, uint16
# and float64 columns, and a directory of three shards.  Every column is
# dumped with `ferry dump --row-hash` on 1 rank in storage order and on 2
# and 3 ranks shuffled, and every sample (its length and all its values)
# compared with what the writer was given (tests/fixtures/dump_compare.py).
# Then corrupt files: truncated, a bad message length, an offsets buffer
# that decreases, a buffer outside its body: one message naming the file,
# on 1 and 3 ranks.  The same columns with compressed bodies (LZ4 frame,
# zstd; make_arrow.mjs fixes the npm writer's length prefixes) are dumped
# and compared too, the npm writer's own bytes refused with the reason, and
# Arrow C++'s compressed integration files (tests/ragged/arrow-testing/)
# served with the values of their JSON.  The Hugging Face directory packed
# into rows (pack=concat, pack_var=input_ids): ferry verify's tokens check
# on 2 ranks, and pack without pack_var refused (several ragged columns).
#
# Environment (set by "make check"): FERRY, RUN_MPI, PYTHON_NUMPY,
# FERRY_TEST_TMPDIR, top_srcdir, top_builddir.  Exit 0 pass, 1 fail, 77
# skip (no node, or apache-arrow is not installed: tests/parquet/setup.sh).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init arrow
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the references are checked with NumPy"
  exit 77
fi
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: no node (Node.js): the fixtures are written by the npm apache-arrow package (tests/parquet/setup.sh)"
  exit 77
fi
if test ! -d "$top_srcdir/tests/parquet/node_modules/apache-arrow"; then
  echo "SKIP: apache-arrow is not installed in tests/parquet/node_modules (run tests/parquet/setup.sh, which ./bootstrap deps runs)"
  exit 77
fi
fx=$tmp/fx
if node "$top_srcdir/tests/ragged/make_arrow.mjs" "$fx" >"$tmp/make.log" 2>&1; then
  ok "`cat "$tmp/make.log"`"
else
  failed "make_arrow.mjs did not write the fixtures" "$tmp/make.log"
  exit 1
fi
# The writer's values as NumPy files: a dense column a .npy, a ragged one
# an .npz of values and offsets (dump_compare.py's FILE.npz::ragged).
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/refs_from_json.py" "$fx/ref" ||
  { failed "the references did not convert"; exit 1; }

BATCH=9
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
tab=`printf '\t'`
i=0
while IFS=$tab read -r ds col refs; do
  i=`expr $i + 1`
  set --
  for r in `echo "$refs" | tr ',' ' '`; do
    base=${r%.json}
    if test -f "$base.npz"; then set -- "$@" "$base.npz::ragged"; else set -- "$@" "$base.npy"; fi
  done
  label="`basename "$ds"`:$col"
  dump_queue "" "$label ordered" 1 ordered "$ds" "$col" \
    "--shuffle none --shuffle-buffer 0" "$@"
  np=`expr 2 + $i % 2`
  dump_queue "" "$label shuffled" $np spread "$ds" "$col" \
    "--seed $i --chunk-samples 17 --threads 3" "$@"
done <"$fx/good.txt"
dump_run
echo "checking $njobs dumps against the values apache-arrow was given"
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" \
  >"$tmp/compare.out" 2>&1 || fail=1
grep -c '^ok' "$tmp/compare.out" | sed 's/^/ok: dumps equal to the writer'"'"'s values: /'
grep -v '^ok' "$tmp/compare.out"

# ---- packed rows of a Hugging Face corpus (pack=concat, docs/lm.md) --------
# several ragged columns: pack_var names the tokens; ferry verify's tokens
# check on 2 ranks (every token of every document once, the boundary
# outputs against the rows)
expect_refusal -l "pack without pack_var" 1 "ragged variables; packing needs one" \
  "$FERRY" dump "$fx/hf" --pack concat --seq-len 16
if $RUN_MPI 2 "$FERRY" verify "$fx/hf" --pack concat --pack-var input_ids \
     --seq-len 16 --overlap 1 --batch-size 4 --tail partial --epochs 1 \
     >"$tmp/pack.verify" 2>&1 &&
   grep '^PASS tokens' "$tmp/pack.verify" >/dev/null; then
  ok "pack=concat over input_ids: `grep '^PASS tokens' "$tmp/pack.verify"`"
else
  failed "ferry verify --pack concat --pack-var input_ids" "$tmp/pack.verify"
fi

# ---- ferry info -------------------------------------------------------------
if "$FERRY" info "$fx/hf" >"$tmp/info.out" 2>&1 &&
   grep '^  input_ids  *int32  *little (337, \*)' "$tmp/info.out" >/dev/null &&
   grep '^  emb  *float32  *little (337, 4)' "$tmp/info.out" >/dev/null &&
   grep 'column keep skipped: bool' "$tmp/info.out" >/dev/null &&
   grep 'storage  *input_ids: arrow list, 4 record batches' "$tmp/info.out" >/dev/null; then
  ok "ferry info of a save_to_disk directory: the list, fixed-size list and skipped bool columns"
else
  failed "ferry info should show the columns of the Hugging Face directory" "$tmp/info.out"
fi

# ---- corrupt files ----------------------------------------------------------
"$PYTHON_NUMPY" - "$fx" <<'PY' || { failed "the corrupt files were not written"; exit 1; }
import os, struct, sys
d = sys.argv[1]
s = open(os.path.join(d, "hf", "data-00000-of-00001.arrow"), "rb").read()
f = open(os.path.join(d, "file.arrow"), "rb").read()
os.makedirs(os.path.join(d, "bad"), exist_ok=True)
def put(name, b):
    open(os.path.join(d, "bad", name), "wb").write(b)
put("truncated.arrow", f[:len(f) // 2])              # no footer
put("meta_len.arrow", s[:4] + struct.pack("<i", 1 << 29) + s[8:])
put("cut_body.arrow", s[:len(s) - 40])               # a body past the end
# the first record batch's first offsets buffer: find its bytes (0, then
# the first length) after the schema message and make offset 1 negative
meta = struct.unpack("<i", s[4:8])[0]
at = 8 + meta                                       # the first batch message
m2 = struct.unpack("<i", s[at + 4:at + 8])[0]
body = at + 8 + m2
put("neg_offset.arrow", s[:body + 4] + b"\xff\xff\xff\xff" + s[body + 8:])
PY
bad() {
  np=$1
  run="$RUN_MPI $np"
  test "$np" = 1 && run=
  for c in "truncated.arrow|footer" "meta_len.arrow|metadata|past the end" \
           "cut_body.arrow|past the end" "neg_offset.arrow|offset"; do
    f=${c%%|*}
    words=${c#*|}
    expect_refusal -l "$f np=$np" -n "$fx/bad/$f" 1 "$words" \
      $run "$FERRY" dump "$fx/bad/$f" --vars input_ids
  done
}
in_lanes bad 1 3

# ---- compressed bodies -------------------------------------------------------
# (their dumps are among the ones above: lz4/ and zstd.arrow in good.txt)
if test -f "$fx/zstd.arrow"; then
  n=`grep -c 'zstd.arrow\|/lz4/' "$fx/good.txt"`
  ok "compressed bodies (LZ4 frame, zstd): $n columns dumped and compared above"
  # the npm writer's own bytes (its prefixes hold compressed lengths):
  # refused with the reason, not misread
  expect_refusal -l "lz4_js.arrow" -n "$fx/lz4_js.arrow" 1 \
    "length prefix is the compressed length" "$FERRY" info "$fx/lz4_js.arrow"
else
  echo "note: lz4js and @bokuweb/zstd-wasm are not installed (tests/parquet/setup.sh): no compressed fixtures"
fi
# Arrow C++'s own compressed files (tests/ragged/arrow-testing/README.md):
# the ints column of each, equal to the JSON the generator wrote
at=$top_srcdir/tests/ragged/arrow-testing
for n in generated_lz4 generated_zstd generated_uncompressible_lz4 generated_uncompressible_zstd; do
  for k in stream arrow_file; do
    if "$FERRY" dump "$at/$n.$k" --vars ints --shuffle none --batch-size 7 \
         --tail partial >"$tmp/at.out" 2>"$tmp/at.err" &&
       "$PYTHON_NUMPY" - "$at/$n.json.gz" "$tmp/at.out" <<'PY'
import gzip, json, sys
j = json.load(gzip.open(sys.argv[1]))
want = [int(x) for b in j["batches"] for c in b["columns"]
        if c["name"] == "ints" for x in c["DATA"]]
got = [int(l.split()[3]) for l in open(sys.argv[2]) if l.strip()]
ids = [int(l.split()[2]) for l in open(sys.argv[2]) if l.strip()]
sys.exit(0 if got == want and ids == list(range(len(want))) else 1)
PY
    then
      ok "Arrow C++'s $n.$k: `wc -l <"$tmp/at.out"` ints equal to its JSON"
    else
      failed "Arrow C++'s $n.$k should be served with its JSON's values" "$tmp/at.err"
    fi
  done
done
exit $fail
