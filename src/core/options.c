/*
 * options.c - the one vocabulary of loader options.  A single const table
 * gives each option its name, default, accepted values and help; the C API,
 * the ferry tool (--batch-size), environment variables (FERRY_BATCH_SIZE) and
 * config files (batch_size = 64) all go through ferry_options_set, so they
 * cannot drift apart.  Values are validated when set, and every error names
 * the option and the value.
 */
#include "config.h"
#include "core/options.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* K_SIZE: bytes, an integer with an optional binary suffix (K, M, G, T, or
 * KiB, MiB, GiB, TiB), stored as an int64_t in [min, max]. */
enum kind { K_INT, K_UINT, K_FRAC, K_ENUM, K_STR, K_BOOL, K_SIZE };

typedef struct option_def {
  ferry_option_info info;
  enum kind kind;
  size_t offset;            /* field in struct ferry_options              */
  int64_t min, max;         /* K_INT bounds                               */
  const char *const *names; /* K_ENUM: value names, index = value    */
} option_def;

#define OFF(f) offsetof(struct ferry_options, f)
static const char *const shuffle_names[] = {"none", "chunks", "block", "global",
                                            NULL};
static const char *const partition_names[] = {"contiguous", "strided", NULL};
static const char *const tail_names[] = {"drop_last", "pad", "partial", NULL};
static const char *const offsets_dtype_names[] = {"int64", "int32", NULL};
static const char *const io_names[] = {"independent", "collective", "mmap",
                                       "auto", NULL};
static const char *const mix_by_names[] = {"epoch", "batch", NULL};
static const char *const exhaust_names[] = {"stop", "restart", "drop", NULL};
static const char *const mix_resume_names[] = {"refuse", "new_mix", NULL};
static const char *const pack_names[] = {"none", "concat", "first_fit",
                                         "best_fit", NULL};
static const char *const overflow_names[] = {"split", "drop", NULL};
static const char *const sparse_names[] = {"rows", "dense", NULL};
static const char *const sparse_dtype_names[] = {
    "float32", "float16", "float64", "same", "bfloat16", NULL};
static const char *const device_names[] = {"auto", "cpu", "cuda", NULL};
/* Read by the zarr backend by name (backends/zarr). */
static const char *const zarr_reader_names[] = {"auto", "native", "netcdf",
                                                NULL};
/* Read by the megatron backend by name (backends/megatron.c). */
static const char *const megatron_sample_names[] = {"sequence", "document",
                                                    NULL};
/* Read by the webdataset backend by name (backends/wds.c). */
static const char *const tar_index_names[] = {"auto", "ignore", "write", NULL};
/* Read by the mds backend by name (backends/mds.c). */
static const char *const mds_hashes_names[] = {"auto", "check", "ignore", NULL};
/* Index = FERRY__SCAN_* (dataset/pscan.c). */
static const char *const scan_names[] = {"ranks", "rank0", NULL};
/* Index = FERRY__CACHE_* (loader/cache.c). */
static const char *const cache_names[] = {"none", "node", "cluster", NULL};
/* decode= (loader/decode.c): index = FERRY__CROP_*, FERRY__LAYOUT_*. */
static const char *const crop_names[] = {"none", "center", "random", NULL};
static const char *const layout_names[] = {"hwc", "chw", NULL};
/* Index = FERRY__SIG_* (src/loader/open.c maps it to the signal number). */
static const char *const signal_names[] = {"none", "USR1", "USR2", "TERM",
                                           "INT",  "HUP",  "XCPU", NULL};

#define BIG (INT64_C(1) << 40)

