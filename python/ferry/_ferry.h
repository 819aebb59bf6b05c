/*
 * _ferry.h - private to the Python extension _ferry, compiled from several
 * files into one module: _ferry.c (the module: errors, the C-side lifetime
 * of a batch, argument parsing, MPI start, init), _ferry_array.c
 * (ferry.Array and its DLPack and array-interface exports), _ferry_batch.c
 * (ferry.Batch) and _ferry_loader.c (ferry._ferry.Loader).  What they
 * share: DLPack's structs, the objects' layouts and the ferry__py_
 * functions below.  Over include/ferry.h only, like the tool.
 */
#ifndef FERRY_PY_FERRY_H
#define FERRY_PY_FERRY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ferry.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Python 3.8 and 3.9 (setup.py's python_requires) lack two calls used here. */
#if PY_VERSION_HEX < 0x03090000
static inline PyObject *PyObject_CallOneArg(PyObject *f, PyObject *arg) {
  return PyObject_CallFunctionObjArgs(f, arg, NULL);
}
#endif
#if PY_VERSION_HEX < 0x030A0000
static inline int PyModule_AddObjectRef(PyObject *m, const char *name,
                                        PyObject *v) {
  Py_XINCREF(v);
  if (PyModule_AddObject(m, name, v) < 0) {
    Py_XDECREF(v);
    return -1;
  }
  return 0;
}
#endif

/* ---- DLPack, written from the specification (dmlc/dlpack dlpack.h,
 * DLPACK_MAJOR_VERSION 1, DLPACK_MINOR_VERSION 0; the legacy
 * DLManagedTensor is the 0.x layout).  Only what ferry exports. ---------- */

enum { kDLCPU = 1, kDLCUDA = 2 };
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };

typedef struct {
  int32_t device_type; /* DLDeviceType, an int-sized enum */
  int32_t device_id;
} DLDevice;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides; /* in elements */
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* The names below are shared by the module's files only: hidden, so the
 * module exports PyInit__ferry alone, as when it was one file of statics. */
#pragma GCC visibility push(hidden)

/* ---- The C-side lifetime (_ferry.c) ---------------------------------- */

typedef struct batch_ref batch_ref;

/* The loader as the deleters see it.  held counts slots not yet released;
 * live lists the batch_refs (under mu) so that close can release those
 * only a Batch object holds. */
typedef struct core {
  ferry_loader *L;
  atomic_long held;
  pthread_mutex_t mu;
  batch_ref *live;
} core;

struct batch_ref {
  atomic_long refs; /* the Batch object, each Array, each managed tensor */
  core *c;
  ferry_batch *b;
  batch_ref *prev, *next; /* in c->live, under c->mu */
  void *owner; /* the BatchObject holding a reference, or NULL; read and
                  written only with the GIL held */
};

/* Drop one reference; the last one returns the slot.  Any thread, no GIL,
 * no Python. */
void ferry__py_ref_drop(batch_ref *r);
void ferry__py_ref_take(batch_ref *r);

/* ---- Objects --------------------------------------------------------- */

typedef struct {
  PyObject_HEAD batch_ref *r;
  void *data;
  int device_type, device_id;
  ferry_dtype dtype;
  int ndim;
  int64_t shape[FERRY_MAX_DIMS];
  size_t nbytes;
  int shard; /* device=cuda: the shard it views (-1: the whole batch) */
} ArrayObject;

typedef struct {
  PyObject_HEAD core *c; /* NULL once closed */
  int epoch_set;         /* an epoch was set (or loaded) */
  int ended;             /* ferry_next returned FERRY_END */
  int64_t epoch;
  int cuda;
  PyObject *names; /* tuple of the variables' names (interned str), in the
                      order of ferry_batch.vars */
} LoaderObject;

typedef struct {
  PyObject_HEAD LoaderObject *loader;
  batch_ref *r; /* NULL once released */
} BatchObject;

extern PyTypeObject ferry__py_array_type, ferry__py_batch_type,
    ferry__py_loader_type;

/* ---- _ferry.c -------------------------------------------------------- */

/* Raise the subclass of CODE with MSG; e.code, e.message.  Returns NULL. */
PyObject *ferry__py_raise(int code, const char *msg);
/* Keyword arguments of a METH_FASTCALL | METH_KEYWORDS method without a
 * tuple and a dict per call: at most NPOS positional ones, then the
 * keywords of NAMES; OUT[i] is left as it was when argument i is absent.
 * 0, or -1 with TypeError set. */
int ferry__py_fast_args(const char *fn, const char *const *names, int n,
                        Py_ssize_t npos, PyObject *const *args,
                        Py_ssize_t nargs, PyObject *kwnames, PyObject **out);
/* MPI initialised (MPI_THREAD_MULTIPLE) if nobody did: 0, or -1 with the
 * exception set (MPI already finalized, MPI_Init_thread failed). */
int ferry__py_mpi_ready(void);

/* ---- _ferry_array.c -------------------------------------------------- */

/* (kDLCPU, 0), made once by the module's init. */
extern PyObject *ferry__py_host_device;
/* A new Array viewing data of batch r (a reference taken). */
PyObject *ferry__py_array_new(batch_ref *r, void *data, int device_type,
                              int device_id, ferry_dtype dtype, int ndim,
                              const int64_t *shape);
/* A DLPack capsule of the given view (legacy, or versioned), holding a
 * reference of r. */
PyObject *ferry__py_capsule_new(batch_ref *r, void *data, int device_type,
                                int device_id, ferry_dtype dtype, int ndim,
                                const int64_t *shape, int versioned);
PyObject *ferry__py_array_capsule(ArrayObject *a, int versioned);
/* Make a's device memory visible on the consumer's stream (None: the
 * default); 0, or -1 with the exception set. */
int ferry__py_array_sync_stream(ArrayObject *a, PyObject *stream);

/* ---- _ferry_batch.c, _ferry_loader.c --------------------------------- */

/* Release b's slot (its batch_ref); b stays a released Batch. */
PyObject *ferry__py_batch_release(BatchObject *b, PyObject *unused);
/* 1, or 0 with StateError set when the loader is closed. */
int ferry__py_loader_ok(LoaderObject *self);

#pragma GCC visibility pop

#endif /* FERRY_PY_FERRY_H */
