#!/bin/sh
# quality.sh - `ferry quality` and the shuffle-quality checks (issue 16):
# on a dataset sorted by label (numpy), shuffle=none is farthest from the
# ideal uniform permutation, chunks with shuffle_buffer 1 nearer and chunks
# with shuffle_buffer 16 nearer still, on the batch-level measures (label
# KL, pairs sharing a batch again; chunks per batch grow); none is the
# farthest on every order measure; the ideal column has a uniform permutation's values;
# --json parses; bad options fail with status 2 (or 1 for a variable that
# does not exist) and a message naming the option; `ferry info` prints the
# automatic chunk_samples and its rule (the issue's 50,021 rows of 40
# bytes over 3 ranks: 96 chunks, not 2); `ferry verify` warns when batches
# mix fewer than 4 chunks and passes the check otherwise.
#
# Environment (set by "make check"): FERRY, RUN_MPI, PYTHON_NUMPY,
# FERRY_TEST_TMPDIR.  Exit 0 pass, 1 fail, 77 skip (no numpy).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init quality

py=${PYTHON_NUMPY:-}
if test -z "$py" || ! "$py" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: no python with numpy (PYTHON_NUMPY; ./bootstrap deps installs python3-numpy)"
  exit 77
fi

bad() { echo "FAIL: $*"; fail=1; }

# expect STATUS TEXT COMMAND...: the exit status, and TEXT in the output.
expect() {
  want=$1 text=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  got=$?
  if test "$got" != "$want"; then
    bad "$* -> exit $got, expected $want"
    cat "$tmp/out" "$tmp/err" | sed 's/^/    /' | head -30
    return 1
  elif test -n "$text" && ! cat "$tmp/out" "$tmp/err" | grep -F -e "$text" >/dev/null; then
    bad "$* -> output lacks '$text'"
    cat "$tmp/out" "$tmp/err" | sed 's/^/    /' | head -30
    return 1
  fi
  return 0
}