static const option_def defs[] = {
    {{"batch_size", "64", "integer >= 1", "Samples per batch on each rank."},
     K_INT,
     OFF(batch_size),
     1,
     BIG,
     NULL},
    {{"seed", "0", "integer >= 0",
      "Seed of the shuffle; the same seed gives the same batches."},
     K_UINT,
     OFF(seed),
     0,
     0,
     NULL},
    {{"shuffle", "chunks", "none|chunks|block|global",
      "What is permuted each epoch: nothing, whole chunks, blocks of "
      "block_size samples, or every sample (global: ranks read chunks "
      "and exchange samples so that a uniform permutation deals them)."},
     K_ENUM,
     OFF(shuffle),
     0,
     0,
     shuffle_names},
    {{"block_size", "64", "integer >= 1",
      "Samples per block with shuffle=block (and the least rows of a "
      "sampling block, draw_block)."},
     K_INT,
     OFF(block_size),
     1,
     BIG,
     NULL},
    {{"shuffle_buffer", "4", "integer >= 0",
      "Chunks (or blocks) whose samples each rank mixes together; 0 keeps "
      "the samples of a chunk in storage order."},
     K_INT,
     OFF(shuffle_buffer),
     0,
     1 << 20,
     NULL},
    {{"partition", "contiguous", "contiguous|strided",
      "How the permuted chunks are dealt to ranks: one slice each, or "
      "round-robin."},
     K_ENUM,
     OFF(partition),
     0,
     0,
     partition_names},
    {{"tail", "drop_last", "drop_last|pad|partial",
      "How ranks get equal batch counts: drop the global tail, pad by "
      "repeating the first samples, or keep short last batches."},
     K_ENUM,
     OFF(tail),
     0,
     0,
     tail_names},
    {{"chunk_samples", "0", "integer >= 0",
      "Samples per chunk, the unit of reading; 0 picks about 1 MiB of rows, "
      "a multiple of the storage chunks (HDF5, Zarr), cut smaller when "
      "shuffling so that there are at least max(64, 8 x ranks x "
      "shuffle_buffer) chunks (docs/shuffling.md)."},
     K_INT,
     OFF(chunk_samples),
     0,
     BIG,
     NULL},
    {{"vars", "", "comma-separated names",
      "Variables to load, in this order; empty loads all."},
     K_STR,
     OFF(vars),
     0,
     0,
     NULL},
    {{"io", "independent", "independent|collective|mmap|auto",
      "How rows are read: independent reads (pread, or MPI-IO where a "
      "backend needs it), collective MPI-IO reads matched across ranks, "
      "mmap: rows copied straight from the page cache into the batch (one "
      "copy instead of two; backends that cannot map read independently), "
      "or auto: mmap for files on a local file system or tmpfs, independent "
      "reads on parallel and network ones (Lustre, GPFS, BeeGFS, NFS...), "
      "as statfs(2) tells."},
     K_ENUM,
     OFF(io),
     0,
     0,
     io_names},
    {{"prefetch", "4", "integer >= 1",
      "Batches assembled ahead of the consumer (the ring of ready batches)."},
     K_INT,
     OFF(prefetch),
     1,
     4096,
     NULL},
    {{"held_memory", "1GiB", "bytes (e.g. 512MiB, 4GiB; 0: none)",
      "Memory per rank for batches the caller holds beyond the prefetch "
      "ring (device=cuda: the device ring): when ferry_next needs the slot "
      "of a batch still held, that batch keeps its memory and the ring gets "
      "a new slot, up to this much in whole batches; past it ferry_next "
      "fails on that rank. Counted in the memory budget."},
     K_SIZE,
     OFF(held_memory),
     0,
     INT64_C(1) << 50,
     NULL},
    {{"threads", "0", "integer >= 0",
      "Worker threads per rank that assemble batches, and the lanes that "
      "decode compressed Zarr chunks, deflated .npz members and images "
      "(decode=) at once; 0 "
      "picks the CPUs of the rank's affinity mask shared among the ranks of "
      "its node, minus one for the I/O thread (at least 1, at most 8). An "
      "image folder is listed by this many threads on rank 0 (16 when 0)."},
     K_INT,
     OFF(threads),
     0,
     256,
     NULL},
    {{"max_chunks", "0", "integer >= 0",
      "Use only this many chunks, drawn with the seed (0: all)."},
     K_INT,
     OFF(max_chunks),
     0,
     BIG,
     NULL},
    {{"fraction", "1", "number in (0, 1]",
      "Use only this fraction of the chunks, drawn with the seed."},
     K_FRAC,
     OFF(fraction),
     0,
     0,
     NULL},
    {{"exchange", "1", "number in (0, 1]",
      "With shuffle=global, the fraction of each rank's samples that is "
      "exchanged between ranks each window; the rest stays on the rank "
      "that read it (1: a uniform permutation)."},
     K_FRAC,
     OFF(exchange),
     0,
     0,
     NULL},
    {{"weights", "", "variable name, or path of a .npy",
      "Weighted sampling: draw samples in proportion to a per-sample "
      "weight, a variable of the dataset or a .npy of num_samples "
      "weights (docs/sampling.md)."},
     K_STR,
     OFF(weights),
     0,
     0,
     NULL},
    {{"replacement", "yes", "yes|no",
      "Weighted and balanced sampling: draw with replacement (each draw "
      "independent of the others) or without (no sample twice in an "
      "epoch)."},
     K_BOOL,
     OFF(replacement),
     0,
     0,
     NULL},
    {{"num_draws", "0", "integer >= 0",
      "Weighted, balanced and mixed sampling: draws per epoch (all ranks); "
      "0: the samples of the dataset (without replacement: those of "
      "non-zero weight; a mix: its exhaustion rule)."},
     K_INT,
     OFF(num_draws),
     0,
     BIG,
     NULL},
    {{"balance", "", "variable name",
      "Class-balanced sampling: an integer label variable; every class "
      "gets the same expected share of the draws (or balance_shares)."},
     K_STR,
     OFF(balance),
     0,
     0,
     NULL},
    {{"balance_shares", "", "LABEL:SHARE,...",
      "With balance: the share of each listed class (relative numbers; "
      "classes not listed get none); empty: equal shares."},
     K_STR,
     OFF(balance_shares),
     0,
     0,
     NULL},
    {{"mix", "", "PATH=PROPORTION,... or @FILE",
      "Mix several datasets in these proportions (a mix file also maps "
      "variable names and sets each source's exhaustion rule); the "
      "dataset argument is then empty or \"mix\" (docs/sampling.md)."},
     K_STR,
     OFF(mix),
     0,
     0,
     NULL},
    {{"mix_by", "epoch", "epoch|batch",
      "A mix's proportions hold per draw window and epoch (batches vary "
      "around them), or in every global batch (to the nearest sample)."},
     K_ENUM,
     OFF(mix_by),
     0,
     0,
     mix_by_names},
    {{"mix_exhaust", "stop", "stop|restart|drop",
      "A mix source that runs out ends the epoch (stop), starts again in a "
      "new order (restart), or leaves the mix, the others taking its share "
      "(drop); a mix file may set it per source."},
     K_ENUM,
     OFF(mix_exhaust),
     0,
     0,
     exhaust_names},
    {{"mix_resume", "refuse", "refuse|new_mix",
      "A checkpoint resumed with other mix proportions: refused, or the "
      "new proportions apply from the saved position on (recorded in the "
      "state)."},
     K_ENUM,
     OFF(mix_resume),
     0,
     0,
     mix_resume_names},
    {{"draw_window", "0", "integer >= 0",
      "Weighted, balanced and mixed sampling: consecutive draws mixed "
      "together before they are cut into batches, rounded to whole global "
      "batches; 0: 16 x draw_block x max(1, shuffle_buffer)."},
     K_INT,
     OFF(draw_window),
     0,
     BIG,
     NULL},
    {{"draw_block", "0", "integer >= 0",
      "Weighted, balanced and mixed sampling: rows of a block, read whole; "
      "each block gets its share of an epoch's draws, in runs of about a "
      "block; 0: block_size rows, and at least 256 KiB of rows (long reads "
      "on cold or parallel storage)."},
     K_INT,
     OFF(draw_block),
     0,
     BIG,
     NULL},
    {{"device", "auto", "auto|cpu|cuda",
      "Where batches are delivered: the GPU when usable (auto), host "
      "memory, or the GPU or an error."},
     K_ENUM,
     OFF(device),
     0,
     0,
     device_names},
    {{"devices", "auto", "auto|all|comma-separated CUDA ordinals",
      "With device=cuda: the GPUs of this rank.  auto: the device the "
      "application made current, else the rank's index on its node modulo "
      "the visible devices; all, or a list (0,1): every batch is split "
      "evenly, one shard per device.  May differ between ranks."},
     K_STR,
     OFF(devices),
     0,
     0,
     NULL},
    {{"device_prefetch", "3", "integer >= 1",
      "With device=cuda: batches in device memory per device (the device "
      "ring); a buffer is reused only after the application released its "
      "batch."},
     K_INT,
     OFF(device_prefetch),
     1,
     1024,
     NULL},
    {{"keep_host", "no", "yes|no",
      "With device=cuda: keep each batch's pinned host copy (tensor data) "
      "valid until it is released; no recycles it once copied."},
     K_BOOL,
     OFF(keep_host),
     0,
     0,
     NULL},
    {{"pin_memory", "no", "yes|no",
      "yes: batches delivered in host memory come from pinned buffers "
      "(cudaHostAlloc), so the application's own copies to a GPU "
      "(tensor.cuda(non_blocking=True)) run asynchronously at full speed; "
      "needs a CUDA runtime and a device (FERRY_ENODEV otherwise). Batches "
      "delivered to the GPU always use a pinned staging ring."},
     K_BOOL,
     OFF(pin_memory),
     0,
     0,
     NULL},
    {{"manifest", "", "path",
      "A manifest saved by `ferry info --save-manifest`, to skip the scan (a "
      "ragged dataset's offsets are in `PATH.roff` beside it, and records of "
      "64 KiB and more, such as WebDataset location tables, in `PATH.recs`: "
      "mapped rather than held on every rank; docs/ragged.md, "
      "docs/images.md)."},
     K_STR,
     OFF(manifest),
     0,
     0,
     NULL},
    {{"max_open_files", "64", "integer >= 1",
      "Files a rank keeps open at once (parts are opened lazily)."},
     K_INT,
     OFF(max_open_files),
     1,
     1 << 20,
     NULL},
    {{"cache", "none", "none|node|cluster",
      "Keep what is read in the memory of the nodes (docs/cache.md): node: "
      "the ranks of a node share one copy in /dev/shm, filled as batches "
      "are served, so later epochs read from memory what the node read "
      "before; cluster: every chunk cached on exactly one node, other nodes "
      "fetch it over MPI, so from the second epoch on nothing is read from "
      "storage when the job's memory holds the dataset.  Needs independent "
      "reads (io=independent or auto)."},
     K_ENUM,
     OFF(cache),
     0,
     0,
     cache_names},
    {{"cache_bytes", "0", "bytes (e.g. 64GiB; 0: auto)",
      "With cache=node or cluster: the most memory each node gives the "
      "cache, in /dev/shm.  0: half of what /dev/shm and MemAvailable both "
      "allow on the node with the least; more than a node's /dev/shm "
      "holds is cut to that, said on rank 0's stderr.  A dataset larger "
      "than the cache is partly cached: the same chunks on every rank."},
     K_SIZE,
     OFF(cache_bytes),
     0,
     INT64_C(1) << 50,
     NULL},
    {{"zarr_reader", "auto", "auto|native|netcdf",
      "Zarr stores: the reader rank 0 picks for every rank; auto and "
      "native: ferry's own chunk reader (Zarr v2 and v3); netcdf: "
      "netCDF-C (NCZarr), which fails on a store netCDF-C cannot read (Zarr "
      "v3, bool or float16 arrays, a store that is one array) or in a build "
      "without netCDF-C."},
     K_ENUM,
     OFF(zarr_reader),
     0,
     0,
     zarr_reader_names},
    {{"megatron_sample", "sequence", "sequence|document",
      "Megatron-LM indexed datasets (.bin/.idx): what one sample is; "
      "sequence: one sequence of the index (Megatron's own unit); "
      "document: the tokens of one document (its sequences, one after "
      "the other)."},
     K_ENUM,
     OFF(megatron_sample),
     0,
     0,
     megatron_sample_names},
    {{"tar_index", "auto", "auto|ignore|write",
      "WebDataset tar shards: what to do with a sidecar SHARD.tar.idx "
      "(Megatron-Energon's index: each sample's first header offset); "
      "auto: check it against the shard's headers when there is one (a "
      "stale one is refused); ignore: never read it; write: write it for "
      "every shard (what `ferry index` does)."},
     K_ENUM,
     OFF(tar_index),
     0,
     0,
     tar_index_names},
    {{"mds_hashes", "auto", "auto|check|ignore",
      "MosaicML MDS datasets: the digests index.json lists for each shard "
      "(raw_data.hashes, zip_data.hashes); check: each shard is read whole "
      "at the scan and one digest compared, the fastest ferry computes of "
      "those listed (xxh64, md5, sha1, sha256; a shard that differs is an "
      "error naming it, other algorithms are named as not checked); "
      "ignore: never; auto: ignore, but ferry verify checks."},
     K_ENUM,
     OFF(mds_hashes),
     0,
     0,
     mds_hashes_names},
    {{"scan", "ranks", "ranks|rank0",
      "Who reads the parts' metadata when the dataset is opened: ranks: "
      "every rank describes a contiguous share of the parts (tar headers, "
      "file headers) and rank 0 gathers them; rank0: rank 0 alone. The "
      "manifest is the same either way."},
     K_ENUM,
     OFF(scan),
     0,
     0,
     scan_names},
    {{"missing", "", "EXT=VALUE,...",
      "WebDataset tar shards: a sample without a member of extension EXT "
      "gets VALUE instead of being refused: an integer for cls, cls2, index "
      "and id; nothing (EXT=, an empty sample) for a bytes extension."},
     K_STR,
     OFF(missing),
     0,
     0,
     NULL},
    {{"max_tokens", "0", "integer >= 0",
      "Ragged variables: 0 cuts batches of batch_size samples; T > 0 "
      "cuts batches of at most T rows of the first ragged variable "
      "(tokens) and at most batch_size samples, the same number of "
      "batches on every rank (docs/ragged.md)."},
     K_INT,
     OFF(max_tokens),
     0,
     BIG,
     NULL},
    {{"bucket_window", "0", "integer >= 0",
      "With max_tokens: each rank sorts every run of this many served "
      "samples by length before cutting its batches, then shuffles those "
      "batches (seeded), so a batch's samples have similar lengths and "
      "pad=max wastes little; 0 keeps the served order."},
     K_INT,
     OFF(bucket_window),
     0,
     1 << 24,
     NULL},
    {{"pack", "none", "none|concat|first_fit|best_fit",
      "Token corpora (docs/lm.md): concat serves rows of seq_len tokens cut "
      "from the documents of the ragged token variable (pack_var) "
      "concatenated in a seeded order, with their document boundaries "
      "(segment_ids, positions, loss_mask, cu_seqlens); first_fit packs "
      "whole documents into rows of seq_len without cutting them (first "
      "fit over windows of pack_window documents; the rest padded); "
      "best_fit the same into the row with the least room that fits; none "
      "serves the documents as samples. A mix packs each source into its "
      "own rows and draws rows in its proportions."},
     K_ENUM,
     OFF(pack),
     0,
     0,
     pack_names},
    {{"seq_len", "2048", "integer >= 1", "With pack: the tokens of a row (L)."},
     K_INT,
     OFF(seq_len),
     1,
     1 << 30,
     NULL},
    {{"overlap", "0", "0|1",
      "With pack: 1 gives each row L + 1 tokens, the last being the next "
      "row's first (Megatron-LM's shifted labels: inputs tokens[:, :-1], "
      "labels tokens[:, 1:])."},
     K_INT,
     OFF(overlap),
     0,
     1,
     NULL},
    {{"pack_chunk", "0", "integer >= 0",
      "With pack: documents kept together when the documents are shuffled "
      "(a run of consecutive documents; the rows are shuffled again by "
      "shuffle and shuffle_buffer); 0: 1 up to 2^18 documents, then as many "
      "as keep 2^18 runs."},
     K_INT,
     OFF(pack_chunk),
     0,
     BIG,
     NULL},
    {{"mask_first", "no", "yes|no",
      "With pack: yes also sets loss_mask to 0 at each position whose next "
      "token starts another piece (a document, or a piece of one first_fit "
      "cut): no prediction across documents."},
     K_BOOL,
     OFF(mask_first),
     0,
     0,
     NULL},
    {{"pack_var", "", "a variable name, or empty",
      "With pack: the corpus's ragged integer variable holding the tokens; "
      "empty: its only ragged variable.  vars then selects among the "
      "outputs tokens, segment_ids, positions, loss_mask and cu_seqlens."},
     K_STR,
     OFF(pack_var),
     0,
     0,
     NULL},
    {{"pack_window", "1024", "integer >= 1",
      "With pack=first_fit or best_fit: documents packed together, in the "
      "seeded order "
      "of the seed alone (the rows are the same every epoch, shuffled "
      "again each epoch)."},
     K_INT,
     OFF(pack_window),
     1,
     1 << 24,
     NULL},
    {{"overflow", "split", "split|drop",
      "With pack=first_fit or best_fit: a document longer than seq_len is cut "
      "into "
      "pieces of seq_len (split) or left out (drop; counted by ferry info)."},
     K_ENUM,
     OFF(overflow),
     0,
     0,
     overflow_names},
    {{"sparse", "rows", "rows|dense",
      "A sparse matrix's rows (an AnnData CSR matrix, docs/singlecell.md): "
      "rows serves its M/indices and M/data as two ragged variables; dense "
      "serves one dense variable M of [n_vars] (or the genes kept), made "
      "from them as they are read."},
     K_ENUM,
     OFF(sparse),
     0,
     0,
     sparse_names},
    {{"sparse_dtype", "float32", "float32|float16|float64|same|bfloat16",
      "With sparse=dense: the dense rows' dtype (same: the values' own; "
      "float16 and bfloat16 rounded to nearest, ties to even)."},
     K_ENUM,
     OFF(sparse_dtype),
     0,
     0,
     sparse_dtype_names},
    {{"genes", "", "names or column indices, comma-separated, or @FILE",
      "With sparse=dense: the columns kept, in this order (a matrix's genes "
      "by their names, var/_index, or by index); empty: all."},
     K_STR,
     OFF(genes),
     0,
     0,
     NULL},
    {{"decode", "", "variable names, comma-separated",
      "Image bytes served as pixels (docs/images.md, \"Decode\"): each named "
      "variable, a ragged uint8 of encoded JPEG or PNG images (a "
      "WebDataset jpg or png), becomes a dense variable of [H, W, C] uint8 "
      "(layout=hwc) or [C, H, W] float32 (layout=chw), decoded on the "
      "decode pool (threads); empty: bytes as they are."},
     K_STR,
     OFF(decode),
     0,
     0,
     NULL},
    {{"image_size", "224", "S or HxW",
      "With decode: the output's height and width (S: S x S)."},
     K_STR,
     OFF(image_size),
     0,
     0,
     NULL},
    {{"resize", "none", "none|shorter:N|exact",
      "With decode: before the crop, the shorter side to N pixels (the "
      "aspect kept, torchvision's Resize(N); then crop=center), the whole "
      "image to image_size (exact), or no resize.  crop=random resizes its "
      "own box and takes none."},
     K_STR,
     OFF(resize),
     0,
     0,
     NULL},
    {{"crop", "random", "none|center|random",
      "With decode: random is torchvision's RandomResizedCrop(image_size, "
      "crop_scale, crop_ratio) then a horizontal flip (flip), drawn from "
      "the seed, the epoch and the sample; center is CenterCrop(image_size) "
      "after resize (zero padding where smaller); none takes the (resized) "
      "image, which must then be image_size."},
     K_ENUM,
     OFF(crop),
     0,
     0,
     crop_names},
    {{"crop_scale", "0.08:1", "LO:HI, 0 < LO <= HI",
      "With crop=random: the range of the crop's area as a fraction of the "
      "image's."},
     K_STR,
     OFF(crop_scale),
     0,
     0,
     NULL},
    {{"crop_ratio", "0.75:1.3333333333333333", "LO:HI, 0 < LO <= HI",
      "With crop=random: the range of the crop's aspect (width / height), "
      "drawn uniformly in log."},
     K_STR,
     OFF(crop_ratio),
     0,
     0,
     NULL},
    {{"flip", "1", "1|0",
      "With crop=random: mirror the crop left-right with probability 1/2."},
     K_BOOL,
     OFF(flip),
     0,
     0,
     NULL},
    {{"layout", "hwc", "hwc|chw",
      "With decode: [H, W, C] uint8 pixels, or [C, H, W] float32 "
      "(v / 255 - mean) / std (torchvision's ToTensor + Normalize)."},
     K_ENUM,
     OFF(layout),
     0,
     0,
     layout_names},
    {{"mean", "", "empty, or 1 or 3 numbers, comma-separated",
      "With decode and layout=chw: the mean subtracted per channel "
      "(e.g. 0.485,0.456,0.406); empty: 0."},
     K_STR,
     OFF(mean),
     0,
     0,
     NULL},
    {{"std", "", "empty, or 1 or 3 nonzero numbers, comma-separated",
      "With decode and layout=chw: the divisor per channel (e.g. "
      "0.229,0.224,0.225); empty: 1."},
     K_STR,
     OFF(std),
     0,
     0,
     NULL},
    {{"channels", "3", "3|1",
      "With decode: RGB (3) or gray (1; Pillow's L) pixels, whatever the "
      "image stores (gray, palette, CMYK, alpha converted)."},
     K_INT,
     OFF(channels),
     1,
     3,
     NULL},
    {{"dct_scale", "1", "1|0",
      "With decode: let a JPEG decode at 1/8, 2/8 or 4/8 of its size where "
      "the resize needs fewer pixels (faster; the pixels then differ a "
      "little from torchvision's, docs/image-decode.md); 0: full size."},
     K_BOOL,
     OFF(dct_scale),
     0,
     0,
     NULL},
    {{"offsets_dtype", "int64", "int64|int32",
      "Ragged variables: int32 also gives each batch's offsets as int32 "
      "(ferry_tensor offsets32 and device_offsets32, the offsets of "
      "ferry.Ragged; FlashAttention's cu_seqlens), refused at ferry_open "
      "when a batch could hold more than 2^31-1 rows."},
     K_ENUM,
     OFF(offsets_dtype),
     0,
     0,
     offsets_dtype_names},
    {{"pad", "none", "none|max|integer >= 1",
      "Ragged variables (samples of different lengths, docs/ragged.md): "
      "none serves values and offsets; max pads every sample of a batch to "
      "the batch's longest, an integer L to L rows (static shapes, JAX), "
      "with pad_value, and gives each sample's length."},
     K_STR,
     OFF(pad),
     0,
     0,
     NULL},
    {{"truncate", "no", "yes|no",
      "With pad=L: yes cuts a longer sample to L rows; no refuses a dataset "
      "holding one at ferry_open, naming the sample."},
     K_BOOL,
     OFF(truncate),
     0,
     0,
     NULL},
    {{"pad_value", "0", "a number",
      "With pad: the value of the rows past a sample's length (converted "
      "to the variable's dtype, which must hold it exactly)."},
     K_STR,
     OFF(pad_value),
     0,
     0,
     NULL},
    {{"null_fill", "", "empty, or a number",
      "Parquet columns: the value served for a null (converted to the "
      "column's dtype, which must hold it exactly); empty refuses a "
      "selected column holding a null, naming column, row group and row."},
     K_STR,
     OFF(null_fill),
     0,
     0,
     NULL},
    {{"checkpoint_signal", "USR1", "none|USR1|USR2|TERM|INT|HUP|XCPU",
      "Signal that asks for a checkpoint (sbatch --signal=B:USR1@120): its "
      "handler only sets a flag, and ferry_checkpoint_requested becomes true "
      "on every rank at the same batch; none installs no handler."},
     K_ENUM,
     OFF(checkpoint_signal),
     0,
     0,
     signal_names},
    {{"collective_timeout", "1800", "integer >= 0 (seconds)",
      "Seconds a rank waits in ferry's agreements (ferry_next's batch "
      "certification, the start of ferry_close, ferry_set_epoch and the "
      "state calls) for the other ranks before it fails with FERRY_EPEER "
      "naming what it waited for; 0 waits forever."},
     K_INT,
     OFF(collective_timeout),
     0,
     INT64_C(31536000),
     NULL},
    {{"verbose", "0", "0|1|2",
      "What rank 0 says on stderr at ferry_open: 0 nothing, 1 why batches "
      "stay in host memory with device=auto, 2 also where batches go and "
      "which CUDA runtime and NCCL were loaded.  May differ between ranks."},
     K_INT,
     OFF(verbose),
     0,
     2,
     NULL},
};

