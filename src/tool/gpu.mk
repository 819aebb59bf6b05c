# src/tool/gpu.mk - the ferry tool's GPU step kernel (included by Makefile.am).
#
# `ferry bench --compute-ms X` with device batches (device=cuda) runs a
# kernel of X ms on the consumer's stream (src/tool/gpu_step.cu).  Only
# that file needs nvcc; configure looks for one when CUDA was found
# (m4/ferry_nvcc.m4: NVCC, NVCCFLAGS) and defines HAVE_NVCC.  Without it
# the tool builds without the kernel and bench refuses --compute-ms with
# device batches.  The object is built by the explicit rule below (automake
# has no CUDA language) and linked into the tool; FERRY_NVCC_FLAGS keeps it
# free of C++ runtime symbols, since the tool is linked as C.

ferry_SOURCES += src/tool/gpu_step.h
EXTRA_DIST += src/tool/gpu_step.cu src/tool/gpu.mk

if HAVE_NVCC
ferry_LDADD += src/tool/gpu_step.$(OBJEXT)
CLEANFILES += src/tool/gpu_step.$(OBJEXT)

AM_V_NVCC = $(am__v_NVCC_@AM_V@)
am__v_NVCC_ = $(am__v_NVCC_@AM_DEFAULT_V@)
am__v_NVCC_0 = @echo "  NVCC    " $@;
am__v_NVCC_1 =

src/tool/gpu_step.$(OBJEXT): $(srcdir)/src/tool/gpu_step.cu \
		$(srcdir)/src/tool/gpu_step.h
	@$(MKDIR_P) src/tool
	$(AM_V_NVCC)$(NVCC) $(NVCCFLAGS) $(FERRY_NVCC_FLAGS) \
	  -I$(srcdir)/src/tool -c -o $@ $(srcdir)/src/tool/gpu_step.cu
endif
