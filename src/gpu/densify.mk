# src/gpu/densify.mk - ferry's densify kernel (included by Makefile.am).
#
# sparse=dense with device=cuda scatters the CSR rows into dense rows on
# the device with a kernel of ferry's own (src/gpu/densify.cu, decision
# 0056).  libferry links no CUDA library, so the kernel is compiled to PTX
# text at build time (nvcc -ptx, for compute_80 and newer: the driver
# compiles it for the GPU at run time), embedded as a C string
# (src/gpu/densify_ptx.c, generated) and loaded through the driver API
# (cuModuleLoadData) that gpu/cuda.c obtains from the runtime.  Without
# nvcc (HAVE_NVCC) the string is absent and sparse=dense on a device is
# the CPU view, with a note.

libferry_core_la_SOURCES += src/gpu/densify.h
EXTRA_DIST += src/gpu/densify.cu src/gpu/densify.mk

if HAVE_CUDA
if HAVE_NVCC
nodist_libferry_core_la_SOURCES = src/gpu/densify_ptx.c
CLEANFILES += src/gpu/densify.ptx src/gpu/densify_ptx.c

src/gpu/densify.ptx: $(srcdir)/src/gpu/densify.cu $(srcdir)/src/gpu/densify.h
	@$(MKDIR_P) src/gpu
	$(AM_V_NVCC)$(NVCC) -ptx -arch=compute_80 -O2 -I$(srcdir)/src/gpu \
	  -o $@ $(srcdir)/src/gpu/densify.cu

src/gpu/densify_ptx.c: src/gpu/densify.ptx
	$(AM_V_GEN){ \
	  echo '/* Generated from src/gpu/densify.cu by nvcc -ptx: do not edit. */'; \
	  echo 'extern const char ferry__densify_ptx[];'; \
	  echo 'const char ferry__densify_ptx[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' \
	    src/gpu/densify.ptx; \
	  echo '    ;'; } >$@.tmp && mv $@.tmp $@
endif
endif
