/*
 * _ferry.c - the compiled core of the Python package: Loader, Batch and
 * Array over libferry, with the CPython C API only.
 *
 * Why it is shaped this way: a batch's buffers belong to a pipeline slot
 * that must go back to the loader (ferry_release) exactly when nothing views
 * them any more -- neither the Batch object, nor an Array, nor a tensor that
 * torch, NumPy, JAX or CuPy took through DLPack.  DLPack deleters run on any
 * thread, without the GIL, sometimes during interpreter shutdown, so the
 * count is a plain C struct (batch_ref, an atomic count) shared by the Batch,
 * its Arrays and every exported DLManagedTensor; the deleter touches only
 * that struct and libferry (ferry_release is documented thread-safe against
 * ferry_next).  The loader side (core) counts the slots held, so set_epoch,
 * load_state_dict and close can refuse to reuse or free memory that a live
 * tensor still views.
 */
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
static PyObject *PyObject_CallOneArg(PyObject *f, PyObject *arg) {
  return PyObject_CallFunctionObjArgs(f, arg, NULL);
}
#endif
#if PY_VERSION_HEX < 0x030A0000
static int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *v) {
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
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBool = 6 };

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

/* ---- Errors ------------------------------------------------------------ */

static PyObject *Error;        /* ferry.Error; subclasses per code below */
static PyObject *code_exc[17]; /* index -code */
static const struct {
  int code;
  const char *name, *doc;
} exc_table[] = {
    {FERRY_EINVAL, "InvalidArgument", "FERRY_EINVAL: bad argument or option"},
    {FERRY_ENOMEM, "OutOfMemory", "FERRY_ENOMEM: out of memory"},
    {FERRY_EIO, "IOFailure", "FERRY_EIO: a read or write failed"},
    {FERRY_ENOENT, "NotFound", "FERRY_ENOENT: file or directory not found"},
    {FERRY_EFORMAT, "FormatError", "FERRY_EFORMAT: not a valid file"},
    {FERRY_ENOTSUP, "NotSupported", "FERRY_ENOTSUP: valid but unsupported"},
    {FERRY_EMISMATCH, "Mismatch", "FERRY_EMISMATCH: ranks or state disagree"},
    {FERRY_EMPI, "MPIError", "FERRY_EMPI: an MPI call failed"},
    {FERRY_ESTATE, "StateError", "FERRY_ESTATE: call out of order"},
    {FERRY_ESHAPE, "ShapeError", "FERRY_ESHAPE: variables' shapes differ"},
    {FERRY_EEMPTY, "EmptyError", "FERRY_EEMPTY: no sample"},
    {FERRY_ECALLBACK, "CallbackError", "FERRY_ECALLBACK: a transform failed"},
    {FERRY_EACCES, "PermissionDenied", "FERRY_EACCES: permission denied"},
    {FERRY_ENODEV, "NoDevice", "FERRY_ENODEV: no usable accelerator"},
    {FERRY_EINTERNAL, "InternalError", "FERRY_EINTERNAL: a bug in ferry"},
    {FERRY_EPEER, "PeerError",
     "FERRY_EPEER: another rank left the loop or stopped answering"},
};

/* Raise the subclass of CODE with MSG; e.code, e.message.  Returns NULL. */
static PyObject *raise_code(int code, const char *msg) {
  PyObject *cls = Error;
  if (code < 0 && -code < 17 && code_exc[-code])
    cls = code_exc[-code];
  if (!msg || !*msg)
    msg = ferry_strerror(code);
  PyObject *exc = PyObject_CallFunction(cls, "s", msg);
  if (!exc)
    return NULL;
  PyObject *c = PyLong_FromLong(code), *m = PyUnicode_FromString(msg);
  if (c && m) {
    PyObject_SetAttrString(exc, "code", c);
    PyObject_SetAttrString(exc, "message", m);
  }
  Py_XDECREF(c);
  Py_XDECREF(m);
  PyErr_SetObject(cls, exc);
  Py_DECREF(exc);
  return NULL;
}

/* ---- The C-side lifetime ------------------------------------------------ */

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
static void ref_drop(batch_ref *r) {
  if (atomic_fetch_sub(&r->refs, 1) != 1)
    return;
  core *c = r->c;
  pthread_mutex_lock(&c->mu);
  if (r->prev)
    r->prev->next = r->next;
  else
    c->live = r->next;
  if (r->next)
    r->next->prev = r->prev;
  pthread_mutex_unlock(&c->mu);
  ferry_release(c->L, r->b);
  free(r);
  atomic_fetch_sub(&c->held, 1);
}

static void ref_take(batch_ref *r) { atomic_fetch_add(&r->refs, 1); }

/* ---- Array ----------------------------------------------------------------
 */

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

static PyTypeObject ArrayType;

static const char *typestr_of(ferry_dtype d) {
  static const char *le[] = {"|b1", "|i1", "<i2", "<i4", "<i8", "|u1",
                             "<u2", "<u4", "<u8", "<f2", "<f4", "<f8"};
  static const char *be[] = {"|b1", "|i1", ">i2", ">i4", ">i8", "|u1",
                             ">u2", ">u4", ">u8", ">f2", ">f4", ">f8"};
  const uint16_t one = 1;
  if ((int)d < 0 || d >= FERRY_DTYPE_COUNT)
    return "|V1";
  return *(const uint8_t *)&one ? le[d] : be[d];
}

static DLDataType dl_dtype_of(ferry_dtype d) {
  DLDataType t = {kDLUInt, 8, 1};
  size_t bits = ferry_dtype_size(d) * 8;
  t.bits = (uint8_t)bits;
  if (d == FERRY_BOOL)
    t.code = kDLBool;
  else if (d >= FERRY_INT8 && d <= FERRY_INT64)
    t.code = kDLInt;
  else if (d >= FERRY_UINT8 && d <= FERRY_UINT64)
    t.code = kDLUInt;
  else
    t.code = kDLFloat;
  return t;
}

/* A new Array viewing DATA of batch R (takes a reference on R). */
static PyObject *array_new(batch_ref *r, void *data, int dev_type, int dev_id,
                           ferry_dtype dtype, int ndim, const int64_t *shape) {
  ArrayObject *a = PyObject_New(ArrayObject, &ArrayType);
  if (!a)
    return NULL;
  ref_take(r);
  a->r = r;
  a->data = data;
  a->device_type = dev_type;
  a->device_id = dev_id;
  a->dtype = dtype;
  a->ndim = ndim;
  size_t n = ferry_dtype_size(dtype);
  for (int d = 0; d < ndim; d++) {
    a->shape[d] = shape[d];
    n *= (size_t)shape[d];
  }
  a->nbytes = n;
  a->shard = -1;
  return (PyObject *)a;
}

/* Make the CUDA stream s wait for the copies the Array needs: its shard's,
 * or every shard's (an event, no host synchronisation). */
static int array_wait(const ArrayObject *a, long long s) {
  void *stream = (void *)(uintptr_t)s;
  return a->shard >= 0 ? ferry_shard_wait(a->r->b, a->shard, stream)
                       : ferry_batch_wait(a->r->b, stream);
}

static void array_dealloc(ArrayObject *a) {
  if (a->r)
    ref_drop(a->r);
  PyObject_Free(a);
}

static PyObject *shape_tuple(const ArrayObject *a) {
  PyObject *t = PyTuple_New(a->ndim);
  for (int d = 0; t && d < a->ndim; d++)
    PyTuple_SET_ITEM(t, d, PyLong_FromLongLong(a->shape[d]));
  return t;
}

/* The manager of one exported tensor: the managed struct, then shape and
 * strides, in one malloc; manager_ctx is the batch_ref. */
typedef struct {
  union {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
  } m;
  int64_t shape[FERRY_MAX_DIMS], strides[FERRY_MAX_DIMS];
} manager;

