/* aot.c — the ahead-of-time project of a bare-metal target (see aot.h): the plan
 * written as C (model.c calls the kernels in plan order with their buffer offsets
 * baked in), the constants as a const array, a header describing the inputs and
 * outputs, and the footprint: each source compiled for the CPU with the cross
 * compiler, its ELF sections summed (code, constants, data) and its functions'
 * stack frames (-fstack-usage) added up along the deepest call chain that
 * model_run can take: model_run → a kernel → its tasks (through the serial
 * parallel_for), nested tasks included (the C backend names a task after the
 * function it runs in: K__t0, K__t0__t1). Frames of libm's functions and of the
 * kernel-called helpers the compiler did not inline are counted as the largest
 * helper frame once; the tests measure the real high-water mark on the board. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cJSON.h>
#include "aot.h"

extern char **environ;

#define AOT_MAX_DIM 0x7fffffffLL /* dims and byte sizes are int32/uint32 on a 32-bit board */

static int write_text(const char *dir, const char *name, const char *text, size_t n, gir_err *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return gir_errf(err, "cannot write '%s': %s", path, strerror(errno));
  size_t w = fwrite(text, 1, n, f);
  if (fclose(f) != 0 || w != n) return gir_errf(err, "cannot write '%s'", path);
  return 0;
}

/* A growable text, written at the end. */
typedef struct tbuf {
  char *p;
  size_t n, cap;
  int oom;
} tbuf;

__attribute__((format(printf, 2, 3))) static void tf(tbuf *b, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    size_t room = b->cap - b->n;
    va_start(ap, fmt);
    int k = b->p ? vsnprintf(b->p + b->n, room, fmt, ap) : -1;
    va_end(ap);
    if (k >= 0 && (size_t)k < room) {
      b->n += (size_t)k;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 1 << 16;
    while (k >= 0 && cap < b->n + (size_t)k + 1) cap *= 2;
    char *p = b->oom ? NULL : realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p, b->cap = cap;
  }
}

static int c_identifier(const char *s) {
  if (!s || !s[0] || (s[0] >= '0' && s[0] <= '9')) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
  return 1;
}

/* A C string literal of s (names come from the model: quote what C would not take). */
static void c_string(tbuf *b, const char *s) {
  tf(b, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') tf(b, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f) tf(b, "\\%03o", c);
    else tf(b, "%c", c);
  }
  tf(b, "\"");
}

/* The pointer expression of a buffer argument inside model_run. */
static void aot_arg(tbuf *b, const pack_arg *g) {
  switch (g->kind) {
  case PACK_ARG_INPUT: tf(b, "(void *)(uintptr_t)inputs[%lld]", (long long)g->index); break;
  case PACK_ARG_OUTPUT: tf(b, "outputs[%lld]", (long long)g->index); break;
  case PACK_ARG_ARENA: tf(b, "a + %lld", (long long)g->offset); break;
  default: tf(b, "w + %lld", (long long)g->offset); break;
  }
}

static int check_io(const pack_io *io, const char *what, int64_t *bytes, gir_err *err) {
  if (io->shape.rank > 8) return gir_errf(err, "aot: %s '%s' has rank %d (at most 8)", what, io->name, io->shape.rank);
  int64_t n = (int64_t)gir_dtype_size(io->dtype);
  for (int d = 0; d < io->shape.rank; d++) {
    if (io->shape.dims[d] > AOT_MAX_DIM) return gir_errf(err, "aot: %s '%s' is too large for a 32-bit board", what, io->name);
    n *= io->shape.dims[d];
    if (n > AOT_MAX_DIM) return gir_errf(err, "aot: %s '%s' is too large for a 32-bit board", what, io->name);
  }
  *bytes = n;
  return 0;
}

