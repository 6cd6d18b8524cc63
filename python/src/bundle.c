/* bundle.c — kiln._kiln.Bundle: one compiled bundle and the runtime's model of it.
 *
 * The object owns the bundle's bytes (save, to_bytes, and bench, which opens a model
 * of its own) and the kiln_model, opened from those bytes on first use. A kiln_model
 * runs one call at a time and the GIL is released while it works, so every call
 * into it holds the object's lock. run() checks its inputs with the runtime's own
 * kiln_model_set_input (name, then dtype, then shape: the messages `kiln run`
 * prints after "input NAME: ") and passes each array's memory straight to it when
 * the array is C-contiguous with the model's dtype (set_input copies it into the
 * model; nothing else does); outputs are copied into new numpy arrays, allocated
 * before the run, since the model's buffers are overwritten by the next one. The
 * 4- and 2-bit types are one per byte in both kiln and ml_dtypes, but kiln's int4
 * and int2 are sign-extended and ml_dtypes reads only the low bits: those bytes
 * are converted on the way in and out. */
#include "kilnpy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

/* ---------------------------------------------------------------- lifetime */

PyObject *kilnpy_bundle_new(void *bytes, size_t n_bytes, kiln_model *model, int threads) {
  kilnpy_bundle *b = PyObject_New(kilnpy_bundle, &kilnpy_bundle_type);
  if (!b) {
    free(bytes);
    kiln_model_close(model);
    return NULL;
  }
  b->model = model;
  b->bytes = bytes;
  b->n_bytes = n_bytes;
  b->threads = threads;
  b->lock = PyThread_allocate_lock();
  if (!b->lock) {
    Py_DECREF(b); /* frees bytes */
    return PyErr_NoMemory();
  }
  return (PyObject *)b;
}

static void bundle_dealloc(kilnpy_bundle *b) {
  kiln_model_close(b->model); /* joins the model's worker threads, which never touch Python */
  free(b->bytes);
  if (b->lock) PyThread_free_lock(b->lock);
  PyObject_Free(b);
}

/* A model of b's bytes with `threads` threads, opened with the GIL released; NULL
 * with KilnError set. */
static kiln_model *open_model(const kilnpy_bundle *b, int threads) {
  kiln_model *m = NULL;
  char why[1024] = "";
  kiln_status st;
  Py_BEGIN_ALLOW_THREADS
  kiln_options ko;
  kiln_options_init(&ko);
  ko.threads = threads;
  st = kiln_model_open_memory(b->bytes, b->n_bytes, &ko, &m, why, sizeof why);
  Py_END_ALLOW_THREADS
  if (st != KILN_OK) {
    PyErr_Format(kilnpy_error, "%s: %s", kiln_status_str(st), why);
    return NULL;
  }
  return m;
}

int kilnpy_bundle_ensure_open(kilnpy_bundle *b) {
  if (b->model) return 0; /* b->model is only read and written with the GIL held */
  kiln_model *m = open_model(b, b->threads);
  if (!m) return -1;
  if (b->model) kiln_model_close(m); /* another thread opened it meanwhile */
  else b->model = m;
  return 0;
}

/* ---------------------------------------------------------------- inputs */

/* One input as the runtime's kiln_model_set_input takes it, and the references
 * that keep its memory alive. */
typedef struct feed {
  PyObject *key, *arr; /* strong references */
  const char *name;
  kiln_dtype dtype;
  int32_t rank;
  int64_t dims[KILN_MAX_RANK];
  const void *data;
  size_t bytes;
} feed;

static void feeds_free(feed *f, Py_ssize_t n) {
  for (Py_ssize_t i = 0; f && i < n; i++) {
    Py_XDECREF(f[i].key);
    Py_XDECREF(f[i].arr);
  }
  PyMem_Free(f);
}

/* The bytes of 4- and 2-bit data as kiln holds them: int4/int2 sign-extended from
 * their low bits, the unsigned and float4 codes masked (to_kiln); or as ml_dtypes
 * writes them, only the low bits set (!to_kiln). */