static void deleter_legacy(DLManagedTensor *t) {
  batch_ref *r = t->manager_ctx;
  free(t); /* the union is the first member of manager */
  ref_drop(r);
}

static void deleter_versioned(DLManagedTensorVersioned *t) {
  batch_ref *r = t->manager_ctx;
  free(t);
  ref_drop(r);
}

/* A capsule not consumed: its destructor frees the tensor.  Consumers
 * rename it to "used_dltensor[_versioned]" and call the deleter themselves. */
static void capsule_legacy_destructor(PyObject *cap) {
  if (PyCapsule_IsValid(cap, "dltensor")) {
    DLManagedTensor *t = PyCapsule_GetPointer(cap, "dltensor");
    if (t && t->deleter)
      t->deleter(t);
  }
}

static void capsule_versioned_destructor(PyObject *cap) {
  if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
    DLManagedTensorVersioned *t =
        PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (t && t->deleter)
      t->deleter(t);
  }
}

/* CUDA stream handling of __dlpack__(stream=...): make the consumer's
 * stream wait for the copies (an event, no host synchronisation).  Per the
 * protocol: None and 1 the legacy default stream, 2 the per-thread default
 * stream, -1 no synchronisation, other values a cudaStream_t. */
static int array_sync_stream(ArrayObject *a, PyObject *stream) {
  if (a->device_type != kDLCUDA) {
    if (stream != Py_None && !PyLong_Check(stream)) {
      PyErr_SetString(PyExc_TypeError, "stream must be None or an int");
      return -1;
    }
    return 0;
  }
  long long s = 1;
  if (stream != Py_None) {
    s = PyLong_AsLongLong(stream);
    if (s == -1 && PyErr_Occurred())
      return -1;
  }
  if (s == -1)
    return 0;
  if (s == 0) {
    PyErr_SetString(PyExc_ValueError,
                    "stream=0 is ambiguous for CUDA in the DLPack protocol: "
                    "use 1 (legacy default) or 2 (per-thread default)");
    return -1;
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = array_wait(a, s);
  Py_END_ALLOW_THREADS
  if (rc) {
    raise_code(rc, ferry_last_error(NULL));
    return -1;
  }
  return 0;
}

/* A DLPack capsule viewing DATA of batch R (takes a reference on R, which
 * the deleter drops): versioned ("dltensor_versioned", DLPack 1.0) or
 * legacy ("dltensor").  C-contiguous strides. */
static PyObject *capsule_new(batch_ref *r, void *data, int dev_type, int dev_id,
                             ferry_dtype dtype, int ndim, const int64_t *shape,
                             int versioned) {
  manager *m = malloc(sizeof *m);
  if (!m)
    return PyErr_NoMemory();
  int64_t st = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    m->shape[d] = shape[d];
    m->strides[d] = st;
    st *= shape[d];
  }
  DLTensor t;
  t.data = data;
  t.device.device_type = dev_type;
  t.device.device_id = dev_id;
  t.ndim = ndim;
  t.dtype = dl_dtype_of(dtype);
  t.shape = m->shape;
  t.strides = m->strides;
  t.byte_offset = 0;
  ref_take(r);
  PyObject *cap;
  if (versioned) {
    m->m.versioned.version.major = 1;
    m->m.versioned.version.minor = 0;
    m->m.versioned.manager_ctx = r;
    m->m.versioned.deleter = deleter_versioned;
    m->m.versioned.flags = 0; /* writable, not a copy */
    m->m.versioned.dl_tensor = t;
    cap = PyCapsule_New(&m->m.versioned, "dltensor_versioned",
                        capsule_versioned_destructor);
  } else {
    m->m.legacy.dl_tensor = t;
    m->m.legacy.manager_ctx = r;
    m->m.legacy.deleter = deleter_legacy;
    cap = PyCapsule_New(&m->m.legacy, "dltensor", capsule_legacy_destructor);
  }
  if (!cap) {
    free(m);
    ref_drop(r);
  }
  return cap;
}

/* Keyword arguments of a METH_FASTCALL | METH_KEYWORDS method, without
 * building a tuple and a dict per call (the per-batch path calls these
 * thousands of times a second): at most NPOS positional ones, then the
 * keywords of NAMES; OUT[i] is left as it was when argument i is absent. */
static int fast_args(const char *fn, const char *const *names, int n,
                     Py_ssize_t npos, PyObject *const *args, Py_ssize_t nargs,
                     PyObject *kwnames, PyObject **out) {
  if (nargs > npos) {
    PyErr_Format(PyExc_TypeError,
                 "%s() takes at most %zd positional argument(s) (%zd given)",
                 fn, npos, nargs);
    return -1;
  }
  for (Py_ssize_t i = 0; i < nargs; i++)
    out[i] = args[i];
  Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nk; k++) {
    PyObject *key = PyTuple_GET_ITEM(kwnames, k);
    int i = 0;
    while (i < n && PyUnicode_CompareWithASCIIString(key, names[i]) != 0)
      i++;
    if (i == n) {
      PyErr_Format(PyExc_TypeError,
                   "%s() got an unexpected keyword argument '%U'", fn, key);
      return -1;
    }
    if (i < nargs) {
      PyErr_Format(PyExc_TypeError,
                   "%s() got multiple values for argument '%s'", fn, names[i]);
      return -1;
    }
    out[i] = args[nargs + k];
  }
  return 0;
}

/* DLPack's max_version: versioned capsule when major >= 1.  -1 on error. */
static int want_versioned(PyObject *max_version) {
  if (max_version == Py_None)
    return 0;
  long major = -1;
  if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) < 1 ||
      ((major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0))) == -1 &&
       PyErr_Occurred())) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_TypeError,
                      "max_version must be a tuple (major, minor)");
    return -1;
  }
  return major >= 1;
}

static PyObject *array_capsule(ArrayObject *a, int versioned) {
  return capsule_new(a->r, a->data, a->device_type, a->device_id, a->dtype,
                     a->ndim, a->shape, versioned);
}

static PyObject *array_dlpack(ArrayObject *a, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames) {
  static const char *const names[] = {"stream", "max_version", "dl_device",
                                      "copy"};
  if (nargs == 0 && !kwnames && a->device_type == kDLCPU)
    return array_capsule(a, 0); /* the common call: __dlpack__() */
  PyObject *v[4] = {Py_None, Py_None, Py_None, Py_None};
  if (fast_args("__dlpack__", names, 4, 0, args, nargs, kwnames, v))
    return NULL;
  PyObject *stream = v[0], *dl_device = v[2], *copy = v[3];
  if (copy == Py_True) {
    PyErr_SetString(PyExc_BufferError,
                    "ferry.Array exports views of the batch buffer only "
                    "(copy=True): copy on the consumer side");
    return NULL;
  }
  if (dl_device != Py_None) {
    int t = -1, id = -1;
    if (!PyArg_ParseTuple(dl_device, "ii", &t, &id))
      return NULL;
    if (t != a->device_type || id != a->device_id) {
      PyErr_Format(PyExc_BufferError,
                   "ferry.Array lives on device (%d, %d); dl_device=(%d, %d) "
                   "would need a copy",
                   a->device_type, a->device_id, t, id);
      return NULL;
    }
  }
  int versioned = want_versioned(v[1]);
  if (versioned < 0 || array_sync_stream(a, stream))
    return NULL;
  return array_capsule(a, versioned);
}

static PyObject *host_device; /* (kDLCPU, 0), made once */

static PyObject *array_dlpack_device(ArrayObject *a, PyObject *unused) {
  (void)unused;
  if (a->device_type == kDLCPU && host_device) {
    Py_INCREF(host_device);
    return host_device;
  }
  return Py_BuildValue("(ii)", a->device_type, a->device_id);
}