static void tensor_table(tbuf *b, const char *name, const pack_io *ios, int32_t n) {
  tf(b, "const model_tensor %s[%d] = {\n", name, n > 0 ? n : 1);
  for (int32_t i = 0; i < n; i++) {
    int64_t bytes = (int64_t)gir_dtype_size(ios[i].dtype);
    for (int d = 0; d < ios[i].shape.rank; d++) bytes *= ios[i].shape.dims[d];
    tf(b, "    {"), c_string(b, ios[i].name), tf(b, ", \"%s\", %d, {", gir_dtype_name(ios[i].dtype), ios[i].shape.rank);
    for (int d = 0; d < ios[i].shape.rank; d++) tf(b, "%s%lld", d ? ", " : "", (long long)ios[i].shape.dims[d]);
    tf(b, "}, %lldu},\n", (long long)bytes);
  }
  if (n == 0) tf(b, "    {\"\", \"\", 0, {0}, 0u},\n");
  tf(b, "};\n");
}

int pack_write_aot(const char *dir, const pack_aot *p, gir_err *err) {
  struct stat st;
  if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) return gir_errf(err, "--aot: '%s' exists and is not a folder", dir);
  if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0) return gir_errf(err, "--aot: cannot create '%s': %s", dir, strerror(errno));
  if (p->arena_bytes > AOT_MAX_DIM || p->params_bytes > AOT_MAX_DIM)
    return gir_errf(err, "aot: the arena (%lld bytes) or the weights (%lld bytes) do not fit a 32-bit board",
                    (long long)p->arena_bytes, (long long)p->params_bytes);
  for (int32_t i = 0; i < p->n_inputs + p->n_outputs; i++) {
    int64_t bytes;
    const pack_io *io = i < p->n_inputs ? &p->inputs[i] : &p->outputs[i - p->n_inputs];
    if (check_io(io, i < p->n_inputs ? "input" : "output", &bytes, err) < 0) return -1;
  }
  for (int32_t c = 0; c < p->n_calls; c++)
    if (!c_identifier(p->calls[c].symbol)) return gir_errf(err, "aot: kernel symbol '%s' is not a C identifier", p->calls[c].symbol);

  tbuf h = {0}, m = {0}, w = {0};
  /* model.h */
  tf(&h, "/* model.h — generated by kiln %s (kiln compile --target %s --aot) from %s; do not edit.\n",
     p->compiler_version, p->target_name, p->model);
  tf(&h, " * model_run() runs the whole model: every kernel, in order, on buffers whose places are\n"
         " * fixed here. It allocates nothing, starts no thread, opens no file. */\n");
  tf(&h, "#ifndef KILN_MODEL_H\n#define KILN_MODEL_H\n#include <stdint.h>\n\n");
  tf(&h, "/* RAM model_run needs besides the stack: pass it as `arena`, aligned to MODEL_ALIGN. */\n");
  tf(&h, "#define MODEL_ARENA_BYTES %lldu\n", (long long)(p->arena_bytes > 0 ? p->arena_bytes : 0));
  tf(&h, "/* Alignment of the arena and of every input and output buffer (model_run checks it). */\n");
  tf(&h, "#define MODEL_ALIGN 64u\n");
  tf(&h, "/* The constants, in flash (model_weights.c). */\n#define MODEL_WEIGHTS_BYTES %lldu\n", (long long)p->params_bytes);
  tf(&h, "#define MODEL_INPUT_COUNT %d\n#define MODEL_OUTPUT_COUNT %d\n", p->n_inputs, p->n_outputs);
  int64_t io_bytes = 0;
  for (int32_t i = 0; i < p->n_inputs + p->n_outputs; i++) {
    int64_t bytes;
    check_io(i < p->n_inputs ? &p->inputs[i] : &p->outputs[i - p->n_inputs], "tensor", &bytes, err);
    io_bytes += (bytes + 63) / 64 * 64;
  }
  tf(&h, "/* Every input and output, each rounded up to MODEL_ALIGN: one static buffer can hold them. */\n");
  tf(&h, "#define MODEL_IO_BYTES %lldu\n\n", (long long)io_bytes);
  tf(&h, "typedef struct model_tensor {\n  const char *name;\n  const char *dtype; /* \"float32\", \"int8\"... "
         "(runtime/FORMAT.md's names) */\n  int32_t rank;\n  int32_t dims[8];\n  uint32_t bytes;\n} model_tensor;\n\n");
  for (int32_t i = 0; i < p->n_inputs; i++) {
    tf(&h, "/* input %d: ", i), c_string(&h, p->inputs[i].name), tf(&h, " %s[", gir_dtype_name(p->inputs[i].dtype));
    for (int d = 0; d < p->inputs[i].shape.rank; d++) tf(&h, "%s%lld", d ? ", " : "", (long long)p->inputs[i].shape.dims[d]);
    tf(&h, "] */\n");
  }
  for (int32_t i = 0; i < p->n_outputs; i++) {
    tf(&h, "/* output %d: ", i), c_string(&h, p->outputs[i].name), tf(&h, " %s[", gir_dtype_name(p->outputs[i].dtype));
    for (int d = 0; d < p->outputs[i].shape.rank; d++) tf(&h, "%s%lld", d ? ", " : "", (long long)p->outputs[i].shape.dims[d]);
    tf(&h, "] */\n");
  }
  tf(&h, "extern const model_tensor model_inputs[], model_outputs[];\n\n");
  tf(&h, "/* Runs the model. inputs[i] holds input i (model_inputs[i].bytes, C order), outputs[i]\n"
         " * receives output i; arena is MODEL_ARENA_BYTES of scratch RAM. Every pointer must be\n"
         " * MODEL_ALIGN-aligned. Returns 0; 1 when a run-time check failed (an index input out\n"
         " * of range: the outputs are then not valid); 2 when a pointer is misaligned; 3 when\n"
         " * an If took a branch that cannot run for the compiled shapes (model.c names it). */\n");
  tf(&h, "int32_t model_run(const void *const inputs[], void *const outputs[], void *arena);\n\n#endif\n");

  /* model.c */
  tf(&m, "/* model.c — generated by kiln %s from %s for %s; do not edit.\n", p->compiler_version, p->model,
     p->target_name);
  tf(&m, " * The execution plan as code: each kernel of kernels.c called in order with its buffers —\n"
         " * an input, an output, a range of the arena or of the weights — fixed at compile time. */\n");
  tf(&m, "#include <stdint.h>\n#include \"kiln_abi.h\"\n#include \"model.h\"\n\n");
  tf(&m, "extern const uint8_t model_weights[];\n");
  for (int32_t c = 0; c < p->n_calls; c++) {
    int seen = 0;
    for (int32_t d = 0; d < c && !seen; d++) seen = !strcmp(p->calls[c].symbol, p->calls[d].symbol);
    if (!seen) tf(&m, "int32_t %s(void *const *buffers, const kiln_ctx *ctx);\n", p->calls[c].symbol);
  }
  tensor_table(&m, "model_inputs", p->inputs, p->n_inputs);
  tensor_table(&m, "model_outputs", p->outputs, p->n_outputs);
  tf(&m, "\n/* One core, no threads: a parallel loop's task runs its whole range. */\n");
  tf(&m, "static int32_t model_serial_for(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n) {\n"
         "  (void)ctx;\n  if (n > 0) fn(closure, 0, n);\n  return 0;\n}\n\n");
  tf(&m, "int32_t model_run(const void *const inputs[], void *const outputs[], void *arena) {\n");
  tf(&m, "  uint8_t *a = (uint8_t *)arena, *w = (uint8_t *)(uintptr_t)model_weights;\n");
  tf(&m, "  const kiln_ctx ctx = {model_serial_for, 0, 0, 0, 0};\n");
  tf(&m, "  uintptr_t misaligned = (uintptr_t)a & (MODEL_ALIGN - 1u);\n");
  tf(&m, "  for (int i = 0; i < MODEL_INPUT_COUNT; i++) misaligned |= (uintptr_t)inputs[i] & (MODEL_ALIGN - 1u);\n");
  tf(&m, "  for (int i = 0; i < MODEL_OUTPUT_COUNT; i++) misaligned |= (uintptr_t)outputs[i] & (MODEL_ALIGN - 1u);\n");
  tf(&m, "  if (misaligned) return 2;\n");
  tf(&m, "  (void)a, (void)w;\n");
  for (int32_t c = 0; c < p->n_calls; c++) {
    const pack_call *k = &p->calls[c];
    if (k->n_when) { /* an If branch: only when its conditions hold */
      tf(&m, "  if (");
      for (int32_t j = 0; j < k->n_when; j++) {
        tf(&m, "%s(*(const uint8_t *)", j ? " && " : "");
        aot_arg(&m, &k->when[j]);
        tf(&m, " != 0) == %d", k->when_is[j]);
      }
      tf(&m, ")\n");
    }
    if (k->fail) { /* a branch that cannot run for the compiled shapes */
      tf(&m, "  { /* %s: ", k->name);
      for (const char *q = k->fail; *q; q++) tf(&m, "%c", *q == '*' && q[1] == '/' ? '_' : *q);
      tf(&m, " */\n    return 3;\n  }\n");
      continue;
    }
    tf(&m, "  { /* %s */\n    void *const b[%d] = {", k->name, k->n_args > 0 ? k->n_args : 1);
    for (int32_t j = 0; j < k->n_args; j++) {
      if (j) tf(&m, ", ");
      aot_arg(&m, &k->args[j]);
    }
    if (k->n_args == 0) tf(&m, "0");
    tf(&m, "};\n    if (%s(b, &ctx) != 0) return 1;\n  }\n", k->symbol);
  }
  tf(&m, "  return 0;\n}\n");

  /* model_weights.c */
  tf(&w, "/* model_weights.c — the constants of %s, generated by kiln %s; do not edit. */\n", p->model,
     p->compiler_version);
  tf(&w, "#include <stdint.h>\n#if defined(__GNUC__)\n__attribute__((aligned(64)))\n#endif\n");
  tf(&w, "const uint8_t model_weights[%lld] = {", (long long)(p->params_bytes > 0 ? p->params_bytes : 1));
  const unsigned char *pb = p->params;
  for (int64_t i = 0; i < p->params_bytes; i++) tf(&w, "%s%u,", i % 24 ? "" : "\n", pb[i]);
  if (p->params_bytes == 0) tf(&w, "0");
  tf(&w, "\n};\n");

  int rc = 0;
  if (h.oom || m.oom || w.oom) rc = gir_errf(err, "out of memory");
  if (rc == 0) rc = write_text(dir, "model.h", h.p, h.n, err);
  if (rc == 0) rc = write_text(dir, "model.c", m.p, m.n, err);
  if (rc == 0) rc = write_text(dir, "model_weights.c", w.p, w.n, err);
  if (rc == 0) rc = p->kernels_c ? write_text(dir, "kernels.c", p->kernels_c, p->kernels_c_bytes, err)
                                 : write_text(dir, "kernels.o", p->kernels_obj, p->kernels_obj_bytes, err);
  if (rc == 0) rc = write_text(dir, "kiln_abi.h", p->abi_h, strlen(p->abi_h), err);
  free(h.p), free(m.p), free(w.p);
  return rc;
}

