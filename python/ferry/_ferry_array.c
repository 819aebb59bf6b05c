/*
 * _ferry_array.c - ferry.Array, the zero-copy view of one variable of a
 * batch, and its exports: DLPack capsules (legacy and versioned, made
 * visible on a CUDA stream when asked), __array_interface__ and
 * __cuda_array_interface__.  Every view and every exported tensor holds a
 * reference of the batch's batch_ref (_ferry.c), so the slot goes back
 * only when the last of them is gone; the deleters run on any thread,
 * without the GIL, and touch nothing but that count and libferry.
 */
#include "_ferry.h"

#include <stdio.h>

static const char *typestr_of(ferry_dtype d) {
  /* bfloat16: NumPy has no such type, "<V2" (2 bytes) for its array
   * interface; DLPack says bfloat (torch.bfloat16, jax.numpy.bfloat16) */
  static const char *le[] = {"|b1", "|i1", "<i2", "<i4", "<i8",
                             "|u1", "<u2", "<u4", "<u8", "<f2",
                             "<f4", "<f8", "<V2"};
  static const char *be[] = {"|b1", "|i1", ">i2", ">i4", ">i8",
                             "|u1", ">u2", ">u4", ">u8", ">f2",
                             ">f4", ">f8", ">V2"};
  _Static_assert(sizeof le / sizeof le[0] == FERRY_DTYPE_COUNT,
                 "a typestr for every dtype");
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
  else if (d == FERRY_BFLOAT16)
    t.code = kDLBfloat;
  else
    t.code = kDLFloat;
  return t;
}

/* A new Array viewing DATA of batch R (takes a reference on R). */
PyObject *ferry__py_array_new(batch_ref *r, void *data, int dev_type,
                              int dev_id, ferry_dtype dtype, int ndim,
                              const int64_t *shape) {
  ArrayObject *a = PyObject_New(ArrayObject, &ferry__py_array_type);
  if (!a)
    return NULL;
  ferry__py_ref_take(r);
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
    ferry__py_ref_drop(a->r);
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
  ferry__py_ref_drop(r);
}

static void deleter_versioned(DLManagedTensorVersioned *t) {
  batch_ref *r = t->manager_ctx;
  free(t);
  ferry__py_ref_drop(r);
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
int ferry__py_array_sync_stream(ArrayObject *a, PyObject *stream) {
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
    ferry__py_raise(rc, ferry_last_error(NULL));
    return -1;
  }
  return 0;
}

/* A DLPack capsule viewing DATA of batch R (takes a reference on R, which
 * the deleter drops): versioned ("dltensor_versioned", DLPack 1.0) or
 * legacy ("dltensor").  C-contiguous strides. */
PyObject *ferry__py_capsule_new(batch_ref *r, void *data, int dev_type,
                                int dev_id, ferry_dtype dtype, int ndim,
                                const int64_t *shape, int versioned) {
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
  ferry__py_ref_take(r);
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
    ferry__py_ref_drop(r);
  }
  return cap;
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

PyObject *ferry__py_array_capsule(ArrayObject *a, int versioned) {
  return ferry__py_capsule_new(a->r, a->data, a->device_type, a->device_id,
                               a->dtype, a->ndim, a->shape, versioned);
}

static PyObject *array_dlpack(ArrayObject *a, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames) {
  static const char *const names[] = {"stream", "max_version", "dl_device",
                                      "copy"};
  if (nargs == 0 && !kwnames && a->device_type == kDLCPU)
    return ferry__py_array_capsule(a, 0); /* the common call: __dlpack__() */
  PyObject *v[4] = {Py_None, Py_None, Py_None, Py_None};
  if (ferry__py_fast_args("__dlpack__", names, 4, 0, args, nargs, kwnames, v))
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
  if (versioned < 0 || ferry__py_array_sync_stream(a, stream))
    return NULL;
  return ferry__py_array_capsule(a, versioned);
}

PyObject *ferry__py_host_device; /* (kDLCPU, 0), made once */

static PyObject *array_dlpack_device(ArrayObject *a, PyObject *unused) {
  (void)unused;
  if (a->device_type == kDLCPU && ferry__py_host_device) {
    Py_INCREF(ferry__py_host_device);
    return ferry__py_host_device;
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
      return ferry__py_raise(FERRY_ENODEV, ferry_last_error(NULL));
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

PyTypeObject ferry__py_array_type = {
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
