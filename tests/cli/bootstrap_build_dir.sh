#!/bin/sh
# bootstrap_build_dir.sh - the README's two commands, ./bootstrap demo and
# ./bootstrap check, run one after the other in the same clone (either
# order, each twice), and neither silently reconfigures a build directory
# that another run configured with another prefix or other flags.
#
#  - demo and check configure the tree one way (configure_tree): the test
#    runs configure_tree with a stub configure that records its arguments,
#    in the orders demo, check, check, demo, demo: each goes on;
#  - build_dir_matches on fake build directories (a config.status answering
#    --config, a Makefile with its prefix): not configured, or the same
#    prefix and options (in any order, VAR=VALUE words aside): goes on;
#    another prefix, another option, or FERRY_CONFIGURE_FLAGS added: stops,
#    and the message names the prefix the build has and the three ways on
#    (FERRY_BUILD_DIR=, rm -rf, FERRY_RECONFIGURE=yes).
#
# Environment: top_srcdir, FERRY_TEST_TMPDIR.  Exit 0 pass, 1 fail, 77 skip
# (no bash).

if test -z "${BASH_VERSION:-}"; then
  command -v bash >/dev/null 2>&1 || { echo "SKIP: ./bootstrap needs bash; none here"; exit 77; }
  exec bash "$0" "$@"
fi
top_srcdir=$(cd "${top_srcdir:-$(dirname "$0")/../..}" && pwd)
tmp=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/bootstrap_build_dir.$$
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' 0
tmp=$(cd "$tmp" && pwd)
if ! test -f "$top_srcdir/configure"; then
  echo "SKIP: $top_srcdir has no configure (run ./bootstrap first)"
  exit 77
fi

unset FERRY_CONFIGURE_FLAGS FERRY_RECONFIGURE FERRY_BUILD_DIR
# shellcheck disable=SC1091
. "$top_srcdir/bootstrap"
set +eu
fail=0
default_prefix=$(sed -n 's/^ac_default_prefix=//p' "$top_srcdir/configure" | head -n 1)

# fake DIR PREFIX CONFIG-LINE: a build directory configured so.
fake() {
  mkdir -p "$1"
  printf 'prefix = %s\nVERSION = 0\n' "$2" >"$1/Makefile"
  printf '#!/bin/sh\ntest "$1" = --config && echo "%s"\n' "$3" >"$1/config.status"
  chmod +x "$1/config.status"
}

# expect yes|no WHAT CMD ARGS...: build_dir_matches CMD ARGS... on $BUILD_DIR.
expect() {
  want=$1 what=$2
  shift 2
  if build_dir_matches "$@" 2>"$tmp/err"; then got=yes; else got=no; fi
  if test $got = "$want"; then
    echo "ok: $what: $( test $got = yes && echo goes on || echo stops)"
  else
    echo "FAIL: $what: build_dir_matches said $got, expected $want"
    sed 's/^/    /' "$tmp/err"
    fail=1
  fi
}

BUILD_DIR=$tmp/none
expect yes "a build directory not configured yet" demo

# The newcomer's path: configure_tree for demo and check in turn, with a
# stub configure that writes what a real one would (the prefix into the
# Makefile, its arguments into config.status --config).
mkdir -p "$tmp/src"
cat >"$tmp/src/configure" <<'STUB'
#!/bin/sh
ac_default_prefix=/usr/local
prefix=/usr/local args=
for a in "$@"; do
  case $a in --prefix=*) prefix=${a#--prefix=} ;; esac
  args="$args '$a'"
done
printf 'prefix = %s\nVERSION = 0\n' "$prefix" >Makefile
printf '#!/bin/sh\ntest "$1" = --config && echo "%s"\n' "$args" >config.status
chmod +x config.status
STUB
chmod +x "$tmp/src/configure"
saved_srcdir=$SRCDIR
SRCDIR=$tmp/src BUILD_DIR=$tmp/tree
for cmd in demo check check demo demo; do
  if (configure_tree "$cmd") >"$tmp/out" 2>&1; then
    echo "ok: configure_tree $cmd goes on"
  else
    echo "FAIL: ./bootstrap $cmd stops on the tree the one before configured:"
    sed 's/^/    /' "$tmp/out"
    fail=1
  fi
done
grep -F "prefix = $tmp/tree/prefix" "$tmp/tree/Makefile" >/dev/null || {
  echo "FAIL: configure_tree did not give the build's own scratch prefix:"
  sed 's/^/    /' "$tmp/tree/Makefile"; fail=1; }
SRCDIR=$saved_srcdir

BUILD_DIR=$tmp/check
fake "$BUILD_DIR" "$BUILD_DIR/prefix" "'--prefix=$BUILD_DIR/prefix' 'MPICC=mpicc'"
expect yes "check again on check's build (same prefix and options)" \
  check --prefix="$BUILD_DIR/prefix"
expect no "demo with the default prefix on check's build" demo
for s in "configured with: prefix $BUILD_DIR/prefix" "this run wants:  prefix $default_prefix" \
         "FERRY_BUILD_DIR=build-demo ./bootstrap demo" "rm -rf $BUILD_DIR" \
         "FERRY_RECONFIGURE=yes ./bootstrap demo"; do
  grep -F -e "$s" "$tmp/err" >/dev/null || {
    echo "FAIL: the message lacks '$s':"; sed 's/^/    /' "$tmp/err"; fail=1; }
done
expect no "check with another prefix" check --prefix="$tmp/elsewhere"
FERRY_CONFIGURE_FLAGS=--without-cuda
expect no "check with FERRY_CONFIGURE_FLAGS=--without-cuda added" \
  check --prefix="$BUILD_DIR/prefix"
unset FERRY_CONFIGURE_FLAGS

BUILD_DIR=$tmp/opts
fake "$BUILD_DIR" "$BUILD_DIR/prefix" "--enable-werror '--prefix=$BUILD_DIR/prefix'"
expect yes "the same options in another order" \
  check --prefix="$BUILD_DIR/prefix" --enable-werror
expect no "an option the build lacks (--enable-werror)" check --prefix="$BUILD_DIR/prefix"

BUILD_DIR=$tmp/flags
fake "$BUILD_DIR" "$default_prefix" "'--with-module-deps=openmpi/4.1.5 hdf5' --without-cuda"
FERRY_CONFIGURE_FLAGS="--without-cuda --with-module-deps=openmpi/4.1.5"
expect no "a flag with another value (--with-module-deps)" demo
exit $fail
