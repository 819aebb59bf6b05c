# ferry_util.m4 - small helpers shared by ferry's configure checks.

# FERRY_CHECK_CFLAG(FLAG, VARIABLE, [ACTION-IF-NOT])
# Append FLAG to the shell VARIABLE when $CC accepts it.  The test compiles
# with -Werror so that a flag the compiler only warns about is rejected.
AC_DEFUN([FERRY_CHECK_CFLAG], [
  AS_VAR_PUSHDEF([ferry_cv_flag], [ferry_cv_cflag_$1])
  AC_CACHE_CHECK([whether $CC accepts $1], [ferry_cv_flag], [
    ferry_cf_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror $1"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
      [AS_VAR_SET([ferry_cv_flag], [yes])],
      [AS_VAR_SET([ferry_cv_flag], [no])])
    CFLAGS=$ferry_cf_save_CFLAGS])
  AS_VAR_IF([ferry_cv_flag], [yes], [AS_VAR_APPEND([$2], [" $1"])], [$3])
  AS_VAR_POPDEF([ferry_cv_flag])
])

# FERRY_TRY_LINK(CPPFLAGS, LDFLAGS, LIBS, PROLOGUE, BODY, [IF-YES], [IF-NO])
# Link a test program with the given flags added to the current ones, then
# restore CPPFLAGS, LDFLAGS and LIBS whatever the outcome.
AC_DEFUN([FERRY_TRY_LINK], [
  ferry_tl_save_CPPFLAGS=$CPPFLAGS
  ferry_tl_save_LDFLAGS=$LDFLAGS
  ferry_tl_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $1"
  LDFLAGS="$LDFLAGS $2"
  LIBS="$3 $LIBS"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([$4], [$5])],
    [ferry_try_link=yes], [ferry_try_link=no])
  CPPFLAGS=$ferry_tl_save_CPPFLAGS
  LDFLAGS=$ferry_tl_save_LDFLAGS
  LIBS=$ferry_tl_save_LIBS
  AS_IF([test "x$ferry_try_link" = xyes], [$6], [$7])
])

# FERRY_LIBDIR_OF(PREFIX, VARIABLE)
# Set VARIABLE to the library directory of an installation PREFIX: lib64
# when it exists (the usual CUDA and RHEL layout), else lib.
AC_DEFUN([FERRY_LIBDIR_OF], [
  AS_IF([test -d "$1/lib64"], [$2="$1/lib64"], [$2="$1/lib"])
])

