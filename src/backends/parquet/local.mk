# src/backends/parquet/local.mk - included by Makefile.am: the parquet
# backend (no library of its own: its pages are decompressed by
# src/codecs/page.c with the codec libraries of src/codecs/local.mk), its unit test
# (Thrift decoder and footer mutations, snappy, pages) and its end-to-end
# tests, whose fixtures are written by npm packages (tests/parquet/setup.sh).
libferry_core_la_SOURCES += \
	src/backends/parquet/parquet.h \
	src/backends/parquet/thrift.c \
	src/backends/parquet/meta.c \
	src/backends/parquet/pages.h \
	src/backends/parquet/pages.c \
	src/backends/parquet/ragged.c \
	src/backends/parquet/split.c \
	src/backends/parquet/arrow.c \
	src/backends/parquet/record.c \
	src/backends/parquet/describe.c \
	src/backends/parquet/parquet.c

# Its tests (tests/unit/test_parquet, test_parquet_sizes, tests/parquet/parquet*.sh)
# are registered in tests/local.mk.
tests_unit_test_parquet_sizes_LDADD = $(LDADD) $(CODEC_LIBS)
tests_unit_test_parquet_CPPFLAGS = $(AM_CPPFLAGS) $(CODEC_CPPFLAGS)
tests_unit_test_parquet_LDADD = $(LDADD) $(CODEC_LIBS)
TEST_DATA_FILES += \
	tests/parquet/make_parquet.mjs \
	tests/parquet/bad_groups.mjs \
	tests/parquet/package.json \
	tests/parquet/setup.sh