static void convert_narrow(kiln_dtype t, unsigned char *p, size_t n, int to_kiln) {
  int bits = t == KILN_DTYPE_INT2 || t == KILN_DTYPE_UINT2 ? 2 : 4;
  unsigned mask = (1u << bits) - 1;
  int sign = to_kiln && (t == KILN_DTYPE_INT4 || t == KILN_DTYPE_INT2);
  for (size_t i = 0; i < n; i++) {
    unsigned v = p[i] & mask;
    if (sign && (v >> (bits - 1))) v |= ~mask;
    p[i] = (unsigned char)v;
  }
}

/* key → value of a run() or bench() dict into f. Values that are not arrays are
 * converted to the input's dtype (a list of floats); an array must have it (checked
 * by set_input, which names both); a non-contiguous one is copied. */
static int feed_prepare(kiln_model *m, PyObject *key, PyObject *value, feed *f) {
  memset(f, 0, sizeof *f);
  if (!PyUnicode_Check(key)) {
    PyErr_Format(PyExc_TypeError, "input names are str, not %s", Py_TYPE(key)->tp_name);
    return -1;
  }
  Py_INCREF(key);
  f->key = key;
  if (!(f->name = PyUnicode_AsUTF8(key))) return -1;
  int32_t idx = kiln_model_input_index(m, f->name);
  kiln_tensor_info info;
  if (idx >= 0) kiln_model_input_info(m, idx, &info);
  PyObject *arr;
  if (PyArray_Check(value)) {
    Py_INCREF(value);
    arr = value;
  } else if (idx >= 0) {
    PyArray_Descr *d = kilnpy_descr(info.dtype);
    arr = d ? PyArray_FromAny(value, d, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL) : NULL;
  } else {
    arr = PyArray_FROM_O(value);
  }
  if (!arr) return -1;
  f->arr = arr;
  f->dtype = KILN_DTYPE_FLOAT32; /* an unknown name: set_input refuses the name first */
  if (idx >= 0 && kilnpy_dtype_of(PyArray_DESCR((PyArrayObject *)arr), &f->dtype) < 0) {
    PyObject *s = PyObject_Str((PyObject *)PyArray_DESCR((PyArrayObject *)arr));
    if (s) PyErr_Format(PyExc_TypeError, "set_input: input '%s' is %s, got numpy's %U, which kiln has no dtype for",
                        f->name, kiln_dtype_name(info.dtype), s);
    Py_XDECREF(s);
    return -1;
  }
  if (!PyArray_IS_C_CONTIGUOUS((PyArrayObject *)arr) || kilnpy_is_narrow(f->dtype)) {
    PyObject *copy = PyArray_NewCopy((PyArrayObject *)arr, NPY_CORDER);
    if (!copy) return -1;
    Py_SETREF(f->arr, copy);
    if (kilnpy_is_narrow(f->dtype))
      convert_narrow(f->dtype, PyArray_DATA((PyArrayObject *)copy), (size_t)PyArray_NBYTES((PyArrayObject *)copy), 1);
  }
  PyArrayObject *a = (PyArrayObject *)f->arr;
  f->rank = PyArray_NDIM(a);
  for (int d = 0; d < f->rank && d < KILN_MAX_RANK; d++) f->dims[d] = PyArray_DIM(a, d);
  f->data = PyArray_DATA(a);
  f->bytes = (size_t)PyArray_NBYTES(a);
  return 0;
}

/* Every entry of a dict (NULL or None: none) as feeds; *given[i] set for each
 * input i of m that has one (given has the model's input count). */
