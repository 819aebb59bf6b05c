/*
 * _ferry.c - the compiled core of the Python package: Loader, Batch and
 * Array over libferry, with the CPython C API only.  This file is the
 * module (its errors, the C-side lifetime of a batch, argument parsing,
 * MPI start, init); the objects are _ferry_array.c, _ferry_batch.c and
 * _ferry_loader.c, compiled into the same module (_ferry.h).
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
#include "_ferry.h"

#include <stdio.h>

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
PyObject *ferry__py_raise(int code, const char *msg) {
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
/* Drop one reference; the last one returns the slot.  Any thread, no GIL,
 * no Python. */
void ferry__py_ref_drop(batch_ref *r) {
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

void ferry__py_ref_take(batch_ref *r) { atomic_fetch_add(&r->refs, 1); }

/* Keyword arguments of a METH_FASTCALL | METH_KEYWORDS method, without
 * building a tuple and a dict per call (the per-batch path calls these
 * thousands of times a second): at most NPOS positional ones, then the
 * keywords of NAMES; OUT[i] is left as it was when argument i is absent. */
int ferry__py_fast_args(const char *fn, const char *const *names, int n,
                        Py_ssize_t npos, PyObject *const *args,
                        Py_ssize_t nargs, PyObject *kwnames, PyObject **out) {
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

int ferry__py_mpi_ready(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (fin) {
    ferry__py_raise(FERRY_EMPI, "MPI is already finalized");
    return -1;
  }
  if (!init) {
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) !=
        MPI_SUCCESS) {
      ferry__py_raise(FERRY_EMPI, "MPI_Init_thread failed");
      return -1;
    }
  }
  return 0;
}

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
    return ferry__py_raise(FERRY_EMPI, "MPI_Get_library_version failed");
  return PyUnicode_DecodeUTF8(buf, len, "replace");
}

/* (world size, thread level) after initialising MPI if nobody did. */
static PyObject *mod_mpi_init(PyObject *m, PyObject *u) {
  (void)m, (void)u;
  if (ferry__py_mpi_ready())
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
  if (PyType_Ready(&ferry__py_array_type) < 0 ||
      PyType_Ready(&ferry__py_batch_type) < 0 ||
      PyType_Ready(&ferry__py_loader_type) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
  if (!ferry__py_host_device &&
      !(ferry__py_host_device = Py_BuildValue("(ii)", kDLCPU, 0)))
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
  if (PyModule_AddObjectRef(m, "Loader", (PyObject *)&ferry__py_loader_type) <
          0 ||
      PyModule_AddObjectRef(m, "Batch", (PyObject *)&ferry__py_batch_type) <
          0 ||
      PyModule_AddObjectRef(m, "Array", (PyObject *)&ferry__py_array_type) <
          0 ||
      PyModule_AddStringConstant(m, "__version__", ferry_version()) < 0 ||
      PyModule_AddStringConstant(m, "features", ferry_features()) < 0)
    return NULL;
  Py_AtExit(finalize_mpi);
  return m;
}
