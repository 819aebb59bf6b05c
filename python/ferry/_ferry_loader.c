/*
 * _ferry_loader.c - ferry._ferry.Loader over ferry_loader: options from
 * Python values, open (initialising MPI when nobody did), epochs and
 * iteration (each ferry_next a ferry.Batch), state_dict and
 * load_state_dict, statistics, and close -- which frees the loader's
 * memory only when no Batch, Array or exported tensor still views it.
 */
#include "_ferry.h"

#include <stdio.h>

int ferry__py_loader_ok(LoaderObject *self) {
  if (self->c)
    return 1;
  ferry__py_raise(FERRY_ESTATE, "the ferry.Loader is closed");
  return 0;
}

/* ---- Loader ------------------------------------------------------------- */

static PyObject *loader_raise(LoaderObject *self, int rc) {
  return ferry__py_raise(rc, ferry_last_error(self->c ? self->c->L : NULL));
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
    ferry__py_raise(rc, ferry_last_error(NULL));
    return -1;
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
        ferry__py_raise(FERRY_EINTERNAL, "ferry_var_info_get failed");
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
    ferry__py_raise(rc, ferry_last_error(NULL));
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
  if (ferry__py_mpi_ready()) {
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
    ferry__py_raise(rc, ferry_last_error(NULL));
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
    Py_XDECREF(ferry__py_batch_release(bo, NULL)); /* clears owner: progress */
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
    ferry__py_raise(FERRY_ESTATE, PyUnicode_AsUTF8(msg));
    Py_DECREF(msg);
  }
  return -1;
}

static PyObject *loader_set_epoch(LoaderObject *self, PyObject *arg) {
  if (!ferry__py_loader_ok(self))
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
  if (!ferry__py_loader_ok(self) || ensure_epoch(self))
    return -1;
  int64_t n = ferry_num_batches(self->c->L);
  if (n < 0) {
    loader_raise(self, (int)n);
    return -1;
  }
  return (Py_ssize_t)n;
}

static PyObject *loader_iter(LoaderObject *self) {
  if (!ferry__py_loader_ok(self) || ensure_epoch(self))
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
  if (!ferry__py_loader_ok(self) || ensure_epoch(self))
    return NULL;
  if (self->ended)
    return NULL; /* StopIteration */
  BatchObject *bo = PyObject_New(BatchObject, &ferry__py_batch_type);
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
        ferry__py_raise(rc, PyUnicode_AsUTF8(msg));
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
    return ferry__py_raise(rc, ferry_last_error(NULL));
  Py_RETURN_NONE;
}

static PyObject *loader_close(LoaderObject *self, PyObject *u) {
  (void)u;
  return loader_close_impl(self, 0);
}

