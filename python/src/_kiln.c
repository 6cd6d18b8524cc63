/* _kiln.c — the CPython extension module kiln._kiln: kiln's compiler and runtime
 * behind Python calls. compile() runs the whole compiler (kiln_compile, cli/compile.c)
 * into a bundle in memory, exactly as `kiln compile` would write it (target, -O level
 * and --input-shape mean the same; the shapes go through the CLI's own parser);
 * load() and from_bytes() open a bundle with the runtime (runtime/kiln.h). Both
 * release the GIL while kiln works. Failures are kiln.KilnError with the message the
 * CLI prints after "kiln compile: " or "kiln run: ". This file also maps kiln's
 * dtypes to numpy's (and ml_dtypes' for those numpy lacks). The Bundle type is
 * bundle.c; the documented API is kiln/__init__.py. */
#define KILNPY_IMPORT_ARRAY
#include "kilnpy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "compile.h"

PyObject *kilnpy_error;

/* ---------------------------------------------------------------- dtypes */

/* ml_dtypes' name of each kiln dtype numpy has no type of its own for. */
static const char *ml_dtypes_name(kiln_dtype t) {
  switch (t) {
  case KILN_DTYPE_BFLOAT16: return "bfloat16";
  case KILN_DTYPE_FLOAT8E4M3FN: return "float8_e4m3fn";
  case KILN_DTYPE_FLOAT8E4M3FNUZ: return "float8_e4m3fnuz";
  case KILN_DTYPE_FLOAT8E5M2: return "float8_e5m2";
  case KILN_DTYPE_FLOAT8E5M2FNUZ: return "float8_e5m2fnuz";
  case KILN_DTYPE_UINT4: return "uint4";
  case KILN_DTYPE_INT4: return "int4";
  case KILN_DTYPE_FLOAT4E2M1: return "float4_e2m1fn";
  case KILN_DTYPE_FLOAT8E8M0: return "float8_e8m0fnu";
  case KILN_DTYPE_UINT2: return "uint2";
  case KILN_DTYPE_INT2: return "int2";
  default: return NULL;
  }
}

static int numpy_type(kiln_dtype t) {
  switch (t) {
  case KILN_DTYPE_FLOAT32: return NPY_FLOAT32;
  case KILN_DTYPE_FLOAT16: return NPY_FLOAT16;
  case KILN_DTYPE_FLOAT64: return NPY_FLOAT64;
  case KILN_DTYPE_INT8: return NPY_INT8;
  case KILN_DTYPE_INT16: return NPY_INT16;
  case KILN_DTYPE_INT32: return NPY_INT32;
  case KILN_DTYPE_INT64: return NPY_INT64;
  case KILN_DTYPE_UINT8: return NPY_UINT8;
  case KILN_DTYPE_UINT16: return NPY_UINT16;
  case KILN_DTYPE_UINT32: return NPY_UINT32;
  case KILN_DTYPE_UINT64: return NPY_UINT64;
  case KILN_DTYPE_BOOL: return NPY_BOOL;
  default: return -1;
  }
}

int kilnpy_is_narrow(kiln_dtype t) {
  return t == KILN_DTYPE_INT4 || t == KILN_DTYPE_UINT4 || t == KILN_DTYPE_INT2 || t == KILN_DTYPE_UINT2 ||
         t == KILN_DTYPE_FLOAT4E2M1;
}

PyArray_Descr *kilnpy_descr(kiln_dtype t) {
  int num = numpy_type(t);
  if (num >= 0) return PyArray_DescrFromType(num);
  if (t == KILN_DTYPE_STRING) {
    PyErr_SetString(PyExc_TypeError, "string tensors are not supported by the Python package yet: use kiln check "
                                      "with .pb test data, or the C API's kiln_model_set_input_strings");
    return NULL;
  }
  const char *name = ml_dtypes_name(t);
  if (!name) {
    PyErr_Format(PyExc_TypeError, "kiln dtype %d is unknown", (int)t);
    return NULL;
  }
  PyObject *mod = PyImport_ImportModule("ml_dtypes");
  if (!mod) {
    PyObject *type, *value, *tb; /* chain the ImportError to the TypeError */
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyErr_Format(PyExc_TypeError, "kiln's %s has no numpy dtype without the ml_dtypes package (pip install ml_dtypes)",
                 kiln_dtype_name(t));
    PyObject *t2, *v2, *tb2;
    PyErr_Fetch(&t2, &v2, &tb2);
    PyErr_NormalizeException(&t2, &v2, &tb2);
    PyException_SetCause(v2, value); /* steals value */
    Py_XDECREF(type);
    Py_XDECREF(tb);
    PyErr_Restore(t2, v2, tb2);
    return NULL;
  }
  PyObject *scalar = PyObject_GetAttrString(mod, name);
  Py_DECREF(mod);
  if (!scalar) return NULL;
  PyArray_Descr *d = NULL;
  int ok = PyArray_DescrConverter(scalar, &d);
  Py_DECREF(scalar);
  return ok ? d : NULL;
}

