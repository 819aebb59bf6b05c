# ferry_nvcc.m4 - nvcc for the ferry tool's GPU step kernel.

# FERRY_PROG_NVCC
# `ferry bench --compute-ms` emulates the training step of device batches
# with a kernel (src/tool/gpu_step.cu) on the consumer's stream; that one
# file needs nvcc.  The library does not (it calls the CUDA runtime from C),
# so nvcc is looked for only when CUDA was found, and a build without it
# still works: bench then refuses --compute-ms with device batches.
#
# NVCC: the compiler (NVCC=false: none).  Otherwise the CUDA prefix's bin/
# (--with-cuda=PREFIX or the one found), /usr/local/cuda/bin, then PATH.
# NVCCFLAGS: default -O2, the host compiler $CC (-ccbin, when it is one
# word and nvcc accepts it), code for sm_80 and sm_90 and compute_90 PTX
# (JIT-compiled on newer GPUs).  configure checks that a kernel compiles
# with them and links into a C program with $CC and the CUDA runtime.
# FERRY_NVCC_FLAGS holds the flags the link needs whatever NVCCFLAGS says
# (no C++ exception or static-guard symbols: the tool is linked as C).
# Defines HAVE_NVCC (config.h) and the conditional HAVE_NVCC.
AC_DEFUN([FERRY_PROG_NVCC], [
  AC_REQUIRE([FERRY_WITH_CUDA])
  AC_ARG_VAR([NVCC], [CUDA compiler for the tool's GPU step kernel (false: none)])
  AC_ARG_VAR([NVCCFLAGS], [flags for $NVCC (default: -O2 -ccbin $CC, sm_80, sm_90 and compute_90 PTX)])
  FERRY_NVCC_FLAGS="-Xcompiler -fno-exceptions -Xcompiler -fno-threadsafe-statics"
  ferry_have_nvcc=no
  ferry_nvcc_summary="no (needs CUDA)"
  AS_IF([test "x$ferry_have_cuda" = xyes], [
    AS_CASE([$NVCC],
      [false|no|none], [
        ferry_nvcc_summary="no (NVCC=$NVCC)"
        NVCC=],
      [""], [
        ferry_nvcc_path=
        AS_IF([test -n "$ferry_cuda_prefix"], [ferry_nvcc_path="$ferry_cuda_prefix/bin$PATH_SEPARATOR"])
        ferry_nvcc_path="$ferry_nvcc_path/usr/local/cuda/bin$PATH_SEPARATOR$PATH"
        AC_PATH_PROG([NVCC], [nvcc], [], [$ferry_nvcc_path])
        AS_IF([test -z "$NVCC"],
          [ferry_nvcc_summary="no (no nvcc found: bench --compute-ms needs host batches; set NVCC=/path/to/nvcc)"])],
      [AC_MSG_CHECKING([for nvcc])
       AC_MSG_RESULT([$NVCC (NVCC)])])
    AS_IF([test -n "$NVCC"], [
      ferry_gencode="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"
      AS_IF([test -n "$NVCCFLAGS"],
        [ferry_nvcc_cands="user"],
        [ferry_nvcc_cands="ccbin plain default"
         AS_CASE([$CC], [*" "*|""], [ferry_nvcc_cands="plain default"])])
      cat > conftest_nvcc.cu <<_FERRY_EOF
__global__ void conftest_kernel(int *p) { if (p) *p = 1; }
extern "C" int conftest_launch(void) {
  conftest_kernel<<<1, 1>>>(0);
  return (int)cudaGetLastError();
}
_FERRY_EOF
      for ferry_nc in $ferry_nvcc_cands; do
        AS_CASE([$ferry_nc],
          [user], [ferry_nvcc_try="$NVCCFLAGS"],
          [ccbin], [ferry_nvcc_try="-O2 -ccbin $CC $ferry_gencode"],
          [plain], [ferry_nvcc_try="-O2 $ferry_gencode"],
          [ferry_nvcc_try="-O2"])
        AC_MSG_CHECKING([whether $NVCC $ferry_nvcc_try builds a kernel that $CC links])
        ferry_nvcc_ok=no
        rm -f conftest_nvcc.$OBJEXT
        echo "$NVCC $ferry_nvcc_try $FERRY_NVCC_FLAGS -c -o conftest_nvcc.$OBJEXT conftest_nvcc.cu" >&AS_MESSAGE_LOG_FD
        AS_IF([$NVCC $ferry_nvcc_try $FERRY_NVCC_FLAGS -c -o conftest_nvcc.$OBJEXT conftest_nvcc.cu >&AS_MESSAGE_LOG_FD 2>&1 &&
               test -s conftest_nvcc.$OBJEXT], [
          FERRY_TRY_LINK([$CUDA_CPPFLAGS], [], [conftest_nvcc.$OBJEXT $CUDA_LIBS],
            [[int conftest_launch(void);]], [[return conftest_launch();]],
            [ferry_nvcc_ok=yes])])
        AC_MSG_RESULT([$ferry_nvcc_ok])
        AS_IF([test "x$ferry_nvcc_ok" = xyes], [
          NVCCFLAGS=$ferry_nvcc_try
          break])
      done
      rm -f conftest_nvcc.cu conftest_nvcc.$OBJEXT
      AS_IF([test "x$ferry_nvcc_ok" = xyes], [
        ferry_have_nvcc=yes
        ferry_nvcc_v=`$NVCC --version 2>/dev/null | sed -n 's/.*release \(@<:@0-9.@:>@*\).*/\1/p' | head -n 1`
        ferry_nvcc_summary="yes ($NVCC${ferry_nvcc_v:+ $ferry_nvcc_v}: bench's GPU step kernel)"
        AC_DEFINE([HAVE_NVCC], [1], [Define to 1 when the ferry tool has its GPU step kernel (nvcc found).])
      ], [
        ferry_nvcc_summary="no ($NVCC failed, see config.log: bench --compute-ms needs host batches)"
        AC_MSG_WARN([$NVCC cannot build the tool's GPU step kernel (see config.log); bench --compute-ms will need host batches])
        NVCC=])
    ])
  ])
  AC_SUBST([NVCC])
  AC_SUBST([NVCCFLAGS])
  AC_SUBST([FERRY_NVCC_FLAGS])
  AM_CONDITIONAL([HAVE_NVCC], [test "x$ferry_have_nvcc" = xyes])
])
