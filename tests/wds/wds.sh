#!/bin/sh
# wds.sh - WebDataset tar shards end to end (src/backends/wds.c and tar.c,
# docs/images.md), written by tests/wds/make_wds.py with Python's tarfile as
# WebDataset's TarWriter writes them: PAX (long and non-ASCII keys, a
# __meta__ and a directory member, a global header), GNU long names, ustar
# prefix names; five shards of 1 to 600 samples.
#
#  - `ferry dump --row-hash` over 1 (in order), 2 and 3 ranks (shuffled) of
#    the directory, a glob and an @list: every sample's .jpg and .json bytes
#    (ragged uint8) and its .cls (int64) checked against the writer's
#    (tests/fixtures/dump_compare.py), the variables' plans aligned; reads
#    of 600 samples (runs of members cut at 500 per preadv);
#  - ferry verify on 1, 2 and 3 ranks (exactly once, equal batch counts);
#  - ferry info: the shards, samples, extensions and their lengths;
#  - vars=jpg,cls: a shard whose samples lack a .json is then read, and
#    with missing=json= too (an empty .json); missing=cls=x refused;
#  - a base-256 size field reads as its octal twin;
#  - a saved manifest serves the samples of a scan; a shard changed since,
#    or a record edited to point past its shard, is refused;
#  - ferry index writes SHARD.tar.idx (one uint64 per sample + the end,
#    checked against Python's TarInfo.offset); a stale one is refused on
#    1 and 3 ranks, and read with tar_index=ignore;
#  - the scan shared out (scan=ranks) on 2, 3 and 7 ranks saves the
#    manifest of rank 0's scan, byte for byte; a bad shard in rank 2's
#    share fails every rank with the serial scan's message;
#  - bad shards (a key not adjacent, a member twice, a missing member, a
#    name without an extension or starting with a dot, a .cls that is not
#    an integer, a corrupt header checksum, truncated in a payload and at
#    a member boundary, gzip by name and by bytes) refused with one message
#    naming the shard, what is wrong and its offset, on 1 and 3 ranks.
#
# Environment (set by "make check"; tests/README.md): FERRY, RUN_MPI,
# PYTHON_NUMPY, FERRY_TEST_TMPDIR, top_srcdir, top_builddir.
# Exit 0 pass, 1 fail, 77 skip (no NumPy).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init wds
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the references are written by NumPy"
  exit 77
fi
if ! "$FERRY" --version | grep '^backends:.* webdataset' >/dev/null; then
  echo "FAIL: ferry --version does not list the webdataset backend"
  exit 1
fi
fx=$tmp/fx
"$PYTHON_NUMPY" "$top_srcdir/tests/wds/make_wds.py" "$fx" >"$tmp/make.log" 2>&1 || {
  failed "make_wds.py" "$tmp/make.log"
  exit 1
}
ok "`cat "$tmp/make.log"`"
g=$fx/good
r=$fx/ref