static PyObject *array_interface_dict(ArrayObject *a, int cuda) {
  PyObject *shape = shape_tuple(a);
  if (!shape)
    return NULL;
  PyObject *d =
      Py_BuildValue("{s:i,s:N,s:s,s:(NO),s:O}", "version", 3, "shape", shape,
                    "typestr", typestr_of(a->dtype), "data",
                    PyLong_FromVoidPtr(a->data), Py_False, "strides", Py_None);
  if (d && cuda) {
    /* made visible on the legacy default stream, which the consumer then
     * orders after (version 3's "stream": 1) */
    if (array_wait(a, 1)) {
      Py_DECREF(d);
      return raise_code(FERRY_ENODEV, ferry_last_error(NULL));
    }
    PyObject *one = PyLong_FromLong(1);
    PyDict_SetItemString(d, "stream", one);
    Py_XDECREF(one);
  }
  return d;
}

static PyObject *array_get_interface(ArrayObject *a, void *unused) {
  (void)unused;
  if (a->device_type != kDLCPU) {
    PyErr_SetString(PyExc_AttributeError,
                    "__array_interface__: this array is in device memory "
                    "(use __cuda_array_interface__ or DLPack)");
    return NULL;
  }
  return array_interface_dict(a, 0);
}

static PyObject *array_get_cuda_interface(ArrayObject *a, void *unused) {
  (void)unused;
  if (a->device_type != kDLCUDA) {
    PyErr_SetString(PyExc_AttributeError,
                    "__cuda_array_interface__: this array is in host memory "
                    "(use __array_interface__ or DLPack)");
    return NULL;
  }
  return array_interface_dict(a, 1);
}

static PyObject *array_get_shape(ArrayObject *a, void *u) {
  (void)u;
  return shape_tuple(a);
}
static PyObject *array_get_dtype(ArrayObject *a, void *u) {
  (void)u;
  return PyUnicode_FromString(typestr_of(a->dtype));
}
static PyObject *array_get_ptr(ArrayObject *a, void *u) {
  (void)u;
  return PyLong_FromVoidPtr(a->data);
}
static PyObject *array_get_nbytes(ArrayObject *a, void *u) {
  (void)u;
  return PyLong_FromSize_t(a->nbytes);
}
static PyObject *array_get_ndim(ArrayObject *a, void *u) {
  (void)u;
  return PyLong_FromLong(a->ndim);
}
static PyObject *array_get_device(ArrayObject *a, void *u) {
  (void)u;
  return PyUnicode_FromString(a->device_type == kDLCUDA ? "cuda" : "cpu");
}

static PyObject *array_repr(ArrayObject *a) {
  PyObject *s = shape_tuple(a);
  if (!s)
    return NULL;
  PyObject *r = PyUnicode_FromFormat(
      "ferry.Array(shape=%R, dtype='%s', "
      "device='%s')",
      s, typestr_of(a->dtype), a->device_type == kDLCUDA ? "cuda" : "cpu");
  Py_DECREF(s);
  return r;
}