#define NDEFS ((int)(sizeof defs / sizeof defs[0]))

int ferry__option_count(void) { return NDEFS; }

const ferry_option_info *ferry_option_info_get(int i) {
  if (i < 0 || i >= NDEFS)
    return NULL;
  return &defs[i].info;
}

/* Accept "batch-size" for "batch_size" and any letter case. */
static int find_def(const char *name) {
  if (!name)
    return -1;
  for (int i = 0; i < NDEFS; i++) {
    const char *a = defs[i].info.name, *b = name;
    while (*a && *b) {
      char cb = (char)tolower((unsigned char)*b);
      if (cb == '-')
        cb = '_';
      if (*a != cb)
        break;
      a++, b++;
    }
    if (!*a && !*b)
      return i;
  }
  return -1;
}

/* Empty, or a whole finite number (strtod's syntax). */
static int number_ok(const char *v) {
  char *end = NULL;
  if (!*v)
    return 1;
  errno = 0;
  double x = strtod(v, &end);
  return end != v && *end == '\0' && errno == 0 && isfinite(x);
}

/* "none", "max" or an integer L >= 1 (at most 2^40 rows). */
static int pad_ok(const char *v) {
  if (!*v || !strcmp(v, "none") || !strcmp(v, "max"))
    return 1;
  char *end = NULL;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  return end != v && *end == '\0' && errno == 0 && x >= 1 && x <= (1LL << 40);
}

