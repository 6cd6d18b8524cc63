/* manifest.c — manifest.json: what the bundle is and what it must contain.
 *
 * The format name and version are checked first, so a future bundle is
 * reported as a version mismatch rather than as a pile of field errors. Then
 * every field is type-checked and every tensor's shape made sane (rank ≤ 8, no
 * negative dims, element and byte counts overflow-checked). Last, the manifest's
 * "entries" table must name exactly plan.json, params.bin and lib/<target>.so
 * (lib/<target>.ptx when the triple is nvptx64: a GPU bundle, which must also
 * say target.sm and have no workspace),
 * the archive must hold exactly those plus manifest.json, and each entry's
 * size and CRC32 must match — that is what catches a corrupted download. Keys
 * the runtime does not know are ignored, so a packer may add information
 * without breaking older runtimes; anything that changes meaning bumps the
 * format version. An input may say which values it takes ("range" or
 * "random": FORMAT.md); that is validated here too, and read back through
 * kiln_model_input_range, which lives here with the data it reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "krt.h"

#define MAX_SIZE ((int64_t)9007199254740992LL) /* 2^53: exact in a JSON double */

/* target.features (optional): at most KRT_MAX_FEATURES names of 1-32 characters of
 * [a-z0-9.-], the CPU features the code may use (checked against this CPU when the
 * library is loaded: cpu.c). */
static kiln_status parse_features(const cJSON *target, kiln_model *m, krt_error *err) {
  if (!cJSON_GetObjectItemCaseSensitive(target, "features")) return KILN_OK;
  const cJSON *list;
  int32_t count;
  if (krt_json_array(target, "features", "manifest.json: target", &list, &count, err) != KILN_OK) return err->status;
  if (count > KRT_MAX_FEATURES)
    return krt_fail(err, KILN_ERR_FORMAT, "manifest.json: target.features has %d names, over the limit of %d", count,
                    KRT_MAX_FEATURES);
  m->target_features = calloc(count > 0 ? (size_t)count : 1, sizeof *m->target_features);
  if (!m->target_features) return krt_fail(err, KILN_ERR_NOMEM, "out of memory for the target's features");
  int32_t i = 0;
  for (const cJSON *f = list->child; f; f = f->next, i++) {
    const char *s = cJSON_IsString(f) ? f->valuestring : NULL;
    size_t n = s ? strlen(s) : 0;
    int ok = n >= 1 && n <= 32;
    for (size_t k = 0; ok && k < n; k++) ok = (s[k] >= 'a' && s[k] <= 'z') || (s[k] >= '0' && s[k] <= '9') ||
                                              s[k] == '.' || s[k] == '-';
    if (!ok)
      return krt_fail(err, KILN_ERR_FORMAT,
                      "manifest.json: target.features[%d] must be 1-32 characters of [a-z0-9.-]", i);
    if (krt_strdup(s, &m->target_features[i], err) != KILN_OK) return err->status;
    m->target_feature_count = i + 1;
  }
  return KILN_OK;
}

static int is_target_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 64 || s[0] == '.') return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.'))
      return 0;
  }
  return 1;
}

static int is_integer(kiln_dtype t) {
  switch (t) {
  case KILN_DTYPE_INT8: case KILN_DTYPE_INT16: case KILN_DTYPE_INT32: case KILN_DTYPE_INT64: case KILN_DTYPE_UINT8:
  case KILN_DTYPE_UINT16: case KILN_DTYPE_UINT32: case KILN_DTYPE_UINT64: case KILN_DTYPE_UINT4: case KILN_DTYPE_INT4:
  case KILN_DTYPE_UINT2: case KILN_DTYPE_INT2:
    return 1;
  default:
    return 0;
  }
}

/* An input's optional "range": [lo, hi] with lo <= hi, or "random": "none"
 * (not both), on integer inputs only. */
