# tests/local.mk - every test "make check" runs, in one place, by subject,
# and the tiers (included by Makefile.am; tests/README.md, "Tiers").
#
# A test is registered here and only here: the local.mk files of the other
# folders build programs (check_PROGRAMS, their _SOURCES and flags) and list
# the files the tests read (TEST_DATA_FILES), but name no test.  A test
# found nowhere else is found here by its name.
#
# Tiers (make check TIER=NAME; make check-all is TIER=all):
#   quick  every registered test but the slow ones: "make check"
#   slow   SLOW_TESTS below: minutes each, or a whole tree (corpus, every
#          allocation site, valgrind)
#   all    quick + slow: "make check-all", ./bootstrap check
#   asan, tsan, fuzz  the subsets ./bootstrap check runs again in its
#          sanitizer and libFuzzer trees (an entry ending in '/' is every
#          registered test under that folder)
# A new test is in the quick tier unless it is added to SLOW_TESTS; keep
# "make check" under 5 minutes (tests/summary.sh prints the 10 slowest).
# make check TESTS='...' runs the tests named, whatever their tier.

# LIST: unit tests, one program per tests/unit/test_*.c, run without mpirun
# (their programs: check_PROGRAMS in Makefile.am, flags beside them).
UNIT_TESTS = \
	tests/unit/test_plan \
	tests/unit/test_order \
	tests/unit/test_tail \
	tests/unit/test_global \
	tests/unit/test_draw \
	tests/unit/test_draw_bound \
	tests/unit/test_pack \
	tests/unit/test_options \
	tests/unit/test_npy \
	tests/unit/test_manifest \
	tests/unit/test_record \
	tests/unit/test_digest \
	tests/unit/test_mix \
	tests/unit/test_state_file \
	tests/unit/test_zarr_meta \
	tests/unit/test_dtype \
	tests/unit/test_anndata \
	tests/unit/test_classic \
	tests/unit/test_tar \
	tests/unit/test_fstype \
	tests/unit/test_registry \
	tests/unit/test_io_base \
	tests/unit/test_quality \
	tests/unit/test_codec \
	tests/unit/test_npz \
	tests/unit/test_parquet \
	tests/unit/test_parquet_sizes \
	tests/unit/test_nocuda

# LIST: test scripts, by subject, run by the harness with /bin/sh; each
# subject is a folder of tests/, its MPI programs beside its scripts
# (tests/README.md, "Layout").
# tests/loader/: the pipeline on several ranks, its threads, I/O modes,
# memory, checkpoints, ranks that leave (the programs run through run-mpi.sh).
MPI_TESTS = \
	tests/loader/loader.sh \
	tests/loader/held.sh \
	tests/loader/state.sh \
	tests/loader/leave.sh \
	tests/loader/agree.sh \
	tests/loader/budget.sh \
	tests/loader/bounded.sh \
	tests/loader/mmap.sh \
	tests/loader/io_auto.sh \
	tests/loader/oom.sh \
	tests/loader/valgrind.sh \
	tests/loader/tsan.sh
# tests/sampling/: the order of samples: shuffling, shuffle=global's
# exchange, weighted and balanced sampling, mixing datasets.
MPI_TESTS += \
	tests/sampling/sampling.sh \
	tests/sampling/exchange.sh \
	tests/sampling/global.sh \
	tests/sampling/quality.sh \
	tests/sampling/weights.sh \
	tests/sampling/weights_epoch.sh \
	tests/sampling/mix.sh \
	tests/sampling/reads.sh
# tests/ragged/: variables whose samples differ in length (docs/ragged.md):
# the batch layout, the promises, the formats that store them.
MPI_TESTS += \
	tests/ragged/megatron.sh \
	tests/pack/pack.sh \
	tests/ragged/roff_map.sh \
	tests/ragged/threads.sh \
	tests/ragged/arrow.sh \
	tests/ragged/hdf5_vlen.sh \
	tests/ragged/zarr_vlen.sh \
	tests/ragged/parquet.sh
