# src/codecs/local.mk - included by Makefile.am: every decompressor of
# every backend (src/codecs/codec.h): the numcodecs chunk formats of the
# zarr backend and its NCZarr plugins (codec.c) and the page formats of the
# parquet backend (page.c), with the libraries configure found
# (m4/ferry_codecs.m4: zlib, blosc, zstd, lz4, snappy; CODEC_CPPFLAGS and
# CODEC_LIBS).  Always part of libferry, with or without netCDF-C.
libferry_core_la_SOURCES += src/codecs/codec.c src/codecs/page.c \
	src/codecs/codec.h
libferry_core_la_CPPFLAGS += $(CODEC_CPPFLAGS)
libferry_core_la_LIBADD += $(CODEC_LIBS)
