/* test_cross.c — the LLVM backend's objects for other machines: one small kernel
 * (a parallel loop, vectors, a gather, libm, float16 and bfloat16 conversions)
 * compiled for aarch64, armv7 and riscv64, each object linked into a shared
 * library with Debian's cross compiler (-Wl,--no-undefined, so every libcall the
 * code generator emitted must resolve in that target's libgcc/libm/libc), and the
 * library's ELF header checked: machine, class, float ABI, the exported kernel.
 * The host's object goes the same way and is then dlopen-ed and run, the path a
 * bundle's lib/<target>.so takes.
 *
 * A second kernel runs every unary op, every float binary op, integer div / pow /
 * shifts and a few casts, so that every libcall the backend can produce is linked.
 *
 * The dot4 kernels of dot4_cases.h (every L, operand signedness and form) are
 * compiled for aarch64, aarch64-dotprod (SDOT/UDOT, u8·s8 as SDOT of the flipped
 * operand) and aarch64-i8mm (USDOT), linked statically with dot4_aarch64_check.c
 * and run under qemu-aarch64 -cpu max (a CPU with both extensions) against the
 * scalar reference: the one place those instructions run, as no aarch64 host is
 * assumed.
 *
 * A missing tool is a failure, not a skip (scripts/setup.sh installs every one):
 * the failure names the tool and its Debian package, and a link that fails because
 * the target's C library is absent ("cannot find crti.o", "cannot find -lm") says
 * so and names the libc6-dev-*-cross package, instead of printing the linker's
 * output. scripts/check_toolchains.sh makes the same checks before any test runs. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "dot4_cases.h"
#include "llvm_backend.h"
#include "tir.h"

typedef struct built {
  gir_arena *arena;
  tir_func f, ops;
} built;

/* kern(A f32[64], B f32[64], C f32[64], H f16[64], Z bf16[64], Q i64[64]):
 *   parallel r in [0, 4): C[v] = A[v] * B[v] + C[v] (16 lanes at row r);
 *                         H[v] = half(exp(A[v]));  Z[v] = bfloat16(A[rev]) (a gather)
 *   for i in [0, 64): Q[i] = floordiv(i - 30, 7) */
