# tests/fuzz/local.mk - included by Makefile.am: the fuzz harnesses
# (tests/fuzz/README.md).
#
# One program per parser of bytes from disk, tests/fuzz/fuzz_NAME.c, with
# its seed corpus in tests/fuzz/corpus/NAME/.  In every build the program is
# a test: run without arguments under make check, it replays its corpus
# (tests/fuzz/driver.c).  With configure --enable-fuzz it is also a
# libFuzzer binary (FUZZ_LIBFUZZER_LDFLAGS), and tests/fuzz/short.sh fuzzes
# each harness for a few seconds.  "make fuzz" builds the harnesses only.
#
# LIST: the harnesses.  To add one (a new format's metadata parser):
#   1. write tests/fuzz/fuzz_NAME.c defining LLVMFuzzerTestOneInput (copy
#      fuzz_npy.c: hand the bytes to the parser, FUZZ_CHECK what it promises);
#   2. put a few small valid files in tests/fuzz/corpus/NAME/;
#   3. add its three lines here:
#        FUZZ_HARNESSES += tests/fuzz/fuzz_NAME
#        tests_fuzz_fuzz_NAME_SOURCES = tests/fuzz/fuzz_NAME.c $(FUZZ_DRIVER)
#        tests_fuzz_fuzz_NAME_LDFLAGS = $(FUZZ_LINK_FLAGS)
#   A harness whose parser needs an optional dependency goes inside its
#   "if HAVE_X" block.  make check, ./bootstrap check's ASan tree (every
#   test under tests/fuzz/) and short.sh pick it up from this list.

FUZZ_DRIVER = tests/fuzz/driver.c tests/fuzz/fuzz.h
FUZZ_LINK_FLAGS = $(AM_LDFLAGS) $(FUZZ_LIBFUZZER_LDFLAGS)
FUZZ_HARNESSES =

FUZZ_HARNESSES += tests/fuzz/fuzz_npy
tests_fuzz_fuzz_npy_SOURCES = tests/fuzz/fuzz_npy.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_npy_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_anndata
tests_fuzz_fuzz_anndata_SOURCES = tests/fuzz/fuzz_anndata.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_anndata_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_zarr_meta
tests_fuzz_fuzz_zarr_meta_SOURCES = tests/fuzz/fuzz_zarr_meta.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_zarr_meta_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_manifest
tests_fuzz_fuzz_manifest_SOURCES = tests/fuzz/fuzz_manifest.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_manifest_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_manifest_pack
tests_fuzz_fuzz_manifest_pack_SOURCES = tests/fuzz/fuzz_manifest_pack.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_manifest_pack_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_state
tests_fuzz_fuzz_state_SOURCES = tests/fuzz/fuzz_state.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_state_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_codec
tests_fuzz_fuzz_codec_SOURCES = tests/fuzz/fuzz_codec.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_codec_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_options
tests_fuzz_fuzz_options_SOURCES = tests/fuzz/fuzz_options.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_options_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_classic
tests_fuzz_fuzz_classic_SOURCES = tests/fuzz/fuzz_classic.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_classic_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_arrow
tests_fuzz_fuzz_arrow_SOURCES = tests/fuzz/fuzz_arrow.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_arrow_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_megatron
tests_fuzz_fuzz_megatron_SOURCES = tests/fuzz/fuzz_megatron.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_megatron_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_mds
tests_fuzz_fuzz_mds_SOURCES = tests/fuzz/fuzz_mds.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_mds_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_imgfolder
tests_fuzz_fuzz_imgfolder_SOURCES = tests/fuzz/fuzz_imgfolder.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_imgfolder_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_tar
tests_fuzz_fuzz_tar_SOURCES = tests/fuzz/fuzz_tar.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_tar_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_zarr_vlen
tests_fuzz_fuzz_zarr_vlen_SOURCES = tests/fuzz/fuzz_zarr_vlen.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_zarr_vlen_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_npz
tests_fuzz_fuzz_npz_SOURCES = tests/fuzz/fuzz_npz.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_npz_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_parquet
tests_fuzz_fuzz_parquet_SOURCES = tests/fuzz/fuzz_parquet.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_parquet_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_parquet_ragged
tests_fuzz_fuzz_parquet_ragged_SOURCES = tests/fuzz/fuzz_parquet_ragged.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_parquet_ragged_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_parquet_index
tests_fuzz_fuzz_parquet_index_SOURCES = tests/fuzz/fuzz_parquet_index.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_parquet_index_LDFLAGS = $(FUZZ_LINK_FLAGS)

FUZZ_HARNESSES += tests/fuzz/fuzz_record
tests_fuzz_fuzz_record_SOURCES = tests/fuzz/fuzz_record.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_record_LDFLAGS = $(FUZZ_LINK_FLAGS)

# The image decode core (src/image/): JPEG and PNG streams with a spec.
if HAVE_TURBOJPEG
FUZZ_HARNESSES += tests/fuzz/fuzz_image
tests_fuzz_fuzz_image_SOURCES = tests/fuzz/fuzz_image.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_image_LDFLAGS = $(FUZZ_LINK_FLAGS)
endif

check_PROGRAMS += $(FUZZ_HARNESSES)
TEST_DATA_FILES += tests/fuzz/README.md
FERRY_DIST_DIRS += tests/fuzz/corpus
AM_TESTS_ENVIRONMENT += FERRY_FUZZ='$(FERRY_FUZZ)'; export FERRY_FUZZ; \
	FUZZ_HARNESSES='$(FUZZ_HARNESSES)'; export FUZZ_HARNESSES;

fuzz: $(FUZZ_HARNESSES)
.PHONY: fuzz
