# ferry_sanitize.m4 - sanitizer builds: --enable-sanitize=LIST.
#
# FERRY_ENABLE_SANITIZE (early: a bad list fails at once) and
# FERRY_APPLY_SANITIZE (after the dependency checks, before AC_OUTPUT).
# --enable-sanitize=address,undefined (or address, undefined, thread, a
# comma-separated list) compiles and links the whole build -- library,
# plugins, tool and tests -- with -fsanitize=LIST -fno-omit-frame-pointer,
# appended to CFLAGS and LDFLAGS once every dependency check is done (so a
# check never fails because of the sanitizer runtime).  thread cannot be
# combined with address (or leak): the runtimes exclude each other.
# FERRY_SANITIZE (substituted) holds the list, empty without the option;
# "make check" exports it so that tests know (tests/loader/tsan.sh).
AC_DEFUN([FERRY_ENABLE_SANITIZE], [
  AC_ARG_ENABLE([sanitize],
    [AS_HELP_STRING([--enable-sanitize=LIST],
      [build everything with -fsanitize=LIST: address,undefined (ASan and
       UBSan) or thread (TSan); see tests/README.md])],
    [], [enable_sanitize=no])
  FERRY_SANITIZE=
  AS_CASE([$enable_sanitize],
    [no|""], [],
    [yes], [AC_MSG_ERROR([--enable-sanitize needs a list: --enable-sanitize=address,undefined or --enable-sanitize=thread])],
    [FERRY_SANITIZE=$enable_sanitize])
  AS_IF([test -n "$FERRY_SANITIZE"], [
    ferry_san_thread=no
    ferry_san_address=no
    for ferry_san in `echo "$FERRY_SANITIZE" | tr ',' ' '`; do
      AS_CASE([$ferry_san],
        [thread], [ferry_san_thread=yes],
        [address|leak], [ferry_san_address=yes],
        [undefined], [],
        [AC_MSG_ERROR([--enable-sanitize: unknown sanitizer '$ferry_san' (use address, undefined, thread)])])
    done
    AS_IF([test $ferry_san_thread = yes && test $ferry_san_address = yes],
      [AC_MSG_ERROR([--enable-sanitize=$FERRY_SANITIZE: thread cannot be combined with address or leak; configure two build directories])])
  ])
  AC_SUBST([FERRY_SANITIZE])
])

AC_DEFUN([FERRY_APPLY_SANITIZE], [
  AS_IF([test -n "$FERRY_SANITIZE"], [
    ferry_san_flags="-fsanitize=$FERRY_SANITIZE -fno-omit-frame-pointer"
    AC_MSG_CHECKING([whether $CC builds and links with $ferry_san_flags])
    FERRY_TRY_LINK([$ferry_san_flags], [$ferry_san_flags], [],
      [[#include <stdlib.h>]], [[char *p = malloc(4); free(p);]],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([$CC cannot link with $ferry_san_flags (Debian: the gcc runtime libraries libasan, libubsan, libtsan come with gcc)])])
    CFLAGS="$CFLAGS $ferry_san_flags"
    LDFLAGS="$LDFLAGS $ferry_san_flags"
    ferry_sanitize_summary="$FERRY_SANITIZE ($ferry_san_flags)"
  ], [ferry_sanitize_summary=no])
])