static void build_kernel(built *k) {
  k->arena = gir_arena_new();
  tir_builder bb, *b = &bb;
  tir_builder_init(b, k->arena);
  static const char *const names[6] = {"A", "B", "C", "H", "Z", "Q"};
  static const gir_dtype types[6] = {GIR_F32, GIR_F32, GIR_F32, GIR_F16, GIR_BF16, GIR_I64};
  tir_buffer **ps = gir_arena_alloc(k->arena, sizeof(tir_buffer *) * 6);
  for (int i = 0; i < 6; i++) ps[i] = tir_buffer_new(b, names[i], types[i], 64, TIR_GLOBAL, i);
  tir_var *r = tir_var_new(b, "r", GIR_I64), *i = tir_var_new(b, "i", GIR_I64);
  tir_expr *base = tir_bin(b, TE_MUL, tir_var_ref(b, r), tir_i64(b, 16));
  tir_expr *v = tir_ramp(b, base, tir_i64(b, 1), 16);
  tir_expr *rev = tir_ramp(b, tir_bin(b, TE_SUB, tir_i64(b, 63), base), tir_i64(b, -1), 16);
  tir_expr *fma = tir_bin(b, TE_ADD, tir_bin(b, TE_MUL, tir_load(b, ps[0], v), tir_load(b, ps[1], v)), tir_load(b, ps[2], v));
  tir_stmt *body[3] = {tir_store(b, ps[2], v, fma),
                       tir_store(b, ps[3], v, tir_cast(b, GIR_F16, tir_un(b, TE_EXP, tir_load(b, ps[0], v)))),
                       tir_store(b, ps[4], v, tir_cast(b, GIR_BF16, tir_load(b, ps[0], rev)))};
  tir_stmt *par = tir_for(b, r, tir_i64(b, 0), tir_i64(b, 4), TIR_PARALLEL, tir_seq(b, body, 3));
  tir_expr *q = tir_bin(b, TE_FLOORDIV, tir_bin(b, TE_SUB, tir_var_ref(b, i), tir_i64(b, 30)), tir_i64(b, 7));
  tir_stmt *ser = tir_for(b, i, tir_i64(b, 0), tir_i64(b, 64), TIR_SERIAL, tir_store(b, ps[5], tir_var_ref(b, i), q));
  k->f = (tir_func){"kern", 6, ps, tir_seq2(b, par, ser), b->next_var, b->next_buffer};

  /* ops(X f32[64], Y f32[64], O f32[64 * 64], H f16[64], Q i64[64], U u64[64], S i8[64]): every
   * unary and float binary op on 4-lane vectors, integer div / pow / shifts, casts —
   * whatever libcalls they need must link on the target. */
  tir_buffer **os = gir_arena_alloc(k->arena, sizeof(tir_buffer *) * 7);
  static const char *const onames[7] = {"X", "Y", "O", "H", "Q", "U", "S"};
  static const gir_dtype otypes[7] = {GIR_F32, GIR_F32, GIR_F32, GIR_F16, GIR_I64, GIR_U64, GIR_I8};
  static const int64_t osizes[7] = {64, 64, 64 * 64, 64, 64, 64, 64};
  for (int j = 0; j < 7; j++) os[j] = tir_buffer_new(b, onames[j], otypes[j], osizes[j], TIR_GLOBAL, j);
  tir_var *w = tir_var_new(b, "w", GIR_I64);
  tir_expr *wv = tir_ramp(b, tir_bin(b, TE_MUL, tir_var_ref(b, w), tir_i64(b, 4)), tir_i64(b, 1), 4);
  tir_stmt *st[96];
  int n = 0, slot = 0;
  tir_expr *x = tir_load(b, os[0], wv), *y = tir_load(b, os[1], wv);
#define OUT(val) tir_store(b, os[2], tir_bin(b, TE_ADD, wv, tir_broadcast(b, tir_i64(b, 64 * slot++), 4)), (val))
  for (int op = 0; op < TE_UNOP_COUNT; op++) {
    tir_expr *u = tir_un(b, op, x);
    st[n++] = OUT(u->dtype == GIR_BOOL ? tir_cast(b, GIR_F32, u) : u);
  }
  for (int op = 0; op < TE_BINOP_COUNT; op++) {
    if (op >= TE_AND && op <= TE_SHR) continue;
    tir_expr *e = tir_bin(b, op, x, y);
    st[n++] = OUT(e->dtype == GIR_BOOL ? tir_cast(b, GIR_F32, e) : e);
  }
  st[n++] = OUT(tir_cast(b, GIR_F32, tir_load(b, os[3], wv)));
  st[n++] = tir_store(b, os[3], wv, tir_cast(b, GIR_F16, tir_bin(b, TE_ADD, x, y)));
  tir_expr *qq = tir_load(b, os[4], wv), *uu = tir_load(b, os[5], wv);
  st[n++] = tir_store(b, os[4], wv, tir_bin(b, TE_POW, tir_bin(b, TE_FLOORMOD, qq, tir_cast(b, GIR_I64, y)), tir_bin(b, TE_SHR, qq, qq)));
  st[n++] = tir_store(b, os[5], wv, tir_bin(b, TE_DIV, uu, tir_bin(b, TE_SHL, uu, tir_cast(b, GIR_U64, x))));
  st[n++] = tir_store(b, os[6], wv, tir_cast(b, GIR_I8, x));
  st[n++] = OUT(tir_cast(b, GIR_F32, uu));
  st[n++] = OUT(tir_cast(b, GIR_F32, tir_cast(b, GIR_F16, qq)));
  st[n++] = OUT(tir_cast(b, GIR_F32, tir_cast(b, GIR_BF16, tir_cast(b, GIR_F64, x))));
#undef OUT
  k->ops = (tir_func){"ops", 7, os, tir_for(b, w, tir_i64(b, 0), tir_i64(b, 16), TIR_SERIAL, tir_seq(b, st, n)), b->next_var,
                      b->next_buffer};
  k->f.n_vars = k->ops.n_vars, k->f.n_buffers = k->ops.n_buffers;
}