static int feeds_from(kiln_model *m, PyObject *inputs, feed **out, Py_ssize_t *n_out, char *given) {
  *out = NULL;
  *n_out = 0;
  if (!inputs || inputs == Py_None) return 0;
  if (!PyDict_Check(inputs)) {
    PyErr_Format(PyExc_TypeError, "inputs must be a dict {input name: array}, not %s", Py_TYPE(inputs)->tp_name);
    return -1;
  }
  /* a snapshot: converting a value may run Python code that changes the dict */
  PyObject *items = PyDict_Items(inputs);
  if (!items) return -1;
  Py_ssize_t n = PyList_GET_SIZE(items), i = 0;
  feed *f = PyMem_Calloc((size_t)n + 1, sizeof *f);
  if (!f) {
    Py_DECREF(items);
    PyErr_NoMemory();
    return -1;
  }
  for (; i < n; i++) {
    PyObject *kv = PyList_GET_ITEM(items, i);
    if (feed_prepare(m, PyTuple_GET_ITEM(kv, 0), PyTuple_GET_ITEM(kv, 1), &f[i]) < 0) {
      feeds_free(f, i + 1); /* this one's references too */
      Py_DECREF(items);
      return -1;
    }
    int32_t idx = kiln_model_input_index(m, f[i].name);
    if (idx >= 0) given[idx] = 1;
  }
  Py_DECREF(items);
  *out = f;
  *n_out = n;
  return 0;
}

/* What went wrong while the GIL was released, raised once it is held again. */
typedef struct failure {
  enum { FAIL_NONE, FAIL_STATUS, FAIL_MISSING, FAIL_NOMEM } kind;
  kiln_status status;
  char msg[1024];
} failure;

static int set_feeds(kiln_model *m, const feed *f, Py_ssize_t n, failure *x) {
  for (Py_ssize_t i = 0; i < n; i++) {
    kiln_status st = kiln_model_set_input(m, f[i].name, f[i].dtype, f[i].rank, f[i].dims, f[i].data, f[i].bytes);
    if (st != KILN_OK) {
      x->kind = FAIL_STATUS;
      x->status = st;
      snprintf(x->msg, sizeof x->msg, "%s", kiln_model_last_error(m));
      return -1;
    }
  }
  return 0;
}

static PyObject *raise_failure(const failure *x) {
  if (x->kind == FAIL_NOMEM) return PyErr_NoMemory();
  PyObject *type = kilnpy_error;
  if (x->kind == FAIL_MISSING || (x->kind == FAIL_STATUS && x->status == KILN_ERR_SHAPE)) type = PyExc_ValueError;
  if (x->kind == FAIL_STATUS && x->status == KILN_ERR_DTYPE) type = PyExc_TypeError;
  PyErr_SetString(type, x->msg);
  return NULL;
}

/* "'a', 'b'": the model's input names, for messages. */
static void input_names(kiln_model *m, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = 0;
  for (int32_t i = 0; i < kiln_model_input_count(m) && used < n; i++) {
    kiln_tensor_info info;
    kiln_model_input_info(m, i, &info);
    used += (size_t)snprintf(buf + used, n - used, "%s'%s'", i ? ", " : "", info.name);
  }
}

/* ---------------------------------------------------------------- run */

PyDoc_STRVAR(run_doc, "run(inputs) -> dict\n\nRuns the model on {input name: array} (every input) and returns "
                      "{output name: new array}.");