/* --- the footprint --- */

static int run_quiet(char *const argv[], const char *log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int st = 0, rc = -1;
  if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) == 0 && waitpid(pid, &st, 0) >= 0 && WIFEXITED(st))
    rc = WEXITSTATUS(st);
  posix_spawn_file_actions_destroy(&fa);
  return rc;
}

static int slurp(const char *path, unsigned char **data, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  struct stat sb;
  int rc = -1;
  if (fstat(fileno(f), &sb) == 0 && (*data = malloc((size_t)sb.st_size + 1))) {
    *n = (size_t)sb.st_size;
    if (fread(*data, 1, *n, f) == *n) {
      (*data)[*n] = 0;
      rc = 0;
    } else {
      free(*data);
    }
  }
  fclose(f);
  return rc;
}

static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint32_t rd16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

/* Whether a .text.NAME section belongs to a kernel the plan never calls (the linker's
 * --gc-sections drops it; so does the count). */
static int uncalled(const char *sec, const pack_aot *p) {
  if (strncmp(sec, ".text.", 6)) return 0;
  const char *fn = sec + 6;
  if (!strncmp(fn, "kc_", 3)) return 0;
  for (int32_t c = 0; c < p->n_calls; c++) {
    size_t n = strlen(p->calls[c].symbol);
    if (!strncmp(fn, p->calls[c].symbol, n) && (fn[n] == 0 || !strncmp(fn + n, "__", 2))) return 0;
  }
  return 1;
}