static int have(const char *tool) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) == 0;
}

/* The first line a command prints (empty on failure). */
static void first_line(const char *cmd, char *out, size_t n) {
  out[0] = 0;
  FILE *p = popen(cmd, "r");
  if (!p) return;
  if (!fgets(out, (int)n, p)) out[0] = 0;
  pclose(p);
}

typedef struct elf_info {
  int ok, cls;
  unsigned machine, flags;
} elf_info;

static elf_info read_elf(const char *path) {
  elf_info e = {0};
  unsigned char h[64] = {0};
  FILE *f = fopen(path, "rb");
  if (!f) return e;
  size_t n = fread(h, 1, sizeof h, f);
  fclose(f);
  if (n < 52 || memcmp(h, "\177ELF", 4) || h[5] != 1) return e; /* little endian only here */
  e.ok = 1;
  e.cls = h[4] == 2 ? 64 : 32;
  e.machine = (unsigned)(h[18] | h[19] << 8);
  size_t fo = e.cls == 64 ? 48 : 36;
  e.flags = (unsigned)(h[fo] | h[fo + 1] << 8 | h[fo + 2] << 16 | (unsigned)h[fo + 3] << 24);
  return e;
}

typedef struct cross {
  const char *target, *cc, *nm, *file_says;
  unsigned machine;
  int cls;
  unsigned flag_mask, flag_value;               /* float ABI bits */
  const char *cc_pkg, *libc_pkg, *binutils_pkg; /* the Debian packages of cc, its C library, nm */
} cross;

/* What a failed link lacks, as one line: the files and libraries the linker could
 * not find ("crti.o, -lm", in the order it reported them); empty when its output
 * has no "cannot find". */
static void missing_pieces(const char *log, char *out, size_t n) {
  char seen[8][128];
  int k = 0;
  out[0] = 0;
  for (const char *p = strstr(log, "cannot find "); p; p = strstr(p, "cannot find ")) {
    p += strlen("cannot find ");
    size_t len = strcspn(p, ": \n");
    char piece[128];
    snprintf(piece, sizeof piece, "%.*s", (int)(len < 127 ? len : 127), p);
    p += len;
    int dup = 0;
    for (int i = 0; i < k; i++) dup |= !strcmp(seen[i], piece);
    if (dup || !piece[0] || k == 8) continue;
    memcpy(seen[k++], piece, sizeof piece);
    size_t used = strlen(out);
    snprintf(out + used, n - used, "%s%s", used ? ", " : "", piece);
  }
}

/* Checks a link's exit status; on failure prints one line naming what is missing
 * and the package that provides it (the linker's own output only when it is not
 * a missing file or library). */
static int check_link(int rc, const char *target, const char *cc, const char *libc_pkg, const char *cmd, const char *log) {
  char miss[512];
  missing_pieces(log, miss, sizeof miss);
  if (rc == 0 || miss[0])
    return CHECKF(rc == 0,
                  "%s: %s cannot link a shared library with -lm (ld: cannot find %s): the %s C library is missing: "
                  "install %s (scripts/setup.sh installs it)\n     command: %s",
                  target, cc, miss, target, libc_pkg, cmd);
  return CHECKF(rc == 0, "%s: link failed (the %s C library comes with %s): %s\n%s", target, target, libc_pkg, cmd, log);
}

/* Runs a command, its stdout and stderr in log; returns its exit status. */
static int run_log(const char *cmd, char *log, size_t n) {
  log[0] = 0;
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t used = 0;
  while (used < n - 1 && fgets(log + used, (int)(n - used), p)) used = strlen(log);
  char rest[256];
  while (fgets(rest, sizeof rest, p)) {} /* drain past what fits */
  return pclose(p);
}