int kilnpy_dtype_of(PyArray_Descr *d, kiln_dtype *out) {
  if (d->type_num < NPY_USERDEF) { /* numpy's own types: by kind and size, in native byte order */
    if (!PyArray_ISNBO(d->byteorder)) return -1;
    for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
      int num = numpy_type((kiln_dtype)t);
      if (num < 0) continue;
      PyArray_Descr *k = PyArray_DescrFromType(num);
      int same = k && k->kind == d->kind && PyDataType_ELSIZE(k) == PyDataType_ELSIZE(d);
      Py_XDECREF(k);
      if (same) {
        *out = (kiln_dtype)t;
        return 0;
      }
    }
    return -1;
  }
  /* a user type: one of ml_dtypes' (never imported here unless numpy already
   * holds one of its dtypes, so the import is a dictionary lookup) */
  for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
    if (!ml_dtypes_name((kiln_dtype)t)) continue;
    PyArray_Descr *k = kilnpy_descr((kiln_dtype)t);
    if (!k) {
      PyErr_Clear();
      return -1;
    }
    int same = PyArray_EquivTypes(k, d);
    Py_DECREF(k);
    if (same) {
      *out = (kiln_dtype)t;
      return 0;
    }
  }
  return -1;
}

int kilnpy_threads(PyObject *v, int *out) {
  if (!v || v == Py_None) {
    *out = 0;
    return 0;
  }
  if (!PyLong_Check(v) || PyBool_Check(v)) {
    PyErr_Format(PyExc_TypeError, "threads must be an int or None, not %s", Py_TYPE(v)->tp_name);
    return -1;
  }
  long n = PyLong_AsLong(v);
  if (n == -1 && PyErr_Occurred()) return -1;
  if (n < 0 || n > KILN_MAX_THREADS) {
    PyErr_Format(PyExc_ValueError, "threads must be in [0, %d] (0: every online core), not %ld", KILN_MAX_THREADS, n);
    return -1;
  }
  *out = (int)n;
  return 0;
}

/* ---------------------------------------------------------------- compile */

/* {name: dims} into the CLI's import options, each through imp_parse_input_shape
 * as "NAME:D0xD1x..." (the CLI's --input-shape syntax and checks). */
static int input_shapes(PyObject *shapes, cli_import *ci) {
  if (!shapes || shapes == Py_None) return 0;
  if (!PyDict_Check(shapes)) {
    PyErr_Format(PyExc_TypeError, "input_shapes must be a dict {input name: shape tuple}, not %s",
                 Py_TYPE(shapes)->tp_name);
    return -1;
  }
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(shapes, &pos, &key, &value)) {
    if (!PyUnicode_Check(key)) {
      PyErr_Format(PyExc_TypeError, "input_shapes: input names are str, not %s", Py_TYPE(key)->tp_name);
      return -1;
    }
    const char *name = PyUnicode_AsUTF8(key);
    if (!name) return -1;
    if (ci->n_shapes == (int32_t)(sizeof ci->shapes / sizeof ci->shapes[0])) {
      PyErr_Format(PyExc_ValueError, "input_shapes: at most %d inputs", (int)(sizeof ci->shapes / sizeof ci->shapes[0]));
      return -1;
    }
    PyObject *dims = PySequence_Fast(value, "input_shapes: a shape is a tuple of ints");
    if (!dims) return -1;
    char spec[600];
    size_t used = (size_t)snprintf(spec, sizeof spec, "%s:", name);
    Py_ssize_t rank = PySequence_Fast_GET_SIZE(dims);
    for (Py_ssize_t d = 0; d < rank && used < sizeof spec; d++) {
      PyObject *item = PySequence_Fast_GET_ITEM(dims, d); /* an int, numpy's too; not a bool or a float */
      PyObject *index = PyBool_Check(item) ? NULL : PyNumber_Index(item);
      long long v = index ? PyLong_AsLongLong(index) : -1;
      Py_XDECREF(index);
      if (!index || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "input_shapes['%s']: dimension %zd is not an int", name, d);
        Py_DECREF(dims);
        return -1;
      }
      used += (size_t)snprintf(spec + used, sizeof spec - used, "%s%lld", d ? "x" : "", v);
    }
    Py_DECREF(dims);
    gir_err err = {{0}};
    if (used >= sizeof spec) {
      PyErr_Format(PyExc_ValueError, "input_shapes['%s']: too long", name);
      return -1;
    }
    if (imp_parse_input_shape(spec, &ci->shapes[ci->n_shapes], &err) < 0) {
      PyErr_SetString(PyExc_ValueError, err.msg);
      return -1;
    }
    ci->n_shapes++;
  }
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dict_set(PyObject *d, const char *key, PyObject *v) {
  if (!v) return -1;
  int rc = PyDict_SetItemString(d, key, v);
  Py_DECREF(v);
  return rc;
}

