/* json.c — cJSON access for manifest.json and plan.json, with a type check on
 * every field and a message that names it ("manifest.json: inputs[1].shape[2]:
 * expected an integer in [0, 9007199254740992], got -3").
 *
 * JSON numbers are doubles in cJSON, so an integer field must be integral and
 * within ±2^53 (where doubles are exact) before its range is checked; bigger
 * sizes than 2^53 bytes are not a real bundle. Objects may not repeat a key
 * (cJSON would silently use the first one) and may not be huge, and nothing
 * but whitespace may follow the top-level value. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "krt.h"

#define MAX_OBJECT_MEMBERS 64
#define EXACT_LIMIT 9007199254740992.0 /* 2^53 */

static const char *type_name(const cJSON *item) {
  if (!item) return "nothing";
  if (cJSON_IsString(item)) return "a string";
  if (cJSON_IsNumber(item)) return "a number";
  if (cJSON_IsObject(item)) return "an object";
  if (cJSON_IsArray(item)) return "an array";
  if (cJSON_IsBool(item)) return "a boolean";
  if (cJSON_IsNull(item)) return "null";
  return "an invalid value";
}

kiln_status krt_json_parse(const krt_entry *entry, cJSON **out, krt_error *err) {
  *out = NULL;
  const char *text = (const char *)entry->data;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, entry->size, &end, 0);
  if (!root) {
    size_t pos = (end && end >= text && (size_t)(end - text) <= entry->size) ? (size_t)(end - text) : 0;
    size_t line = 1;
    for (size_t i = 0; i < pos; i++) line += text[i] == '\n';
    return krt_fail(err, KILN_ERR_FORMAT, "%s: malformed JSON near byte %zu (line %zu)", entry->name, pos, line);
  }
  size_t pos = (size_t)(end - text);
  for (; pos < entry->size; pos++) {
    char c = text[pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      cJSON_Delete(root);
      return krt_fail(err, KILN_ERR_FORMAT, "%s: unexpected data after the JSON value at byte %zu", entry->name, pos);
    }
  }
  *out = root;
  return KILN_OK;
}

kiln_status krt_json_object(const cJSON *obj, const char *where, krt_error *err) {
  if (!cJSON_IsObject(obj)) return krt_fail(err, KILN_ERR_FORMAT, "%s: expected an object, got %s", where, type_name(obj));
  int members = 0;
  for (const cJSON *a = obj->child; a; a = a->next) {
    if (++members > MAX_OBJECT_MEMBERS)
      return krt_fail(err, KILN_ERR_FORMAT, "%s: more than %d members", where, MAX_OBJECT_MEMBERS);
    for (const cJSON *b = a->next; b; b = b->next)
      if (a->string && b->string && strcmp(a->string, b->string) == 0)
        return krt_fail(err, KILN_ERR_FORMAT, "%s: duplicated key '%.64s'", where, a->string);
  }
  return KILN_OK;
}

kiln_status krt_json_member(const cJSON *obj, const char *key, const char *where, const cJSON **out,
                            krt_error *err) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!item) return krt_fail(err, KILN_ERR_FORMAT, "%s: missing '%s'", where, key);
  *out = item;
  return KILN_OK;
}

kiln_status krt_json_string(const cJSON *obj, const char *key, const char *where, const char **out,
                            krt_error *err) {
  const cJSON *item = NULL;
  if (krt_json_member(obj, key, where, &item, err) != KILN_OK) return err->status;
  if (!cJSON_IsString(item) || !item->valuestring)
    return krt_fail(err, KILN_ERR_FORMAT, "%s: '%s' must be a string, got %s", where, key, type_name(item));
  *out = item->valuestring;
  return KILN_OK;
}

kiln_status krt_json_int_item(const cJSON *item, const char *where, int64_t min, int64_t max, int64_t *out,
                              krt_error *err) {
  if (!cJSON_IsNumber(item))
    return krt_fail(err, KILN_ERR_FORMAT, "%s: expected an integer, got %s", where, type_name(item));
  double v = item->valuedouble;
  if (!isfinite(v) || v != floor(v))
    return krt_fail(err, KILN_ERR_FORMAT, "%s: expected an integer, got %g", where, v);
  if (v > EXACT_LIMIT || v < -EXACT_LIMIT)
    return krt_fail(err, KILN_ERR_FORMAT, "%s: %g is out of range [%lld, %lld]", where, v, (long long)min,
                    (long long)max);
  int64_t i = (int64_t)v;
  if (i < min || i > max)
    return krt_fail(err, KILN_ERR_FORMAT, "%s: %lld is out of range [%lld, %lld]", where, (long long)i,
                    (long long)min, (long long)max);
  *out = i;
  return KILN_OK;
}

kiln_status krt_json_int(const cJSON *obj, const char *key, const char *where, int64_t min, int64_t max,
                         int64_t *out, krt_error *err) {
  const cJSON *item = NULL;
  if (krt_json_member(obj, key, where, &item, err) != KILN_OK) return err->status;
  char field[KRT_ERR_MAX / 2];
  snprintf(field, sizeof field, "%s: '%s'", where, key);
  return krt_json_int_item(item, field, min, max, out, err);
}

kiln_status krt_json_array(const cJSON *obj, const char *key, const char *where, const cJSON **out, int32_t *count,
                           krt_error *err) {
  const cJSON *item = NULL;
  if (krt_json_member(obj, key, where, &item, err) != KILN_OK) return err->status;
  if (!cJSON_IsArray(item))
    return krt_fail(err, KILN_ERR_FORMAT, "%s: '%s' must be an array, got %s", where, key, type_name(item));
  int64_t n = 0;
  for (const cJSON *c = item->child; c; c = c->next) {
    if (++n > INT32_MAX) return krt_fail(err, KILN_ERR_FORMAT, "%s: '%s' is too long", where, key);
  }
  *out = item;
  *count = (int32_t)n;
  return KILN_OK;
}
