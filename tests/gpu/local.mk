# tests/gpu/local.mk - the GPU stage tests (included by Makefile.am).
#
#   tests/gpu/test_device   the checks (tests/gpu/test_device.c), run by:
#   tests/gpu/fake.sh       ... under the fake CUDA runtime (LD_PRELOAD of
#                           tests/gpu/libfakecuda.so): CI has no GPU, and the
#                           fake makes copies asynchronous for real
#   tests/gpu/real.sh       ... on a real GPU; exit 77 (skip) without one
#   tests/gpu/sparse.sh     sparse=dense made on the device by ferry's kernel
#                           (src/gpu/densify.cu) under the fake runtime,
#                           equal to device=cpu's CPU view
#   tests/gpu/nogpu.sh      device=auto falls back, device=cuda fails on
#                           every rank, in any build
#   tests/gpu/noneeded.sh   libferry.so has no NEEDED entry for the CUDA
#                           runtime, the driver or NCCL (loaded at run time)
#   tests/unit/test_nocuda  the fallback of a build without CUDA
#                           (src/gpu/nocuda.c, linked in any build)
#   tests/unit/test_cudalib a CUDA build where the runtime cannot be loaded
#
# The tests are registered in tests/local.mk; this file builds their programs.

tests_unit_test_nocuda_SOURCES = tests/unit/test_nocuda.c src/gpu/nocuda.c
tests_unit_test_nocuda_CPPFLAGS = $(AM_CPPFLAGS) -DFERRY_BUILDING

if HAVE_CUDA
# The CUDA build's stage when the runtime cannot be loaded (FERRY_CUDART
# names a missing file): no GPU, device=cuda fails saying why.
tests_unit_test_cudalib_CPPFLAGS = $(AM_CPPFLAGS) -DFERRY_BUILDING

check_PROGRAMS += tests/gpu/test_device
tests_gpu_test_device_SOURCES = tests/gpu/test_device.c tests/gpu/fakecuda.h
tests_gpu_test_device_CPPFLAGS = -I$(top_srcdir)/include $(CUDA_CPPFLAGS) \
	$(NCCL_CPPFLAGS) $(GPU_TEST_NCCL)
tests_gpu_test_device_LDADD = libferry.la $(FERRY_DEP_LIBS) $(FERRY_CUDA_LIBS)
if HAVE_NCCL
GPU_TEST_NCCL = -DHAVE_NCCL_TEST
endif

# A shared library for LD_PRELOAD, built by "make check" only.
check_LTLIBRARIES += tests/gpu/libfakecuda.la
tests_gpu_libfakecuda_la_SOURCES = tests/gpu/fakecuda.c tests/gpu/fakecuda.h
tests_gpu_libfakecuda_la_CPPFLAGS = $(CUDA_CPPFLAGS) $(NCCL_CPPFLAGS)
tests_gpu_libfakecuda_la_LDFLAGS = -module -avoid-version -shared \
	-rpath $(abs_builddir)/tests/gpu
tests_gpu_libfakecuda_la_LIBADD = $(PTHREAD_LIBS)

endif

TEST_DATA_FILES += tests/gpu/local.mk tests/gpu/common.sh tests/gpu/device.sh \
	tests/gpu/gather.sh tests/gpu/h2d_probe.py
