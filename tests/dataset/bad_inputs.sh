#!/bin/sh
# bad_inputs.sh - every bad input gives its own clear error on every rank,
# over 1, 2 and 4 ranks, with `ferry info`, `verify` and `bench` as drivers:
# each rank exits with the same status (1 for a library error, 2 for a
# command-line usage error), the message is printed once, by rank 0, and names
# the file or option and what is wrong with it, no rank hangs (the job is
# bounded by run-mpi.sh: status 124 is a hang) or crashes (status >= 128, a
# core file), and nothing is written: the dataset directory's listing and
# checksums and the working directory are unchanged.  The bad .npy files are
# written by hand (printf), so this test needs no NumPy.
#
# Also: ranks started with different options (FERRY_SEED, FERRY_BATCH_SIZE
# on one rank) or datasets get one message naming what differs.
#
# Each case names the bug it pins in a comment.
#
# Environment (set by "make check"; see tests/README.md): FERRY, RUN_MPI,
# FERRY_TEST_TMPDIR.  Exit 0 pass, 1 fail, 77 skip (no ferry program).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init bad_inputs
# A bad input fails at once: a job still running after 30 s hangs.
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT:-30}
export FERRY FERRY_MPI_TIMEOUT

data=$tmp/data
bad=$data/bad
mkdir -p "$bad" || exit 1

# npy_write FILE DICT NBYTES: a version 1.0 .npy file whose header holds
# DICT (the dict without its closing ", }") padded as NumPy pads it, followed
# by NBYTES zero bytes of data.
npy_write() {
  dict="$2, }"
  len=`printf '%s' "$dict" | wc -c`
  pad=`expr 64 - \( 10 + $len + 1 \) % 64`
  test "$pad" = 64 && pad=0
  hlen=`expr $len + $pad + 1`
  lo=`expr $hlen % 256`
  hi=`expr $hlen / 256`
  lo=`printf '%03o' "$lo"`
  hi=`printf '%03o' "$hi"`
  {
    printf '\223NUMPY\001\000'
    printf "\\$lo\\$hi"
    printf '%s' "$dict"
    printf "%${pad}s\\n" ''
    head -c "$3" /dev/zero
  } >"$1"
}

f4="'descr': '<f4', 'fortran_order': False"
# A good dataset, for the option cases, and a copy of it.
"$FERRY" gen "$data/gen" --samples 200 --var x:float32:3 >"$tmp/gen.log" 2>&1 &&
  "$FERRY" gen "$data/gen2" --samples 200 --var x:float32:3 >>"$tmp/gen.log" 2>&1 || {
  echo "FAIL: ferry gen"; cat "$tmp/gen.log"; exit 1; }
gen=$data/gen
# The bad files have neutral names, so that the word a message must hold
# ("truncated", "object", ...) cannot come from the file name.
npy_write "$bad/good.npy" "{$f4, 'shape': (97, 3)" 1164
printf 'this is plain text, not a NumPy array file at all\n' >"$bad/junk.npy"
npy_write "$bad/short.npy" "{$f4, 'shape': (97, 3)" 1154
npy_write "$bad/mangled.npy" "{$f4, 'sh@pe': (97, 3)]" 1164
npy_write "$bad/colmajor.npy" "{'descr': '<f8', 'fortran_order': True, 'shape': (97, 3)" 2328
npy_write "$bad/pickled.npy" "{'descr': '|O', 'fortran_order': False, 'shape': (97,)" 776
npy_write "$bad/fields.npy" "{'descr': [('a', '<i4'), ('b', '<f8')], 'fortran_order': False, 'shape': (97,)" 1164
npy_write "$bad/zero.npy" "{$f4, 'shape': (0, 3)" 0
mkdir -p "$bad/ragged" "$bad/hollow"
npy_write "$bad/ragged/a.npy" "{'descr': '<i4', 'fortran_order': False, 'shape': (97,)" 388
npy_write "$bad/ragged/b.npy" "{'descr': '<i4', 'fortran_order': False, 'shape': (50,)" 200
mkdir -p "$bad/zerowidth"
npy_write "$bad/zerowidth/a.npy" "{'descr': '<i4', 'fortran_order': False, 'shape': (97,)" 388
npy_write "$bad/zerowidth/z.npy" "{'descr': '<i4', 'fortran_order': False, 'shape': (97, 0)" 0
mkdir -p "$bad/fifo"
npy_write "$bad/fifo/a.npy" "{'descr': '<i4', 'fortran_order': False, 'shape': (97,)" 388
mkfifo "$bad/fifo/b.npy" || exit 1
printf 'good.npy\ngone.npy\n' >"$bad/parts.txt"
printf '{"ferry_manifest": 1, "backend": "npy", "parts": [\n' >"$bad/broken.json"
# A valid manifest, but of the other dataset (gen2).
"$FERRY" info "$data/gen2" --save-manifest "$bad/other.json" >"$tmp/info.log" 2>&1 || {
  echo "FAIL: ferry info --save-manifest"; cat "$tmp/info.log"; exit 1; }