/* Sums an ELF32 little-endian relocatable object's allocated sections: code (exec),
 * constants (read-only), data (writable). -1 when it is not one. */
static int elf_sizes(const char *path, const pack_aot *p, int64_t *code, int64_t *rodata, int64_t *data) {
  unsigned char *e;
  size_t n;
  if (slurp(path, &e, &n) < 0) return -1;
  int rc = -1;
  if (n >= 52 && !memcmp(e, "\x7f" "ELF", 4) && e[4] == 1 && e[5] == 1) {
    uint32_t shoff = rd32(e + 32), shentsize = rd16(e + 46), shnum = rd16(e + 48), shstrndx = rd16(e + 50);
    if (shentsize >= 40 && shoff <= n && (uint64_t)shnum * shentsize <= n - shoff && shstrndx < shnum) {
      const unsigned char *ss = e + shoff + (size_t)shstrndx * shentsize;
      uint32_t stroff = rd32(ss + 16), strsize = rd32(ss + 20);
      rc = stroff <= n && strsize <= n - stroff ? 0 : -1;
      for (uint32_t i = 0; rc == 0 && i < shnum; i++) {
        const unsigned char *sh = e + shoff + (size_t)i * shentsize;
        uint32_t name = rd32(sh), type = rd32(sh + 4), flags = rd32(sh + 8), size = rd32(sh + 20);
        const char *nm = name < strsize && memchr(e + stroff + name, 0, strsize - name) ? (const char *)e + stroff + name : "";
        if (!(flags & 0x2) || size == 0) continue; /* SHF_ALLOC */
        if (uncalled(nm, p)) continue;
        if (flags & 0x4) *code += size;                   /* SHF_EXECINSTR */
        else if ((flags & 0x1) || type == 8) *data += size; /* SHF_WRITE, NOBITS */
        else *rodata += size;
      }
    }
  }
  free(e);
  return rc;
}