# FERRY_ADD_RPATH(LIBDIR)
# Record LIBDIR in FERRY_RPATH (libtool's -R) so that the library and the
# programs find a dependency installed outside the loader's default path
# without LD_LIBRARY_PATH.  System directories are left out.
AC_DEFUN([FERRY_ADD_RPATH], [
  AS_CASE([$1],
    [/lib|/lib/*|/usr/lib|/usr/lib/*|/lib64|/usr/lib64|""], [],
    [AS_CASE([" $FERRY_RPATH "], [*" -R$1 "*], [],
       [FERRY_RPATH="$FERRY_RPATH -R$1"])])
])

# FERRY_WITH_DEFAULT(NAME)
# Normalise with_NAME after AC_ARG_WITH: "auto" when not given, "yes" for a
# bare --with-NAME, "no" for --without-NAME, otherwise a PREFIX that must be
# an existing directory.
AC_DEFUN([FERRY_WITH_DEFAULT], [
  AS_CASE([$with_$1],
    [auto|yes|no], [],
    [AS_IF([test -d "$with_$1"], [],
       [AC_MSG_ERROR([--with-$1=$with_$1: no such directory])])])
])

# FERRY_DEP_MISSING(NAME, MESSAGE)
# A dependency was not found: an error when it was asked for explicitly,
# otherwise a notice that the feature is disabled.
AC_DEFUN([FERRY_DEP_MISSING], [
  AS_IF([test "x$with_$1" = xauto],
    [AC_MSG_NOTICE([$1 disabled: $2])],
    [AC_MSG_ERROR([--with-$1 was given but $2])])
])

# FERRY_FIND_DEP(CANDIDATES, LIBS, PROLOGUE, BODY)
# Try each candidate installation in order until a test program built from
# PROLOGUE and BODY links.  CANDIDATES is a shell word list of
#   pc:NAME     pkg-config package NAME (its Cflags, then Cflags plus
#               PREFIX/include for .pc files whose includedir is wrong,
#               as Debian's netcdf-mpi.pc)
#   dir:PREFIX  PREFIX/include and PREFIX/lib64 or PREFIX/lib
#   plain:      the compiler's default paths (CPATH, LIBRARY_PATH, Cray)
# LIBS is a word list of alternative link flags for dir: and plain:
# ("-lnetcdf -lnetcdf_mpi").  On success ferry_dep_found=yes and
# ferry_dep_cppflags, ferry_dep_libs, ferry_dep_pc (the pkg-config name, if
# any), ferry_dep_prefix and ferry_dep_where (for the summary) are set; the
# library directories outside the system ones go to FERRY_RPATH.
AC_DEFUN([FERRY_FIND_DEP], [
  ferry_dep_found=no
  ferry_dep_cppflags=
  ferry_dep_libs=
  ferry_dep_pc=
  ferry_dep_prefix=
  ferry_dep_where=
  for ferry_cand in $1; do
    test "x$ferry_dep_found" = xyes && break
    ferry_kind=`echo "$ferry_cand" | sed 's/:.*//'`
    ferry_val=`echo "$ferry_cand" | sed 's/^@<:@^:@:>@*://'`
    AS_CASE([$ferry_kind],
      [pc], [
        AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists "$ferry_val" >/dev/null 2>&1], [
          ferry_pc_cflags=`$PKG_CONFIG --cflags "$ferry_val"`
          ferry_pc_libs=`$PKG_CONFIG --libs "$ferry_val"`
          ferry_pc_prefix=`$PKG_CONFIG --variable=prefix "$ferry_val"`
          _FERRY_DEP_TRY([$ferry_pc_cflags], [$ferry_pc_libs], [$ferry_pc_prefix],
                         [pkg-config $ferry_val], [$3], [$4])
          AS_IF([test "x$ferry_dep_found" != xyes && test -d "$ferry_pc_prefix/include"], [
            _FERRY_DEP_TRY([$ferry_pc_cflags -I$ferry_pc_prefix/include], [$ferry_pc_libs],
                           [$ferry_pc_prefix], [pkg-config $ferry_val], [$3], [$4])])
          AS_IF([test "x$ferry_dep_found" = xyes], [ferry_dep_pc=$ferry_val])])],
      [dir], [
        FERRY_LIBDIR_OF([$ferry_val], [ferry_dir_lib])
        for ferry_alt in $2; do
          AS_IF([test "x$ferry_dep_found" != xyes], [
            _FERRY_DEP_TRY([-I$ferry_val/include], [-L$ferry_dir_lib $ferry_alt],
                           [$ferry_val], [$ferry_val], [$3], [$4])])
        done],
      [
        for ferry_alt in $2; do
          AS_IF([test "x$ferry_dep_found" != xyes], [
            _FERRY_DEP_TRY([], [$ferry_alt], [], [default compiler paths], [$3], [$4])])
        done])
  done
  AS_IF([test "x$ferry_dep_found" = xyes], [
    for ferry_word in $ferry_dep_libs; do
      ferry_ldir=`expr "x$ferry_word" : 'x-L\(.*\)'`
      FERRY_ADD_RPATH([$ferry_ldir])
    done])
])

# _FERRY_DEP_TRY(CPPFLAGS, LIBS, PREFIX, WHERE, PROLOGUE, BODY)
AC_DEFUN([_FERRY_DEP_TRY], [
  echo "trying $4: CPPFLAGS+=$1 LIBS+=$2" >&AS_MESSAGE_LOG_FD
  FERRY_TRY_LINK([$1], [], [$2], [$5], [$6], [
    ferry_dep_found=yes
    ferry_dep_cppflags="$1"
    ferry_dep_libs="$2"
    ferry_dep_prefix="$3"
    ferry_dep_where="$4"])
])

# FERRY_DEP_CANDIDATES(VARIABLE, KIND, VALUES...)
# Append KIND:VALUE to VARIABLE for each non-empty VALUE (env vars unset on
# this system simply vanish).
AC_DEFUN([FERRY_DEP_CANDIDATES], [
  for ferry_v in $3; do
    $1="$$1 $2:$ferry_v"
  done
])
