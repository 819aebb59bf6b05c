# src/plugins/local.mk - included by Makefile.am: the zarr backend's NCZarr
# filter plugins.
#
# With netCDF-C, one NCZarr filter plugin per codec whose library configure
# found (m4/ferry_codecs.m4), each a libtool module lib__nczferry_NAME.so
# installed in $(pkglibdir)/plugins, built from src/plugins/nczplugin.c with
# FERRY_PLUGIN_KIND naming the codec (src/codecs/codec.h).  libferry always
# gets the same decoders (src/codecs/local.mk) for the backend's own chunk
# reader and, with netCDF-C, the two directories where it looks for the
# plugins: the installed one and, for "make check" before "make install",
# the build tree's.  The .la
# files libtool installs beside the plugins are harmless: netCDF-C skips what
# it cannot dlopen.

ferryplugindir = $(pkglibdir)/plugins

FERRY_PLUGIN_CFLAGS = $(AM_CFLAGS) $(VISIBILITY_CFLAGS)
FERRY_PLUGIN_CPPFLAGS = $(AM_CPPFLAGS) $(CODEC_CPPFLAGS)
FERRY_PLUGIN_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared -no-undefined
FERRY_PLUGIN_LIBADD = $(CODEC_LIBS) $(JANSSON_LIBS)
FERRY_PLUGIN_SOURCES = src/plugins/nczplugin.c src/codecs/codec.c \
	src/codecs/page.c src/codecs/codec.h

ferryplugin_LTLIBRARIES =

# The plugins only with netCDF-C: nothing else loads them.
if HAVE_NETCDF
libferry_core_la_CPPFLAGS += \
	-DFERRY_PLUGIN_DIR='"$(ferryplugindir)"' \
	-DFERRY_BUILD_PLUGIN_DIR='"$(abs_top_builddir)/src/plugins/.libs"'

ferryplugin_LTLIBRARIES += src/plugins/lib__nczferry_shuffle.la
src_plugins_lib__nczferry_shuffle_la_SOURCES = $(FERRY_PLUGIN_SOURCES)
src_plugins_lib__nczferry_shuffle_la_CPPFLAGS = $(FERRY_PLUGIN_CPPFLAGS) -DFERRY_PLUGIN_KIND=FERRY__CODEC_SHUFFLE
src_plugins_lib__nczferry_shuffle_la_CFLAGS = $(FERRY_PLUGIN_CFLAGS)
src_plugins_lib__nczferry_shuffle_la_LDFLAGS = $(FERRY_PLUGIN_LDFLAGS)
src_plugins_lib__nczferry_shuffle_la_LIBADD = $(FERRY_PLUGIN_LIBADD)

if HAVE_BLOSC
ferryplugin_LTLIBRARIES += src/plugins/lib__nczferry_blosc.la
src_plugins_lib__nczferry_blosc_la_SOURCES = $(FERRY_PLUGIN_SOURCES)
src_plugins_lib__nczferry_blosc_la_CPPFLAGS = $(FERRY_PLUGIN_CPPFLAGS) -DFERRY_PLUGIN_KIND=FERRY__CODEC_BLOSC
src_plugins_lib__nczferry_blosc_la_CFLAGS = $(FERRY_PLUGIN_CFLAGS)
src_plugins_lib__nczferry_blosc_la_LDFLAGS = $(FERRY_PLUGIN_LDFLAGS)
src_plugins_lib__nczferry_blosc_la_LIBADD = $(FERRY_PLUGIN_LIBADD)
endif

if HAVE_ZLIB
ferryplugin_LTLIBRARIES += src/plugins/lib__nczferry_zlib.la src/plugins/lib__nczferry_gzip.la
src_plugins_lib__nczferry_zlib_la_SOURCES = $(FERRY_PLUGIN_SOURCES)
src_plugins_lib__nczferry_zlib_la_CPPFLAGS = $(FERRY_PLUGIN_CPPFLAGS) -DFERRY_PLUGIN_KIND=FERRY__CODEC_ZLIB
src_plugins_lib__nczferry_zlib_la_CFLAGS = $(FERRY_PLUGIN_CFLAGS)
src_plugins_lib__nczferry_zlib_la_LDFLAGS = $(FERRY_PLUGIN_LDFLAGS)
src_plugins_lib__nczferry_zlib_la_LIBADD = $(FERRY_PLUGIN_LIBADD)
src_plugins_lib__nczferry_gzip_la_SOURCES = $(FERRY_PLUGIN_SOURCES)
src_plugins_lib__nczferry_gzip_la_CPPFLAGS = $(FERRY_PLUGIN_CPPFLAGS) -DFERRY_PLUGIN_KIND=FERRY__CODEC_GZIP
src_plugins_lib__nczferry_gzip_la_CFLAGS = $(FERRY_PLUGIN_CFLAGS)
src_plugins_lib__nczferry_gzip_la_LDFLAGS = $(FERRY_PLUGIN_LDFLAGS)
src_plugins_lib__nczferry_gzip_la_LIBADD = $(FERRY_PLUGIN_LIBADD)
endif

if HAVE_ZSTD
ferryplugin_LTLIBRARIES += src/plugins/lib__nczferry_zstd.la
src_plugins_lib__nczferry_zstd_la_SOURCES = $(FERRY_PLUGIN_SOURCES)
src_plugins_lib__nczferry_zstd_la_CPPFLAGS = $(FERRY_PLUGIN_CPPFLAGS) -DFERRY_PLUGIN_KIND=FERRY__CODEC_ZSTD
src_plugins_lib__nczferry_zstd_la_CFLAGS = $(FERRY_PLUGIN_CFLAGS)
src_plugins_lib__nczferry_zstd_la_LDFLAGS = $(FERRY_PLUGIN_LDFLAGS)
src_plugins_lib__nczferry_zstd_la_LIBADD = $(FERRY_PLUGIN_LIBADD)
endif

if HAVE_LZ4
ferryplugin_LTLIBRARIES += src/plugins/lib__nczferry_lz4.la
src_plugins_lib__nczferry_lz4_la_SOURCES = $(FERRY_PLUGIN_SOURCES)
src_plugins_lib__nczferry_lz4_la_CPPFLAGS = $(FERRY_PLUGIN_CPPFLAGS) -DFERRY_PLUGIN_KIND=FERRY__CODEC_LZ4
src_plugins_lib__nczferry_lz4_la_CFLAGS = $(FERRY_PLUGIN_CFLAGS)
src_plugins_lib__nczferry_lz4_la_LDFLAGS = $(FERRY_PLUGIN_LDFLAGS)
src_plugins_lib__nczferry_lz4_la_LIBADD = $(FERRY_PLUGIN_LIBADD)
endif

endif

TEST_DATA_FILES += tests/fixtures/zarr3_writer.py \
	tests/fixtures/make_zarr3.py \
	tests/fixtures/zarrita_read.mjs \
	tests/fixtures/zarrita_compare.py
