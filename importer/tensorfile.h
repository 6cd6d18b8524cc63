/* tensorfile.h — reading a serialized TensorProto file (the input_N.pb / output_N.pb
 * files of the ONNX backend tests) into a typed, shaped buffer; and such a file
 * that holds a SequenceProto or an OptionalProto instead, into a list. */
#ifndef IMP_TENSORFILE_H
#define IMP_TENSORFILE_H
#include "graph.h"
#include "importer.h"

typedef struct imp_tensor {
  const char *name; /* may be empty */
  gir_dtype dtype;
  gir_shape shape;
  void *data;       /* numel × element size bytes, in the arena */
} imp_tensor;

/* 0, or -1 with a message. Everything lives in arena a. */
int imp_read_tensor_file(const char *path, gir_arena *a, imp_tensor *out, gir_err *err);
/* A tensor, or a sequence or optional as a list (imp_known_input.is_list: the two
 * share one wire form, importer.h); its name is the proto's. 0, or -1 with a
 * message (a file that is none of them gets the tensor's). Everything lives in a. */
int imp_read_value_file(const char *path, gir_arena *a, imp_known_input *out, gir_err *err);
/* The same from n bytes in memory; label names them in messages. */
int imp_read_value_buffer(const uint8_t *buf, size_t n, const char *label, gir_arena *a, imp_known_input *out,
                          gir_err *err);

#endif