# 50,021 rows: x of 10 float32 (40 bytes), label of 10 classes sorted.
d=$tmp/sorted
mkdir -p "$d"
"$py" - "$d" <<'PY' || { echo "FAIL: cannot write the dataset"; exit 1; }
import sys
import numpy as np
d, n = sys.argv[1], 50021
np.save(f"{d}/x.npy", np.arange(n * 10, dtype=np.float32).reshape(n, 10))
np.save(f"{d}/label.npy", (np.arange(n) * 10 // n).astype(np.int64))
PY

# The issue's case: 2 chunks before, now max(64, 8 x 3 x 4) = 96.
if expect 0 'chunk_samples  521 (auto: 50021 samples / 96 chunks' \
    $RUN_MPI 3 "$FERRY" info "$d" --vars x; then
  grep -F 'chunks         97 of at most 521 samples' "$tmp/out" >/dev/null ||
    bad "info: not 97 chunks of 521: `grep '^chunks' "$tmp/out"`"
fi
expect 0 '"chunk_samples_why": "auto: 50021 samples / 64 chunks' \
  "$FERRY" info "$d" --vars x --json
expect 0 'auto: about 1024 KiB of rows: 26214 rows' \
  "$FERRY" info "$d" --vars x --shuffle none

# The report, on 2 ranks simulating 3 (the label read by both).
q() { # name, options...
  name=$1
  shift
  expect 0 '' $RUN_MPI 2 "$FERRY" quality "$d" --json --label label \
    --world-size 3 --epochs 3 "$@" && cp "$tmp/out" "$tmp/$name.json"
}
q none --shuffle none
q sb1 --shuffle chunks --shuffle-buffer 1
q sb16 --shuffle chunks --shuffle-buffer 16
q block --shuffle block --block-size 16
q sb4 --shuffle chunks --shuffle-buffer 4
q global --shuffle global --shuffle-buffer 4
"$py" - "$tmp" <<'PY' || fail=1
import json, sys
t = sys.argv[1]
r = {}
for name in ("none", "sb1", "sb16", "block", "sb4", "global"):
    with open(f"{t}/{name}.json") as f:
        r[name] = json.load(f)  # --json parses
bad = 0
def check(cond, what):
    global bad
    if not cond:
        print("FAIL:", what)
        bad = 1
m = {k: v["measures"] for k, v in r.items()}
keys = ["chunks_per_batch_mean", "chunks_per_batch_min",
        "same_rank_next_epoch", "pairs_together_again", "displacement",
        "kendall_tau", "label_kl"]
for k in r:
    check(sorted(m[k]) == sorted(keys), f"{k}: keys {sorted(m[k])}")
    check(r[k]["world_size"] == 3 and r[k]["samples"] == 50021
          and r[k]["classes"] == 10, f"{k}: header {r[k]}")
# the chunks a 3-rank job cuts: 96 wanted with shuffle_buffer 4 (block), 64
# with 1, and 1 MiB (3 chunks of 48-byte rows) with shuffle=none
check([r[n]["chunks"] for n in ("block", "sb1", "none")] == [97, 65, 3],
      f"chunks {[r[n]['chunks'] for n in ('block', 'sb1', 'none')]}")
ideal = m["none"]
def dist(name, key):
    return abs(m[name][key]["plan"] - m[name][key]["ideal"])
# the ideal: a uniform permutation's values (same shape in every run)
i = {k: ideal[k]["ideal"] for k in keys}
check(abs(i["displacement"] - 1 / 3) < 0.02, f"ideal displacement {i}")
check(abs(i["kendall_tau"]) < 0.02, f"ideal tau {i}")
check(abs(i["same_rank_next_epoch"] - 1 / 3) < 0.02, f"ideal rank {i}")
check(i["pairs_together_again"] < 0.01, f"ideal pairs {i}")
check(i["label_kl"] < 0.15, f"ideal KL {i}")
# batch-level: none farthest, then shuffle_buffer 1, then 16
for key in ("label_kl", "pairs_together_again"):
    d = [dist(n, key) for n in ("none", "sb1", "sb16")]
    check(d[0] >= d[1] > d[2], f"{key}: |plan - ideal| none {d[0]:.4g} "
          f">= sb1 {d[1]:.4g} > sb16 {d[2]:.4g}")
# shuffle=global mixes the ranks' windows: nearer the ideal than chunks
# with the same shuffle_buffer, on every batch-level measure
for key in ("label_kl", "pairs_together_again"):
    check(dist("global", key) < dist("sb4", key),
          f"{key}: global {dist('global', key):.4g} nearer than chunks "
          f"shuffle_buffer 4 {dist('sb4', key):.4g}")
check(m["global"]["chunks_per_batch_mean"]["plan"]
      > 2 * m["sb4"]["chunks_per_batch_mean"]["plan"],
      "chunks per batch: global > 2 x chunks with shuffle_buffer 4")
check(dist("block", "label_kl") < dist("sb1", "label_kl"),
      "label_kl: block_size 16 nearer than shuffle_buffer 1")
# chunks per batch count each configuration's own chunks (their size
# differs): compare the plans' mixing, not the distances
c = [m[n]["chunks_per_batch_mean"]["plan"] for n in ("none", "sb1", "sb16")]
check(c[0] <= c[1] < c[2] and c[1] < 4 <= c[2],
      f"chunks per batch: none {c[0]:.3g} <= sb1 {c[1]:.3g} < 4 <= sb16 "
      f"{c[2]:.3g}")
for n in m:
    check(m[n]["chunks_per_batch_mean"]["plan"] <=
          m[n]["chunks_per_batch_mean"]["ideal"], f"{n}: ideal mixes most")
# none farthest on every order measure
for key in keys[2:]:
    for n in ("sb1", "sb16", "block"):
        check(dist("none", key) >= dist(n, key) - 1e-9,
              f"{key}: none {dist('none', key):.4g} not farther than "
              f"{n} {dist(n, key):.4g}")
check(m["none"]["kendall_tau"]["plan"] == 1, "none: tau 1")
check(m["none"]["same_rank_next_epoch"]["plan"] == 1, "none: same rank")
print("ordering:", {n: round(m[n]["label_kl"]["plan"], 4) for n in m},
      "ideal", round(i["label_kl"], 4))
sys.exit(bad)
PY

# Text output: every measure, both columns.
expect 0 'label KL per batch' "$FERRY" quality "$d" --label label --epochs 2
grep -F 'this plan' "$tmp/out" >/dev/null || bad "text report lacks its header"
expect 0 'pairs sharing a batch again' "$FERRY" quality "$d" --vars x

# Bad options: clear messages, status 2 (1: the variable does not exist).
expect 2 "bad value '1' for --epochs" "$FERRY" quality "$d" --epochs 1
expect 2 "bad value 'x' for --epochs" "$FERRY" quality "$d" --epochs x
expect 2 "bad value '0' for --world-size" "$FERRY" quality "$d" --world-size 0
expect 2 "bad value 'a,b' for --label" "$FERRY" quality "$d" --label a,b
expect 2 '--label x: a label is one value per sample' \
  $RUN_MPI 2 "$FERRY" quality "$d" --label x
expect 1 'nosuch' $RUN_MPI 2 "$FERRY" quality "$d" --label nosuch
n=`grep -c '^ferry: quality:' "$tmp/err"`
test "$n" = 1 || bad "the error was printed $n times, not once"
expect 1 'cannot plan epoch 0' "$FERRY" quality "$d" --batch-size 20000 \
  --world-size 4

# ferry verify: a warning below 4 chunks per batch, a pass above.
expect 0 'WARN mixing' "$FERRY" verify 'mem:N=20000,vars=x:int8' \
  --batch-size 64 --shuffle-buffer 1 --chunk-samples 1000 --epochs 1
expect 0 'PASS mixing' "$FERRY" verify 'mem:N=20000,vars=x:int8' \
  --batch-size 64 --epochs 1
expect 0 'SKIP mixing' "$FERRY" verify 'mem:N=2000,vars=x:int8' \
  --batch-size 64 --shuffle none --epochs 1

test $fail = 0 && echo "PASS: ferry quality orders none > chunks sb1 > chunks sb16 > ideal, global nearer than chunks; verify warns below 4 chunks a batch"
exit $fail