static kiln_status parse_values(const cJSON *item, const char *where, krt_tensor *t, krt_error *err) {
  const cJSON *range = cJSON_GetObjectItemCaseSensitive(item, "range");
  const cJSON *random = cJSON_GetObjectItemCaseSensitive(item, "random");
  t->values = KILN_VALUES_ANY;
  if (!range && !random) return KILN_OK;
  if (range && random) return krt_fail(err, KILN_ERR_FORMAT, "%s: has both 'range' and 'random'", where);
  if (!is_integer(t->dtype))
    return krt_fail(err, KILN_ERR_FORMAT, "%s: '%s' on a %s input (integer inputs only)", where,
                    range ? "range" : "random", kiln_dtype_name(t->dtype));
  if (random) {
    if (!cJSON_IsString(random) || strcmp(random->valuestring, "none") != 0)
      return krt_fail(err, KILN_ERR_FORMAT, "%s: 'random' must be the string \"none\"", where);
    t->values = KILN_VALUES_GIVEN;
    return KILN_OK;
  }
  char field[KRT_ERR_MAX / 2];
  snprintf(field, sizeof field, "%s: range", where);
  if (!cJSON_IsArray(range) || cJSON_GetArraySize(range) != 2)
    return krt_fail(err, KILN_ERR_FORMAT, "%s must be an array of two integers [lo, hi] (values lo to hi - 1)", field);
  if (krt_json_int_item(range->child, field, -MAX_SIZE, MAX_SIZE, &t->range_lo, err) != KILN_OK ||
      krt_json_int_item(range->child->next, field, -MAX_SIZE, MAX_SIZE, &t->range_hi, err) != KILN_OK)
    return err->status;
  if (t->range_lo > t->range_hi)
    return krt_fail(err, KILN_ERR_FORMAT, "%s [%lld, %lld]: lo is above hi", field,
                    (long long)t->range_lo, (long long)t->range_hi);
  t->values = KILN_VALUES_RANGE;
  return KILN_OK;
}

/* An output's optional "extent" (version 3): {"axis": a, "arg": ARG}, a data-dependent
 * size along axis a of the declared shape (the bound), an int64 at ARG after a run;
 * ARG is checked with the plan's arguments (plan.c). */
static kiln_status parse_extent(const cJSON *item, const char *where, krt_tensor *t, krt_error *err) {
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(item, "extent");
  if (!e) return KILN_OK;
  char field[KRT_ERR_MAX / 2];
  snprintf(field, sizeof field, "%s: extent", where);
  if (krt_json_object(e, field, err) != KILN_OK) return err->status;
  if (t->rank == 0) return krt_fail(err, KILN_ERR_FORMAT, "%s: a scalar has no axis to vary", field);
  int64_t axis;
  if (krt_json_int(e, "axis", field, 0, t->rank - 1, &axis, err) != KILN_OK) return err->status;
  const cJSON *arg;
  if (krt_json_member(e, "arg", field, &arg, err) != KILN_OK) return err->status;
  if (!(t->extent_json = cJSON_Duplicate(arg, 1)))
    return krt_fail(err, KILN_ERR_NOMEM, "out of memory reading %s", field);
  t->has_extent = 1;
  t->extent_axis = (int32_t)axis;
  return KILN_OK;
}

static kiln_status parse_tensor(const cJSON *item, const char *where, krt_tensor *t, krt_error *err) {
  if (krt_json_object(item, where, err) != KILN_OK) return err->status;
  const char *name, *dtype;
  if (krt_json_string(item, "name", where, &name, err) != KILN_OK) return err->status;
  if (!*name) return krt_fail(err, KILN_ERR_FORMAT, "%s: empty name", where);
  if (krt_json_string(item, "dtype", where, &dtype, err) != KILN_OK) return err->status;
  if (kiln_dtype_from_name(dtype, &t->dtype) != KILN_OK)
    return krt_fail(err, KILN_ERR_FORMAT, "%s: unknown dtype '%.32s'", where, dtype);
  const cJSON *shape;
  int32_t rank;
  if (krt_json_array(item, "shape", where, &shape, &rank, err) != KILN_OK) return err->status;
  if (rank > KILN_MAX_RANK)
    return krt_fail(err, KILN_ERR_FORMAT, "%s: rank %d is over the limit of %d", where, rank, KILN_MAX_RANK);
  t->rank = rank;
  int64_t elements = 1;
  int32_t d = 0;
  for (const cJSON *dim = shape->child; dim; dim = dim->next, d++) {
    char field[KRT_ERR_MAX / 2];
    snprintf(field, sizeof field, "%s: shape[%d]", where, d);
    if (krt_json_int_item(dim, field, 0, MAX_SIZE, &t->dims[d], err) != KILN_OK) return err->status;
    if (!krt_mul_i64(elements, t->dims[d], &elements))
      return krt_fail(err, KILN_ERR_FORMAT, "%s: the element count overflows", where);
  }
  t->elements = elements;
  if (t->dtype == KILN_DTYPE_STRING && /* version 4: the slot of each string */
      krt_json_int(item, "string_bytes", where, 8, 65536, &t->string_bytes, err) != KILN_OK)
    return err->status;
  if (!krt_mul_i64(elements, krt_elem_bytes(t), &t->bytes) || t->bytes > MAX_SIZE)
    return krt_fail(err, KILN_ERR_FORMAT, "%s: the byte size overflows", where);
  return krt_strdup(name, &t->name, err);
}