/* "auto", "all", or a comma-separated list of distinct ordinals 0..1023
 * (at most FERRY_MAX_DEVICES). */
static int devices_ok(const char *v) {
  if (!strcmp(v, "auto") || !strcmp(v, "all"))
    return 1;
  int seen[FERRY_MAX_DEVICES], n = 0;
  const char *p = v;
  for (;;) {
    if (!isdigit((unsigned char)*p))
      return 0;
    long d = 0;
    while (isdigit((unsigned char)*p)) {
      d = d * 10 + (*p++ - '0');
      if (d > 1023)
        return 0;
    }
    for (int k = 0; k < n; k++)
      if (seen[k] == d)
        return 0;
    if (n == FERRY_MAX_DEVICES)
      return 0;
    seen[n++] = (int)d;
    if (!*p)
      return 1;
    if (*p++ != ',')
      return 0;
  }
}

static int parse_int(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  while (isspace((unsigned char)*s))
    s++;
  if (!*s)
    return -1;
  long long v = strtoll(s, &end, 10);
  while (isspace((unsigned char)*end))
    end++;
  if (errno || *end)
    return -1;
  *out = v;
  return 0;
}

/* A K_SIZE value: digits, then nothing or a binary unit. */
static int parse_size(const char *s, int64_t *out) {
  static const struct {
    const char *unit;
    int shift;
  } units[] = {{"", 0},     {"B", 0},  {"K", 10},   {"KiB", 10}, {"M", 20},
               {"MiB", 20}, {"G", 30}, {"GiB", 30}, {"T", 40},   {"TiB", 40}};
  if (!isdigit((unsigned char)*s))
    return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno)
    return -1;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcasecmp(end, units[i].unit)) {
      if (v > (unsigned long long)INT64_MAX >> units[i].shift)
        return -1;
      *out = (int64_t)(v << units[i].shift);
      return 0;
    }
  return -1;
}

