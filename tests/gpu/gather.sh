#!/bin/sh
# gather.sh - on the Debian build machine, what tests/gpu/device.sh needs to
# run a CUDA build of ferry on a bare GPU machine (one with CUDA, Python and
# a C compiler but no Open MPI, HDF5 or netCDF): Debian's run-time packages
# of Open MPI, and under DEST/root the shared libraries every program of the
# build and every Open MPI / PMIx plugin loads (their ldd closure, less the C
# library itself, CUDA and NCCL), plus Open MPI's headers and libmpi.so for building the
# Python extension there.
#
# usage: tests/gpu/gather.sh BUILD_DIR DEST
#   BUILD_DIR  a build configured with CUDA (configure: "cuda ... yes"),
#              built, its programs run once (libtool's wrappers)
#   DEST       folder to fill (the device tool's carry: .gpu/debs)
set -eu
test $# = 2 || { sed -n 2,14p "$0" >&2; exit 2; }
build=$(cd "$1" && pwd)
mkdir -p "$2"
dest=$(cd "$2" && pwd)
ML=usr/lib/x86_64-linux-gnu
cd "$dest"
apt-get download openmpi-bin openmpi-common libopenmpi3 libpmix2 \
  libhwloc15 libfabric1 libucx0 libevent-core-2.1-7 libevent-pthreads-2.1-7 >/dev/null
root=$dest/root
mkdir -p "$root/$ML/openmpi/lib"
cp -a "/$ML/openmpi/include" "$root/$ML/openmpi/"
cp -L "/$ML/openmpi/lib/libmpi.so" "$root/$ML/openmpi/lib/"
# glibc's own libraries stay the machine's
skip='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so'
objs="$build/.libs/libferry.so $build/.libs/ferry $build/tests/gpu/.libs/test_device
/usr/bin/orterun /usr/bin/orted"
objs="$objs $(ls /$ML/openmpi/lib/openmpi3/*.so /$ML/pmix2/lib/pmix/*.so 2>/dev/null)"
for o in $objs; do
  ldd "$o" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r so path; do
  echo "$so" | grep -Eq "$skip" && continue
  # CUDA's and NCCL's own libraries are the GPU machine's
  case $path in /usr/local/cuda*) continue ;; esac
  test -e "$root/$ML/$so" || cp -L "$path" "$root/$ML/$so"
done
# one archive: the device tool carries 64 MiB at most
nlib=$(ls "$root/$ML" | grep -c '[.]so')
tar -C "$root" -cJf "$dest/root.tar.xz" . && rm -rf "$root"
echo "gather.sh: $(ls "$dest"/*.deb | wc -l) packages, $nlib libraries," \
  "$(du -sh "$dest" | cut -f1) in $dest"