# ---- dumps against the writer's bytes ---------------------------------
BATCH=5
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
export FERRY
refs() { # refs EXT SUFFIX: the reference of every shard, in order
  for k in 0 1 2 3 4; do
    printf '%s ' "$r/shard-00000$k.$1$2"
  done
}
ls "$g"/*.tar >"$tmp/list"
for var in jpg json cls; do
  case $var in cls) suf=.npy ;; *) suf=.npz::ragged ;; esac
  plan=
  test $var = jpg || plan=",plan=jpg-ordered np=1"
  dump_queue "" "$var-ordered" 1 "ordered$plan" "$g" $var \
    "--shuffle none --shuffle-buffer 0 --chunk-samples 7" `refs $var $suf`
  test $var = jpg || plan=",plan=jpg-dir np=3"
  dump_queue "" "$var-dir" 3 "spread$plan" "$g" $var \
    "--seed 4 --chunk-samples 6 --threads 2" `refs $var $suf`
  test $var = jpg || plan=",plan=jpg-glob np=2"
  dump_queue "" "$var-glob" 2 "spread$plan" "$g/shard-*.tar" $var \
    "--seed 5 --shuffle block --block-size 3" `refs $var $suf`
done
dump_queue "" "cls-list" 3 spread "@$tmp/list" cls "--seed 6" `refs cls .npy`
# reads of up to 700 samples: runs of members cut at 500 per preadv
dump_queue "" "jpg-long-reads" 1 ordered "$g" jpg \
  "--shuffle none --shuffle-buffer 0 --chunk-samples 700" `refs jpg .npz::ragged`
dump_run
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" || fail=1

# ---- ferry verify -------------------------------------------------------
for np in 1 2 3; do
  expect_verify $np "$g" --batch-size 7 --seed $np --chunk-samples 5
done

# ---- ferry info ---------------------------------------------------------
if "$FERRY" info "$g" >"$tmp/info.out" 2>&1 &&
   grep 'webdataset' "$tmp/info.out" >/dev/null &&
   grep '^samples *672$' "$tmp/info.out" >/dev/null &&
   grep 'jpg.*uint8' "$tmp/info.out" >/dev/null &&
   grep 'cls.*int64' "$tmp/info.out" >/dev/null &&
   grep 'json.*uint8' "$tmp/info.out" >/dev/null &&
   grep '^ragged *jpg: lengths 0 to 307200' "$tmp/info.out" >/dev/null &&
   grep '^parts *5$' "$tmp/info.out" >/dev/null; then
  ok "ferry info: 5 shards, 672 samples, jpg/json bytes and cls int64, jpg lengths 0 to 307200"
else
  failed "ferry info of the shards" "$tmp/info.out"
fi

# ---- vars= and base-256 sizes ------------------------------------------
mkdir -p "$tmp/sel"
"$PYTHON_NUMPY" - "$tmp/sel/s.tar" <<'PY' || failed "writing a shard without .json"
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as tf:
    for i in range(4):
        for ext, data in (("cls", b"%d" % i), ("jpg", b"j" * i)):
            ti = tarfile.TarInfo("k%d.%s" % (i, ext))
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        if i != 2:
            ti = tarfile.TarInfo("k%d.json" % i)
            tf.addfile(ti, io.BytesIO(b""))
PY
expect_refusal -l "a sample without .json" -n "$tmp/sel/s.tar" 1 \
  "sample 'k2'|no member k2.json|vars=" "$FERRY" info "$tmp/sel/s.tar"
if "$FERRY" dump "$tmp/sel/s.tar" --vars jpg,cls --var cls --epoch 0 --tail partial \
     --shuffle none --shuffle-buffer 0 >"$tmp/sel.out" 2>&1 &&
   test "`awk '{print $4}' "$tmp/sel.out" | tr '\n' ' '`" = "0 1 2 3 "; then
  ok "vars=jpg,cls reads the shard whose sample k2 has no .json"
else
  failed "vars=jpg,cls on a shard without a .json" "$tmp/sel.out"
fi
if "$FERRY" dump "$tmp/sel/s.tar" --var json --missing json= --epoch 0 \
     --tail partial --shuffle none --shuffle-buffer 0 --row-hash >"$tmp/miss.out" 2>&1 &&
   test "`awk '{print $3, $4, $5}' "$tmp/miss.out" | tr '\n' ' '`" = "0 - len=0 1 - len=0 2 - len=0 3 - len=0 "; then
  ok "missing=json= serves the sample k2 without a .json as an empty one"
else
  failed "missing=json=" "$tmp/miss.out"
fi
expect_refusal -l "missing=cls=x" -n "cls=x" 1 "integer" \
  "$FERRY" info "$tmp/sel/s.tar" --missing cls=x
for f in base256 base256-octal; do
  "$FERRY" dump "$fx/$f.tar" --var jpg --epoch 0 --shuffle none --tail partial \
    --shuffle-buffer 0 --row-hash >"$tmp/$f.out" 2>&1 ||
    failed "ferry dump $f.tar" "$tmp/$f.out"
done
if test -s "$tmp/base256.out" && cmp -s "$tmp/base256.out" "$tmp/base256-octal.out"; then
  ok "a base-256 size field reads as its octal twin"
else
  failed "base-256 sizes" "$tmp/base256.out"
fi

# ---- sidecars: ferry index ---------------------------------------------
cp -r "$g" "$tmp/ix"
if "$FERRY" index "$tmp/ix" >"$tmp/index.out" 2>&1 &&
   grep 'indexed 5 shards, 672 samples' "$tmp/index.out" >/dev/null &&
   "$PYTHON_NUMPY" - "$tmp/ix" <<'PY' >>"$tmp/index.out" 2>&1
import glob, struct, sys, tarfile
for path in sorted(glob.glob(sys.argv[1] + "/*.tar")):
    want, last, end = [], None, 0
    with tarfile.open(path) as tf:
        for m in tf:
            if not m.isreg() or (m.name.startswith("__") and "/" not in m.name):
                continue
            base = m.name.rsplit("/", 1)[-1]
            key = m.name[:len(m.name) - len(base)] + base.split(".", 1)[0]
            if key != last:
                want.append(m.offset)
                last = key
            end = m.offset_data + (m.size + 511) // 512 * 512
    want.append(end)
    got = open(path + ".idx", "rb").read()
    assert got == struct.pack("<%dQ" % len(want), *want), path
print("sidecars equal to TarInfo.offset")
PY
then
  ok "ferry index: `head -1 "$tmp/index.out"`; sidecars equal to Python's TarInfo.offset"
else
  failed "ferry index" "$tmp/index.out"
fi
expect_verify 2 "$tmp/ix" --batch-size 7
# stale: the sidecar of another shard
cp "$tmp/ix/shard-000000.tar.idx" "$tmp/ix/shard-000002.tar.idx"
for np in 1 3; do
  expect_refusal -l "stale sidecar np=$np" -n "$tmp/ix/shard-000002.tar.idx" 1 \
    "does not match|ferry index|tar_index=ignore" \
    $RUN_MPI $np "$FERRY" dump "$tmp/ix" --epoch 0
done
if "$FERRY" info "$tmp/ix" --tar-index ignore >"$tmp/ign.out" 2>&1; then
  ok "tar_index=ignore reads the shards beside a stale sidecar"
else
  failed "tar_index=ignore" "$tmp/ign.out"
fi

# ---- a saved manifest: the same samples without the scan ----------------
cp -r "$g" "$tmp/sm"
"$FERRY" info "$tmp/sm" --save-manifest "$tmp/m.json" >"$tmp/sm.out" 2>&1 ||
  failed "ferry info --save-manifest" "$tmp/sm.out"
for how in scan manifest; do
  m=
  test $how = manifest && m="--manifest $tmp/m.json"
  $RUN_MPI 2 "$FERRY" dump "$tmp/sm" $m --var jpg --epoch 0 --row-hash \
    --tail partial --seed 3 >"$tmp/sm.$how" 2>&1 || failed "dump by $how" "$tmp/sm.$how"
done
if test -s "$tmp/sm.scan" && cmp -s "$tmp/sm.scan" "$tmp/sm.manifest"; then
  ok "a saved manifest serves the samples of a scan, on 2 ranks"
else
  failed "a saved manifest's samples differ from a scan's" "$tmp/sm.manifest"
fi
# a saved record whose last .jpg offset lies past the shard: refused
"$PYTHON_NUMPY" - "$tmp/m.json" "$tmp/bad.json" <<'PY' || failed "editing the manifest"
import json, sys
m = json.load(open(sys.argv[1]))
f = m["parts"][0]["files"][1]  # cls, jpg, json: the jpg's record
r = bytearray.fromhex(f["record"])
assert r[0] == 1  # offsets: kind, count, then one u64 per sample
n = int.from_bytes(r[1:9], "little")
at = 9 + 8 * (n - 1)  # the last sample's: in order, but past the end
r[at:at + 8] = (10 ** 12).to_bytes(8, "little")
f["record"] = r.hex()
json.dump(m, open(sys.argv[2], "w"))
PY
cp "$tmp/m.json.roff" "$tmp/bad.json.roff"
expect_refusal -l "a saved record with a member past the shard, np=2" \
  -n "$tmp/sm/shard-000000.tar" 1 "variable jpg|its record|outside the shard" \
  $RUN_MPI 2 "$FERRY" dump "$tmp/sm" --manifest "$tmp/bad.json" --var jpg \
  --epoch 0 --tail partial
printf 'x' >>"$tmp/sm/shard-000002.tar"
expect_refusal -l "a shard changed after its manifest was saved" \
  -n "$tmp/sm/shard-000002.tar" 1 "bytes" \
  $RUN_MPI 2 "$FERRY" dump "$tmp/sm" --manifest "$tmp/m.json" --epoch 0 \
  --tail partial --shuffle none --shuffle-buffer 0

# ---- the scan shared out over the ranks (scan=ranks, dataset/pscan.c) ---
# The same manifest, byte for byte, whether rank 0 describes every shard
# or 2, 3 or 7 ranks share them (7 > 5 shards: two ranks have none).
"$FERRY" info "$g" --scan rank0 --save-manifest "$tmp/ps1.json" \
  >"$tmp/ps1.out" 2>&1 || failed "ferry info --scan rank0" "$tmp/ps1.out"
sed 's/ps1.json.roff/X/' "$tmp/ps1.json" >"$tmp/ps1.sed"
for np in 2 3 7; do
  $RUN_MPI $np "$FERRY" info "$g" --save-manifest "$tmp/ps$np.json" \
    >"$tmp/ps$np.out" 2>&1 || failed "ferry info on $np ranks" "$tmp/ps$np.out"
  sed "s/ps$np.json.roff/X/" "$tmp/ps$np.json" >"$tmp/ps$np.sed"
  if test -s "$tmp/ps1.sed" && cmp -s "$tmp/ps1.sed" "$tmp/ps$np.sed" &&
    cmp -s "$tmp/ps1.json.roff" "$tmp/ps$np.json.roff"; then
    ok "scan=ranks on $np ranks: the manifest of rank 0's scan, byte for byte"
  else
    failed "scan=ranks on $np ranks: another manifest than rank 0's scan" "$tmp/ps$np.json"
  fi
done
# A bad shard in the share of rank 2 of 3 (the 5th of 6): every rank fails
# with the serial scan's message, naming that shard and offset.
mkdir "$tmp/psbad"
cp "$g"/*.tar "$tmp/psbad/"
cp "$fx/bad/nonadjacent.tar" "$tmp/psbad/shard-000003x.tar"
for np in 1 3; do
  expect_refusal -l "a bad shard among good ones, scan=ranks np=$np" \
    -n "$tmp/psbad/shard-000003x.tar" 1 "key 'a'|adjacent|offset 4096" \
    $RUN_MPI $np "$FERRY" dump "$tmp/psbad" --epoch 0 --batch-size 5
done

# ---- bad shards ----------------------------------------------------------
tab=`printf '\t'`
while IFS=$tab read -r shard words; do
  for np in 1 3; do
    expect_refusal -l "`basename "$shard"` np=$np" -n "$shard" 1 "$words" \
      $RUN_MPI $np "$FERRY" dump "$shard" --epoch 0 --batch-size 5
  done
done <"$fx/bad/list.txt"
exit $fail