# tests/wds/: WebDataset tar shards (docs/images.md): the tool's reads,
# sidecars and refusals, and the Python loader's bytes and resume.
MPI_TESTS += \
	tests/wds/wds.sh \
	tests/wds/real.sh \
	tests/wds/wds_python.sh \
	tests/wds/npy.sh \
	tests/wds/npy_python.sh \
	tests/wds/recs.sh
# tests/mds/: MosaicML Streaming MDS datasets (docs/images.md): every
# encoding's values on 1-4 ranks, raw and zstd shards, the refusals;
# ndarrays of dynamic shapes (mds_dyn.sh); shard digests (mds_hashes.sh).
MPI_TESTS += \
	tests/mds/mds.sh \
	tests/mds/mds_dyn.sh \
	tests/mds/mds_hashes.sh

# tests/imgfolder/: image folders read as torchvision's ImageFolder reads
# them (docs/images.md): samples, labels and order against ImageFolder's,
# saved manifests, files changed after the listing, bad trees; in Python.
MPI_TESTS += \
	tests/imgfolder/imgfolder.sh \
	tests/imgfolder/imgfolder_python.sh
# tests/cli/: the ferry tool's command line, its manual, the build and
# install, the README's example.
MPI_TESTS += \
	tests/cli/cli_args.sh \
	tests/cli/cli_commands.sh \
	tests/cli/cli_manpage.sh \
	tests/cli/cli_version.sh \
	tests/cli/install_prefix.sh \
	tests/cli/bootstrap_build_dir.sh \
	tests/cli/example.sh \
	tests/cli/docs_example.sh
# tests/dataset/: datasets of several parts and formats (globs, lists,
# manifests), bad inputs, the decode pool every compressed reader uses.
MPI_TESTS += \
	tests/dataset/datasets.sh \
	tests/dataset/many_parts.sh \
	tests/dataset/manifest_share.sh \
	tests/dataset/bad_inputs.sh \
	tests/dataset/decode_pool.sh
# The readers, one folder a format, and the real-file corpus.
MPI_TESTS += \
	tests/npy/npy_fixtures.sh \
	tests/npz/npz.sh \
	tests/hdf5/hdf5.sh \
	tests/hdf5/hdf5_two.sh \
	tests/anndata/anndata.sh \
	tests/anndata/gen.sh \
	tests/hdf5/reopen.sh \
	tests/hdf5/shrink.sh \
	tests/classic/classic.sh \
	tests/zarr/zarr.sh \
	tests/zarr/zarr3.sh \
	tests/zarr/zarr_bounds.sh \
	tests/parquet/parquet.sh \
	tests/parquet/parquet_pool.sh \
	tests/parquet/parquet_real.sh \
	tests/corpus/corpus.sh
# The image decode core (src/image/): pixels against Pillow and torchvision.
MPI_TESTS += tests/image/image.sh
# decode= (src/loader/decode.c): pixels served by the loader, the tool's
# and Python's.
MPI_TESTS += tests/image/decode_loader.sh tests/image/decode_python.sh
# The images of decode= checked before a job: ferry verify --images and
# ferry info's image headers (src/loader/images.c).
MPI_TESTS += tests/image/decode_verify.sh
# The tree's style: formatting, static checks, the paths the docs name.
MPI_TESTS += \
	tests/style/format-check.sh \
	tests/style/lint.sh \
	tests/style/docs-paths.sh \
	tests/style/layers.sh \
	tests/style/circles.sh \
	tests/lib/check_selftest.sh