/* What kiln compile prints, as a dict. */
static PyObject *compile_stats(const kiln_compile_result *r, double seconds) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  if (dict_set(d, "kernels", PyLong_FromLong(r->kernels)) < 0 || dict_set(d, "calls", PyLong_FromLong(r->calls)) < 0 ||
      dict_set(d, "folded_nodes", PyLong_FromLong(r->folded_nodes)) < 0 ||
      dict_set(d, "arena_bytes", PyLong_FromLongLong(r->arena_bytes)) < 0 ||
      dict_set(d, "arena_lower_bound", PyLong_FromLongLong(r->arena_lower_bound)) < 0 ||
      dict_set(d, "intermediate_bytes", PyLong_FromLongLong(r->intermediate_bytes)) < 0 ||
      dict_set(d, "weights_bytes", PyLong_FromLongLong(r->weights_bytes)) < 0 ||
      dict_set(d, "code_bytes", PyLong_FromLongLong(r->code_bytes)) < 0 ||
      dict_set(d, "flops", PyLong_FromLongLong(r->flops)) < 0 ||
      dict_set(d, "generic_groups", PyLong_FromLong(r->generic_conv + r->generic_matmul + r->generic_pool)) < 0 ||
      dict_set(d, "compile_s", PyFloat_FromDouble(seconds)) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

PyDoc_STRVAR(compile_doc, "compile(path, target=None, opt_level=2, input_shapes=None, threads=None) -> (Bundle, dict)\n\n"
                          "Compiles an ONNX model into a bundle in memory; the dict holds what `kiln compile` prints.");

static PyObject *py_compile(PyObject *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"path", "target", "opt_level", "input_shapes", "threads", NULL};
  PyObject *path = NULL, *shapes = NULL, *threads_obj = NULL;
  const char *target = NULL;
  int opt_level = 2, threads = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|ziOO:compile", names, PyUnicode_FSConverter, &path, &target,
                                   &opt_level, &shapes, &threads_obj))
    return NULL;
  PyObject *result = NULL;
  cli_import *ci = PyMem_Calloc(1, sizeof *ci); /* large: 256 shapes and known inputs */
  if (!ci) {
    PyErr_NoMemory();
    goto out;
  }
  if (opt_level < 0 || opt_level > 3) {
    PyErr_Format(PyExc_ValueError, "opt_level must be 0, 1, 2 or 3, not %d", opt_level);
    goto out;
  }
  if (kilnpy_threads(threads_obj, &threads) < 0 || input_shapes(shapes, ci) < 0) goto out;
  cli_import_finish(ci);
  /* the options of `kiln compile` (cli/compile.c), the bundle into memory */
  kiln_compile_options o = {.threads_hint = 2, .opt_level = opt_level, .model_path = PyBytes_AS_STRING(path),
                            .output_path = NULL, .target = target, .import = &ci->opt};
  kiln_compile_result res;
  gir_err err = {{0}};
  int rc;
  double t0 = now_s(), seconds;
  Py_BEGIN_ALLOW_THREADS
  rc = kiln_compile(&o, &res, &err);
  Py_END_ALLOW_THREADS
  seconds = now_s() - t0;
  if (rc < 0) {
    PyErr_SetString(kilnpy_error, err.msg);
    goto out;
  }
  PyObject *stats = compile_stats(&res, seconds);
  if (!stats) {
    free(res.bundle);
    goto out;
  }
  /* opened on first use: a bundle for another CPU can still be saved */
  PyObject *bundle = kilnpy_bundle_new(res.bundle, res.bundle_bytes, NULL, threads);
  if (!bundle) {
    Py_DECREF(stats);
    goto out;
  }
  result = Py_BuildValue("(NN)", bundle, stats);
out:
  PyMem_Free(ci);
  Py_XDECREF(path);
  return result;
}

/* ---------------------------------------------------------------- load */

/* The whole file into malloc'ed memory: 0, or -1 with the reason in why. */
static int read_file(const char *path, void **data, size_t *n, char *why, size_t whylen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(why, whylen, "cannot open '%s': %s", path, strerror(errno));
    return -1;
  }
  int rc = -1;
  long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  void *buf = size >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)size + 1) : NULL;
  if (!buf) snprintf(why, whylen, "cannot read '%s': %s", path, size < 0 ? strerror(errno) : "out of memory");
  else if (fread(buf, 1, (size_t)size, f) != (size_t)size)
    snprintf(why, whylen, "cannot read '%s': %s", path, ferror(f) ? strerror(errno) : "it changed while read");
  else rc = 0;
  fclose(f);
  if (rc < 0) free(buf);
  else *data = buf, *n = (size_t)size;
  return rc;
}