/* -fstack-usage's lines: FILE:LINE:COL:NAME<TAB>BYTES<TAB>static|dynamic|bounded */
typedef struct frame {
  char name[256];
  int64_t bytes;
  int exact;
} frame;

static int read_frames(const char *path, frame **fs, int *n) {
  unsigned char *text;
  size_t len;
  if (slurp(path, &text, &len) < 0) return -1;
  for (char *line = strtok((char *)text, "\n"); line; line = strtok(NULL, "\n")) {
    char *tab = strchr(line, '\t');
    if (!tab) continue;
    *tab = 0;
    char *name = strrchr(line, ':');
    name = name ? name + 1 : line;
    frame f = {{0}, strtoll(tab + 1, NULL, 10), strstr(tab + 1, "static") != NULL};
    snprintf(f.name, sizeof f.name, "%.*s", (int)strcspn(name, "."), name); /* GCC's clones: NAME.constprop.0 ... */
    int merged = 0;
    for (int i = 0; i < *n && !merged; i++)
      if (!strcmp((*fs)[i].name, f.name)) { /* a clone and its original: the larger frame */
        if (f.bytes > (*fs)[i].bytes) (*fs)[i].bytes = f.bytes;
        (*fs)[i].exact &= f.exact;
        merged = 1;
      }
    if (merged) continue;
    frame *g = realloc(*fs, sizeof *g * (size_t)(*n + 1));
    if (!g) break;
    *fs = g;
    (*fs)[(*n)++] = f;
  }
  free(text);
  return 0;
}

static const frame *find_frame(const frame *fs, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(fs[i].name, name)) return &fs[i];
  return NULL;
}

/* The deepest chain below function fn (a kernel or a task): its frame, its
 * compute/body frame, and the worst of its direct tasks (each through the serial
 * parallel_for). */