static PyObject *bundle_run(kilnpy_bundle *self, PyObject *inputs) {
  if (kilnpy_bundle_ensure_open(self) < 0) return NULL;
  kiln_model *m = self->model;
  if (!PyDict_Check(inputs)) {
    PyErr_Format(PyExc_TypeError, "run() takes a dict {input name: array}, not %s", Py_TYPE(inputs)->tp_name);
    return NULL;
  }
  int32_t n_in = kiln_model_input_count(m), n_out = kiln_model_output_count(m);
  char *given = PyMem_Calloc((size_t)n_in + 1, 1);
  PyObject **outs = PyMem_Calloc((size_t)n_out + 1, sizeof *outs);
  int64_t(*shape)[KILN_MAX_RANK] = PyMem_Calloc((size_t)n_out + 1, sizeof *shape); /* each output's, this run */
  PyObject *result = NULL;
  feed *f = NULL;
  Py_ssize_t n_feeds = 0;
  if (!given || !outs || !shape) {
    PyErr_NoMemory();
    goto out;
  }
  if (feeds_from(m, inputs, &f, &n_feeds, given) < 0) goto out;
  /* the outputs' arrays first: after the run, only copies under the lock */
  for (int32_t i = 0; i < n_out; i++) {
    kiln_tensor_info info;
    kiln_model_output_info(m, i, &info);
    npy_intp dims[KILN_MAX_RANK];
    for (int d = 0; d < info.rank; d++) dims[d] = (npy_intp)info.dims[d];
    PyArray_Descr *d = kilnpy_descr(info.dtype);
    if (!d || !(outs[i] = PyArray_NewFromDescr(&PyArray_Type, d, info.rank, dims, NULL, NULL, 0, NULL))) goto out;
  }
  failure x = {FAIL_NONE, KILN_OK, ""};
  Py_BEGIN_ALLOW_THREADS
  PyThread_acquire_lock(self->lock, WAIT_LOCK);
  if (set_feeds(m, f, n_feeds, &x) == 0) {
    for (int32_t i = 0; i < n_in && x.kind == FAIL_NONE; i++) {
      if (given[i]) continue;
      kiln_tensor_info info;
      char names[512];
      kiln_model_input_info(m, i, &info);
      input_names(m, names, sizeof names);
      x.kind = FAIL_MISSING;
      snprintf(x.msg, sizeof x.msg, "run: input '%s' is missing: run() takes every input of the model (%s)",
               info.name, names);
    }
  }
  if (x.kind == FAIL_NONE && kiln_model_run(m) != KILN_OK) {
    x.kind = FAIL_STATUS;
    x.status = KILN_ERR_RUN;
    snprintf(x.msg, sizeof x.msg, "%s", kiln_model_last_error(m));
  }
  for (int32_t i = 0; i < n_out && x.kind == FAIL_NONE; i++) {
    const void *data;
    kiln_tensor_info info;
    kiln_model_output(m, i, &data, &info); /* a data-dependent size: the run's shape, a prefix of the bound */
    memcpy(shape[i], info.dims, sizeof shape[i]);
    PyArrayObject *a = (PyArrayObject *)outs[i];
    if (info.bytes > 0) memcpy(PyArray_DATA(a), data, (size_t)info.bytes);
    if (kilnpy_is_narrow(info.dtype)) convert_narrow(info.dtype, PyArray_DATA(a), (size_t)info.bytes, 0);
  }
  PyThread_release_lock(self->lock);
  Py_END_ALLOW_THREADS
  if (x.kind != FAIL_NONE) {
    raise_failure(&x);
    goto out;
  }
  for (int32_t i = 0; i < n_out; i++) { /* an output smaller than its bound this run: its own array */
    PyArrayObject *a = (PyArrayObject *)outs[i];
    int same = 1;
    npy_intp dims[KILN_MAX_RANK];
    for (int d = 0; d < PyArray_NDIM(a); d++) same &= (dims[d] = (npy_intp)shape[i][d]) == PyArray_DIMS(a)[d];
    if (same) continue;
    Py_INCREF(PyArray_DESCR(a));
    PyObject *b = PyArray_NewFromDescr(&PyArray_Type, PyArray_DESCR(a), PyArray_NDIM(a), dims, NULL, NULL, 0, NULL);
    if (!b) goto out;
    memcpy(PyArray_DATA((PyArrayObject *)b), PyArray_DATA(a), (size_t)PyArray_NBYTES((PyArrayObject *)b));
    Py_DECREF(outs[i]);
    outs[i] = b;
  }
  if (!(result = PyDict_New())) goto out;
  for (int32_t i = 0; i < n_out; i++) {
    kiln_tensor_info info;
    kiln_model_output_info(m, i, &info);
    if (PyDict_SetItemString(result, info.name, outs[i]) < 0) {
      Py_CLEAR(result);
      goto out;
    }
  }
out:
  for (int32_t i = 0; outs && i < n_out; i++) Py_XDECREF(outs[i]);
  PyMem_Free(outs);
  PyMem_Free(shape);
  PyMem_Free(given);
  feeds_free(f, n_feeds);
  return result;
}