static kiln_status parse_tensors(const cJSON *root, const char *key, krt_tensor **out, int32_t *count,
                                 krt_error *err) {
  const cJSON *list;
  int32_t n;
  if (krt_json_array(root, key, "manifest.json", &list, &n, err) != KILN_OK) return err->status;
  if (n > KRT_MAX_TENSORS)
    return krt_fail(err, KILN_ERR_FORMAT, "manifest.json: %d %s, over the limit of %d", n, key, KRT_MAX_TENSORS);
  *out = calloc(n > 0 ? (size_t)n : 1, sizeof **out);
  if (!*out) return krt_fail(err, KILN_ERR_NOMEM, "out of memory for %d %s", n, key);
  *count = n;
  int32_t i = 0;
  for (const cJSON *item = list->child; item; item = item->next, i++) {
    char where[64];
    snprintf(where, sizeof where, "manifest.json: %s[%d]", key, i);
    if (parse_tensor(item, where, &(*out)[i], err) != KILN_OK) return err->status;
    if (strcmp(key, "inputs") == 0 && parse_values(item, where, &(*out)[i], err) != KILN_OK) return err->status;
    if (strcmp(key, "outputs") == 0 && parse_extent(item, where, &(*out)[i], err) != KILN_OK) return err->status;
    for (int32_t j = 0; j < i; j++)
      if (strcmp((*out)[j].name, (*out)[i].name) == 0)
        return krt_fail(err, KILN_ERR_FORMAT, "%s: name '%.64s' is used by %s[%d] too", where, (*out)[i].name, key, j);
  }
  return KILN_OK;
}