static int64_t chain(const frame *fs, int n, const char *fn, int64_t serial_for, int *exact, int depth) {
  char buf[300];
  int64_t own = 0, worst = 0;
  const frame *f = find_frame(fs, n, fn);
  if (f) own += f->bytes, *exact &= f->exact;
  snprintf(buf, sizeof buf, "%s__compute", fn);
  if ((f = find_frame(fs, n, buf))) own += f->bytes, *exact &= f->exact;
  snprintf(buf, sizeof buf, "%s_body", fn);
  if ((f = find_frame(fs, n, buf))) own += f->bytes, *exact &= f->exact;
  if (depth > 16) return own;
  size_t len = strlen(fn);
  for (int i = 0; i < n; i++) { /* direct tasks: fn__tN, without a further __ */
    const char *t = fs[i].name;
    if (strncmp(t, fn, len) || strncmp(t + len, "__t", 3)) continue;
    const char *rest = t + len + 3;
    while (*rest >= '0' && *rest <= '9') rest++;
    if (*rest) continue;
    int64_t c = serial_for + chain(fs, n, t, serial_for, exact, depth + 1);
    if (c > worst) worst = c;
  }
  return own + worst;
}

int pack_aot_measure(const char *dir, const char *driver, const char *const *cflags, const pack_aot *p,
                     pack_footprint *fp, gir_err *err) {
  memset(fp, 0, sizeof *fp);
  fp->arena = p->arena_bytes;
  char tmp[] = "/tmp/kiln-aot-XXXXXX";
  if (!mkdtemp(tmp)) return gir_errf(err, "aot: cannot create a temporary folder");
  static const char *const srcs[3] = {"kernels", "model", "model_weights"};
  int64_t code[3] = {0}, ro[3] = {0}, data = 0;
  frame *fs = NULL;
  int nf = 0, ok = 1;
  size_t o = 0;
  o += (size_t)snprintf(fp->compiler + o, sizeof fp->compiler - o, "%s", driver);
  for (int k = 0; cflags[k]; k++) o += (size_t)snprintf(fp->compiler + o, sizeof fp->compiler - o, " %s", cflags[k]);
  snprintf(fp->compiler + o, sizeof fp->compiler - o, " -O2");
  if (!p->kernels_c) { /* an LLVM object: its sections as they are; no frames to read */
    char obj[4200];
    snprintf(obj, sizeof obj, "%s/kernels.o", dir);
    if (elf_sizes(obj, p, &code[0], &ro[0], &data) < 0) ok = -1, gir_errf(err, "aot: cannot read %s", obj);
  }
  for (int s = p->kernels_c ? 0 : 1; s < 3 && ok == 1; s++) {
    char src[4096], obj[128], su[128], log[128];
    snprintf(src, sizeof src, "%s/%s.c", dir, srcs[s]);
    snprintf(obj, sizeof obj, "%s/%s.o", tmp, srcs[s]);
    snprintf(su, sizeof su, "%s/%s.su", tmp, srcs[s]);
    snprintf(log, sizeof log, "%s/cc.log", tmp);
    char *argv[48];
    int a = 0;
    argv[a++] = (char *)driver;
    for (int k = 0; cflags[k] && a < 36; k++) argv[a++] = (char *)cflags[k];
    char inc[4200];
    snprintf(inc, sizeof inc, "-I%s", dir);
    char *rest[] = {"-std=c99", "-O2", "-ffp-contract=off", "-fno-math-errno", "-ffunction-sections", "-fdata-sections",
                    "-fstack-usage", inc, "-c", "-o", obj, src, NULL};
    for (int k = 0; rest[k]; k++) argv[a++] = rest[k];
    argv[a] = NULL;
    int rc = run_quiet(argv, log);
    if (rc == -1 && s <= 1) { /* no such driver: not measured, not an error */
      snprintf(fp->why, sizeof fp->why, "%s is not installed (Debian: gcc-arm-none-eabi)", driver);
      ok = 0;
      break;
    }
    if (rc != 0) {
      gir_errf(err, "aot: %s cannot compile %s.c for the footprint (exit %d; see %s)", driver, srcs[s], rc, log);
      ok = -1;
      break;
    }
    if (elf_sizes(obj, p, &code[s], &ro[s], &data) < 0 || read_frames(su, &fs, &nf) < 0) {
      gir_errf(err, "aot: cannot read what %s made of %s.c", driver, srcs[s]);
      ok = -1;
    }
    unlink(obj), unlink(su), unlink(log);
  }
  char cmd[64];
  snprintf(cmd, sizeof cmd, "%s/cc.log", tmp);
  unlink(cmd);
  rmdir(tmp);
  if (ok == 1) {
    fp->measured = 1;
    fp->kernel_code = code[0] + ro[0];
    fp->runtime_code = code[1] + ro[1];
    fp->weights = code[2] + ro[2];
    fp->data = data;
    int exact = 1;
    const frame *run = find_frame(fs, nf, "model_run"), *sf = find_frame(fs, nf, "model_serial_for");
    int64_t serial_for = sf ? sf->bytes : 0, worst = 0, helper = 0;
    for (int32_t c = 0; c < p->n_calls; c++) {
      int64_t k = chain(fs, nf, p->calls[c].symbol, serial_for, &exact, 0);
      if (k > worst) worst = k;
    }
    for (int i = 0; i < nf; i++)
      if (!strncmp(fs[i].name, "kc_", 3) && fs[i].bytes > helper) helper = fs[i].bytes, exact &= fs[i].exact;
    fp->stack = (run ? run->bytes : 0) + worst + helper;
    fp->stack_exact = exact && run && p->kernels_c;
  }
  free(fs);
  return ok < 0 ? -1 : 0;
}