/* ---------------------------------------------------------------- bench */

PyDoc_STRVAR(bench_doc,
             "bench_json(inputs, threads, repeat, warmup, profile_runs, model, is_onnx, opt_level, compile_s, "
             "generic_groups) -> str\n\n`kiln bench --json`'s report on a model of its own opened from this bundle.");

static int in_range(const char *what, int v, int lo, int hi) {
  if (v >= lo && v <= hi) return 0;
  PyErr_Format(PyExc_ValueError, "%s must be in [%d, %d], not %d", what, lo, hi, v);
  return -1;
}

static PyObject *bundle_bench_json(kilnpy_bundle *self, PyObject *args) {
  PyObject *inputs, *threads_obj;
  int repeat, warmup, profile_runs, is_onnx, opt_level, generic;
  const char *model_label;
  double compile_s;
  if (!PyArg_ParseTuple(args, "OOiiisiidi:bench_json", &inputs, &threads_obj, &repeat, &warmup, &profile_runs,
                        &model_label, &is_onnx, &opt_level, &compile_s, &generic))
    return NULL;
  int threads;
  if (kilnpy_threads(threads_obj, &threads) < 0 || in_range("repeat", repeat, 1, 1000000) < 0 ||
      in_range("warmup", warmup, 0, 1000000) < 0 || in_range("profile_runs", profile_runs, 0, 1000000) < 0)
    return NULL;
  /* a model of its own: this bundle's keeps its threads, inputs and state */
  kiln_model *m = open_model(self, threads);
  if (!m) return NULL;
  int32_t n_in = kiln_model_input_count(m);
  char *given = PyMem_Calloc((size_t)n_in + 1, 1);
  cli_input *invented = PyMem_Calloc((size_t)n_in + 1, sizeof *invented);
  feed *f = NULL;
  Py_ssize_t n_feeds = 0;
  char *text = NULL;
  failure x = {FAIL_NONE, KILN_OK, ""};
  if (!given || !invented) PyErr_NoMemory();
  else if (feeds_from(m, inputs, &f, &n_feeds, given) == 0) {
    Py_BEGIN_ALLOW_THREADS
    if (set_feeds(m, f, n_feeds, &x) == 0) {
      /* the others invented as kiln bench does: seeded, in input order (cli/inputs.c) */
      uint64_t seed = 42;
      for (int32_t i = 0; i < n_in && x.kind == FAIL_NONE; i++) {
        if (given[i]) continue;
        kiln_tensor_info info;
        kiln_model_input_info(m, i, &info);
        char how[600];
        snprintf(how, sizeof how, "inputs={'%s': array}", info.name);
        cli_input *in = &invented[i];
        if (cli_invent_input(m, i, in, &seed, how, x.msg, sizeof x.msg) < 0) x.kind = FAIL_MISSING;
        else if (kiln_model_set_input(m, info.name, in->arr.dtype, in->arr.rank, in->arr.dims, in->arr.data,
                                      (size_t)in->arr.bytes) != KILN_OK) {
          x.kind = FAIL_STATUS, x.status = KILN_ERR_INVALID_ARGUMENT;
          snprintf(x.msg, sizeof x.msg, "%s", kiln_model_last_error(m));
        }
      }
    }
    cli_bench_measurement me;
    if (x.kind == FAIL_NONE) {
      cli_peak peak; /* measured while nothing else of ours runs */
      cli_measure_peak(&peak);
      if (cli_bench_measure(m, repeat, warmup, profile_runs, &peak, NULL, &me, x.msg, sizeof x.msg) < 0)
        x.kind = FAIL_STATUS, x.status = KILN_ERR_RUN;
      cli_bench_report rep = {.model = model_label, .is_onnx = is_onnx, .opt_level = opt_level,
                              .generic_groups = generic, .compile_s = compile_s, .repeat = repeat, .warmup = warmup,
                              .profile_runs = profile_runs, .measured = &me};
      if (x.kind == FAIL_NONE && !(text = cli_bench_json(&rep))) x.kind = FAIL_NOMEM;
      cli_bench_measurement_free(&me);
    }
    Py_END_ALLOW_THREADS
    if (x.kind != FAIL_NONE) raise_failure(&x);
  }
  PyObject *result = text ? PyUnicode_FromString(text) : NULL;
  free(text);
  cli_inputs_free(invented, n_in);
  PyMem_Free(invented);
  PyMem_Free(given);
  feeds_free(f, n_feeds);
  Py_BEGIN_ALLOW_THREADS
  kiln_model_close(m);
  Py_END_ALLOW_THREADS
  return result;
}

