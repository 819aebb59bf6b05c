# ferry_image.m4 - the image decoders of src/image/ (issue 28's decode
# core): --with-turbojpeg (libjpeg-turbo's TurboJPEG API, JPEG) and
# --with-spng (libspng, PNG), each with an optional PREFIX, auto by
# default, and --with-libjpeg (the libjpeg API of the same libjpeg-turbo:
# with TurboJPEG, JPEG decodes only the rows and columns a crop needs); an explicit --with-X that cannot be satisfied stops configure.
# Each found library defines HAVE_TURBOJPEG / HAVE_SPNG / HAVE_LIBJPEG in config.h and the
# automake conditional of that name; IMAGE_CPPFLAGS and IMAGE_LIBS collect
# their flags for libferry, ferry_image_summary lists them.  Without
# either, src/image/ is still built and refuses that format (FERRY_ENOTSUP).

# _FERRY_WITH_IMAGE_LIB(NAME, PC-NAME, LIBS, INCLUDES, BODY, DEBIAN-PACKAGE, WHAT)
AC_DEFUN([_FERRY_WITH_IMAGE_LIB], [
  AC_ARG_WITH([$1],
    [AS_HELP_STRING([--with-$1@<:@=PREFIX@:>@],
      [decode $7 with $1 (default: auto)])],
    [], [with_$1=auto])
  FERRY_WITH_DEFAULT([$1])
  ferry_have_$1=no
  AS_IF([test "x$with_$1" != xno], [
    ferry_cands=
    AS_CASE([$with_$1],
      [yes|auto], [
        FERRY_DEP_CANDIDATES([ferry_cands], [pc], [$2])
        ferry_cands="$ferry_cands plain:"],
      [ferry_cands="dir:$with_$1"])
    AC_MSG_CHECKING([for $1])
    FERRY_FIND_DEP([$ferry_cands], [$3], [$4], [$5])
    AC_MSG_RESULT([$ferry_dep_found${ferry_dep_where:+ ($ferry_dep_where)}])
    AS_IF([test "x$ferry_dep_found" = xyes], [
      ferry_have_$1=yes
      IMAGE_CPPFLAGS="$IMAGE_CPPFLAGS $ferry_dep_cppflags"
      IMAGE_LIBS="$IMAGE_LIBS $ferry_dep_libs"
      AS_IF([test -n "$ferry_dep_pc"],
        [ferry_image_summary="$ferry_image_summary $1 `$PKG_CONFIG --modversion $ferry_dep_pc 2>/dev/null`"],
        [ferry_image_summary="$ferry_image_summary $1"])
      FERRY_PC_ADD([], [$ferry_dep_libs])
      AC_DEFINE([HAVE_]m4_toupper([$1]), [1], [Define to 1 to decode $7 with $1.])
    ], [
      FERRY_DEP_MISSING([$1], [no $1 library was found (Debian: apt-get install $6; or --with-$1=PREFIX; see config.log)])])
  ])
  AM_CONDITIONAL([HAVE_]m4_toupper([$1]), [test "x$ferry_have_$1" = xyes])
])

# FERRY_WITH_IMAGE - both.
AC_DEFUN([FERRY_WITH_IMAGE], [
  IMAGE_CPPFLAGS=
  IMAGE_LIBS=
  ferry_image_summary=
  _FERRY_WITH_IMAGE_LIB([turbojpeg], [libturbojpeg], [-lturbojpeg],
    [[#include <turbojpeg.h>]],
    [[int n; tjhandle h = tjInitDecompress(); tjGetScalingFactors(&n); return tjDestroy(h);]],
    [libturbojpeg0-dev], [JPEG images])
  _FERRY_WITH_IMAGE_LIB([libjpeg], [libjpeg], [-ljpeg],
    [[#include <stdio.h>
#include <jpeglib.h>]],
    [[struct jpeg_decompress_struct d; struct jpeg_error_mgr e;
      JDIMENSION x = 0, w = 1; d.err = jpeg_std_error(&e);
      jpeg_create_decompress(&d); if (0) { jpeg_crop_scanline(&d, &x, &w);
      jpeg_skip_scanlines(&d, 1); } jpeg_destroy_decompress(&d); return 0;]],
    [libjpeg62-turbo-dev], [JPEG crops (the libjpeg API)])
  _FERRY_WITH_IMAGE_LIB([spng], [spng], [-lspng], [[#include <spng.h>]],
    [[spng_ctx *c = spng_ctx_new(0); spng_ctx_free(c); return 0;]],
    [libspng-dev], [PNG images])
  AS_IF([test -z "$ferry_image_summary"], [ferry_image_summary=" none (images are refused)"])
  ferry_image_summary=`echo $ferry_image_summary`
  AC_SUBST([IMAGE_CPPFLAGS])
  AC_SUBST([IMAGE_LIBS])
])