static PyMethodDef array_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))array_dlpack,
     METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, "
     "copy=None): a DLPack capsule viewing the batch buffer (versioned when "
     "max_version >= (1, 0))."},
    {"__dlpack_device__", (PyCFunction)array_dlpack_device, METH_NOARGS,
     "(device_type, device_id): (1, 0) host, (2, n) CUDA device n."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef array_getset[] = {
    {"__array_interface__", (getter)array_get_interface, NULL, NULL, NULL},
    {"__cuda_array_interface__", (getter)array_get_cuda_interface, NULL, NULL,
     NULL},
    {"shape", (getter)array_get_shape, NULL, "shape (tuple)", NULL},
    {"dtype", (getter)array_get_dtype, NULL, "NumPy typestr ('<f4')", NULL},
    {"ptr", (getter)array_get_ptr, NULL, "data pointer (int)", NULL},
    {"nbytes", (getter)array_get_nbytes, NULL, "bytes viewed", NULL},
    {"ndim", (getter)array_get_ndim, NULL, "dimensions", NULL},
    {"device", (getter)array_get_device, NULL, "'cpu' or 'cuda'", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry.Array",
    .tp_basicsize = sizeof(ArrayObject),
    .tp_dealloc = (destructor)array_dealloc,
    .tp_repr = (reprfunc)array_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A zero-copy view of one variable of a batch (DLPack, "
              "__array_interface__, __cuda_array_interface__).  It keeps the "
              "batch's slot held while it lives.",
    .tp_methods = array_methods,
    .tp_getset = array_getset,
};

/* ---- Loader and Batch --------------------------------------------------- */

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

static PyTypeObject LoaderType, BatchType;

static int loader_ok(LoaderObject *self) {
  if (self->c)
    return 1;
  raise_code(FERRY_ESTATE, "the ferry.Loader is closed");
  return 0;
}

static int batch_ok(BatchObject *b) {
  if (b->r)
    return 1;
  raise_code(FERRY_ESTATE, "the ferry.Batch was released (release(), the end "
                           "of its with block, or the loader's close)");
  return 0;
}

static void batch_dealloc(BatchObject *b) {
  if (b->r) {
    b->r->owner = NULL;
    ref_drop(b->r);
  }
  Py_XDECREF(b->loader);
  PyObject_Free(b);
}

static PyObject *batch_release(BatchObject *b, PyObject *u) {
  (void)u;
  if (b->r) {
    batch_ref *r = b->r;
    b->r = NULL;
    r->owner = NULL;
    ref_drop(r);
  }
  Py_RETURN_NONE;
}

static PyObject *batch_enter(BatchObject *b, PyObject *u) {
  (void)u;
  if (!batch_ok(b))
    return NULL;
  Py_INCREF(b);
  return (PyObject *)b;
}

static PyObject *batch_exit(BatchObject *b, PyObject *args) {
  (void)args;
  return batch_release(b, NULL);
}

/* The Array of variable v. */
static PyObject *batch_var(BatchObject *b, int v) {
  const ferry_batch *fb = b->r->b;
  const ferry_tensor *t = &fb->vars[v];
  if (fb->nshards > 1) {
    PyErr_SetString(PyExc_ValueError,
                    "batch[name]: this batch is split over several devices "
                    "(devices=all): take each device's share from "
                    "batch.shards[i][name]");
    return NULL;
  }
  if (fb->nshards == 1)
    return array_new(b->r, t->device_data, kDLCUDA, fb->shards[0].device,
                     t->dtype, t->ndim, t->shape);
  return array_new(b->r, t->data, kDLCPU, 0, t->dtype, t->ndim, t->shape);
}

/* The index of the variable KEY (a name or a position) names, or -1 with
 * KeyError / IndexError set. */
static int batch_lookup(const BatchObject *b, PyObject *key) {
  const ferry_batch *fb = b->r->b;
  if (PyLong_Check(key)) {
    long i = PyLong_AsLong(key);
    if (i == -1 && PyErr_Occurred())
      return -1;
    if (i < 0)
      i += fb->nvars;
    if (i < 0 || i >= fb->nvars) {
      PyErr_SetString(PyExc_IndexError, "variable index out of range");
      return -1;
    }
    return (int)i;
  }
  PyObject *names = b->loader->names;
  if (names && PyTuple_GET_SIZE(names) == fb->nvars)
    for (int v = 0; v < fb->nvars; v++)
      if (PyTuple_GET_ITEM(names, v) == key)
        return v;
  const char *name = PyUnicode_AsUTF8(key);
  if (!name)
    return -1;
  for (int v = 0; v < fb->nvars; v++)
    if (strcmp(fb->vars[v].name, name) == 0)
      return v;
  PyErr_SetObject(PyExc_KeyError, key);
  return -1;
}

static PyObject *batch_getitem(BatchObject *b, PyObject *key) {
  if (!batch_ok(b))
    return NULL;
  int v = batch_lookup(b, key);
  return v < 0 ? NULL : batch_var(b, v);
}

static Py_ssize_t batch_len(BatchObject *b) {
  if (!batch_ok(b))
    return -1;
  return b->r->b->nvars;
}

/* The name of variable v (a new reference): the loader's interned copy. */
static PyObject *batch_name(const BatchObject *b, int v) {
  PyObject *names = b->loader->names;
  const ferry_batch *fb = b->r->b;
  if (names && PyTuple_GET_SIZE(names) == fb->nvars) {
    PyObject *n = PyTuple_GET_ITEM(names, v);
    Py_INCREF(n);
    return n;
  }
  return PyUnicode_FromString(fb->vars[v].name);
}

static PyObject *batch_keys(BatchObject *b, PyObject *u) {
  (void)u;
  if (!batch_ok(b))
    return NULL;
  const ferry_batch *fb = b->r->b;
  PyObject *l = PyList_New(fb->nvars);
  for (int v = 0; l && v < fb->nvars; v++) {
    PyObject *n = batch_name(b, v);
    if (!n) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, v, n);
  }
  return l;
}

static PyObject *batch_items(BatchObject *b, PyObject *u) {
  (void)u;
  if (!batch_ok(b))
    return NULL;
  const ferry_batch *fb = b->r->b;
  PyObject *l = PyList_New(fb->nvars);
  for (int v = 0; l && v < fb->nvars; v++) {
    PyObject *a = batch_var(b, v), *n = a ? batch_name(b, v) : NULL;
    PyObject *t = n ? PyTuple_New(2) : NULL;
    if (!t) {
      Py_XDECREF(a);
      Py_XDECREF(n);
      Py_DECREF(l);
      return NULL;
    }
    PyTuple_SET_ITEM(t, 0, n);
    PyTuple_SET_ITEM(t, 1, a);
    PyList_SET_ITEM(l, v, t);
  }
  return l;
}

/* One value of to_dict: variable v (v >= 0), the indices (v == -1) or the
 * padding mask (v == -2), as an Array, or as a legacy DLPack capsule when
 * CAPSULE (made visible on STREAM for device memory, as __dlpack__ does),
 * passed through FN when FN is not None. */
static PyObject *batch_value(BatchObject *b, int v, PyObject *fn, int capsule,
                             PyObject *stream) {
  const ferry_batch *fb = b->r->b;
  int64_t n = fb->size;
  PyObject *x;
  if (v < 0) {
    void *p = v == -1 ? (void *)fb->sample_ids : (void *)fb->padded;
    ferry_dtype dt = v == -1 ? FERRY_INT64 : FERRY_UINT8;
    x = capsule ? capsule_new(b->r, p, kDLCPU, 0, dt, 1, &n, 0)
                : array_new(b->r, p, kDLCPU, 0, dt, 1, &n);
  } else if (capsule && fb->nshards == 0) { /* host: no Array needed */
    const ferry_tensor *t = &fb->vars[v];
    x = capsule_new(b->r, t->data, kDLCPU, 0, t->dtype, t->ndim, t->shape, 0);
  } else {
    x = batch_var(b, v);
    if (x && capsule) {
      ArrayObject *a = (ArrayObject *)x;
      PyObject *c = array_sync_stream(a, stream) ? NULL : array_capsule(a, 0);
      Py_DECREF(x);
      x = c;
    }
  }
  if (!x || fn == Py_None)
    return x;
  PyObject *y = PyObject_CallOneArg(fn, x);
  Py_DECREF(x);
  return y;
}

static int dict_put(PyObject *d, PyObject *key, PyObject *value) {
  if (!value)
    return -1;
  int rc = PyDict_SetItem(d, key, value);
  Py_DECREF(value);
  return rc;
}

/* batch.to_dict(fn=None, keys=None, *, index_key=None, padded_key=None,
 * capsule=False, stream=None): the batch as one dict, built in C (the
 * per-batch path of ferry.torch). */
static PyObject *batch_to_dict(BatchObject *b, PyObject *const *args,
                               Py_ssize_t nargs, PyObject *kwnames) {
  static const char *const names[] = {"fn",         "keys",    "index_key",
                                      "padded_key", "capsule", "stream"};
  PyObject *v[6] = {Py_None, Py_None, Py_None, Py_None, Py_False, Py_None};
  if (fast_args("to_dict", names, 6, 2, args, nargs, kwnames, v))
    return NULL;
  if (!batch_ok(b))
    return NULL;
  PyObject *fn = v[0], *keys = v[1];
  int capsule = PyObject_IsTrue(v[4]);
  if (capsule < 0)
    return NULL;
  if (fn != Py_None && !PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "to_dict: fn must be callable or None");
    return NULL;
  }
  PyObject *d = PyDict_New(), *seq = NULL;
  if (!d)
    return NULL;
  int nv = b->r->b->nvars;
  if (keys != Py_None) {
    /* a tuple of our own: FN may change the caller's list */
    seq = PyUnicode_Check(keys) ? NULL : PySequence_Tuple(keys);
    if (!seq) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError,
                        "to_dict: keys must be a sequence of names, not a "
                        "str");
      goto fail;
    }
    nv = (int)PyTuple_GET_SIZE(seq);
  }
  for (int i = 0; i < nv; i++) {
    /* FN may have released the batch (b.release(), the loader's close) */
    if (!batch_ok(b))
      goto fail;
    PyObject *key = seq ? PyTuple_GET_ITEM(seq, i) : NULL;
    int var = key ? batch_lookup(b, key) : i;
    PyObject *name = key ? (Py_INCREF(key), key) : batch_name(b, i);
    int rc = var < 0 || !name
                 ? -1
                 : dict_put(d, name, batch_value(b, var, fn, capsule, v[5]));
    Py_XDECREF(name);
    if (rc)
      goto fail;
  }
  if (v[2] != Py_None &&
      (!batch_ok(b) ||
       dict_put(d, v[2], batch_value(b, -1, fn, capsule, v[5]))))
    goto fail;
  if (v[3] != Py_None &&
      (!batch_ok(b) ||
       dict_put(d, v[3], batch_value(b, -2, fn, capsule, v[5]))))
    goto fail;
  Py_XDECREF(seq);
  return d;
fail:
  Py_XDECREF(seq);
  Py_DECREF(d);
  return NULL;
}

/* batch.shards: None for a host batch, else one dict per device
 * {name: Array of that device's samples}, in the order of ferry_shard. */
static PyObject *batch_get_shards(BatchObject *b, void *u) {
  (void)u;
  if (!batch_ok(b))
    return NULL;
  const ferry_batch *fb = b->r->b;
  if (fb->nshards < 1)
    Py_RETURN_NONE;
  PyObject *l = PyList_New(fb->nshards);
  for (int i = 0; l && i < fb->nshards; i++) {
    const ferry_shard *sh = &fb->shards[i];
    PyObject *d = PyDict_New();
    for (int v = 0; d && v < fb->nvars; v++) {
      const ferry_tensor *t = &fb->vars[v];
      int64_t shape[FERRY_MAX_DIMS];
      memcpy(shape, t->shape, sizeof shape);
      shape[0] = sh->size;
      ArrayObject *a = (ArrayObject *)array_new(
          b->r, sh->data[v], kDLCUDA, sh->device, t->dtype, t->ndim, shape);
      if (a)
        a->shard = i;
      if (!a || PyDict_SetItemString(d, t->name, (PyObject *)a) < 0)
        Py_CLEAR(d);
      Py_XDECREF(a);
    }
    if (!d)
      Py_CLEAR(l);
    else
      PyList_SET_ITEM(l, i, d);
  }
  return l;
}

/* batch.shard_info: [(device, first, size)] per shard, None on the host. */
static PyObject *batch_get_shard_info(BatchObject *b, void *u) {
  (void)u;
  if (!batch_ok(b))
    return NULL;
  const ferry_batch *fb = b->r->b;
  if (fb->nshards < 1)
    Py_RETURN_NONE;
  PyObject *l = PyList_New(fb->nshards);
  for (int i = 0; l && i < fb->nshards; i++) {
    PyObject *t = Py_BuildValue("(iLL)", fb->shards[i].device,
                                (long long)fb->shards[i].first,
                                (long long)fb->shards[i].size);
    if (!t)
      Py_CLEAR(l);
    else
      PyList_SET_ITEM(l, i, t);
  }
  return l;
}