/* A side of an image: 1 .. 32768 (the image core's FERRY__IMG_MAX_SIDE). */
static int side_of(const char *s, char **end, int64_t *out) {
  if (!isdigit((unsigned char)*s))
    return -1;
  errno = 0;
  long long v = strtoll(s, end, 10);
  if (errno || v < 1 || v > 32768)
    return -1;
  *out = v;
  return 0;
}

int ferry__opt_image_size(const char *v, int64_t *h, int64_t *w) {
  char *end = NULL;
  if (!v || side_of(v, &end, h))
    return -1;
  if (!*end) {
    *w = *h;
    return 0;
  }
  if (*end != 'x' && *end != 'X')
    return -1;
  return side_of(end + 1, &end, w) || *end ? -1 : 0;
}

int ferry__opt_resize(const char *v, int *mode, int64_t *n) {
  char *end = NULL;
  *n = 0;
  if (!v || !*v || !strcmp(v, "none"))
    *mode = 0;
  else if (!strcmp(v, "exact"))
    *mode = 2;
  else if (!strncmp(v, "shorter:", 8) && !side_of(v + 8, &end, n) && !*end)
    *mode = 1;
  else
    return -1;
  return 0;
}

static int finite_num(const char *s, char **end, double *out) {
  errno = 0;
  *out = strtod(s, end);
  return *end != s && !errno && isfinite(*out) ? 0 : -1;
}

