# common.sh - the preamble shared by the test scripts that drive the ferry
# tool (tests/SUBJECT/*.sh).  Source it, then call ferry_test_init NAME:
#
#   . "`dirname "$0"`/../lib/common.sh"
#   ferry_test_init datasets
#
# It skips the test (exit 77) when $FERRY is not the ferry program, defaults
# RUN_MPI to tests/run-mpi.sh (make check sets it), unsets the caller's
# FERRY_* loader options (ferry_clear_options below), makes the
# scratch directory $tmp (removed on exit)
# and sets fail=0.

here=${here:-`dirname "$0"`}
top_srcdir=${top_srcdir:-$here/../..}
# ok, failed, expect_refusal, in_lanes (tests/lib/check.sh).
. "$top_srcdir/tests/lib/check.sh"

# ferry_clear_options [PREFIX...]: unset the caller's FERRY_* loader options
# (they would change the results).  The harness's own settings stay:
# FERRY_TEST_*, FERRY_MPI_* (run-mpi.sh's limit, idle shim, stacks),
# FERRY_SANITIZE and FERRY_PY* (unsetting them once took the idle shim and
# the sanitizer time limits from every test), and every variable starting
# with one of the PREFIXes (a test's own settings).
ferry_clear_options() {
  for v in `env | sed -n 's/^\(FERRY_[A-Z_]*\)=.*/\1/p'`; do
    case $v in FERRY_TEST_*|FERRY_MPI_*|FERRY_SANITIZE|FERRY_PY*) continue ;; esac
    keep=no
    for p in "$@"; do
      case $v in "$p"*) keep=yes ;; esac
    done
    test $keep = yes || unset "$v"
  done
}

ferry_test_init() {
  if test -z "${FERRY:-}" || test ! -x "$FERRY"; then
    echo "SKIP: FERRY is not set to the ferry program"
    exit 77
  fi
  if test -z "${RUN_MPI:-}"; then
    RUN_MPI="sh $top_srcdir/tests/run-mpi.sh"
  fi
  ferry_clear_options
  tmp=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/$1.$$
  rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
  trap 'rm -rf "$tmp"' 0
  fail=0
}

# Batched `ferry dump` jobs checked by tests/fixtures/dump_compare.py (used
# by npy_fixtures.sh, hdf5.sh, zarr.sh).  The caller sets jobs (the job
# list file for dump_compare.py, emptied), njobs=0, BATCH and common (the
# dump options of every job).  The jobs run in tests/lib/test_dump: one MPI
# job of 3 ranks runs them all, each on its first NP ranks, and writes
# what `ferry dump` would (output, stderr, status); most of a short MPI job
# was start-up time.  Only jobs whose ENV sets something else than FERRY_*
# variables (an MCA parameter) get an MPI job of their own per ENV.
#
# dump_queue ENV LABEL NP FLAGS DATASET VAR "LOADER OPTIONS" NPY...: queue
# `ENV ferry dump DATASET --var VAR` over NP ranks (ENV: "" or
# "env NAME=VALUE..."), and record the job: FLAGS and the NPY files (one
# per part, in order) are dump_compare.py's.  Paths and values hold no tab.
dump_queue() {
  q_env=$1 q_label=$2 q_np=$3 q_flags=$4 q_ds=$5 q_var=$6 q_opts=$7
  shift 7
  njobs=`expr $njobs + 1`
  q_out=$tmp/dump.$njobs
  # FERRY_* settings are the job's (test_dump sets them around the job);
  # anything else is the MPI job's environment: its own list.
  q_mine='' q_group=''
  for q_w in $q_env; do
    case $q_w in
      env) ;;
      FERRY_*) q_mine="$q_mine $q_w" ;;
      *) q_group="$q_group $q_w" ;;
    esac
  done
  q_key=`printf '%s' "$q_group" | cksum | cut -d' ' -f1`
  test -f "$tmp/group.$q_key.env" || printf '%s\n' "$q_group" >"$tmp/group.$q_key.env"
  q_rowhash=0
  case " $common $q_opts " in *" --row-hash "*) q_rowhash=1 ;; esac
  q_words=`printf '%s\n' "$common $q_opts" | sed 's/--row-hash//g'`
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$q_out" "$q_np" "${q_mine:--}" \
    "$q_ds" "$q_var" "$q_rowhash" "`echo $q_words`" >>"$tmp/group.$q_key.jobs"
  q_line="$q_label np=$q_np	$q_out	$q_out.err	$q_out.status	$q_np	$BATCH	$q_flags"
  for q_f in "$@"; do
    q_line="$q_line	$q_f"
  done
  printf '%s\n' "$q_line" >>"$jobs"
}
# dump_run: run the queued jobs, one MPI job of 3 ranks per environment.
dump_run() {
  d_prog=${top_builddir:-.}/tests/lib/test_dump
  if test ! -x "$d_prog"; then
    echo "FAIL: $d_prog not built"
    fail=1
    return
  fi
  for d_jobs in "$tmp"/group.*.jobs; do
    test -f "$d_jobs" || continue
    d_env=`cat "${d_jobs%.jobs}.env"`
    # $d_env is a list of NAME=VALUE words: split it on purpose.
    env $d_env $RUN_MPI 3 "$d_prog" "$d_jobs" >"$d_jobs.out" 2>&1 || {
      echo "FAIL: test_dump $d_jobs (exit $?)"
      sed 's/^/    /' "$d_jobs.out" | tail -30
      fail=1
    }
    rm -f "$d_jobs" "${d_jobs%.jobs}.env"
  done
}

# bad_stores NP: every entry of $bad_list (lines "STORE<TAB>VARS<TAB>WORDS":
# VARS "-" or a --vars list, WORDS '|'-separated), dumped on NP ranks, is
# refused: status 1, one "ferry:" line holding every word and naming the
# store (a selection error comes from the scan, src/dataset/scan.c, which
# names the variable instead).  zarr.sh and zarr3.sh run it on 1 and
# 3 ranks at once: in_lanes bad_stores 1 3.
bad_stores() {
  b_np=$1
  b_tab=`printf '\t'`
  while IFS=$b_tab read -r b_store b_vars b_words; do
    b_label="`basename "$b_store"` np=$b_np"
    if test "$b_vars" = -; then
      expect_refusal -l "$b_label" -n "$b_store" 1 "$b_words" \
        $RUN_MPI "$b_np" "$FERRY" dump "$b_store" --epoch 0 --batch-size 5
    else
      expect_refusal -l "$b_label" 1 "$b_words" \
        $RUN_MPI "$b_np" "$FERRY" dump "$b_store" --epoch 0 --batch-size 5 \
        --vars "$b_vars"
    fi
  done <"$bad_list"
}

# write_fixtures WRITER FILE: run tests/fixtures/WRITER (a NumPy fixture
# writer) into $fx ($tmp/fx); it must exit 0 and leave $fx/FILE.  Reports
# "ok:", or "FAIL:" with the writer's output and exits 1 (nothing else of
# the test can run without its fixtures).
write_fixtures() {
  fx=$tmp/fx
  if "$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/$1" "$fx" >"$tmp/make.log" 2>&1 &&
     test -f "$fx/$2"; then
    ok "$1 wrote the fixtures"
  else
    failed "$1 did not write the fixtures" "$tmp/make.log"
    exit 1
  fi
}
