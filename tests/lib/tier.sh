#!/bin/sh
# tier.sh - the registered tests of one tier (tests/local.mk), one line.
#
# usage: FERRY_REGISTERED='...' FERRY_TIER_slow='...' ... tier.sh TIER
#
# quick: every registered test but the slow ones; all: every one; slow,
# asan, tsan, fuzz: those of FERRY_TIER_NAME that are registered in this
# build (a build without CUDA has no tests/gpu/fake.sh), in the registered
# order; an entry ending in '/' stands for every registered test under
# that folder.  An unknown tier is an error (exit 2): a typo must not run
# nothing and pass.

tier=${1:-quick}

# in_list TEST LIST: TEST is in LIST (entries ending in '/' are prefixes).
in_list() {
  for p in $2; do
    case $p in
      */) case $1 in "$p"*) return 0 ;; esac ;;
      *) test "$1" = "$p" && return 0 ;;
    esac
  done
  return 1
}

case $tier in
  quick) keep=no list=$FERRY_TIER_slow ;;
  all) keep=no list= ;;
  slow) keep=yes list=$FERRY_TIER_slow ;;
  asan) keep=yes list=$FERRY_TIER_asan ;;
  tsan) keep=yes list=$FERRY_TIER_tsan ;;
  fuzz) keep=yes list=$FERRY_TIER_fuzz ;;
  *)
    echo "tier.sh: no tier '$tier' (quick, slow, all, asan, tsan, fuzz: tests/local.mk)" >&2
    exit 2 ;;
esac

out=
for t in $FERRY_REGISTERED; do
  if in_list "$t" "$list"; then
    test $keep = yes && out="$out $t"
  else
    test $keep = no && out="$out $t"
  fi
done
echo $out
