/*
 * gpu/densify.h - ferry's own kernel for sparse=dense on the device (issue
 * 27, docs/decisions/0056-densify-on-the-device.md): its name and argument
 * list, shared by gpu/densify.cu (the kernel, compiled to PTX at build time
 * and embedded in libferry), gpu/cuda.c (which launches it through the
 * driver API) and the fake CUDA runtime of tests/gpu (which runs a plain C
 * loop of its own under that name).  Plain C: nvcc and cc both read it.
 *
 * ferry_densify(off, idx, idx_dt, val, val_dt, nrows, width, map, kept,
 *               out, out_dt): for each row r < nrows, row r of out (kept
 * elements of out_dt) is zeroed, then each value k in [off[r] - off[0],
 * off[r + 1] - off[0]) goes to place map[c] (c = idx[k]; map NULL: place
 * c) converted to out_dt: the same bytes when out_dt is val_dt, else
 * through double (float16: to float, then to the nearest half, ties to
 * even).  A column outside [0, width) or mapped to -1 is skipped (the
 * library checks the columns on the host before the launch).  Types of
 * the arguments, in order: const int64_t *, const void *, int, const void
 * *, int, int64_t, int64_t, const int64_t *, int64_t, void *, int.
 * Launched with one block per row (a grid of at most
 * FERRY__DENSIFY_GRID_MAX blocks, each striding over the rows) of
 * FERRY__DENSIFY_THREADS threads.
 */
#ifndef FERRY_GPU_DENSIFY_H
#define FERRY_GPU_DENSIFY_H

#define FERRY__DENSIFY_KERNEL "ferry_densify"
#define FERRY__DENSIFY_NARGS 11
#define FERRY__DENSIFY_THREADS 256
#define FERRY__DENSIFY_GRID_MAX 65535

/* The dtype codes: ferry_dtype's values (include/ferry.h; gpu/cuda.c
 * checks that they agree). */
#define FERRY__KDT_BOOL 0
#define FERRY__KDT_INT8 1
#define FERRY__KDT_INT16 2
#define FERRY__KDT_INT32 3
#define FERRY__KDT_INT64 4
#define FERRY__KDT_UINT8 5
#define FERRY__KDT_UINT16 6
#define FERRY__KDT_UINT32 7
#define FERRY__KDT_UINT64 8
#define FERRY__KDT_FLOAT16 9
#define FERRY__KDT_FLOAT32 10
#define FERRY__KDT_FLOAT64 11

#endif /* FERRY_GPU_DENSIFY_H */