static PyObject *batch_get_indices(BatchObject *b, void *u) {
  (void)u;
  if (!batch_ok(b))
    return NULL;
  int64_t n = b->r->b->size;
  return array_new(b->r, (void *)b->r->b->sample_ids, kDLCPU, 0, FERRY_INT64, 1,
                   &n);
}

static PyObject *batch_get_padded(BatchObject *b, void *u) {
  (void)u;
  if (!batch_ok(b))
    return NULL;
  int64_t n = b->r->b->size;
  return array_new(b->r, (void *)b->r->b->padded, kDLCPU, 0, FERRY_UINT8, 1,
                   &n);
}

#define BATCH_INT_GETTER(fname, expr)                                          \
  static PyObject *fname(BatchObject *b, void *u) {                            \
    (void)u;                                                                   \
    if (!batch_ok(b))                                                          \
      return NULL;                                                             \
    return PyLong_FromLongLong((long long)(expr));                             \
  }
BATCH_INT_GETTER(batch_get_size, b->r->b->size)
BATCH_INT_GETTER(batch_get_num_padded, b->r->b->num_padded)
BATCH_INT_GETTER(batch_get_index, b->r->b->index)
BATCH_INT_GETTER(batch_get_epoch, b->r->b->epoch)

static PyObject *batch_get_released(BatchObject *b, void *u) {
  (void)u;
  return PyBool_FromLong(b->r == NULL);
}

static PyObject *batch_repr(BatchObject *b) {
  if (!b->r)
    return PyUnicode_FromString("ferry.Batch(released)");
  return PyUnicode_FromFormat("ferry.Batch(epoch=%lld, index=%lld, "
                              "size=%lld, vars=%d)",
                              (long long)b->r->b->epoch,
                              (long long)b->r->b->index,
                              (long long)b->r->b->size, b->r->b->nvars);
}

static PyMethodDef batch_methods[] = {
    {"release", (PyCFunction)batch_release, METH_NOARGS,
     "Drop the Batch's hold on its slot (Arrays and tensors exported from it "
     "keep theirs)."},
    {"keys", (PyCFunction)batch_keys, METH_NOARGS, "variable names"},
    {"items", (PyCFunction)batch_items, METH_NOARGS,
     "[(name, Array)] in the dataset's variable order"},
    {"to_dict", (PyCFunction)(void (*)(void))batch_to_dict,
     METH_FASTCALL | METH_KEYWORDS,
     "to_dict(fn=None, keys=None, *, index_key=None, padded_key=None, "
     "capsule=False, stream=None): {name: fn(Array)} for the variables KEYS "
     "(default all), plus the global indices under INDEX_KEY and the "
     "padding mask (uint8) under PADDED_KEY when given; with capsule=True "
     "FN gets each variable's DLPack capsule (legacy, made visible on "
     "STREAM for device memory) instead of the Array; fn=None keeps the "
     "Arrays (or capsules).  Built in C: the fast path of ferry.torch."},
    {"__enter__", (PyCFunction)batch_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)batch_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef batch_getset[] = {
    {"vars", (getter)batch_keys, NULL, "variable names", NULL},
    {"indices", (getter)batch_get_indices, NULL,
     "Array of int64 global sample indices", NULL},
    {"shards", (getter)batch_get_shards, NULL,
     "device=cuda: one dict {name: Array} per device holding its share of "
     "the batch (devices=all: shard i on device i of the list); None for a "
     "host batch",
     NULL},
    {"shard_info", (getter)batch_get_shard_info, NULL,
     "device=cuda: [(device, first, size)] per shard; None for a host batch",
     NULL},
    {"padded", (getter)batch_get_padded, NULL,
     "Array of uint8, 1 where the sample is a pad (tail=pad)", NULL},
    {"size", (getter)batch_get_size, NULL, "samples in the batch", NULL},
    {"num_padded", (getter)batch_get_num_padded, NULL, "padded samples", NULL},
    {"index", (getter)batch_get_index, NULL, "position in the rank's epoch",
     NULL},
    {"epoch", (getter)batch_get_epoch, NULL, "epoch", NULL},
    {"released", (getter)batch_get_released, NULL, "release() was called",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMappingMethods batch_mapping = {
    .mp_length = (lenfunc)batch_len,
    .mp_subscript = (binaryfunc)batch_getitem,
};

static PyTypeObject BatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry.Batch",
    .tp_basicsize = sizeof(BatchObject),
    .tp_dealloc = (destructor)batch_dealloc,
    .tp_repr = (reprfunc)batch_repr,
    .tp_as_mapping = &batch_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One batch of this rank: batch['x'] is a ferry.Array.  Its "
              "slot goes back to the loader when the Batch, its Arrays and "
              "every tensor exported from them are gone.",
    .tp_methods = batch_methods,
    .tp_getset = batch_getset,
};

/* ---- Loader ------------------------------------------------------------- */

static PyObject *loader_raise(LoaderObject *self, int rc) {
  return raise_code(rc, ferry_last_error(self->c ? self->c->L : NULL));
}

/* Set option NAME from a Python value (str, int, float, bool, list). */
static int set_option(ferry_options *o, const char *name, PyObject *v) {
  PyObject *s = NULL;
  if (v == Py_True || v == Py_False)
    s = PyUnicode_FromString(v == Py_True ? "yes" : "no");
  else if (PyList_Check(v) || PyTuple_Check(v)) {
    PyObject *sep = PyUnicode_FromString(","), *parts = PyList_New(0);
    PyObject *it = PyObject_GetIter(v), *x;
    while (it && sep && parts && (x = PyIter_Next(it))) {
      PyObject *xs = PyObject_Str(x);
      Py_DECREF(x);
      if (!xs || PyList_Append(parts, xs)) {
        Py_XDECREF(xs);
        break;
      }
      Py_DECREF(xs);
    }
    if (!PyErr_Occurred())
      s = PyUnicode_Join(sep, parts);
    Py_XDECREF(it);
    Py_XDECREF(sep);
    Py_XDECREF(parts);
  } else
    s = PyObject_Str(v);
  if (!s)
    return -1;
  const char *val = PyUnicode_AsUTF8(s);
  int rc = val ? ferry_options_set(o, name, val) : -1;
  Py_DECREF(s);
  if (rc > 0 || (rc < 0 && !val))
    return -1;
  if (rc) {
    raise_code(rc, ferry_last_error(NULL));
    return -1;
  }
  return 0;
}

static int mpi_ready(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (fin) {
    raise_code(FERRY_EMPI, "MPI is already finalized");
    return -1;
  }
  if (!init) {
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) !=
        MPI_SUCCESS) {
      raise_code(FERRY_EMPI, "MPI_Init_thread failed");
      return -1;
    }
  }
  return 0;
}

/* self->names: the variables' names as interned str, made once, so that the
 * per-batch path (items, to_dict, batch["x"]) creates no string. */
static int loader_make_names(LoaderObject *self) {
  int n = ferry_num_vars(self->c->L);
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) {
    ferry_var_info vi;
    PyObject *s = ferry_var_info_get(self->c->L, i, &vi) == 0
                      ? PyUnicode_InternFromString(vi.name)
                      : NULL;
    if (!s) {
      if (!PyErr_Occurred())
        raise_code(FERRY_EINTERNAL, "ferry_var_info_get failed");
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, i, s);
  }
  Py_XSETREF(self->names, t);
  return t ? 0 : -1;
}

/* Loader(dataset, fcomm, options): fcomm the Fortran handle of a
 * communicator (mpi4py's comm.py2f()) or None for MPI_COMM_WORLD; options a
 * dict of option names to values.  ferry.Loader (ferry/__init__.py) is the
 * public form with **options. */
