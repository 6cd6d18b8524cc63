/* kilnpy.h — what the two files of the CPython extension `kiln._kiln` share
 * (_kiln.c: the module, kiln.compile / load / from_bytes, dtypes; bundle.c: the
 * Bundle type over one kiln_model). The extension is a thin layer over kiln's C API
 * (cli/compile.h's kiln_compile into memory, runtime/kiln.h); the Python package
 * kiln/__init__.py wraps it with docstrings and type hints. numpy's C API is
 * imported once, in _kiln.c (PY_ARRAY_UNIQUE_SYMBOL). */
#ifndef KILNPY_H
#define KILNPY_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL kilnpy_ARRAY_API
#ifndef KILNPY_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
#include "kiln.h"

/* kiln.KilnError (a RuntimeError): kiln's own failures, with the message the CLI
 * prints after "kiln COMMAND: ". Created at module init, never changed after. */
extern PyObject *kilnpy_error;

/* One opened bundle: the model, the bundle's bytes (for save, to_bytes and bench,
 * which opens a model of its own) and a lock, since a kiln_model runs one call at a
 * time and the GIL is released while it runs. */
typedef struct kilnpy_bundle {
  PyObject_HEAD
  kiln_model *model;
  void *bytes; /* malloc'ed */
  size_t n_bytes;
  int threads;             /* asked for at open (0: online cores) */
  PyThread_type_lock lock; /* held by whoever calls into model (not needed to read model: only
                            * set once, with the GIL held) */
} kilnpy_bundle;

extern PyTypeObject kilnpy_bundle_type;

/* A Bundle over the bundle in bytes and its model (which the new object owns from
 * then on, also on failure), the model to run on threads (0: online cores). A NULL
 * model is opened on first use (a bundle compiled for another CPU can still be
 * saved); NULL with an exception set when out of memory. */
PyObject *kilnpy_bundle_new(void *bytes, size_t n_bytes, kiln_model *model, int threads);
/* Opens the model now if it is not open: 0, or -1 with KilnError set (the runtime's
 * status and message, as `kiln run` prints them). */
int kilnpy_bundle_ensure_open(kilnpy_bundle *b);

/* The numpy dtype of a kiln dtype (new reference): numpy's own, or ml_dtypes' for
 * bfloat16, the float8/float4 types and the 4- and 2-bit integers. NULL with an
 * exception when numpy has none (ml_dtypes not installed). */
PyArray_Descr *kilnpy_descr(kiln_dtype t);
/* The kiln dtype of a numpy dtype: 0, or -1 (no exception set) when kiln has none. */
int kilnpy_dtype_of(PyArray_Descr *d, kiln_dtype *out);
/* Whether a dtype is one of the 4- and 2-bit types, which kiln stores one per byte
 * sign-extended (int4/int2) or zero-extended, and ml_dtypes with only the low bits
 * significant: such data is converted on the way in and out. */
int kilnpy_is_narrow(kiln_dtype t);
/* Threads from a Python value: None → 0 (online cores), else an int in
 * [0, KILN_MAX_THREADS]; -1 with ValueError/TypeError set. */
int kilnpy_threads(PyObject *v, int *out);

#endif