static void test_target(const tir_func *const *fs, const cross *c, const char *dir) {
  if (!CHECKF(have(c->cc), "%s: the cross compiler %s is not installed: install %s (scripts/setup.sh installs it)",
              c->target, c->cc, c->cc_pkg))
    return;
  gir_err err = {0};
  tgt_llvm_options o;
  if (!CHECK(tgt_llvm_named_target(c->target, &o, &err) == 0)) return;
  tgt_llvm_module *m = tgt_llvm_compile(fs, 2, &o, &err);
  if (!CHECKF(m != NULL, "%s: %s", c->target, err.msg)) return;
  char obj[512], so[512], cmd[2048], line[512];
  snprintf(obj, sizeof obj, "%s/kern_%s.o", dir, c->target);
  snprintf(so, sizeof so, "%s/libkern_%s.so", dir, c->target);
  int emitted = CHECKF(tgt_llvm_emit_object(m, obj, &err) == 0, "%s: %s", c->target, err.msg);
  tgt_llvm_module_free(m);
  if (!emitted) return;
  elf_info eo = read_elf(obj);
  CHECKF(eo.ok && eo.machine == c->machine, "%s: object e_machine %u", c->target, eo.machine);

  snprintf(cmd, sizeof cmd, "LC_ALL=C %s -shared -Wl,--no-undefined -o %s %s -lm 2>&1", c->cc, so, obj);
  char log[4096];
  if (!check_link(run_log(cmd, log, sizeof log), c->target, c->cc, c->libc_pkg, cmd, log)) return;

  elf_info e = read_elf(so);
  CHECKF(e.ok && e.machine == c->machine, "%s: library e_machine %u, want %u", c->target, e.machine, c->machine);
  CHECKF(e.cls == c->cls, "%s: ELF class %d, want %d", c->target, e.cls, c->cls);
  CHECKF((e.flags & c->flag_mask) == c->flag_value, "%s: e_flags 0x%x", c->target, e.flags);
  if (CHECKF(have("file"), "%s: file(1) is not installed: install file (scripts/setup.sh installs it)", c->target)) {
    snprintf(cmd, sizeof cmd, "file -b %s", so);
    first_line(cmd, line, sizeof line);
    CHECKF(strstr(line, c->file_says) != NULL, "%s: file says '%s'", c->target, line);
  }
  if (CHECKF(have(c->nm), "%s: %s is not installed: install %s (scripts/setup.sh installs it)", c->target, c->nm,
             c->binutils_pkg)) {
    snprintf(cmd, sizeof cmd, "%s -D --defined-only %s | grep -c -E ' T (kern|ops)$'", c->nm, so);
    first_line(cmd, line, sizeof line);
    CHECKF(atoi(line) == 2, "%s: kern and ops are not both exported (%s)", c->target, line);
  }
}

static int32_t serial_for(const kiln_ctx *ctx, kiln_task_fn fn, void *closure, int64_t n) {
  (void)ctx;
  fn(closure, 0, n / 2); /* two chunks, so the task's begin is not always 0 */
  fn(closure, n / 2, n);
  return 0;
}