static int loader_init(LoaderObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"dataset", "fcomm", "options", NULL};
  const char *dataset;
  PyObject *fcomm = Py_None, *opts = Py_None;
  if (self->c) {
    PyErr_SetString(PyExc_RuntimeError, "Loader.__init__ called twice");
    return -1;
  }
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OO", kwlist, &dataset, &fcomm,
                                   &opts))
    return -1;
  ferry_options *o = NULL;
  int rc = ferry_options_create(&o);
  if (rc) {
    raise_code(rc, ferry_last_error(NULL));
    return -1;
  }
  if (opts != Py_None) {
    if (!PyDict_Check(opts)) {
      ferry_options_free(o);
      PyErr_SetString(PyExc_TypeError, "options must be a dict");
      return -1;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(opts, &pos, &k, &v)) {
      const char *name = PyUnicode_AsUTF8(k);
      if (!name || set_option(o, name, v)) {
        ferry_options_free(o);
        return -1;
      }
    }
  }
  if (mpi_ready()) {
    ferry_options_free(o);
    return -1;
  }
  MPI_Comm comm = MPI_COMM_WORLD;
  if (fcomm != Py_None) {
    long f = PyLong_AsLong(fcomm);
    if (f == -1 && PyErr_Occurred()) {
      ferry_options_free(o);
      return -1;
    }
    comm = MPI_Comm_f2c((MPI_Fint)f);
  }
  core *c = calloc(1, sizeof *c);
  if (!c) {
    ferry_options_free(o);
    PyErr_NoMemory();
    return -1;
  }
  pthread_mutex_init(&c->mu, NULL);
  ferry_loader *L = NULL;
  Py_BEGIN_ALLOW_THREADS
  rc = ferry_open(comm, dataset, o, &L);
  Py_END_ALLOW_THREADS
  ferry_options_free(o);
  if (rc) {
    pthread_mutex_destroy(&c->mu);
    free(c);
    raise_code(rc, ferry_last_error(NULL));
    return -1;
  }
  c->L = L;
  self->c = c;
  self->epoch = -1;
  ferry_device_info di;
  if (ferry_device_info_get(L, &di) == 0)
    self->cuda = di.cuda;
  return loader_make_names(self);
}

/* Release every Batch object of this loader (they become released; the
 * Arrays and tensors taken from them keep their own hold).  With the GIL:
 * owner is only read and written under it, so no Batch can go away here. */
static void release_batch_objects(LoaderObject *self) {
  core *c = self->c;
  for (;;) {
    BatchObject *bo = NULL;
    pthread_mutex_lock(&c->mu);
    for (batch_ref *r = c->live; r && !bo; r = r->next)
      bo = r->owner;
    pthread_mutex_unlock(&c->mu);
    if (!bo)
      return;
    Py_XDECREF(batch_release(bo, NULL)); /* clears owner: progress */
  }
}

/* set_epoch, load_state_dict and close reuse or free the slots: they first
 * release the Batch objects, then refuse while Arrays or exported tensors
 * still view a slot. */
static int refuse_if_held(LoaderObject *self, const char *what) {
  release_batch_objects(self);
  long n = atomic_load(&self->c->held);
  if (n == 0)
    return 0;
  PyObject *msg = PyUnicode_FromFormat(
      "%s: %ld batch(es) of this loader are still viewed by ferry.Arrays "
      "or tensors exported from them (torch.from_dlpack, numpy.from_dlpack, "
      "...); their memory would be reused or freed: drop them (del) or copy "
      "what must outlive the epoch (tensor.clone()) first",
      what, n);
  if (msg) {
    raise_code(FERRY_ESTATE, PyUnicode_AsUTF8(msg));
    Py_DECREF(msg);
  }
  return -1;
}

static PyObject *loader_set_epoch(LoaderObject *self, PyObject *arg) {
  if (!loader_ok(self))
    return NULL;
  long long e = PyLong_AsLongLong(arg);
  if (e == -1 && PyErr_Occurred())
    return NULL;
  if (refuse_if_held(self, "set_epoch"))
    return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = ferry_set_epoch(self->c->L, e);
  Py_END_ALLOW_THREADS
  if (rc)
    return loader_raise(self, rc);
  self->epoch_set = 1;
  self->ended = 0;
  self->epoch = e;
  Py_RETURN_NONE;
}

/* Epoch 0 when none was set yet (collective, like set_epoch). */
static int ensure_epoch(LoaderObject *self) {
  if (self->epoch_set)
    return 0;
  PyObject *zero = PyLong_FromLong(0);
  PyObject *r = zero ? loader_set_epoch(self, zero) : NULL;
  Py_XDECREF(zero);
  Py_XDECREF(r);
  return r ? 0 : -1;
}

static Py_ssize_t loader_len(LoaderObject *self) {
  if (!loader_ok(self) || ensure_epoch(self))
    return -1;
  int64_t n = ferry_num_batches(self->c->L);
  if (n < 0) {
    loader_raise(self, (int)n);
    return -1;
  }
  return (Py_ssize_t)n;
}

static PyObject *loader_iter(LoaderObject *self) {
  if (!loader_ok(self) || ensure_epoch(self))
    return NULL;
  if (self->ended) { /* the epoch was served: the next one */
    PyObject *e = PyLong_FromLongLong(self->epoch + 1);
    PyObject *r = e ? loader_set_epoch(self, e) : NULL;
    Py_XDECREF(e);
    if (!r)
      return NULL;
    Py_DECREF(r);
  }
  Py_INCREF(self);
  return (PyObject *)self;
}

static PyObject *loader_next(LoaderObject *self) {
  if (!loader_ok(self) || ensure_epoch(self))
    return NULL;
  if (self->ended)
    return NULL; /* StopIteration */
  BatchObject *bo = PyObject_New(BatchObject, &BatchType);
  batch_ref *r = calloc(1, sizeof *r);
  if (!bo || !r) {
    free(r);
    Py_XDECREF(bo);
    return PyErr_NoMemory();
  }
  bo->loader = NULL;
  bo->r = NULL;
  ferry_batch *b = NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = ferry_next(self->c->L, &b);
  Py_END_ALLOW_THREADS
  if (rc) {
    free(r);
    Py_DECREF(bo);
    if (rc == FERRY_END) {
      self->ended = 1;
      return NULL;
    }
    if (rc == FERRY_EINVAL && atomic_load(&self->c->held) > 0) {
      /* held_memory reached: a misuse on this rank; the epoch goes on */
      PyObject *msg = PyUnicode_FromFormat(
          "%s (here %ld batches are held by ferry.Batch objects, Arrays or "
          "tensors taken from them: drop some, or open the loader with a "
          "larger held_memory=)",
          ferry_last_error(self->c->L), (long)atomic_load(&self->c->held));
      if (msg) {
        raise_code(rc, PyUnicode_AsUTF8(msg));
        Py_DECREF(msg);
      }
      return NULL;
    }
    self->ended = 1; /* the epoch is over after an error */
    return loader_raise(self, rc);
  }
  core *c = self->c;
  atomic_init(&r->refs, 1);
  r->c = c;
  r->b = b;
  r->owner = bo;
  atomic_fetch_add(&c->held, 1);
  pthread_mutex_lock(&c->mu);
  r->next = c->live;
  if (c->live)
    c->live->prev = r;
  c->live = r;
  pthread_mutex_unlock(&c->mu);
  Py_INCREF(self);
  bo->loader = self;
  bo->r = r;
  return (PyObject *)bo;
}

/* Close: the loader's memory is freed only when nothing views it.  With
 * live tensors, close raises StateError (force=False) or, force=True (the
 * context manager's exit on an exception), leaves the loader open and its
 * memory alive (a ResourceWarning says so). */