# snapshot: the listing of $data (names, types, sizes) and the checksum of
# every file in it (SHA-1, or POSIX cksum where sha1sum is missing).
sum='sha1sum'
command -v sha1sum >/dev/null 2>&1 || sum='cksum'
snapshot() {
  ( cd "$data" &&
    find . -exec ls -ld {} + | awk '{ print $1, $5, $NF }' | LC_ALL=C sort &&
    find . -type f -exec $sum {} + | LC_ALL=C sort )
}
snapshot >"$tmp/snap.before" || exit 1

# The command each rank runs: $FERRY with its stdout, stderr and exit status
# kept apart per rank.  On rank ODD_RANK it exports ODD_ENV (NAME=VALUE) and
# replaces the dataset (the argument after the command) by ODD_DATASET.
cat >"$tmp/rank.sh" <<'EOF'
d=$1
shift
r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
test -n "$r" || r=unknown.$$
if test -n "${ODD_RANK:-}" && test "$r" = "$ODD_RANK"; then
  if test -n "${ODD_ENV:-}"; then
    export "$ODD_ENV"
  fi
  if test -n "${ODD_DATASET:-}"; then
    c=$1
    shift 2
    set -- "$c" "$ODD_DATASET" "$@"
  fi
fi
"$FERRY" "$@" >"$d/out.$r" 2>"$d/err.$r"
echo $? >"$d/status.$r"
EOF

# has_any TEXT 'A|B|...': TEXT holds one of A, B, ... (fixed strings, any
# case).
has_any() {
  (
    set -f
    IFS='|'
    for alt in $2; do
      printf '%s\n' "$1" | grep -i -F -e "$alt" >/dev/null && exit 0
    done
    exit 1
  )
}

