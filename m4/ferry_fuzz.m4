# ferry_fuzz.m4 - configure --enable-fuzz: the harnesses of tests/fuzz/
# against libFuzzer (tests/fuzz/README.md).
#
# FERRY_ENABLE_FUZZ (after FERRY_ENABLE_SANITIZE: without a list of its
# own, --enable-fuzz turns on --enable-sanitize=address,undefined) and
# FERRY_APPLY_FUZZ (after FERRY_APPLY_SANITIZE).  libFuzzer comes with
# clang, so the MPI wrapper must call clang, e.g.
#   ../configure --enable-fuzz MPICC="env OMPI_CC=clang MPICH_CC=clang mpicc"
# Everything is compiled with -fsanitize=fuzzer-no-link (coverage for the
# fuzzer) and -fno-sanitize-recover=all (the first UBSan report is a
# finding); the harnesses alone link with -fsanitize=fuzzer
# (FUZZ_LIBFUZZER_LDFLAGS), and config.h defines FERRY_LIBFUZZER.  Without
# the option the harnesses are plain programs that replay files
# (tests/fuzz/driver.c) and FERRY_FUZZ is empty.
AC_DEFUN([FERRY_ENABLE_FUZZ], [
  AC_ARG_ENABLE([fuzz],
    [AS_HELP_STRING([--enable-fuzz],
      [build the fuzz harnesses (tests/fuzz/) against libFuzzer; needs
       clang, e.g. MPICC="env OMPI_CC=clang mpicc"; implies
       --enable-sanitize=address,undefined])],
    [], [enable_fuzz=no])
  AS_CASE([$enable_fuzz], [yes|no], [],
    [AC_MSG_ERROR([--enable-fuzz takes no value])])
  AS_IF([test "x$enable_fuzz" = xyes], [
    AS_IF([test -z "$FERRY_SANITIZE"], [FERRY_SANITIZE=address,undefined])
    AS_CASE([,$FERRY_SANITIZE,], [*,thread,*],
      [AC_MSG_ERROR([--enable-fuzz cannot be combined with --enable-sanitize=thread])])
  ])
])

AC_DEFUN([FERRY_APPLY_FUZZ], [
  FUZZ_LIBFUZZER_LDFLAGS=
  FERRY_FUZZ=
  AS_IF([test "x$enable_fuzz" = xyes], [
    ferry_fuzz_cflags="-fsanitize=fuzzer-no-link -fno-sanitize-recover=all"
    AC_MSG_CHECKING([whether $CC builds libFuzzer harnesses])
    ferry_fz_save_CFLAGS=$CFLAGS
    ferry_fz_save_LDFLAGS=$LDFLAGS
    CFLAGS="$CFLAGS $ferry_fuzz_cflags"
    LDFLAGS="$LDFLAGS -fsanitize=fuzzer"
    AC_LINK_IFELSE([AC_LANG_SOURCE([[
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d && n > 1 && d[0] == 1; }
]])], [ferry_fuzz_ok=yes], [ferry_fuzz_ok=no])
    CFLAGS=$ferry_fz_save_CFLAGS
    LDFLAGS=$ferry_fz_save_LDFLAGS
    AC_MSG_RESULT([$ferry_fuzz_ok])
    AS_IF([test $ferry_fuzz_ok != yes],
      [AC_MSG_ERROR([$CC cannot link a libFuzzer harness (-fsanitize=fuzzer): --enable-fuzz needs clang with its fuzzer runtime.
  Debian/Ubuntu:  apt-get install clang   (libclang_rt.fuzzer comes with it)
  then:           ../configure --enable-fuzz MPICC="env OMPI_CC=clang MPICH_CC=clang mpicc"])])
    CFLAGS="$CFLAGS $ferry_fuzz_cflags"
    FUZZ_LIBFUZZER_LDFLAGS=-fsanitize=fuzzer
    FERRY_FUZZ=libfuzzer
    AC_DEFINE([FERRY_LIBFUZZER], [1],
      [Define to link the fuzz harnesses against libFuzzer (--enable-fuzz).])
    ferry_fuzz_summary="libFuzzer ($ferry_fuzz_cflags)"
  ], [ferry_fuzz_summary="no (the harnesses replay their corpus)"])
  AC_SUBST([FUZZ_LIBFUZZER_LDFLAGS])
  AC_SUBST([FERRY_FUZZ])
])
