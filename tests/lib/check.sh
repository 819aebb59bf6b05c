# check.sh - the reporting and refusal checks shared by the test scripts
# (tests/README.md, "The shell library").  Source it (tests/lib/common.sh
# does); it needs $tmp, a scratch directory of the test's own, and keeps
# the test's verdict in $fail (0 or 1).
#
#   ok "ferry info: 3 variables"            # "ok: ..."
#   failed "ferry info lists no b" "$out"  # "FAIL: ...", FILE indented; fail=1
#   expect_refusal -l "bad.zarr np=3" -n "$store" 1 'dtype|<f9' \
#     $RUN_MPI 3 "$FERRY" dump "$store"
#   in_lanes bad_stores 1 3                 # bad_stores 1 and 3 at once
#
# Every check prints one line that starts "ok:" or "FAIL:", so that a log
# says what was checked as well as what failed.

fail=${fail:-0}

# ok MESSAGE: a check that passed.
ok() {
  echo "ok: $*"
}

# failed MESSAGE [FILE]: a check that failed; FILE (the command's output)
# follows, indented, its first 20 lines.
failed() {
  echo "FAIL: $1"
  if test $# -gt 1 && test -f "$2"; then
    sed 's/^/    /' "$2" | head -20
  fi
  fail=1
}

# expect_refusal [-l LABEL] [-n NAME] STATUS WORDS COMMAND...: COMMAND must
# refuse: exit STATUS, print exactly one "ferry..." line on standard error,
# name NAME there (a path: the message says which file) and hold every
# word of WORDS, a '|'-separated list matched without case ("dtype|<f9").
# LABEL names the check in the report (default: the command).  Returns 0
# when it did, else 1 with fail=1.  The command's standard output and error
# are left in $tmp/refusal.LANE.out and .err (LANE: $lane, set by
# in_lanes), for the caller to look at further.
expect_refusal() {
  r_label='' r_name=''
  while :; do
    case $1 in
      -l) r_label=$2; shift 2 ;;
      -n) r_name=$2; shift 2 ;;
      *) break ;;
    esac
  done
  r_want=$1 r_words=$2
  shift 2
  test -n "$r_label" || r_label="$*"
  r_out=$tmp/refusal.${lane:-0}.out
  r_err=$tmp/refusal.${lane:-0}.err
  "$@" >"$r_out" 2>"$r_err"
  r_st=$?
  r_n=$(grep -c '^ferry' "$r_err")
  r_why=
  test "$r_st" = "$r_want" || r_why="status $r_st, not $r_want"
  test "$r_n" = 1 || r_why="$r_why; $r_n ferry messages, not 1"
  test -z "$r_name" || grep -F -e "$r_name" "$r_err" >/dev/null ||
    r_why="$r_why; the message does not name $r_name"
  r_rest=$r_words
  while test -n "$r_rest"; do
    r_w=${r_rest%%|*}
    case $r_rest in *'|'*) r_rest=${r_rest#*|} ;; *) r_rest= ;; esac
    grep -i -F -e "$r_w" "$r_err" >/dev/null || r_why="$r_why; no '$r_w' in the message"
  done
  if test -z "$r_why"; then
    ok "$r_label: $(grep '^ferry' "$r_err" | cut -c1-220)"
    return 0
  fi
  failed "$r_label: ${r_why#; }" "$r_err"
  return 1
}

# expect_verify NP DATASET OPTIONS...: `ferry verify DATASET --epochs 1
# OPTIONS` on NP ranks must pass, with its batches and exactly-once checks
# passed (not skipped).  Returns 0 when it did, else 1 with fail=1; the
# report is left in $tmp/verify.out.
expect_verify() {
  v_np=$1 v_ds=$2
  shift 2
  if $RUN_MPI "$v_np" "$FERRY" verify "$v_ds" --epochs 1 "$@" \
       >"$tmp/verify.out" 2>&1 &&
     grep '^PASS exactly-once' "$tmp/verify.out" >/dev/null &&
     grep '^PASS batches' "$tmp/verify.out" >/dev/null &&
     grep '^ferry verify: PASS' "$tmp/verify.out" >/dev/null; then
    ok "ferry verify $* on $v_np ranks: $(grep '^PASS exactly' "$tmp/verify.out" | cut -c1-90)"
    return 0
  fi
  failed "ferry verify $* on $v_np ranks" "$tmp/verify.out"
  return 1
}

# wait_line FILE PATTERN [SECONDS [PID]]: wait until FILE has a line
# matching PATTERN (grep's), looking every 0.1 s, for SECONDS (30) at
# most and, given a PID, only while that process runs; 0 when the line
# came, 1 when not.  For a job started in the background whose output says
# when it got somewhere (then signal it, empty its files, ...).
wait_line() {
  w_file=$1 w_pat=$2 w_left=`expr ${3:-30} \* 10` w_pid=${4:-}
  while ! grep -q -- "$w_pat" "$w_file" 2>/dev/null; do
    if test -n "$w_pid" && ! kill -0 "$w_pid" 2>/dev/null; then
      return 1
    fi
    test "$w_left" -gt 0 || return 1
    w_left=`expr $w_left - 1`
    sleep 0.1
  done
}

# ferry_lane_session: the MPI programs this (sub)shell starts get an Open
# MPI session directory of their own, inside the test's (tests/lib/timed.sh
# makes one per test): lanes that start singletons at once raced on a
# shared one ("mkdir .../ompi.HOST.UID: File exists", 2026-11-28).
ferry_lane_session() {
  if test -n "${OMPI_MCA_orte_tmpdir_base:-}" &&
    l_sess=`mktemp -d "$OMPI_MCA_orte_tmpdir_base/lane.XXXXXX"`; then
    OMPI_MCA_orte_tmpdir_base=$l_sess
    export OMPI_MCA_orte_tmpdir_base
  fi
}

# in_lanes FUNCTION ARG...: run "FUNCTION ARG" for every ARG at once, each
# in a subshell writing to a file of its own ($lane is ARG there), then
# print the reports in the order of the ARGs; fail=1 when one failed.  For
# checks whose time is mostly MPI start-up (each job waits, the CPU does
# not), two lanes take the time of one.
in_lanes() {
  l_fn=$1
  shift
  l_pids=
  for l_arg in "$@"; do
    (
      lane=$l_arg
      fail=0
      ferry_lane_session
      "$l_fn" "$l_arg"
      exit $fail
    ) >"$tmp/lane.$l_arg" 2>&1 &
    l_pids="$l_pids $!"
  done
  for l_pid in $l_pids; do
    wait "$l_pid" || fail=1
  done
  for l_arg in "$@"; do
    cat "$tmp/lane.$l_arg"
    rm -f "$tmp/lane.$l_arg"
  done
}