static PyObject *loader_close_impl(LoaderObject *self, int force) {
  if (!self->c)
    Py_RETURN_NONE;
  release_batch_objects(self);
  if (atomic_load(&self->c->held) > 0) {
    if (!force) {
      refuse_if_held(self, "close");
      return NULL;
    }
    if (PyErr_WarnFormat(PyExc_ResourceWarning, 1,
                         "ferry.Loader left open: %ld batch(es) are still "
                         "viewed by live tensors; its memory stays allocated",
                         (long)atomic_load(&self->c->held)))
      return NULL;
    self->c = NULL; /* leaked on purpose: tensors still view it */
    Py_RETURN_NONE;
  }
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) { /* too late for a collective close: the process is ending */
    self->c = NULL;
    Py_RETURN_NONE;
  }
  core *c = self->c;
  self->c = NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = ferry_close(c->L);
  Py_END_ALLOW_THREADS
  pthread_mutex_destroy(&c->mu);
  free(c);
  if (rc)
    return raise_code(rc, ferry_last_error(NULL));
  Py_RETURN_NONE;
}

static PyObject *loader_close(LoaderObject *self, PyObject *u) {
  (void)u;
  return loader_close_impl(self, 0);
}

static PyObject *loader_enter(LoaderObject *self, PyObject *u) {
  (void)u;
  if (!loader_ok(self))
    return NULL;
  Py_INCREF(self);
  return (PyObject *)self;
}

/* `with` left by an exception: the exception may be this rank's alone (a
 * failed training step), while the other ranks wait in a collective of
 * their own (the gradient all-reduce): a collective close would wait for
 * them until collective_timeout.  The loader is abandoned instead: left
 * open and unreachable (its memory and threads stay until the process
 * ends, which an uncaught exception under srun/mpirun or `python -m
 * mpi4py` brings about at once). */