int ferry__opt_range(const char *v, double *lo, double *hi) {
  char *end = NULL;
  if (!v || finite_num(v, &end, lo) || *end != ':' ||
      finite_num(end + 1, &end, hi) || *end)
    return -1;
  return *lo > 0 && *lo <= *hi ? 0 : -1;
}

int ferry__opt_floats(const char *v, double out[3]) {
  int n = 0;
  const char *p = v;
  if (!v || !*v)
    return -1;
  for (;;) {
    char *end = NULL;
    if (n == 3 || finite_num(p, &end, &out[n]))
      return -1;
    n++;
    if (!*end)
      break;
    if (*end != ',')
      return -1;
    p = end + 1;
  }
  return n == 1 || n == 3 ? n : -1;
}

/* decode='s string options, checked when set (empty: the default). */
static int image_value_ok(size_t off, const char *v) {
  int64_t a, b;
  int mode;
  double x, y, f[3];
  if (off == OFF(image_size))
    return !ferry__opt_image_size(v, &a, &b);
  if (off == OFF(resize))
    return !ferry__opt_resize(v, &mode, &a);
  if (off == OFF(crop_scale) || off == OFF(crop_ratio))
    return !ferry__opt_range(v, &x, &y);
  if (off == OFF(mean))
    return !*v || ferry__opt_floats(v, f) > 0;
  if (off == OFF(std)) {
    int n = *v ? ferry__opt_floats(v, f) : 0;
    for (int i = 0; i < n; i++)
      if (f[i] == 0)
        return 0;
    return n >= 0;
  }
  return 1;
}