# The GPU stage (tests/gpu/local.mk builds its programs).
MPI_TESTS += tests/gpu/nogpu.sh tests/gpu/noneeded.sh
if HAVE_CUDA
UNIT_TESTS += tests/unit/test_cudalib
MPI_TESTS += tests/gpu/fake.sh tests/gpu/real.sh tests/gpu/sparse.sh
endif
# The Python package and its front ends (each skips, 77, without the
# extension or the framework it tests).
MPI_TESTS += \
	tests/python/loader.sh \
	tests/python/state.sh \
	tests/python/sampling.sh \
	tests/python/errors.sh \
	tests/python/leave.sh \
	tests/python/interrupt.sh \
	tests/python/held.sh \
	tests/python/ragged.sh \
	tests/python/pack.sh \
	tests/python/roff_map.sh \
	tests/python/roff_trim.sh \
	tests/python/recs_map.sh \
	tests/python/state_notes.sh \
	tests/python/pip_install.sh \
	tests/python/test_torch_front.sh \
	tests/python/test_lightning.sh \
	tests/python/test_jax.sh \
	tests/python/test_gpu.sh \
	tests/python/fake_gpu.sh \
	tests/python/mmap.sh \
	tests/python/test_examples.sh
# Slurm (skip without the test cluster ./bootstrap check starts).
MPI_TESTS += \
	tests/slurm/srun.sh \
	tests/slurm/sbatch.sh \
	tests/slurm/python.sh \
	tests/slurm/checkpoint.sh \
	tests/slurm/install.sh
# tests/cluster/: MPI jobs over several simulated hosts on this machine
# (tests/lib/hosts.sh: network namespaces, veth links, Open MPI over TCP;
# skip, 77, where namespaces cannot be made); storage as slow as a shared
# parallel file system (tests/lib/slowfs.sh: a loop device's reads capped
# by a blkio cgroup; skip, 77, where the loop device or cgroup cannot be
# made).
MPI_TESTS += tests/cluster/hosts.sh tests/cluster/slowfs.sh tests/cluster/cache.sh
# tests/cache/: the node cache (cache=node|cluster) on this machine, nodes
# simulated by FERRY_NODE_SIZE
MPI_TESTS += tests/cache/cache.sh tests/cache/kernel.sh
# The fuzz harnesses replay their corpora (tests/fuzz/local.mk builds
# FUZZ_HARNESSES); the short libFuzzer run skips outside --enable-fuzz.
MPI_TESTS += tests/fuzz/short.sh

# Every registered test; TESTS is what this "make check" runs (automake's
# harness writes a .log rule for each), a tier of it unless TESTS is given.
FERRY_REGISTERED_TESTS = $(UNIT_TESTS) $(MPI_TESTS) $(FUZZ_HARNESSES)
TESTS = $(FERRY_REGISTERED_TESTS)

# LIST: the slow tier, left out of "make check" (in make check-all and
# ./bootstrap check): the most CPU of the suite (tests/summary.sh's list;
# docs/performance.md, "The test suite"), each with quicker tests of its
# subject in the quick tier.
#   corpus.sh   332 real files, every one dumped on 1 and 2 ranks (the
#               readers' own tests: npy_fixtures.sh, zarr.sh, hdf5.sh, ...)
#   oom.sh      every allocation site of 7 datasets fails in turn (the
#               unit tests' allocation failures, bad_inputs.sh)
#   reopen.sh   every allocation of an HDF5 open fails, then a second open
#               (hdf5.sh, hdf5_two.sh)
#   valgrind.sh the loader under valgrind (the same loader in loader.sh;
#               ASan in ./bootstrap check)
SLOW_TESTS = \
	tests/corpus/corpus.sh \
	tests/loader/oom.sh \
	tests/hdf5/reopen.sh \
	tests/loader/valgrind.sh