PyDoc_STRVAR(load_doc, "load(path, threads=None) -> Bundle\n\nOpens a bundle file (model.kiln) with the runtime.");

static PyObject *py_load(PyObject *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"path", "threads", NULL};
  PyObject *path = NULL, *threads_obj = NULL;
  int threads = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O:load", names, PyUnicode_FSConverter, &path, &threads_obj))
    return NULL;
  if (kilnpy_threads(threads_obj, &threads) < 0) {
    Py_DECREF(path);
    return NULL;
  }
  /* opened by path, as `kiln run` opens it (the same messages), then read for
   * save, to_bytes and bench */
  const char *p = PyBytes_AS_STRING(path);
  kiln_model *m = NULL;
  void *data = NULL;
  size_t n = 0;
  char why[1024] = "";
  kiln_status st;
  int rc = 0;
  Py_BEGIN_ALLOW_THREADS
  kiln_options ko;
  kiln_options_init(&ko);
  ko.threads = threads;
  st = kiln_model_open(p, &ko, &m, why, sizeof why);
  if (st == KILN_OK) rc = read_file(p, &data, &n, why, sizeof why);
  if (rc < 0) kiln_model_close(m);
  Py_END_ALLOW_THREADS
  Py_DECREF(path);
  if (st != KILN_OK) return PyErr_Format(kilnpy_error, "%s: %s", kiln_status_str(st), why);
  if (rc < 0) return PyErr_Format(kilnpy_error, "%s", why);
  return kilnpy_bundle_new(data, n, m, threads);
}

PyDoc_STRVAR(from_bytes_doc, "from_bytes(data, threads=None) -> Bundle\n\nOpens a bundle held in a bytes-like object.");

static PyObject *py_from_bytes(PyObject *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"data", "threads", NULL};
  Py_buffer view;
  PyObject *threads_obj = NULL;
  int threads = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|O:from_bytes", names, &view, &threads_obj)) return NULL;
  void *data = NULL;
  if (kilnpy_threads(threads_obj, &threads) == 0 && !(data = malloc((size_t)view.len + 1))) PyErr_NoMemory();
  if (data) memcpy(data, view.buf, (size_t)view.len);
  size_t n = (size_t)view.len;
  PyBuffer_Release(&view);
  if (!data) return NULL;
  PyObject *b = kilnpy_bundle_new(data, n, NULL, threads);
  if (b && kilnpy_bundle_ensure_open((kilnpy_bundle *)b) < 0) Py_CLEAR(b);
  return b;
}

PyDoc_STRVAR(numpy_dtype_doc, "numpy_dtype(name) -> numpy.dtype\n\nThe numpy dtype of a kiln dtype name ('float32', "
                              "'bfloat16', ...); the types numpy lacks come from ml_dtypes.");

static PyObject *py_numpy_dtype(PyObject *self, PyObject *arg) {
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name) return NULL;
  kiln_dtype t;
  if (kiln_dtype_from_name(name, &t) != KILN_OK) {
    PyErr_Format(PyExc_ValueError, "'%s' is no kiln dtype", name);
    return NULL;
  }
  return (PyObject *)kilnpy_descr(t);
}

static PyMethodDef methods[] = {
    {"compile", (PyCFunction)(void (*)(void))py_compile, METH_VARARGS | METH_KEYWORDS, compile_doc},
    {"load", (PyCFunction)(void (*)(void))py_load, METH_VARARGS | METH_KEYWORDS, load_doc},
    {"from_bytes", (PyCFunction)(void (*)(void))py_from_bytes, METH_VARARGS | METH_KEYWORDS, from_bytes_doc},
    {"numpy_dtype", py_numpy_dtype, METH_O, numpy_dtype_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kiln", "kiln's compiler and runtime (the C extension under the kiln package).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kiln(void) {
  import_array();
  if (PyType_Ready(&kilnpy_bundle_type) < 0) return NULL;
  PyObject *m = PyModule_Create(&module);
  if (!m) return NULL;
  if (!kilnpy_error)
    kilnpy_error = PyErr_NewExceptionWithDoc("kiln.KilnError",
                                             "A failure inside kiln (compiler or runtime), with the message the CLI "
                                             "prints.", PyExc_RuntimeError, NULL);
  if (!kilnpy_error || PyModule_AddObjectRef(m, "KilnError", kilnpy_error) < 0 ||
      PyModule_AddObjectRef(m, "Bundle", (PyObject *)&kilnpy_bundle_type) < 0 ||
      PyModule_AddStringConstant(m, "version", KILN_VERSION) < 0 ||
      PyModule_AddIntConstant(m, "max_threads", KILN_MAX_THREADS) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