static int set_one(struct ferry_options *o, const option_def *d,
                   const char *value) {
  char *field = (char *)o + d->offset;
  switch (d->kind) {
  case K_INT: {
    int64_t v;
    if (parse_int(value, &v) || v < d->min || v > d->max)
      goto bad;
    *(int64_t *)field = v;
    return 0;
  }
  case K_SIZE: {
    int64_t v;
    if (parse_size(value, &v) || v < d->min || v > d->max)
      goto bad;
    *(int64_t *)field = v;
    return 0;
  }
  case K_UINT: {
    char *end;
    errno = 0;
    if (!*value || *value == '-')
      goto bad;
    unsigned long long v = strtoull(value, &end, 0);
    if (errno || *end)
      goto bad;
    *(uint64_t *)field = v;
    return 0;
  }
  case K_FRAC: {
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end || !(v > 0.0 && v <= 1.0))
      goto bad;
    /* cppcheck-suppress invalidPointerCast ; field is a double member */
    *(double *)field = v;
    return 0;
  }
  case K_ENUM:
    for (int k = 0; d->names[k]; k++)
      if (strcmp(value, d->names[k]) == 0) {
        *(int *)field = k;
        return 0;
      }
    goto bad;
  case K_BOOL:
    if (!strcmp(value, "yes") || !strcmp(value, "true") || !strcmp(value, "1"))
      *(int *)field = 1;
    else if (!strcmp(value, "no") || !strcmp(value, "false") ||
             !strcmp(value, "0"))
      *(int *)field = 0;
    else
      goto bad;
    return 0;
  case K_STR: {
    char *copy = NULL;
    if (d->offset == OFF(devices) && !devices_ok(value))
      goto bad;
    if (d->offset == OFF(null_fill) && !number_ok(value))
      goto bad;
    if (d->offset == OFF(pad_value) && (!*value || !number_ok(value)))
      goto bad;
    if (d->offset == OFF(pad) && !pad_ok(value))
      goto bad;
    if (!image_value_ok(d->offset, value))
      goto bad;
    if (*value) {
      copy = strdup(value);
      if (!copy)
        return ferry__oom(NULL, -1, strlen(value) + 1,
                          "the value of option '%s'", d->info.name);
    }
    free(*(char **)field);
    *(char **)field = copy;
    return 0;
  }
  }
bad:
  return ferry__seterr(NULL, FERRY_EINVAL,
                       "option '%s': bad value '%s' (expected %s)",
                       d->info.name, value, d->info.values);
}

int ferry_options_create(ferry_options **out) {
  if (!out)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_options_create: out is NULL");
  *out = NULL;
  struct ferry_options *o = calloc(1, sizeof *o);
  if (!o)
    return ferry__oom(NULL, -1, sizeof *o, "ferry_options_create's options");
  for (int i = 0; i < NDEFS; i++) {
    int rc = set_one(o, &defs[i], defs[i].info.default_value);
    if (rc) { /* a broken default table is a bug, not a user error */
      ferry_options_free(o);
      return ferry__seterr(NULL, FERRY_EINTERNAL,
                           "default of option '%s' does not parse",
                           defs[i].info.name);
    }
  }
  *out = o;
  return 0;
}

/* The string options (K_STR) of the table, freed or duplicated together. */
static char **str_field(struct ferry_options *o, int i) {
  return (char **)(void *)((char *)o + defs[i].offset);
}

static void free_strings(struct ferry_options *o) {
  for (int i = 0; i < (int)(sizeof defs / sizeof defs[0]); i++)
    if (defs[i].kind == K_STR) {
      free(*str_field(o, i));
      *str_field(o, i) = NULL;
    }
}

/* o's string fields (copied from another record) replaced by their own
 * copies; 0, or the bytes of the copy that failed (out of memory: o's
 * strings are then all NULL or own; *which names its option). */
static size_t dup_strings(struct ferry_options *o, const char **which) {
  size_t bad = 0;
  for (int i = 0; i < (int)(sizeof defs / sizeof defs[0]); i++)
    if (defs[i].kind == K_STR && *str_field(o, i)) {
      char *c = bad ? NULL : strdup(*str_field(o, i));
      if (!c && !bad) {
        bad = strlen(*str_field(o, i)) + 1;
        *which = defs[i].info.name;
      }
      *str_field(o, i) = c;
    }
  return bad;
}

void ferry_options_free(ferry_options *opts) {
  if (!opts)
    return;
  free_strings(opts);
  free(opts);
}