static PyObject *loader_enter(LoaderObject *self, PyObject *u) {
  (void)u;
  if (!ferry__py_loader_ok(self))
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
  if (!ferry__py_loader_ok(self) || ensure_epoch(self))
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
  if (!ferry__py_loader_ok(self))
    return NULL;
  PyObject *bytes = arg;
  if (PyDict_Check(arg)) {
    PyObject *fmt = PyDict_GetItemString(arg, "format");
    bytes = PyDict_GetItemString(arg, "state");
    if (!fmt || !PyUnicode_Check(fmt) ||
        PyUnicode_CompareWithASCIIString(fmt, "ferry-state") != 0 || !bytes)
      return ferry__py_raise(
          FERRY_EFORMAT, "load_state_dict: not a ferry state dict (expected "
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
  if (!ferry__py_loader_ok(self))
    return NULL;
  return PyBool_FromLong(ferry_checkpoint_requested(self->c->L));
}

static PyObject *loader_request_checkpoint(LoaderObject *self, PyObject *u) {
  (void)u;
  if (!ferry__py_loader_ok(self))
    return NULL;
  ferry_request_checkpoint(self->c->L);
  Py_RETURN_NONE;
}

static PyObject *loader_stats(LoaderObject *self, PyObject *u) {
  (void)u;
  if (!ferry__py_loader_ok(self))
    return NULL;
  ferry_stats s;
  int rc = ferry_stats_get(self->c->L, &s);
  if (rc)
    return loader_raise(self, rc);
  return Py_BuildValue(
      "{s:L,s:L,s:L,s:L,s:d,s:d,s:n,s:L,s:d,s:L,s:d,s:L,s:d,s:L,s:L,s:L,s:L}",
      "batches",
      (long long)s.batches, "samples", (long long)s.samples, "bytes",
      (long long)s.bytes, "bytes_read", (long long)s.bytes_read, "wait_seconds",
      s.wait_seconds, "read_seconds", s.read_seconds, "peak_resident_bytes",
      (Py_ssize_t)s.peak_resident_bytes, "h2d_bytes", (long long)s.h2d_bytes,
      "h2d_seconds", s.h2d_seconds, "exchange_bytes",
      (long long)s.exchange_bytes, "exchange_seconds", s.exchange_seconds,
      "images_decoded", (long long)s.images_decoded, "decode_cpu_seconds",
      s.decode_cpu_seconds, "cache_local_bytes", (long long)s.cache_local_bytes,
      "cache_remote_bytes", (long long)s.cache_remote_bytes,
      "cache_sent_bytes", (long long)s.cache_sent_bytes, "cache_stored_bytes",
      (long long)s.cache_stored_bytes);
}

static PyObject *loader_memory_budget(LoaderObject *self, PyObject *u) {
  (void)u;
  if (!ferry__py_loader_ok(self))
    return NULL;
  ferry_memory_budget m;
  int rc = ferry_memory_budget_get(self->c->L, &m);
  if (rc)
    return loader_raise(self, rc);
  return Py_BuildValue(
      "{s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n}", "batch_bytes",
      (Py_ssize_t)m.batch_bytes, "ring_bytes", (Py_ssize_t)m.ring_bytes,
      "read_bytes", (Py_ssize_t)m.read_bytes, "plan_bytes",
      (Py_ssize_t)m.plan_bytes, "cache_bytes", (Py_ssize_t)m.cache_bytes,
      "total_bytes", (Py_ssize_t)m.total_bytes, "pinned_bytes",
      (Py_ssize_t)m.pinned_bytes, "device_bytes", (Py_ssize_t)m.device_bytes,
      "held_bytes", (Py_ssize_t)m.held_bytes, "index_bytes",
      (Py_ssize_t)m.index_bytes);
}

/* cache=node|cluster: the cache's plan (ferry_cache_info_get), or None
 * with cache=none. */
static PyObject *loader_cache_info(LoaderObject *self, PyObject *u) {
  (void)u;
  if (!ferry__py_loader_ok(self))
    return NULL;
  ferry_cache_info ci;
  int rc = ferry_cache_info_get(self->c->L, &ci);
  if (rc)
    return loader_raise(self, rc);
  if (!ci.mode)
    Py_RETURN_NONE;
  return Py_BuildValue(
      "{s:s,s:i,s:i,s:i,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:s}", "mode",
      ci.mode == 1 ? "node" : "cluster", "nodes", ci.nodes, "node", ci.node,
      "node_ranks", ci.node_ranks, "capacity_bytes",
      (long long)ci.capacity_bytes, "node_bytes", (long long)ci.node_bytes,
      "max_node_bytes", (long long)ci.max_node_bytes, "region_bytes",
      (long long)ci.region_bytes, "dataset_bytes", (long long)ci.dataset_bytes,
      "cached_bytes", (long long)ci.cached_bytes, "chunks",
      (long long)ci.chunks, "cached_chunks", (long long)ci.cached_chunks,
      "storage_bytes_per_epoch", (long long)ci.storage_bytes_per_epoch,
      "network_bytes_per_epoch", (long long)ci.network_bytes_per_epoch, "note",
      ci.note);
}

/* pack=concat: the packing's figures of an epoch (ferry_pack_stats), or
 * None when the loader does not pack. */
/* categories(name): the names of a categorical variable's codes (code k
 * the k-th), or None. */
static PyObject *loader_categories(LoaderObject *self, PyObject *arg) {
  if (!ferry__py_loader_ok(self))
    return NULL;
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name)
    return NULL;
  int n = ferry_num_vars(self->c->L);
  for (int i = 0; i < n; i++) {
    ferry_var_info vi;
    if (ferry_var_info_get(self->c->L, i, &vi) != 0 ||
        strcmp(vi.name, name) != 0)
      continue;
    if (!vi.categories)
      Py_RETURN_NONE;
    PyObject *text = PyUnicode_FromString(vi.categories);
    if (!text)
      return NULL;
    PyObject *l = PyUnicode_Splitlines(text, 0);
    Py_DECREF(text);
    return l;
  }
  PyErr_Format(PyExc_KeyError, "no variable '%s' in this loader", name);
  return NULL;
}

static PyObject *loader_pack_stats(LoaderObject *self, PyObject *args) {
  long long epoch = 0;
  if (!PyArg_ParseTuple(args, "|L", &epoch) || !ferry__py_loader_ok(self))
    return NULL;
  ferry_pack_info pi;
  if (ferry_pack_stats(self->c->L, epoch, &pi) != 0)
    Py_RETURN_NONE;
  return Py_BuildValue("{s:L,s:i,s:L,s:L,s:L,s:L,s:L,s:d,s:L,s:L,s:L}",
                       "seq_len", (long long)pi.seq_len, "overlap", pi.overlap,
                       "documents", (long long)pi.documents, "tokens",
                       (long long)pi.tokens, "rows", (long long)pi.rows,
                       "padding", (long long)pi.padding, "dropped",
                       (long long)pi.dropped, "efficiency", pi.efficiency,
                       "split", (long long)pi.split, "runs",
                       (long long)pi.runs, "run_docs", (long long)pi.run_docs);
}

static PyObject *loader_get_vars(LoaderObject *self, void *u) {
  (void)u;
  if (!ferry__py_loader_ok(self))
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

/* {name: width} of the ragged variables that hold rows of a sparse matrix
 * (an AnnData CSR matrix's indices and data: its columns). */
static PyObject *loader_get_widths(LoaderObject *self, void *u) {
  (void)u;
  if (!ferry__py_loader_ok(self))
    return NULL;
  int n = ferry_num_vars(self->c->L);
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < n; i++) {
    ferry_var_info vi;
    if (ferry_var_info_get(self->c->L, i, &vi) != 0 || vi.width <= 0)
      continue;
    PyObject *w = PyLong_FromLongLong(vi.width);
    if (!w || PyDict_SetItemString(d, vi.name, w) < 0) {
      Py_XDECREF(w);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(w);
  }
  return d;
}

static PyObject *loader_get_num_samples(LoaderObject *self, void *u) {
  (void)u;
  if (!ferry__py_loader_ok(self))
    return NULL;
  return PyLong_FromLongLong(ferry_num_samples(self->c->L));
}
static PyObject *loader_get_rank(LoaderObject *self, void *u) {
  (void)u;
  if (!ferry__py_loader_ok(self))
    return NULL;
  return PyLong_FromLong(ferry_rank(self->c->L));
}
static PyObject *loader_get_world_size(LoaderObject *self, void *u) {
  (void)u;
  if (!ferry__py_loader_ok(self))
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
    {"categories", (PyCFunction)loader_categories, METH_O,
     "categories(name): the names of a categorical variable's codes (an "
     "AnnData obs column: code k is the k-th name), or None"},
    {"pack_stats", (PyCFunction)loader_pack_stats, METH_VARARGS,
     "pack_stats(epoch=0): with pack=concat the packing's figures (rows, "
     "tokens, efficiency, documents split...), else None"},
    {"memory_budget", (PyCFunction)loader_memory_budget, METH_NOARGS,
     "memory bound by component (dict)"},
    {"cache_info", (PyCFunction)loader_cache_info, METH_NOARGS,
     "cache_info(): with cache=node|cluster the cache's plan (dict: nodes, "
     "cached_bytes, region_bytes, storage and network bytes per epoch...), "
     "else None"},
    {"__enter__", (PyCFunction)loader_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)loader_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef loader_getset[] = {
    {"vars", (getter)loader_get_vars, NULL, "variable names", NULL},
    {"widths", (getter)loader_get_widths, NULL,
     "{name: columns} of the ragged variables that hold rows of a sparse "
     "matrix (an AnnData CSR matrix's indices and data; "
     "docs/singlecell.md)",
     NULL},
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

PyTypeObject ferry__py_loader_type = {
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
