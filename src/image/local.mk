# src/image/local.mk - included by Makefile.am: the image decode core
# (issue 28's decode stage; docs/image-decode.md), built in every build;
# JPEG with TurboJPEG, PNG with libspng where configure found them
# (m4/ferry_image.m4: HAVE_TURBOJPEG, HAVE_SPNG, IMAGE_CPPFLAGS,
# IMAGE_LIBS); without one, that format is refused.  Its test program
# (tests/image/test_image, run by tests/image/image.sh) and the decode
# benchmark (tests/bench/img_bench, built on request: make
# tests/bench/img_bench; tests/bench/decode.sh).
libferry_core_la_SOURCES += src/image/image.h src/image/probe.c \
	src/image/geom.c src/image/resize.c src/image/decode.c
libferry_core_la_CPPFLAGS += $(IMAGE_CPPFLAGS)
libferry_core_la_LIBADD += $(IMAGE_LIBS)
check_PROGRAMS += tests/image/test_image
tests_image_test_image_CPPFLAGS = $(AM_CPPFLAGS) $(IMAGE_CPPFLAGS)
tests_image_test_image_LDADD = $(LDADD) $(PTHREAD_LIBS) $(IMAGE_LIBS)
EXTRA_PROGRAMS += tests/bench/img_bench
TEST_DATA_FILES += tests/image/image_check.py
# decode= in the loader (tests/image/decode_loader.sh, decode_python.sh)
TEST_DATA_FILES += tests/image/make_decode_wds.py tests/image/decode_check.py
# ferry verify --images, ferry info with decode= (tests/image/decode_verify.sh)
TEST_DATA_FILES += tests/image/make_verify_wds.py
