/* tensorfile.h — reading a serialized TensorProto file (the input_N.pb / output_N.pb
 * files of the ONNX backend tests) into a typed, shaped buffer. */
#ifndef IMP_TENSORFILE_H
#define IMP_TENSORFILE_H
#include "graph.h"

typedef struct imp_tensor {
  const char *name; /* may be empty */
  gir_dtype dtype;
  gir_shape shape;
  void *data;       /* numel × element size bytes, in the arena */
} imp_tensor;

/* 0, or -1 with a message. Everything lives in arena a. */
int imp_read_tensor_file(const char *path, gir_arena *a, imp_tensor *out, gir_err *err);

#endif