int ferry_options_copy(const ferry_options *src, ferry_options **out) {
  if (!src || !out)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_options_copy: NULL argument");
  *out = NULL;
  struct ferry_options *o = malloc(sizeof *o);
  if (!o)
    return ferry__oom(NULL, -1, sizeof *o, "ferry_options_copy's options");
  *o = *src;
  const char *which = "?";
  size_t bad = dup_strings(o, &which);
  if (bad) {
    ferry_options_free(o);
    return ferry__oom(NULL, -1, bad, "ferry_options_copy's option '%s'", which);
  }
  *out = o;
  return 0;
}

int ferry_options_set(ferry_options *opts, const char *name,
                      const char *value) {
  if (!opts || !name || !value)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_options_set: NULL argument");
  int i = find_def(name);
  if (i < 0)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "unknown option '%s' (see ferry --help for the list)",
                         name);
  return set_one(opts, &defs[i], value);
}

static void format_value(const struct ferry_options *o, const option_def *d,
                         char *buf, size_t len) {
  const char *field = (const char *)o + d->offset;
  switch (d->kind) {
  case K_INT: snprintf(buf, len, "%" PRId64, *(const int64_t *)field); break;
  case K_UINT: snprintf(buf, len, "%" PRIu64, *(const uint64_t *)field); break;
  case K_SIZE: { /* the largest binary unit that divides it */
    int64_t v = *(const int64_t *)field;
    static const char *const unit[] = {"", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && v != 0 && v % 1024 == 0)
      v /= 1024, u++;
    snprintf(buf, len, "%" PRId64 "%s", v, unit[u]);
    break;
  }
  case K_FRAC:
    /* cppcheck-suppress invalidPointerCast ; field is a double member */
    snprintf(buf, len, "%.17g", *(const double *)field);
    break;
  case K_ENUM: snprintf(buf, len, "%s", d->names[*(const int *)field]); break;
  case K_BOOL:
    snprintf(buf, len, "%s", *(const int *)field ? "yes" : "no");
    break;
  case K_STR: {
    const char *s = *(char *const *)field;
    snprintf(buf, len, "%s", s ? s : "");
    break;
  }
  }
}

int ferry_options_get(const ferry_options *opts, const char *name, char *buf,
                      size_t len) {
  if (!opts || !buf || len == 0)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_options_get: NULL argument");
  int i = find_def(name);
  if (i < 0)
    return ferry__seterr(NULL, FERRY_EINVAL, "unknown option '%s'",
                         name ? name : "(null)");
  format_value(opts, &defs[i], buf, len);
  return 0;
}

uint64_t ferry__option_hash(const ferry_options *opts, int i) {
  char buf[4096];
  if (i < 0 || i >= NDEFS)
    return 0;
  uint64_t h = ferry__fnv1a(FERRY__FNV_INIT, defs[i].info.name,
                            strlen(defs[i].info.name) + 1);
  /* Ranks may drive different GPUs (devices=$SLURM_LOCALID), and only
   * rank 0 speaks: the options whose value may be per rank. */
  if (defs[i].offset == OFF(devices) || defs[i].offset == OFF(verbose))
    return h;
  format_value(opts, &defs[i], buf, sizeof buf);
  return ferry__fnv1a(h, buf, strlen(buf));
}

int ferry_options_from_env(ferry_options *opts) {
  if (!opts)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_options_from_env: NULL");
  for (int i = 0; i < NDEFS; i++) {
    char var[64] = "FERRY_";
    size_t n = strlen(var);
    for (const char *p = defs[i].info.name; *p && n + 1 < sizeof var; p++)
      var[n++] = (char)toupper((unsigned char)*p);
    var[n] = '\0';
    const char *v = getenv(var);
    if (!v)
      continue;
    int rc = set_one(opts, &defs[i], v);
    if (rc) {
      char msg[FERRY__MSG_MAX];
      snprintf(msg, sizeof msg, "environment variable %s: %s", var,
               ferry__thread_error());
      return ferry__seterr(NULL, rc, "%s", msg);
    }
  }
  return 0;
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s))
    s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1]))
    *--e = '\0';
  return s;
}

int ferry_options_load(ferry_options *opts, const char *path) {
  if (!opts || !path)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_options_load: NULL argument");
  FILE *f = fopen(path, "r");
  if (!f)
    return ferry__seterr(NULL, errno == ENOENT ? FERRY_ENOENT : FERRY_EACCES,
                         "config file %s: %s", path, strerror(errno));
  /* Apply to a copy so a bad line leaves opts unchanged. */
  ferry_options *tmp = NULL;
  int rc = ferry_options_copy(opts, &tmp);
  char line[4096];
  int lineno = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    lineno++;
    char *hash = strchr(line, '#');
    if (hash)
      *hash = '\0';
    char *s = trim(line);
    if (!*s)
      continue;
    char *eq = strchr(s, '=');
    if (!eq) {
      rc = ferry__seterr(NULL, FERRY_EINVAL,
                         "config file %s, line %d: expected 'name = value'",
                         path, lineno);
      break;
    }
    *eq = '\0';
    rc = ferry_options_set(tmp, trim(s), trim(eq + 1));
    if (rc) {
      char msg[FERRY__MSG_MAX];
      snprintf(msg, sizeof msg, "config file %s, line %d: %s", path, lineno,
               ferry__thread_error());
      ferry__seterr(NULL, rc, "%s", msg);
    }
  }
  fclose(f);
  if (rc == 0) {
    free_strings(opts);
    *opts = *tmp;
    free(tmp); /* fields now owned by opts */
    return 0;
  }
  ferry_options_free(tmp);
  return rc;
}

int ferry_options_set_transform(ferry_options *opts, ferry_transform_fn fn,
                                void *user_data) {
  if (!opts)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_options_set_transform: NULL");
  opts->transform = fn;
  opts->transform_user = fn ? user_data : NULL;
  return 0;
}