/* The host object as a shared library, loaded with dlopen and run. */
static void test_host_library(const tir_func *const *fs, const char *dir) {
  if (!CHECKF(have("cc"), "host: the C compiler cc is not installed: install gcc (scripts/setup.sh installs it)")) return;
  gir_err err = {0};
  tgt_llvm_module *m = tgt_llvm_compile(fs, 2, NULL, &err);
  if (!CHECKF(m != NULL, "host: %s", err.msg)) return;
  char obj[512], so[512], cmd[1536], log[4096];
  snprintf(obj, sizeof obj, "%s/kern_host.o", dir);
  snprintf(so, sizeof so, "%s/libkern_host.so", dir);
  int ok = CHECKF(tgt_llvm_emit_object(m, obj, &err) == 0, "host: %s", err.msg);
  tgt_llvm_module_free(m);
  if (!ok) return;
  snprintf(cmd, sizeof cmd, "LC_ALL=C cc -shared -Wl,--no-undefined -o %s %s -lm 2>&1", so, obj);
  if (!check_link(run_log(cmd, log, sizeof log), "host", "cc", "libc6-dev", cmd, log)) return;
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!CHECKF(h != NULL, "dlopen: %s", dlerror())) return;
  kiln_kernel_fn kern;
  *(void **)&kern = dlsym(h, "kern");
  if (CHECK(kern != NULL)) {
    float *a = aligned_alloc(64, 256), *b = aligned_alloc(64, 256), *c = aligned_alloc(64, 256);
    uint16_t *hh = aligned_alloc(64, 128), *z = aligned_alloc(64, 128);
    int64_t *q = aligned_alloc(64, 512);
    for (int i = 0; i < 64; i++) a[i] = (float)i / 16.0f - 2.0f, b[i] = 3.0f, c[i] = 1.0f;
    kiln_ctx ctx = {.parallel_for = serial_for};
    void *bufs[6] = {a, b, c, hh, z, q};
    CHECK_INT(kern(bufs, &ctx), 0);
    int bad = 0;
    for (int i = 0; i < 64; i++) {
      bad += fabsf(c[i] - (a[i] * 3.0f + 1.0f)) > 1e-6f;
      float e = gir_f16_to_f32(hh[i]), want = expf(a[i]);
      bad += fabsf(e - want) > 1e-3f * want;
      bad += z[i] != gir_f32_to_bf16(a[63 - i]);
      int64_t x = i - 30;
      bad += q[i] != (x >= 0 ? x / 7 : -((-x + 6) / 7));
    }
    CHECKF(bad == 0, "host library: %d wrong values", bad);
    free(a), free(b), free(c), free(hh), free(z), free(q);
  }
  dlclose(h);
}

/* dot4_cases.h's kernels for each aarch64 target, run under qemu-aarch64 by
 * dot4_aarch64_check.c (paths relative to the source tree, the tests' working
 * directory). */
