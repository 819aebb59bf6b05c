# ferry_codecs.m4 - the compression libraries behind the codecs of every
# backend (src/codecs/): --with-blosc, --with-zlib, --with-zstd, --with-lz4,
# --with-snappy (each takes an optional PREFIX; auto by default, an explicit
# --with-X that cannot be satisfied stops configure).  Each found library
# defines HAVE_X in config.h; CODEC_CPPFLAGS and CODEC_LIBS collect their
# flags for src/codecs/, the NCZarr plugins (src/plugins), and
# ferry_codecs_summary lists them for the summary block.  The decoders are
# built whether or not netCDF-C is (the backend's native reader uses them);
# the NCZarr plugins only with it (src/plugins/local.mk).

# _FERRY_WITH_CODEC(NAME, PC-NAME, LIBS, HEADER, BODY, DEBIAN-PACKAGE, WHAT)
AC_DEFUN([_FERRY_WITH_CODEC], [
  AC_ARG_WITH([$1],
    [AS_HELP_STRING([--with-$1@<:@=PREFIX@:>@],
      [decode $1-compressed $7 (default: auto)])],
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
    FERRY_FIND_DEP([$ferry_cands], [$3], [[#include <$4>]], [$5])
    AC_MSG_RESULT([$ferry_dep_found${ferry_dep_where:+ ($ferry_dep_where)}])
    AS_IF([test "x$ferry_dep_found" = xyes], [
      ferry_have_$1=yes
      CODEC_CPPFLAGS="$CODEC_CPPFLAGS $ferry_dep_cppflags"
      CODEC_LIBS="$CODEC_LIBS $ferry_dep_libs"
      ferry_codecs_summary="$ferry_codecs_summary $1"
      FERRY_PC_ADD([], [$ferry_dep_libs])
      AC_DEFINE([HAVE_]m4_toupper([$1]), [1], [Define to 1 to decode $1 in Zarr stores.])
    ], [
      FERRY_DEP_MISSING([$1], [no $1 library was found (Debian: apt-get install $6; or --with-$1=PREFIX; see config.log)])])
  ])
  AM_CONDITIONAL([HAVE_]m4_toupper([$1]), [test "x$ferry_have_$1" = xyes])
])

# FERRY_ZARR_CODECS - all five; shuffle needs no library.
AC_DEFUN([FERRY_ZARR_CODECS], [
  AC_REQUIRE([FERRY_WITH_NETCDF])
  CODEC_CPPFLAGS=
  CODEC_LIBS=
  ferry_codecs_summary=
  _FERRY_WITH_CODEC([zlib], [zlib], [-lz], [zlib.h],
    [[z_stream s; return inflateInit2(&s, 31);]], [zlib1g-dev], [Zarr arrays and Parquet pages])
  _FERRY_WITH_CODEC([blosc], [blosc], [-lblosc], [blosc.h],
    [[char o[16]; return blosc_decompress_ctx(o, o, 16, 1);]], [libblosc-dev], [Zarr arrays])
  _FERRY_WITH_CODEC([zstd], [libzstd], [-lzstd], [zstd.h],
    [[return (int)ZSTD_decompress(0, 0, 0, 0);]], [libzstd-dev], [Zarr arrays and Parquet pages])
  _FERRY_WITH_CODEC([lz4], [liblz4], [-llz4], [lz4.h],
    [[char o[4]; return LZ4_decompress_safe(o, o, 4, 4);]], [liblz4-dev], [Zarr arrays and Parquet pages])
  # Parquet's SNAPPY pages (most Parquet files: Arrow's default codec).
  # libsnappy is C++; its shared library brings libstdc++ along.
  _FERRY_WITH_CODEC([snappy], [snappy], [-lsnappy], [snappy-c.h],
    [[size_t n; return (int)snappy_uncompressed_length("", 0, &n);]],
    [libsnappy-dev], [Parquet pages (without it SNAPPY pages are refused)])
  ferry_codecs_summary="shuffle$ferry_codecs_summary"
  AS_IF([test "x$ferry_have_zlib" = xyes],
    [ferry_codecs_summary=`echo "$ferry_codecs_summary" | sed 's/zlib/zlib gzip/'`])
  AC_SUBST([CODEC_CPPFLAGS])
  AC_SUBST([CODEC_LIBS])
])