static PyObject *loader_abandon(LoaderObject *self) {
  if (self->c) {
    release_batch_objects(self);
    long held = (long)atomic_load(&self->c->held);
    self->c = NULL;
    if (PyErr_WarnFormat(PyExc_ResourceWarning, 1,
                         "ferry.Loader left by an exception: abandoned, not "
                         "closed collectively (%ld batch(es) still viewed); "
                         "its memory and threads stay until the process ends",
                         held))
      return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject *loader_exit(LoaderObject *self, PyObject *args) {
  PyObject *et = PyTuple_Size(args) > 0 ? PyTuple_GetItem(args, 0) : Py_None;
  PyObject *r =
      et != Py_None ? loader_abandon(self) : loader_close_impl(self, 0);
  if (!r)
    return NULL;
  Py_DECREF(r);
  Py_RETURN_FALSE;
}

static void loader_dealloc(LoaderObject *self) {
  if (self->c) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *r = loader_close_impl(self, 1);
    if (!r)
      PyErr_WriteUnraisable((PyObject *)self);
    Py_XDECREF(r);
    PyErr_Restore(et, ev, tb);
  }
  Py_CLEAR(self->names);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *loader_state_dict(LoaderObject *self, PyObject *u) {
  (void)u;
  if (!loader_ok(self) || ensure_epoch(self))
    return NULL;
  void *buf = NULL;
  size_t len = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = ferry_state_save_buffer(self->c->L, &buf, &len);
  Py_END_ALLOW_THREADS
  if (rc)
    return loader_raise(self, rc);
  PyObject *bytes = PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
  free(buf);
  if (!bytes)
    return NULL;
  return Py_BuildValue("{s:s,s:i,s:N}", "format", "ferry-state", "version", 1,
                       "state", bytes);
}

static PyObject *loader_load_state_dict(LoaderObject *self, PyObject *arg) {
  if (!loader_ok(self))
    return NULL;
  PyObject *bytes = arg;
  if (PyDict_Check(arg)) {
    PyObject *fmt = PyDict_GetItemString(arg, "format");
    bytes = PyDict_GetItemString(arg, "state");
    if (!fmt || !PyUnicode_Check(fmt) ||
        PyUnicode_CompareWithASCIIString(fmt, "ferry-state") != 0 || !bytes)
      return raise_code(FERRY_EFORMAT,
                        "load_state_dict: not a ferry state dict (expected "
                        "{'format': 'ferry-state', 'version': 1, 'state': "
                        "bytes} as state_dict() returns)");
  }
  Py_buffer view;
  if (PyObject_GetBuffer(bytes, &view, PyBUF_SIMPLE))
    return NULL;
  if (refuse_if_held(self, "load_state_dict")) {
    PyBuffer_Release(&view);
    return NULL;
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = ferry_state_load_buffer(self->c->L, view.buf, (size_t)view.len);
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&view);
  if (rc)
    return loader_raise(self, rc);
  ferry_epoch_info info;
  if (ferry_epoch_info_get(self->c->L, &info) == 0)
    self->epoch = info.epoch;
  self->epoch_set = 1;
  self->ended = 0;
  Py_RETURN_NONE;
}

static PyObject *loader_checkpoint_requested(LoaderObject *self, PyObject *u) {
  (void)u;
  if (!loader_ok(self))
    return NULL;
  return PyBool_FromLong(ferry_checkpoint_requested(self->c->L));
}

static PyObject *loader_request_checkpoint(LoaderObject *self, PyObject *u) {
  (void)u;
  if (!loader_ok(self))
    return NULL;
  ferry_request_checkpoint(self->c->L);
  Py_RETURN_NONE;
}

static PyObject *loader_stats(LoaderObject *self, PyObject *u) {
  (void)u;
  if (!loader_ok(self))
    return NULL;
  ferry_stats s;
  int rc = ferry_stats_get(self->c->L, &s);
  if (rc)
    return loader_raise(self, rc);
  return Py_BuildValue(
      "{s:L,s:L,s:L,s:L,s:d,s:d,s:n,s:L,s:d,s:L,s:d}", "batches",
      (long long)s.batches, "samples", (long long)s.samples, "bytes",
      (long long)s.bytes, "bytes_read", (long long)s.bytes_read, "wait_seconds",
      s.wait_seconds, "read_seconds", s.read_seconds, "peak_resident_bytes",
      (Py_ssize_t)s.peak_resident_bytes, "h2d_bytes", (long long)s.h2d_bytes,
      "h2d_seconds", s.h2d_seconds, "exchange_bytes",
      (long long)s.exchange_bytes, "exchange_seconds", s.exchange_seconds);
}

static PyObject *loader_memory_budget(LoaderObject *self, PyObject *u) {
  (void)u;
  if (!loader_ok(self))
    return NULL;
  ferry_memory_budget m;
  int rc = ferry_memory_budget_get(self->c->L, &m);
  if (rc)
    return loader_raise(self, rc);
  return Py_BuildValue(
      "{s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n}", "batch_bytes",
      (Py_ssize_t)m.batch_bytes, "ring_bytes", (Py_ssize_t)m.ring_bytes,
      "read_bytes", (Py_ssize_t)m.read_bytes, "plan_bytes",
      (Py_ssize_t)m.plan_bytes, "cache_bytes", (Py_ssize_t)m.cache_bytes,
      "total_bytes", (Py_ssize_t)m.total_bytes, "pinned_bytes",
      (Py_ssize_t)m.pinned_bytes, "device_bytes", (Py_ssize_t)m.device_bytes,
      "held_bytes", (Py_ssize_t)m.held_bytes);
}

static PyObject *loader_get_vars(LoaderObject *self, void *u) {
  (void)u;
  if (!loader_ok(self))
    return NULL;
  int n = ferry_num_vars(self->c->L);
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    ferry_var_info vi;
    ferry_var_info_get(self->c->L, i, &vi);
    PyList_SET_ITEM(l, i, PyUnicode_FromString(vi.name));
  }
  return l;
}

static PyObject *loader_get_num_samples(LoaderObject *self, void *u) {
  (void)u;
  if (!loader_ok(self))
    return NULL;
  return PyLong_FromLongLong(ferry_num_samples(self->c->L));
}
static PyObject *loader_get_rank(LoaderObject *self, void *u) {
  (void)u;
  if (!loader_ok(self))
    return NULL;
  return PyLong_FromLong(ferry_rank(self->c->L));
}
static PyObject *loader_get_world_size(LoaderObject *self, void *u) {
  (void)u;
  if (!loader_ok(self))
    return NULL;
  return PyLong_FromLong(ferry_world_size(self->c->L));
}
static PyObject *loader_get_epoch(LoaderObject *self, void *u) {
  (void)u;
  if (self->epoch < 0)
    Py_RETURN_NONE;
  return PyLong_FromLongLong(self->epoch);
}
static PyObject *loader_get_device(LoaderObject *self, void *u) {
  (void)u;
  return PyUnicode_FromString(self->cuda ? "cuda" : "cpu");
}
static PyObject *loader_get_closed(LoaderObject *self, void *u) {
  (void)u;
  return PyBool_FromLong(self->c == NULL);
}
static PyObject *loader_get_held(LoaderObject *self, void *u) {
  (void)u;
  return PyLong_FromLong(self->c ? atomic_load(&self->c->held) : 0);
}

static PyMethodDef loader_methods[] = {
    {"set_epoch", (PyCFunction)loader_set_epoch, METH_O,
     "set_epoch(e): plan epoch e and start it (COLLECTIVE)."},
    {"close", (PyCFunction)loader_close, METH_NOARGS,
     "Stop the pipeline and free the loader (COLLECTIVE)."},
    {"state_dict", (PyCFunction)loader_state_dict, METH_NOARGS,
     "The position as {'format': 'ferry-state', 'version': 1, 'state': "
     "bytes}, the same on every rank (COLLECTIVE)."},
    {"load_state_dict", (PyCFunction)loader_load_state_dict, METH_O,
     "Resume from state_dict()'s dict or bytes (COLLECTIVE)."},
    {"checkpoint_requested", (PyCFunction)loader_checkpoint_requested,
     METH_NOARGS, "True when a checkpoint signal was agreed."},
    {"request_checkpoint", (PyCFunction)loader_request_checkpoint, METH_NOARGS,
     "ask for the agreed checkpoint, as the checkpoint signal does (for a "
     "framework that owns the signal)"},
    {"stats", (PyCFunction)loader_stats, METH_NOARGS, "counters (dict)"},
    {"memory_budget", (PyCFunction)loader_memory_budget, METH_NOARGS,
     "memory bound by component (dict)"},
    {"__enter__", (PyCFunction)loader_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)loader_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef loader_getset[] = {
    {"vars", (getter)loader_get_vars, NULL, "variable names", NULL},
    {"num_samples", (getter)loader_get_num_samples, NULL, "samples N", NULL},
    {"rank", (getter)loader_get_rank, NULL, "rank in the communicator", NULL},
    {"world_size", (getter)loader_get_world_size, NULL, "ranks", NULL},
    {"epoch", (getter)loader_get_epoch, NULL, "current epoch or None", NULL},
    {"device", (getter)loader_get_device, NULL, "'cpu' or 'cuda'", NULL},
    {"closed", (getter)loader_get_closed, NULL, "close() was called", NULL},
    {"held", (getter)loader_get_held, NULL,
     "batches still held (Batch objects, Arrays, exported tensors)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods loader_sequence = {.sq_length = (lenfunc)loader_len};

static PyTypeObject LoaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._ferry.Loader",
    .tp_basicsize = sizeof(LoaderObject),
    .tp_dealloc = (destructor)loader_dealloc,
    .tp_as_sequence = &loader_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The compiled loader; use ferry.Loader.",
    .tp_iter = (getiterfunc)loader_iter,
    .tp_iternext = (iternextfunc)loader_next,
    .tp_methods = loader_methods,
    .tp_getset = loader_getset,
    .tp_init = (initproc)loader_init,
    .tp_new = PyType_GenericNew,
};

/* ---- Module functions -----------------------------------------------------
 */

static PyObject *mod_options(PyObject *m, PyObject *u) {
  (void)m, (void)u;
  PyObject *l = PyList_New(0);
  const ferry_option_info *oi;
  for (int i = 0; l && (oi = ferry_option_info_get(i)); i++) {
    PyObject *d =
        Py_BuildValue("{s:s,s:s,s:s,s:s}", "name", oi->name, "default",
                      oi->default_value, "values", oi->values ? oi->values : "",
                      "help", oi->help ? oi->help : "");
    if (!d || PyList_Append(l, d)) {
      Py_XDECREF(d);
      Py_DECREF(l);
      return NULL;
    }
    Py_DECREF(d);
  }
  return l;
}

static PyObject *mod_mpi_library_version(PyObject *m, PyObject *u) {
  (void)m, (void)u;
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS)
    return raise_code(FERRY_EMPI, "MPI_Get_library_version failed");
  return PyUnicode_DecodeUTF8(buf, len, "replace");
}

/* (world size, thread level) after initialising MPI if nobody did. */
static PyObject *mod_mpi_init(PyObject *m, PyObject *u) {
  (void)m, (void)u;
  if (mpi_ready())
    return NULL;
  int size = 0, level = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Query_thread(&level);
  return Py_BuildValue("(ii)", size, level == MPI_THREAD_MULTIPLE);
}

static PyMethodDef module_methods[] = {
    {"options", mod_options, METH_NOARGS,
     "The option table: [{'name', 'default', 'values', 'help'}]."},
    {"mpi_library_version", mod_mpi_library_version, METH_NOARGS,
     "MPI_Get_library_version of the MPI ferry calls."},
    {"mpi_init", mod_mpi_init, METH_NOARGS,
     "Initialise MPI (MPI_THREAD_MULTIPLE) if nobody did; returns (world "
     "size, multiple)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_ferry",
    "The compiled core of ferry (libferry's loader for Python).",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL};

/* MPI_Finalize at exit when this module initialised MPI and no one else
 * finalized it (mpi4py finalizes what it initialised). */
static void finalize_mpi(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin)
    MPI_Finalize();
}

PyMODINIT_FUNC PyInit__ferry(void) {
  if (PyType_Ready(&ArrayType) < 0 || PyType_Ready(&BatchType) < 0 ||
      PyType_Ready(&LoaderType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
  if (!host_device && !(host_device = Py_BuildValue("(ii)", kDLCPU, 0)))
    return NULL;
  Error = PyErr_NewExceptionWithDoc(
      "ferry.Error",
      "An error of libferry: .code is the negative FERRY_E* code, .message "
      "the C message (the same on every rank for collective calls).",
      NULL, NULL);
  if (!Error || PyModule_AddObjectRef(m, "Error", Error) < 0)
    return NULL;
  PyObject *zero = PyLong_FromLong(0);
  PyObject_SetAttrString(Error, "code", zero);
  Py_XDECREF(zero);
  for (size_t i = 0; i < sizeof exc_table / sizeof *exc_table; i++) {
    char qual[64];
    snprintf(qual, sizeof qual, "ferry.%s", exc_table[i].name);
    PyObject *cls =
        PyErr_NewExceptionWithDoc(qual, exc_table[i].doc, Error, NULL);
    if (!cls)
      return NULL;
    PyObject *code = PyLong_FromLong(exc_table[i].code);
    PyObject_SetAttrString(cls, "code", code);
    Py_XDECREF(code);
    code_exc[-exc_table[i].code] = cls;
    if (PyModule_AddObjectRef(m, exc_table[i].name, cls) < 0)
      return NULL;
  }
  if (PyModule_AddObjectRef(m, "Loader", (PyObject *)&LoaderType) < 0 ||
      PyModule_AddObjectRef(m, "Batch", (PyObject *)&BatchType) < 0 ||
      PyModule_AddObjectRef(m, "Array", (PyObject *)&ArrayType) < 0 ||
      PyModule_AddStringConstant(m, "__version__", ferry_version()) < 0 ||
      PyModule_AddStringConstant(m, "features", ferry_features()) < 0)
    return NULL;
  Py_AtExit(finalize_mpi);
  return m;
}