# LIST: the asan tier, run again in ./bootstrap check's ASan+UBSan tree:
# the unit tests, the pipeline, ferry's own readers, every fuzz harness.
ASAN_TESTS = \
	tests/unit/test_record tests/unit/test_digest \
	tests/unit/test_plan tests/unit/test_global tests/unit/test_quality \
	tests/unit/test_draw tests/unit/test_pack tests/unit/test_mix tests/sampling/sampling.sh tests/sampling/mix.sh \
	tests/unit/test_dtype tests/unit/test_anndata \
	tests/unit/test_options tests/unit/test_npy \
	tests/unit/test_state_file tests/unit/test_codec tests/unit/test_nocuda \
	tests/unit/test_manifest tests/loader/loader.sh tests/loader/state.sh \
	tests/npy/npy_fixtures.sh tests/zarr/zarr.sh tests/zarr/zarr3.sh \
	tests/unit/test_classic tests/classic/classic.sh tests/unit/test_npz tests/unit/test_tar \
	tests/npz/npz.sh tests/dataset/decode_pool.sh tests/unit/test_parquet \
	tests/parquet/parquet.sh tests/parquet/parquet_pool.sh tests/sampling/weights.sh \
	tests/ragged/megatron.sh tests/ragged/hdf5_vlen.sh tests/ragged/zarr_vlen.sh \
	tests/pack/pack.sh tests/anndata/anndata.sh tests/anndata/gen.sh \
	tests/ragged/parquet.sh tests/image/image.sh tests/wds/wds.sh \
	tests/image/decode_loader.sh tests/image/decode_verify.sh \
	tests/imgfolder/imgfolder.sh \
	tests/fuzz/ \
	tests/cache/cache.sh

# LIST: the tsan tier, run again in ./bootstrap check's TSan tree: the
# tests whose code runs on several threads.  Not parquet.sh: most of its 60
# dumps decode on one thread (the codecs and encodings, checked in the asan
# tier), and its threaded reads (many row groups, a row group of many pages)
# are parquet_pool.sh's too, which runs here.
# (parquet.sh was the TSan tier's slowest test: 260 s wall, 114 s CPU in a
# fresh ./bootstrap check, 2026-11-27.)  Not megatron.sh either (199 s
# under TSan, 2026-11-28, mostly single-threaded tool runs): threads.sh
# runs its threaded part, test_ragged on 7 ranks, and a dump with 4
# threads.  pack.sh: the workers make packed rows' boundary outputs
# concurrently from one epoch stream (src/loader/pack.c).
# decode_loader.sh, decode_verify.sh: images decoded on the decode pool's
# lanes (src/loader/decode.c, images.c): 38 s and 24 s wall in a TSan tree,
# no report (2026-11-29).
# concurrently from one epoch stream (src/loader/pack.c).  imgfolder.sh:
# rank 0 lists the tree on threads, reads run on the pool's lanes.
TSAN_TESTS = \
	tests/loader/tsan.sh tests/loader/loader.sh tests/loader/state.sh \
	tests/npy/npy_fixtures.sh tests/dataset/decode_pool.sh \
	tests/parquet/parquet_pool.sh tests/sampling/sampling.sh \
	tests/ragged/threads.sh tests/pack/pack.sh \
	tests/image/decode_loader.sh tests/image/decode_verify.sh \
	tests/imgfolder/imgfolder.sh tests/cache/cache.sh

# LIST: the fuzz tier, run in ./bootstrap check's libFuzzer tree.
FUZZ_TESTS = tests/fuzz/

TIER = quick
# Tests run at once when make was given no -j (make check uses both cores;
# make -jN check runs N).
FERRY_CHECK_JOBS = 2

# The tests of TIER, from the registered list (tests/lib/tier.sh).
ferry_tier_list = FERRY_REGISTERED='$(FERRY_REGISTERED_TESTS)' FERRY_TIER_slow='$(SLOW_TESTS)' \
	FERRY_TIER_asan='$(ASAN_TESTS)' FERRY_TIER_tsan='$(TSAN_TESTS)' \
	FERRY_TIER_fuzz='$(FUZZ_TESTS)' $(SHELL) $(srcdir)/tests/lib/tier.sh