static int parse_crc(const char *s, uint32_t *out) {
  if (strlen(s) != 8) return 0;
  uint32_t v = 0;
  for (int i = 0; i < 8; i++) {
    char c = s[i];
    uint32_t d;
    if (c >= '0' && c <= '9') d = (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f') d = (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = (uint32_t)(c - 'A' + 10);
    else return 0;
    v = v << 4 | d;
  }
  *out = v;
  return 1;
}

/* Checks one listed entry against the archive: present, same size, same CRC32. */
static kiln_status check_entry(const cJSON *entries, const char *name, krt_archive *archive, krt_error *err) {
  char where[128];
  snprintf(where, sizeof where, "manifest.json: entries['%s']", name);
  const cJSON *item = NULL;
  if (krt_json_member(entries, name, "manifest.json: entries", &item, err) != KILN_OK) return err->status;
  if (krt_json_object(item, where, err) != KILN_OK) return err->status;
  int64_t bytes;
  const char *crc_text;
  uint32_t crc;
  if (krt_json_int(item, "bytes", where, 0, MAX_SIZE, &bytes, err) != KILN_OK) return err->status;
  if (krt_json_string(item, "crc32", where, &crc_text, err) != KILN_OK) return err->status;
  if (!parse_crc(crc_text, &crc))
    return krt_fail(err, KILN_ERR_FORMAT, "%s: crc32 must be 8 hex digits, got '%.16s'", where, crc_text);
  krt_entry *e = krt_archive_find(archive, name);
  if (!e) return krt_fail(err, KILN_ERR_FORMAT, "bundle: missing entry '%s'", name);
  if ((uint64_t)bytes != (uint64_t)e->size)
    return krt_fail(err, KILN_ERR_CHECKSUM, "bundle: '%s' is %zu bytes but the manifest says %lld", name, e->size,
                    (long long)bytes);
  uint32_t actual = krt_crc32(e->data, e->size);
  if (actual != crc)
    return krt_fail(err, KILN_ERR_CHECKSUM, "bundle: '%s' is corrupt: CRC32 %08x, the manifest says %08x", name,
                    (unsigned)actual, (unsigned)crc);
  return KILN_OK;
}

/* The archive must hold exactly manifest.json + the three listed entries (+ the
 * source when the manifest lists it). */
static kiln_status check_entry_set(krt_archive *archive, const char *lib_name, const char *src_name, int has_src,
                                   krt_error *err) {
  const char *expected[] = {"manifest.json", "plan.json", "params.bin", lib_name};
  for (int i = 0; i < 4; i++)
    if (!krt_archive_find(archive, expected[i])) {
      for (int32_t j = 0; i == 3 && j < archive->count; j++)
        if (strncmp(archive->entries[j].name, "lib/", 4) == 0)
          return krt_fail(err, KILN_ERR_FORMAT, "bundle: library entry '%s' does not match the target (expected '%s')",
                          archive->entries[j].name, lib_name);
      return krt_fail(err, KILN_ERR_FORMAT, "bundle: missing entry '%s'", expected[i]);
    }
  for (int32_t j = 0; j < archive->count; j++)
    if (strncmp(archive->entries[j].name, "src/", 4) == 0 && (!has_src || strcmp(archive->entries[j].name, src_name)))
      return krt_fail(err, KILN_ERR_FORMAT, "bundle: source entry '%s' is not %s in manifest.json's entries",
                      archive->entries[j].name, has_src ? "the target's" : "listed");
  if (has_src && !krt_archive_find(archive, src_name))
    return krt_fail(err, KILN_ERR_FORMAT, "bundle: missing entry '%s'", src_name);
  /* Every archive entry is distinct and expected (archive.c) and the ones above
   * are present, so another cannot exist; keep the invariant visible anyway. */
  if (archive->count != 4 + has_src)
    return krt_fail(err, KILN_ERR_FORMAT, "bundle: %d entries, expected %d", archive->count, 4 + has_src);
  return KILN_OK;
}

static kiln_status load(kiln_model *m, const cJSON *root, krt_archive *archive, krt_error *err) {
  const char *where = "manifest.json";
  if (krt_json_object(root, where, err) != KILN_OK) return err->status;
  const char *format;
  if (krt_json_string(root, "format", where, &format, err) != KILN_OK) return err->status;
  if (strcmp(format, "kiln-bundle") != 0)
    return krt_fail(err, KILN_ERR_FORMAT, "manifest.json: format is '%.32s', expected 'kiln-bundle'", format);
  const cJSON *version;
  if (krt_json_member(root, "format_version", where, &version, err) != KILN_OK) return err->status;
  if (!cJSON_IsNumber(version))
    return krt_fail(err, KILN_ERR_FORMAT, "manifest.json: 'format_version' must be an integer");
  if (version->valuedouble < KILN_BUNDLE_FORMAT_MIN_VERSION || version->valuedouble > KILN_BUNDLE_FORMAT_VERSION ||
      version->valuedouble != (double)(int)version->valuedouble)
    return krt_fail(err, KILN_ERR_VERSION,
                    "bundle format version %g is not supported (this runtime reads versions %d to %d)",
                    version->valuedouble, KILN_BUNDLE_FORMAT_MIN_VERSION, KILN_BUNDLE_FORMAT_VERSION);

  const char *s;
  if (krt_json_string(root, "model", where, &s, err) != KILN_OK || krt_strdup(s, &m->name, err) != KILN_OK)
    return err->status;
  if (krt_json_string(root, "compiler_version", where, &s, err) != KILN_OK ||
      krt_strdup(s, &m->compiler_version, err) != KILN_OK)
    return err->status;
  const cJSON *target;
  int64_t sm = 0;
  if (krt_json_member(root, "target", where, &target, err) != KILN_OK) return err->status;
  if (krt_json_object(target, "manifest.json: target", err) != KILN_OK) return err->status;
  if (krt_json_string(target, "name", "manifest.json: target", &s, err) != KILN_OK) return err->status;
  if (!is_target_name(s))
    return krt_fail(err, KILN_ERR_FORMAT,
                    "manifest.json: target name '%.64s' must be 1-64 characters of [A-Za-z0-9_.-], not starting "
                    "with '.'",
                    s);
  if (krt_strdup(s, &m->target_name, err) != KILN_OK) return err->status;
  if (krt_json_string(target, "triple", "manifest.json: target", &s, err) != KILN_OK ||
      krt_strdup(s, &m->target_triple, err) != KILN_OK)
    return err->status;
  if (parse_features(target, m, err) != KILN_OK) return err->status;
  m->gpu = krt_triple_is_gpu(m->target_triple);
  if (m->gpu) { /* PTX: target.sm is required, CPU features make no sense */
    if (krt_json_int(target, "sm", "manifest.json: target", 10, 1000, &sm, err) != KILN_OK) return err->status;
    m->target_sm = (int32_t)sm;
    if (m->target_feature_count > 0)
      return krt_fail(err, KILN_ERR_FORMAT, "manifest.json: target.features lists CPU features, but the target "
                      "'%.64s' is a GPU (%.64s)", m->target_name, m->target_triple);
  }

  if (parse_tensors(root, "inputs", &m->inputs, &m->input_count, err) != KILN_OK) return err->status;
  if (parse_tensors(root, "outputs", &m->outputs, &m->output_count, err) != KILN_OK) return err->status;
  if (m->output_count == 0) return krt_fail(err, KILN_ERR_FORMAT, "manifest.json: the model has no outputs");
  if (krt_json_int(root, "arena_bytes", where, 0, MAX_SIZE, &m->arena_bytes, err) != KILN_OK) return err->status;
  if (krt_json_int(root, "weights_bytes", where, 0, MAX_SIZE, &m->weights_bytes, err) != KILN_OK)
    return err->status;
  if (krt_json_int(root, "workspace_bytes", where, 0, MAX_SIZE, &m->workspace_bytes, err) != KILN_OK)
    return err->status;
  if (m->gpu && m->workspace_bytes != 0)
    return krt_fail(err, KILN_ERR_FORMAT, "manifest.json: workspace_bytes is %lld, but a GPU bundle (%.64s) has no "
                    "workspace (it must be 0)", (long long)m->workspace_bytes, m->target_triple);

  /* entries: exactly plan.json, params.bin and lib/<target>.so — lib/<target>.ptx for a
   * GPU — (and src/<target>.c, the C target's source, which is checked like the others
   * and otherwise unused) */
  char lib_name[80], src_name[80];
  snprintf(lib_name, sizeof lib_name, "lib/%s.%s", m->target_name, m->gpu ? "ptx" : "so");
  snprintf(src_name, sizeof src_name, "src/%s.c", m->target_name);
  int has_src = 0;
  const cJSON *entries;
  if (krt_json_member(root, "entries", where, &entries, err) != KILN_OK) return err->status;
  if (krt_json_object(entries, "manifest.json: entries", err) != KILN_OK) return err->status;
  for (const cJSON *e = entries->child; e; e = e->next) {
    const char *key = e->string ? e->string : "";
    if (strcmp(key, src_name) == 0) {
      has_src = 1;
      continue;
    }
    if (strcmp(key, "plan.json") != 0 && strcmp(key, "params.bin") != 0 && strcmp(key, lib_name) != 0)
      return krt_fail(err, KILN_ERR_FORMAT, "manifest.json: entries: unexpected entry '%.64s' (expected plan.json, "
                      "params.bin, %s and optionally %s)", key, lib_name, src_name);
  }
  if (check_entry_set(archive, lib_name, src_name, has_src, err) != KILN_OK) return err->status;
  const char *listed[] = {"plan.json", "params.bin", lib_name, src_name};
  for (int i = 0; i < 3 + has_src; i++)
    if (check_entry(entries, listed[i], archive, err) != KILN_OK) return err->status;

  krt_entry *params = krt_archive_find(archive, "params.bin");
  if ((uint64_t)m->weights_bytes != (uint64_t)params->size)
    return krt_fail(err, KILN_ERR_FORMAT, "manifest.json: weights_bytes is %lld but params.bin is %zu bytes",
                    (long long)m->weights_bytes, params->size);
  return KILN_OK;
}

kiln_status krt_manifest_load(kiln_model *model, krt_archive *archive, krt_error *err) {
  krt_entry *entry = krt_archive_find(archive, "manifest.json");
  if (!entry) return krt_fail(err, KILN_ERR_FORMAT, "bundle: missing entry 'manifest.json'");
  cJSON *root;
  if (krt_json_parse(entry, &root, err) != KILN_OK) return err->status;
  load(model, root, archive, err);
  cJSON_Delete(root);
  return err->status;
}

kiln_status kiln_model_input_range(const kiln_model *m, int32_t index, kiln_values *kind, int64_t *lo, int64_t *hi) {
  if (!m || !kind || index < 0 || index >= m->input_count) return KILN_ERR_INVALID_ARGUMENT;
  const krt_tensor *t = &m->inputs[index];
  *kind = t->values;
  if (t->values == KILN_VALUES_RANGE) {
    if (lo) *lo = t->range_lo;
    if (hi) *hi = t->range_hi;
  }
  return KILN_OK;
}