int pack_write_aot_manifest(const char *dir, const pack_aot *p, const pack_footprint *fp, gir_err *err) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "kiln-aot");
  cJSON_AddNumberToObject(root, "format_version", 1);
  cJSON_AddStringToObject(root, "model", p->model);
  cJSON_AddStringToObject(root, "compiler_version", p->compiler_version);
  cJSON_AddStringToObject(root, "target", p->target_name);
  for (int io = 0; io < 2; io++) {
    cJSON *arr = cJSON_AddArrayToObject(root, io ? "outputs" : "inputs");
    const pack_io *v = io ? p->outputs : p->inputs;
    for (int32_t i = 0; i < (io ? p->n_outputs : p->n_inputs); i++) {
      cJSON *t = cJSON_CreateObject();
      cJSON_AddStringToObject(t, "name", v[i].name);
      cJSON_AddStringToObject(t, "dtype", gir_dtype_name(v[i].dtype));
      cJSON *shape = cJSON_AddArrayToObject(t, "shape");
      for (int d = 0; d < v[i].shape.rank; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)v[i].shape.dims[d]));
      cJSON_AddItemToArray(arr, t);
    }
  }
  cJSON_AddNumberToObject(root, "kernel_calls", p->n_calls);
  cJSON_AddNumberToObject(root, "arena_bytes", (double)p->arena_bytes);
  cJSON_AddNumberToObject(root, "arena_lower_bound", (double)p->arena_lower_bound);
  cJSON_AddNumberToObject(root, "weights_bytes", (double)p->params_bytes);
  cJSON *f = cJSON_AddObjectToObject(root, "footprint");
  if (fp->measured) {
    cJSON_AddStringToObject(f, "measured_with", fp->compiler);
    cJSON_AddNumberToObject(f, "flash_kernel_code_bytes", (double)fp->kernel_code);
    cJSON_AddNumberToObject(f, "flash_runtime_code_bytes", (double)fp->runtime_code);
    cJSON_AddNumberToObject(f, "flash_weights_bytes", (double)fp->weights);
    cJSON_AddNumberToObject(f, "flash_bytes", (double)(fp->kernel_code + fp->runtime_code + fp->weights));
    cJSON_AddNumberToObject(f, "ram_arena_bytes", (double)fp->arena);
    cJSON_AddNumberToObject(f, "ram_data_bytes", (double)fp->data);
    cJSON_AddNumberToObject(f, "ram_stack_bytes", (double)fp->stack);
    cJSON_AddBoolToObject(f, "stack_exact", fp->stack_exact);
    cJSON_AddNumberToObject(f, "ram_bytes", (double)(fp->arena + fp->data + fp->stack));
  } else {
    cJSON_AddStringToObject(f, "not_measured", fp->why);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return gir_errf(err, "out of memory");
  size_t n = strlen(text);
  text[n] = '\n';
  int rc = write_text(dir, "manifest.json", text, n + 1, err);
  cJSON_free(text);
  return rc;
}