/* ---------------------------------------------------------------- the rest */

static PyObject *tensor_list(kilnpy_bundle *self, int outputs) {
  if (kilnpy_bundle_ensure_open(self) < 0) return NULL;
  kiln_model *m = self->model;
  int32_t n = outputs ? kiln_model_output_count(m) : kiln_model_input_count(m);
  PyObject *list = PyList_New(n);
  for (int32_t i = 0; list && i < n; i++) {
    kiln_tensor_info info;
    if (outputs) kiln_model_output_info(m, i, &info);
    else kiln_model_input_info(m, i, &info);
    PyObject *shape = PyTuple_New(info.rank);
    for (int d = 0; shape && d < info.rank; d++) {
      PyObject *v = PyLong_FromLongLong(info.dims[d]);
      if (!v) Py_CLEAR(shape);
      else PyTuple_SET_ITEM(shape, d, v);
    }
    PyObject *dtype = (PyObject *)kilnpy_descr(info.dtype);
    if (!dtype) { /* numpy lacks it (no ml_dtypes): the kiln name */
      PyErr_Clear();
      dtype = PyUnicode_FromString(kiln_dtype_name(info.dtype));
    }
    PyObject *t = shape && dtype ? Py_BuildValue("(sOO)", info.name, shape, dtype) : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    if (!t) Py_CLEAR(list);
    else PyList_SET_ITEM(list, i, t);
  }
  return list;
}

static PyObject *bundle_inputs(kilnpy_bundle *self, PyObject *unused) { return tensor_list(self, 0); }
static PyObject *bundle_outputs(kilnpy_bundle *self, PyObject *unused) { return tensor_list(self, 1); }

static PyObject *bundle_save(kilnpy_bundle *self, PyObject *arg) {
  PyObject *path = NULL;
  if (!PyUnicode_FSConverter(arg, &path)) return NULL;
  int saved_errno = 0;
  Py_BEGIN_ALLOW_THREADS
  FILE *fp = fopen(PyBytes_AS_STRING(path), "wb");
  if (!fp) saved_errno = errno;
  else {
    if (fwrite(self->bytes, 1, self->n_bytes, fp) != self->n_bytes) saved_errno = errno ? errno : EIO;
    if (fclose(fp) != 0 && !saved_errno) saved_errno = errno;
  }
  Py_END_ALLOW_THREADS
  if (saved_errno) {
    errno = saved_errno;
    PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, arg);
    Py_DECREF(path);
    return NULL;
  }
  Py_DECREF(path);
  Py_RETURN_NONE;
}

static PyObject *bundle_to_bytes(kilnpy_bundle *self, PyObject *unused) {
  return PyBytes_FromStringAndSize(self->bytes, (Py_ssize_t)self->n_bytes);
}