# expect NP STATUS TEXT1 TEXT2 COMMAND ARGS...: run `ferry COMMAND ARGS` on
# NP ranks; every rank must exit STATUS, and rank 0 alone must print one
# 'ferry:' message holding TEXT1 (a fixed string, any case) and one of the
# '|'-separated alternatives of TEXT2.
expect() {
  np=$1 want=$2 t1=$3 t2=$4
  shift 4
  what=`printf 'np=%s ferry %s' "$np" "$*" | sed "s|$data|DATA|g"`
  # The files of this lane (see the end): results, working directory.
  r=$tmp/r.$lane cwd=$tmp/cwd.$lane launcher=$tmp/launcher.$lane.out
  mkdir -p "$r" "$cwd" || exit 1
  rm -f "$r"/*
  ( cd "$cwd" && $RUN_MPI "$np" sh "$tmp/rank.sh" "$r" "$@" ) \
    >"$launcher" 2>&1
  st=$?
  why=
  case $st in
    0) ;;
    124|137) why="hung: killed after ${FERRY_MPI_TIMEOUT}s" ;;
    *) why="the launcher exited $st" ;;
  esac
  i=0
  while test -z "$why" && test $i -lt "$np"; do
    if test ! -f "$r/status.$i"; then
      why="rank $i left no exit status"
    else
      s=`cat "$r/status.$i"`
      if test "$s" -ge 128 2>/dev/null; then
        why="rank $i crashed (status $s)"
      elif test "$s" != "$want"; then
        why="rank $i exited $s, expected $want"
      elif test $i -gt 0 && { test -s "$r/err.$i" || test -s "$r/out.$i"; }; then
        why="rank $i printed: `cat "$r/err.$i" "$r/out.$i" | head -3`"
      fi
    fi
    i=`expr $i + 1`
  done
  if test -z "$why"; then
    # no notices either: device=auto without a GPU is silent (verbose=0)
    n=`grep -c '^ferry:' "$r/err.0"`
    msg=`grep '^ferry:' "$r/err.0"`
    if test "$n" != 1; then
      why="rank 0 printed $n 'ferry:' messages, not one"
    elif ! printf '%s\n' "$msg" | grep -i -F -e "$t1" >/dev/null; then
      why="the message lacks '$t1'"
    elif ! has_any "$msg" "$t2"; then
      why="the message lacks '$t2'"
    fi
  fi
  if test -z "$why" && test -n "`ls -A "$cwd"`"; then
    why="it wrote into the working directory: `ls -A "$cwd" | head -5`"
    rm -rf "$cwd" && mkdir "$cwd"
  fi
  if test -z "$why"; then
    snapshot >"$tmp/snap.after.$lane"
    if ! cmp -s "$tmp/snap.before" "$tmp/snap.after.$lane"; then
      why="the dataset directory changed: `diff "$tmp/snap.before" "$tmp/snap.after.$lane" | head -5`"
    fi
  fi
  if test -n "$why"; then
    echo "FAIL: $what: $why"
    for f in "$r"/err.* "$r"/out.* "$launcher"; do
      test -s "$f" && sed "s|^|    `basename "$f"`: |" "$f" | head -10
    done
    fail=1
  else
    echo "ok: $what: status $want, once: `printf '%s' "$msg" | sed "s|$data|DATA|g"`"
  fi
  unset ODD_RANK ODD_ENV ODD_DATASET
}

# bad_cases NP: every bad input on NP ranks.
bad_cases() {
  np=$1
  echo "== $np ranks"
  # A path that does not exist must fail on every rank with one message,
  # not leave ranks 1.. waiting for rank 0's broadcast of the manifest.
  expect $np 1 missing.npy 'no such file' info "$bad/missing.npy"
  expect $np 1 nodir 'no such file' verify "$bad/nodir" --epochs 1
  # A file without the \x93NUMPY magic is refused, not read as data.
  expect $np 1 junk.npy 'not a .npy' info "$bad/junk.npy"
  # Less data than the header promises: refused at open, not a short read
  # (or a read past the end) in the middle of an epoch.
  expect $np 1 short.npy truncated verify "$bad/short.npy" --tail partial --batch-size 8
  # A header dict that does not parse (unknown key, ']' for '}').
  expect $np 1 mangled.npy corrupt info "$bad/mangled.npy"
  # fortran_order: True would serve transposed rows if it were ignored.
  expect $np 1 colmajor.npy fortran bench "$bad/colmajor.npy" --tail partial --batch-size 8 --epochs 1
  # dtype '|O': pickled Python objects are no array data at all.
  expect $np 1 pickled.npy object info "$bad/pickled.npy"
  # A structured dtype (a list of fields) is not one element type.
  expect $np 1 fields.npy structured verify "$bad/fields.npy" --tail partial --batch-size 8
  # Two variables of 97 and 50 samples: sample i must exist in both.
  expect $np 1 ragged length info "$bad/ragged"
  # A part that is a FIFO (issue 11): opening it waited for a writer
  # forever on rank 0; now refused by name, never opened for reading.
  expect $np 1 b.npy 'not a regular file' info "$bad/fifo"
  # A variable of empty rows, shape (97, 0): refused once selected, by the
  # manifest, as for every backend; selecting the other variable serves it.
  expect $np 1 "'z'" 'empty rows' info "$bad/zerowidth"
  # A file of shape (0, 3) and an empty directory: an empty dataset is
  # refused at open with its name, not a division by zero in the plan, nor
  # an epoch of zero batches.  The empty directory must say that it holds
  # nothing readable, not only that no backend reads it.
  expect $np 1 zero.npy 'no sample' info "$bad/zero.npy"
  expect $np 1 hollow 'is empty' info "$bad/hollow"
  # batch_size 0 is a usage error naming the option, not a division by zero.
  expect $np 2 batch_size "'0'" verify "$gen" --batch-size 0
  # A batch larger than a rank's share with drop_last would give no batch:
  # refused at set_epoch, naming the option, on every rank at once.
  expect $np 1 batch_size drop_last verify "$gen" --batch-size 300 --tail drop_last --epochs 1
  expect $np 1 batch_size drop_last bench "$gen" --batch-size 300 --epochs 1
  # An unknown option is a usage error, named, not silently ignored.
  expect $np 2 "'--bogus'" unknown verify "$gen" --bogus
  # A glob matching nothing names the pattern (not "no such file '*'").
  expect $np 1 'nomatch-*' matches info "$bad/nomatch-*"
  # An @list naming a missing part names that part.
  expect $np 1 gone.npy 'no such file' info "@$bad/parts.txt"
  # A corrupt manifest is refused naming it, not half-read as a dataset.
  expect $np 1 broken.json json verify "$gen" --manifest "$bad/broken.json" --epochs 1
  # A manifest saved for another dataset (a FERRY_MANIFEST left exported)
  # must not silently serve that dataset's samples.
  expect $np 1 other.json 'describes dataset' verify "$gen" --manifest "$bad/other.json" --epochs 1
}

# Ranks started with different options or datasets: ferry_open and
# ferry_set_epoch compare a checksum of the options, so the job fails with
# one message naming what differs, instead of serving overlapping batches.
# odd_cases NP: rank 1 of NP started differently.
odd_cases() {
  np=$1
  echo "== $np ranks, rank 1 started differently"
  ODD_RANK=1 ODD_ENV=FERRY_SEED=7
  export ODD_RANK ODD_ENV
  expect $np 1 seed different verify "$gen" --epochs 1 --batch-size 8
  ODD_RANK=1 ODD_ENV=FERRY_BATCH_SIZE=7
  export ODD_RANK ODD_ENV
  expect $np 1 batch_size different verify "$gen" --epochs 1 --tail partial
  ODD_RANK=1 ODD_DATASET=$data/gen2
  export ODD_RANK ODD_DATASET
  expect $np 1 dataset different verify "$gen" --epochs 1 --batch-size 8
}

# The cases run in two lanes at once (most of each job is MPI start-up
# time), each with its own result files and working directory; a lane's
# report is printed whole, in order.  The dataset directory is shared: it
# must stay unchanged whichever lane looks.
( lane=a; ferry_lane_session; bad_cases 1; bad_cases 2; odd_cases 2; exit $fail ) >"$tmp/lane.a" 2>&1 &
pid_a=$!
( lane=b; ferry_lane_session; bad_cases 4; odd_cases 4; exit $fail ) >"$tmp/lane.b" 2>&1 &
pid_b=$!
wait $pid_a || fail=1
wait $pid_b || fail=1
cat "$tmp/lane.a" "$tmp/lane.b"
# The directory whose z.npy has empty rows is served once z is not selected
# (select, then validate).
if $RUN_MPI 2 "$FERRY" verify "$bad/zerowidth" --vars a --batch-size 8 \
     --tail partial --epochs 1 >"$tmp/zw.out" 2>&1 &&
   grep 'exactly-once epoch 0: 97 of 97 samples' "$tmp/zw.out" >/dev/null; then
  echo "ok: zerowidth with --vars a: 97 samples, verify passes"
else
  echo "FAIL: zerowidth with --vars a"; sed 's/^/    /' "$tmp/zw.out"; fail=1
fi
exit $fail