static void test_dot4_aarch64(const char *dir) {
  const char *cc = "aarch64-linux-gnu-gcc";
  if (!CHECKF(have(cc), "dot4 on aarch64: the cross compiler %s is not installed: install gcc-aarch64-linux-gnu "
                        "(scripts/setup.sh installs it)", cc) ||
      !CHECKF(have("qemu-aarch64"), "dot4 on aarch64: qemu-aarch64 is not installed: install qemu-user "
                                    "(scripts/setup.sh installs it)"))
    return;
  gir_arena *arena = gir_arena_new();
  tir_builder bb;
  tir_builder_init(&bb, arena);
  dot4_case cs[DOT4_MAX_CASES];
  int nc = dot4_cases(cs);
  tir_func *fns = gir_arena_alloc(arena, sizeof *fns * (size_t)nc);
  const tir_func **fs = gir_arena_alloc(arena, sizeof *fs * (size_t)nc);
  char path[512], cmd[2048], log[4096], nm[64];
  snprintf(path, sizeof path, "%s/dot4_table.h", dir);
  FILE *tab = fopen(path, "w");
  if (!CHECKF(tab != NULL, "cannot write %s", path)) {
    gir_arena_free(arena);
    return;
  }
  for (int i = 0; i < nc; i++) {
    tir_buffer **ps = gir_arena_alloc(arena, sizeof(tir_buffer *) * 4);
    tir_stmt *body = dot4_kernel(&bb, &cs[i], ps);
    fns[i] = (tir_func){gir_arena_strdup(arena, dot4_name(&cs[i], nm, sizeof nm)), 4, ps, body, 0, 0};
    fs[i] = &fns[i];
    fprintf(tab, "int32_t %s(void *const *, const kiln_ctx *);\n", nm);
  }
  fprintf(tab, "#define DOT4_TABLE");
  for (int i = 0; i < nc; i++) fprintf(tab, " {\"%s\", %s},", fns[i].name, fns[i].name);
  fprintf(tab, "\n");
  fclose(tab);
  for (int i = 0; i < nc; i++) fns[i].n_vars = bb.next_var, fns[i].n_buffers = bb.next_buffer;
  static const char *const targets[] = {"aarch64", "aarch64-dotprod", "aarch64-i8mm"};
  for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
    gir_err err = {0};
    tgt_llvm_options o;
    if (!CHECK(tgt_llvm_named_target(targets[t], &o, &err) == 0)) continue;
    tgt_llvm_module *m = tgt_llvm_compile(fs, nc, &o, &err);
    if (!CHECKF(m != NULL, "dot4 on %s: %s", targets[t], err.msg)) continue;
    char obj[512], exe[512];
    snprintf(obj, sizeof obj, "%s/dot4_%s.o", dir, targets[t]);
    snprintf(exe, sizeof exe, "%s/dot4_%s", dir, targets[t]);
    int ok = CHECKF(tgt_llvm_emit_object(m, obj, &err) == 0, "dot4 on %s: %s", targets[t], err.msg);
    tgt_llvm_module_free(m);
    if (!ok) continue;
    snprintf(cmd, sizeof cmd,
             "LC_ALL=C %s -std=c11 -O1 -static -I'%s' -Itests/unit -Iruntime -Itir -Ite -Igraphir "
             "tests/unit/dot4_aarch64_check.c %s -o %s 2>&1",
             cc, dir, obj, exe);
    int built = run_log(cmd, log, sizeof log) == 0;
    if (!built && strstr(log, "cannot find crti.o")) { /* no aarch64 C library: test_target said so, naming the package */
      printf("SKIP dot4 on aarch64: the aarch64 C library is missing (the failure above names its package)\n");
      break;
    }
    if (!CHECKF(built, "dot4 on %s: the check does not build: %s\n%s", targets[t], cmd, log)) continue;
    snprintf(cmd, sizeof cmd, "qemu-aarch64 -cpu max %s 2>&1", exe);
    int rc = run_log(cmd, log, sizeof log);
    if (CHECKF(rc == 0 && strstr(log, " bad 0"), "dot4 on %s under qemu-aarch64 (status %d): %s", targets[t], rc, log))
      printf("dot4 on %s under qemu-aarch64 -cpu max: %s", targets[t], log);
  }
  gir_arena_free(arena);
}

int main(void) {
  built k;
  build_kernel(&k);
  char dir[] = "/tmp/kiln_cross_XXXXXX";
  if (!CHECK(mkdtemp(dir) != NULL)) return check_finish("test_cross");
  static const cross targets[] = {
      {"aarch64", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-nm", "ARM aarch64", 183, 64, 0, 0, "gcc-aarch64-linux-gnu",
       "libc6-dev-arm64-cross", "binutils-aarch64-linux-gnu"},
      {"armv7", "arm-linux-gnueabihf-gcc", "arm-linux-gnueabihf-nm", "ARM, EABI5", 40, 32, 0x400, 0x400,
       "gcc-arm-linux-gnueabihf", "libc6-dev-armhf-cross", "binutils-arm-linux-gnueabihf"},
      {"riscv64", "riscv64-linux-gnu-gcc", "riscv64-linux-gnu-nm", "RISC-V", 243, 64, 0x6, 0x4, "gcc-riscv64-linux-gnu",
       "libc6-dev-riscv64-cross", "binutils-riscv64-linux-gnu"},
  };
  const tir_func *fs[2] = {&k.f, &k.ops};
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) test_target(fs, &targets[i], dir);
  test_host_library(fs, dir);
  test_dot4_aarch64(dir);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
  gir_arena_free(k.arena);
  return check_finish("test_cross");
}