static PyObject *bundle_open(kilnpy_bundle *self, PyObject *unused) {
  if (kilnpy_bundle_ensure_open(self) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *get_threads(kilnpy_bundle *self, void *closure) {
  if (kilnpy_bundle_ensure_open(self) < 0) return NULL;
  return PyLong_FromLong(kiln_model_threads(self->model));
}

static int set_threads(kilnpy_bundle *self, PyObject *v, void *closure) {
  int threads;
  if (!v) {
    PyErr_SetString(PyExc_AttributeError, "threads cannot be deleted");
    return -1;
  }
  if (kilnpy_threads(v, &threads) < 0 || kilnpy_bundle_ensure_open(self) < 0) return -1;
  kiln_status st;
  char why[1024] = "";
  Py_BEGIN_ALLOW_THREADS
  PyThread_acquire_lock(self->lock, WAIT_LOCK);
  st = kiln_model_set_threads(self->model, threads);
  if (st != KILN_OK) snprintf(why, sizeof why, "%s", kiln_model_last_error(self->model));
  PyThread_release_lock(self->lock);
  Py_END_ALLOW_THREADS
  if (st != KILN_OK) {
    PyErr_SetString(kilnpy_error, why);
    return -1;
  }
  self->threads = threads;
  return 0;
}

/* A string or number of the model's, by which one (closure). */
enum { INFO_NAME, INFO_TARGET, INFO_TRIPLE, INFO_COMPILER, INFO_ARENA, INFO_WEIGHTS, INFO_KERNELS };

static PyObject *get_info(kilnpy_bundle *self, void *closure) {
  if (kilnpy_bundle_ensure_open(self) < 0) return NULL;
  const kiln_model *m = self->model;
  switch ((int)(intptr_t)closure) {
  case INFO_NAME: return PyUnicode_FromString(kiln_model_name(m));
  case INFO_TARGET: return PyUnicode_FromString(kiln_model_target_name(m));
  case INFO_TRIPLE: return PyUnicode_FromString(kiln_model_target_triple(m));
  case INFO_COMPILER: return PyUnicode_FromString(kiln_model_compiler_version(m));
  case INFO_ARENA: return PyLong_FromLongLong(kiln_model_arena_bytes(m));
  case INFO_WEIGHTS: return PyLong_FromLongLong(kiln_model_weights_bytes(m));
  default: return PyLong_FromLong(kiln_model_kernel_count(m));
  }
}

static PyObject *get_size(kilnpy_bundle *self, void *closure) { return PyLong_FromSize_t(self->n_bytes); }

#define INFO(name, which, doc) {name, (getter)get_info, NULL, doc, (void *)(intptr_t)(which)}
static PyGetSetDef getset[] = {
    {"threads", (getter)get_threads, (setter)set_threads, "threads the model runs on (the caller's included)", NULL},
    INFO("name", INFO_NAME, "the model's file name, as the compiler saw it"),
    INFO("target", INFO_TARGET, "the target the bundle was compiled for"),
    INFO("target_triple", INFO_TRIPLE, "the target's LLVM triple"),
    INFO("compiler_version", INFO_COMPILER, "the version of kiln that compiled it"),
    INFO("arena_bytes", INFO_ARENA, "bytes of the arena (intermediates and workspace)"),
    INFO("weights_bytes", INFO_WEIGHTS, "bytes of the constants"),
    INFO("kernel_count", INFO_KERNELS, "kernels the plan calls"),
    {"size", (getter)get_size, NULL, "bytes of the bundle", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bundle_methods[] = {
    {"run", (PyCFunction)bundle_run, METH_O, run_doc},
    {"bench_json", (PyCFunction)bundle_bench_json, METH_VARARGS, bench_doc},
    {"inputs", (PyCFunction)bundle_inputs, METH_NOARGS, "[(name, shape, dtype)] of the inputs"},
    {"outputs", (PyCFunction)bundle_outputs, METH_NOARGS, "[(name, shape, dtype)] of the outputs"},
    {"save", (PyCFunction)bundle_save, METH_O, "save(path): writes the bundle file"},
    {"to_bytes", (PyCFunction)bundle_to_bytes, METH_NOARGS, "the bundle's bytes"},
    {"open", (PyCFunction)bundle_open, METH_NOARGS, "opens the model now (else on first use)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject kilnpy_bundle_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln._kiln.Bundle",
    .tp_basicsize = sizeof(kilnpy_bundle),
    .tp_dealloc = (destructor)bundle_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled bundle and the runtime's model of it (made by compile, load or from_bytes).",
    .tp_methods = bundle_methods,
    .tp_getset = getset,
};
