# ferry_python.m4 - FERRY_WITH_PYTHON: the Python package (python/ferry)
# and its compiled extension _ferry.
#
# --with-python[=PYTHON]: the interpreter to build for.  Default (check):
# /usr/bin/python3 when it imports numpy (on Debian the one that sees
# python3-numpy, python3-torch, python3-mpi4py), else python3 from PATH; the
# extension is left out with a warning when no Python 3 with headers
# (Python.h: apt-get install python3-dev) is found.  --with-python given
# explicitly makes a missing Python or header an error; --without-python
# leaves the package out.
# Sets PYTHON, pythondir, pyexecdir (AM_PATH_PYTHON, under the prefix),
# PYTHON_CPPFLAGS, PYTHON_EXT_SUFFIX (".cpython-311-x86_64-linux-gnu.so")
# and the conditional FERRY_PYTHON.
AC_DEFUN([FERRY_WITH_PYTHON], [
  AC_ARG_WITH([python],
    [AS_HELP_STRING([--with-python@<:@=PYTHON@:>@],
      [build the Python package for PYTHON (default: /usr/bin/python3 if it has numpy, else python3; left out when not usable)])],
    [], [with_python=check])
  ferry_python=no
  AS_CASE([$with_python],
    [no], [],
    [yes|check],
      [AS_IF([test -z "$PYTHON"],
        [AS_IF([/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1],
          [PYTHON=/usr/bin/python3], [PYTHON=python3])])],
    [PYTHON=$with_python])
  AS_IF([test "x$with_python" != xno], [
    AM_PATH_PYTHON([3.8], [ferry_python=yes], [ferry_python=no])
  ])
  AS_IF([test "x$ferry_python" = xyes], [
    ferry_py_inc=`$PYTHON -c 'import sysconfig; print(sysconfig.get_paths()[["include"]])' 2>/dev/null`
    PYTHON_EXT_SUFFIX=`$PYTHON -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX") or ".so")' 2>/dev/null`
    AC_MSG_CHECKING([for Python.h of $PYTHON])
    AS_IF([test -n "$ferry_py_inc" && test -f "$ferry_py_inc/Python.h"],
      [PYTHON_CPPFLAGS="-I$ferry_py_inc"; AC_MSG_RESULT([$ferry_py_inc])],
      [AC_MSG_RESULT([no]); ferry_python=no])
  ])
  AS_IF([test "x$ferry_python" = xno && test "x$with_python" != xno && test "x$with_python" != xcheck],
    [AC_MSG_ERROR([--with-python=$with_python: no usable Python 3 with its headers (apt-get install python3-dev)])])
  AS_IF([test "x$ferry_python" = xno && test "x$with_python" = xcheck],
    [AC_MSG_WARN([no Python 3 with headers: the Python package is not built (apt-get install python3-dev, or --with-python=PYTHON)])])
  AC_SUBST([PYTHON_CPPFLAGS])
  AC_SUBST([PYTHON_EXT_SUFFIX])
  AM_CONDITIONAL([FERRY_PYTHON], [test "x$ferry_python" = xyes])
])
