/*
 * _ferry_batch.c - ferry.Batch: one batch of this rank as a mapping of
 * variable names to ferry.Array (batch['x'], keys, items, to_dict -- the
 * per-batch path of ferry.torch, built in C), its shards, sample indices
 * and padding flags, and release (the slot goes back when the Batch, its
 * Arrays and every tensor exported from them are gone).
 */
#include "_ferry.h"

#include <stdio.h>

static int batch_ok(BatchObject *b) {
  if (b->r)
    return 1;
  ferry__py_raise(FERRY_ESTATE,
                  "the ferry.Batch was released (release(), the end "
                  "of its with block, or the loader's close)");
  return 0;
}

static void batch_dealloc(BatchObject *b) {
  if (b->r) {
    b->r->owner = NULL;
    ferry__py_ref_drop(b->r);
  }
  Py_XDECREF(b->loader);
  PyObject_Free(b);
}

PyObject *ferry__py_batch_release(BatchObject *b, PyObject *u) {
  (void)u;
  if (b->r) {
    batch_ref *r = b->r;
    b->r = NULL;
    r->owner = NULL;
    ferry__py_ref_drop(r);
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
  return ferry__py_batch_release(b, NULL);
}

/* ferry.Ragged(values, offsets, max_len) (python/ferry/__init__.py): a
 * ragged variable's two arrays, each passed through fn first unless fn is
 * None (to_dict's converter); the references to values and offsets are
 * stolen. */
static PyObject *ragged_new(PyObject *values, PyObject *offsets,
                            int64_t max_len, PyObject *fn) {
  PyObject *mod = NULL, *cls = NULL, *r = NULL;
  if (!values || !offsets)
    goto done;
  if (fn && fn != Py_None) {
    PyObject *a = PyObject_CallOneArg(fn, values);
    Py_SETREF(values, a);
    if (!values)
      goto done;
    a = PyObject_CallOneArg(fn, offsets);
    Py_SETREF(offsets, a);
    if (!offsets)
      goto done;
  }
  if ((mod = PyImport_ImportModule("ferry")) &&
      (cls = PyObject_GetAttrString(mod, "Ragged")))
    r = PyObject_CallFunction(cls, "OOL", values, offsets, (long long)max_len);
done:
  Py_XDECREF(values);
  Py_XDECREF(offsets);
  Py_XDECREF(mod);
  Py_XDECREF(cls);
  return r;
}

/* A ragged variable's values and offsets, as Arrays or (host batches) as
 * capsules; a device batch's are in device memory (one device). */
static PyObject *batch_ragged(BatchObject *b, const ferry_tensor *t,
                              PyObject *fn, int capsule) {
  const ferry_batch *fb = b->r->b;
  int64_t n1 = fb->size + 1;
  /* offsets_dtype=int32: the int32 copy of the offsets */
  void *offs = t->offsets32 ? (void *)t->offsets32 : (void *)t->offsets;
  ferry_dtype odt = t->offsets32 || t->device_offsets32 ? FERRY_INT32
                                                        : FERRY_INT64;
  if (fb->nshards == 1) {
    int dev = fb->shards[0].device;
    PyObject *values = ferry__py_array_new(b->r, t->device_data, kDLCUDA, dev,
                                           t->dtype, t->ndim, t->shape);
    void *doffs = t->device_offsets32 ? (void *)t->device_offsets32
                                      : (void *)t->device_offsets;
    PyObject *offsets =
        ferry__py_array_new(b->r, doffs, kDLCUDA, dev, odt, 1, &n1);
    return ragged_new(values, offsets, t->max_len, fn);
  }
  PyObject *values =
      capsule ? ferry__py_capsule_new(b->r, t->data, kDLCPU, 0, t->dtype,
                                      t->ndim, t->shape, 0)
              : ferry__py_array_new(b->r, t->data, kDLCPU, 0, t->dtype,
                                    t->ndim, t->shape);
  PyObject *offsets =
      capsule ? ferry__py_capsule_new(b->r, offs, kDLCPU, 0, odt, 1, &n1, 0)
              : ferry__py_array_new(b->r, offs, kDLCPU, 0, odt, 1, &n1);
  return ragged_new(values, offsets, t->max_len, fn);
}

/* The Array of variable v (a ferry.Ragged of two for a ragged one). */
static PyObject *batch_var(BatchObject *b, int v) {
  const ferry_batch *fb = b->r->b;
  const ferry_tensor *t = &fb->vars[v];
  if (t->offsets)
    return batch_ragged(b, t, NULL, 0);
  if (fb->nshards > 1) {
    PyErr_SetString(PyExc_ValueError,
                    "batch[name]: this batch is split over several devices "
                    "(devices=all): take each device's share from "
                    "batch.shards[i][name]");
    return NULL;
  }
  if (fb->nshards == 1)
    return ferry__py_array_new(b->r, t->device_data, kDLCUDA,
                               fb->shards[0].device, t->dtype, t->ndim,
                               t->shape);
  return ferry__py_array_new(b->r, t->data, kDLCPU, 0, t->dtype, t->ndim,
                             t->shape);
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
    x = capsule ? ferry__py_capsule_new(b->r, p, kDLCPU, 0, dt, 1, &n, 0)
                : ferry__py_array_new(b->r, p, kDLCPU, 0, dt, 1, &n);
  } else if (fb->vars[v].offsets) { /* ragged: fn applies to each array */
    return batch_ragged(b, &fb->vars[v], fn, capsule && fb->nshards == 0);
  } else if (capsule && fb->nshards == 0) { /* host: no Array needed */
    const ferry_tensor *t = &fb->vars[v];
    x = ferry__py_capsule_new(b->r, t->data, kDLCPU, 0, t->dtype, t->ndim,
                              t->shape, 0);
  } else {
    x = batch_var(b, v);
    if (x && capsule) {
      ArrayObject *a = (ArrayObject *)x;
      PyObject *c = ferry__py_array_sync_stream(a, stream)
                        ? NULL
                        : ferry__py_array_capsule(a, 0);
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
  if (ferry__py_fast_args("to_dict", names, 6, 2, args, nargs, kwnames, v))
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
      ArrayObject *a = (ArrayObject *)ferry__py_array_new(
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
  return ferry__py_array_new(b->r, (void *)b->r->b->sample_ids, kDLCPU, 0,
                             FERRY_INT64, 1, &n);
}

static PyObject *batch_get_padded(BatchObject *b, void *u) {
  (void)u;
  if (!batch_ok(b))
    return NULL;
  int64_t n = b->r->b->size;
  return ferry__py_array_new(b->r, (void *)b->r->b->padded, kDLCPU, 0,
                             FERRY_UINT8, 1, &n);
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

/* batch.lengths(name): a padded ragged variable's lengths (the pad
 * option), an int64 Array of the batch's size; ValueError otherwise. */
static PyObject *batch_lengths(BatchObject *b, PyObject *key) {
  if (!batch_ok(b))
    return NULL;
  int v = batch_lookup(b, key);
  if (v < 0)
    return NULL;
  const ferry_batch *fb = b->r->b;
  const ferry_tensor *t = &fb->vars[v];
  if (!t->lengths) {
    PyErr_Format(PyExc_ValueError,
                 "batch.lengths('%s'): not a padded ragged variable (set "
                 "the pad option; without it batch['%s'] is a ferry.Ragged "
                 "with its offsets)",
                 t->name, t->name);
    return NULL;
  }
  int64_t n = fb->size;
  if (fb->nshards == 1 && t->device_lengths) /* device=cuda: on the device */
    return ferry__py_array_new(b->r, (void *)t->device_lengths, kDLCUDA,
                               fb->shards[0].device, FERRY_INT64, 1, &n);
  return ferry__py_array_new(b->r, (void *)t->lengths, kDLCPU, 0, FERRY_INT64,
                             1, &n);
}

static PyMethodDef batch_methods[] = {
    {"lengths", (PyCFunction)batch_lengths, METH_O,
     "lengths(name): with the pad option, the rows of each sample of ragged "
     "(on the device with device=cuda) "
     "variable NAME (batch[name] is then padded, [size, W, ...])"},
    {"release", (PyCFunction)ferry__py_batch_release, METH_NOARGS,
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

PyTypeObject ferry__py_batch_type = {
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
