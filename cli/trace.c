/* trace.c — `kiln run --trace FILE.json`: the profiled runs as a Chrome trace, the
 * format ONNX Runtime's profiler writes (a JSON array of complete events,
 * {"cat", "pid", "tid", "dur", "ts", "ph": "X", "name", "args"}, times in
 * microseconds), which chrome://tracing and Perfetto open.
 *
 * Each timed run gives one "Session" slice named "model_run" and, inside it, one
 * "Node" slice per kernel call, named after the kernel, with args kernel (its
 * index in the plan), run, flops and bytes (kiln_kernel_profile: per call, as the
 * compiler counted them, and the bytes of its buffers). The calls come from the
 * runtime (kiln_model_profile_calls: the last profiled run's start and end times,
 * on CLOCK_MONOTONIC), so each run is written right after it, outside its timing;
 * ts counts from the first run's start. Events are built with cJSON (names from a
 * bundle are escaped as JSON needs) and written one per line as they come: a long
 * --repeat never holds the trace in memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "cli.h"

int64_t cli_trace_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int cli_trace_open(cli_trace *t, const char *path) {
  memset(t, 0, sizeof *t);
  t->path = path;
  t->pid = (long)getpid();
  t->f = fopen(path, "w");
  if (!t->f) {
    fprintf(stderr, "kiln run: cannot write the trace '%s': %s\n", path, strerror(errno));
    return -1;
  }
  fputs("[\n", t->f);
  return 0;
}

/* Appends one complete event; args is taken over (may be NULL: {}). */
static int add_event(cli_trace *t, const char *cat, const char *name, int64_t start_ns, int64_t end_ns, cJSON *args) {
  cJSON *e = cJSON_CreateObject();
  if (!args) args = cJSON_CreateObject();
  int ok = e && args && cJSON_AddStringToObject(e, "cat", cat) && cJSON_AddNumberToObject(e, "pid", (double)t->pid) &&
           cJSON_AddNumberToObject(e, "tid", (double)t->pid) &&
           cJSON_AddNumberToObject(e, "dur", (double)(end_ns - start_ns) / 1e3) &&
           cJSON_AddNumberToObject(e, "ts", (double)(start_ns - t->origin_ns) / 1e3) &&
           cJSON_AddStringToObject(e, "ph", "X") && cJSON_AddStringToObject(e, "name", name);
  if (ok && e) {
    cJSON_AddItemToObject(e, "args", args);
    args = NULL;
  }
  char *text = ok ? cJSON_PrintUnformatted(e) : NULL;
  cJSON_Delete(e);
  cJSON_Delete(args);
  if (!text) {
    fprintf(stderr, "kiln run: out of memory writing the trace\n");
    return -1;
  }
  fprintf(t->f, "%s%s", t->events ? ",\n" : "", text);
  t->events++;
  free(text);
  return 0;
}

static cJSON *run_args(int run) {
  cJSON *a = cJSON_CreateObject();
  if (a) cJSON_AddNumberToObject(a, "run", run);
  return a;
}

int cli_trace_add_run(cli_trace *t, kiln_model *m, int run, int64_t start_ns, int64_t end_ns) {
  const kiln_kernel_profile *prof;
  const kiln_kernel_call *calls;
  int32_t n_prof, n_calls;
  if (kiln_model_profile(m, &prof, &n_prof) != KILN_OK || kiln_model_profile_calls(m, &calls, &n_calls) != KILN_OK) {
    fprintf(stderr, "kiln run: --trace: %s\n", kiln_model_last_error(m));
    return -1;
  }
  if (t->events == 0) t->origin_ns = start_ns;
  if (add_event(t, "Session", "model_run", start_ns, end_ns, run_args(run)) < 0) return -1;
  for (int32_t i = 0; i < n_calls; i++) {
    const kiln_kernel_call *c = &calls[i];
    if (c->kernel < 0 || c->kernel >= n_prof) continue; /* the runtime never gives one */
    const kiln_kernel_profile *p = &prof[c->kernel];
    cJSON *a = cJSON_CreateObject();
    if (a && !(cJSON_AddNumberToObject(a, "kernel", c->kernel) && cJSON_AddNumberToObject(a, "run", run) &&
               cJSON_AddNumberToObject(a, "flops", (double)p->flops) &&
               cJSON_AddNumberToObject(a, "bytes", (double)p->bytes))) {
      cJSON_Delete(a);
      a = NULL;
    }
    if (!a) {
      fprintf(stderr, "kiln run: out of memory writing the trace\n");
      return -1;
    }
    if (add_event(t, "Node", p->name ? p->name : "?", c->start_ns, c->end_ns, a) < 0) return -1;
  }
  return 0;
}

int cli_trace_close(cli_trace *t) {
  if (!t->f) return 0;
  fputs("\n]\n", t->f);
  int bad = ferror(t->f);
  if (fclose(t->f) != 0) bad = 1;
  t->f = NULL;
  if (bad) {
    fprintf(stderr, "kiln run: cannot write the trace '%s': %s\n", t->path, strerror(errno));
    return -1;
  }
  return 0;
}
