/* llvm_machine.c — the LLVM backend's driver: named targets, target machines,
 * one compile (translate every kernel into a fresh context and module, verify,
 * run the standard default<On> pipeline), and the outputs (object file, textual
 * IR, assembly).
 *
 * The host is compiled for with LLVMGetHostCPUName / LLVMGetHostCPUFeatures (the
 * -mcpu=native equivalent; on aarch64 Linux plus the dot-product and I8MM bits of
 * the kernel's hwcaps, which LLVM's host feature list may not carry); a given
 * triple defaults to the "generic" CPU. The same feature strings decide what the
 * translation may use beyond the triple: float16 conversion instructions, and the
 * VPDPBUSD (x86) or SDOT/UDOT/USDOT (aarch64) forms of dot4. Code
 * is position independent, so one object serves a shared library and the JIT.
 * Emitting runs the code generator's own IR passes, which change the module, so
 * every emit works on a clone and a module can be emitted any number of times.
 *
 * The LLVM targets are registered once per process (pthread_once: registration
 * is idempotent but not thread safe); everything else belongs to a module. */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include "llvm_backend.h"
#include "llvm_internal.h"

struct tgt_llvm_module {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMTargetMachineRef tm;
  char *triple;
  int host;
  char *features; /* the features the runtime must check, comma-separated (recorded_features) */
};

static pthread_once_t targets_once = PTHREAD_ONCE_INIT;

static char *host_features(void);

static void init_targets(void) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMInitializeX86AsmParser();
  LLVMInitializeAArch64TargetInfo();
  LLVMInitializeAArch64Target();
  LLVMInitializeAArch64TargetMC();
  LLVMInitializeAArch64AsmPrinter();
  LLVMInitializeAArch64AsmParser();
  LLVMInitializeARMTargetInfo();
  LLVMInitializeARMTarget();
  LLVMInitializeARMTargetMC();
  LLVMInitializeARMAsmPrinter();
  LLVMInitializeARMAsmParser();
  LLVMInitializeRISCVTargetInfo();
  LLVMInitializeRISCVTarget();
  LLVMInitializeRISCVTargetMC();
  LLVMInitializeRISCVAsmPrinter();
  LLVMInitializeRISCVAsmParser();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

/* --- named targets --- */

typedef struct named_target {
  const char *name, *triple, *cpu, *features, *abi;
} named_target;

static const named_target named[] = {
    {"host", NULL, NULL, NULL, NULL},
    {"x86_64", "x86_64-unknown-linux-gnu", "x86-64", "", NULL},
    {"x86_64-avx2", "x86_64-unknown-linux-gnu", "x86-64-v3", "", NULL},
    {"x86_64-avx512", "x86_64-unknown-linux-gnu", "x86-64-v4", "", NULL},
    {"aarch64", "aarch64-unknown-linux-gnu", "generic", "+neon", NULL},
    /* Armv8.2-A and later cores with the dot-product extension (Cortex-A55/A76/A78,
     * Neoverse N1, Graviton2...); with I8MM too (Armv8.6-A: Neoverse V1/N2/V2,
     * Cortex-A710/X2, Graviton3/4) */
    {"aarch64-dotprod", "aarch64-unknown-linux-gnu", "generic", "+neon,+dotprod", NULL},
    {"aarch64-i8mm", "aarch64-unknown-linux-gnu", "generic", "+neon,+dotprod,+i8mm", NULL},
    {"armv7", "armv7-unknown-linux-gnueabihf", "generic", "+neon", NULL},
    {"riscv64", "riscv64-unknown-linux-gnu", "generic-rv64", "+m,+a,+f,+d,+c", "lp64d"},
};

static const char *const named_list[] = {"host",         "x86_64",          "x86_64-avx2",
                                         "x86_64-avx512", "aarch64",         "aarch64-dotprod",
                                         "aarch64-i8mm",  "armv7",           "riscv64",
                                         NULL};

const char *const *tgt_llvm_target_names(void) { return named_list; }

int tgt_llvm_named_target(const char *name, tgt_llvm_options *out, gir_err *err) {
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    if (name && !strcmp(name, named[i].name)) {
      *out = (tgt_llvm_options){named[i].triple, named[i].cpu, named[i].features, named[i].abi, 3, 0, 0, NULL};
      return 0;
    }
  return gir_errf(err,
                  "unknown target '%s' (known: host, x86_64, x86_64-avx2, x86_64-avx512, aarch64, aarch64-dotprod, "
                  "aarch64-i8mm, armv7, riscv64; GPUs: cuda, cuda-sm80, cuda-sm90)",
                  name ? name : "(null)");
}

/* --- compile --- */

static char *dup_message(char *m) { /* LLVM's message → malloc'ed copy; disposes m */
  char *s = strdup(m ? m : "");
  if (m) LLVMDisposeMessage(m);
  return s;
}

static char *host_triple(void) {
  char *t = LLVMGetDefaultTargetTriple();
  char *n = LLVMNormalizeTargetTriple(t);
  LLVMDisposeMessage(t);
  return dup_message(n);
}

void tgt_llvm_module_free(tgt_llvm_module *m) {
  if (!m) return;
  if (m->mod) LLVMDisposeModule(m->mod);
  if (m->ctx) LLVMContextDispose(m->ctx);
  if (m->tm) LLVMDisposeTargetMachine(m->tm);
  free(m->triple);
  free(m->features);
  free(m);
}

const char *tgt_llvm_module_triple(const tgt_llvm_module *m) { return m->triple; }
int tgt_llvm_module_is_host(const tgt_llvm_module *m) { return m->host; }

static LLVMCodeGenOptLevel cg_level(int o) {
  return o <= 0 ? LLVMCodeGenLevelNone : o == 1 ? LLVMCodeGenLevelLess : o == 2 ? LLVMCodeGenLevelDefault
                                                                               : LLVMCodeGenLevelAggressive;
}

/* Same architecture, OS and environment (the vendor field does not matter). */
static int same_platform(const char *a, const char *b) {
  const char *da = strchr(a, '-'), *db = strchr(b, '-');
  if (!da || !db || da - a != db - b || strncmp(a, b, (size_t)(da - a))) return 0;
  const char *ra = strchr(da + 1, '-'), *rb = strchr(db + 1, '-');
  return ra && rb && !strcmp(ra, rb);
}

static int make_machine(tgt_llvm_module *m, const tgt_llvm_options *opt, char **cpu_out, char **features_out,
                        gir_err *err) {
  char *host = host_triple();
  if (!host) return gir_errf(err, "out of memory");
  if (opt->triple) {
    m->triple = dup_message(LLVMNormalizeTargetTriple(opt->triple));
  } else {
    m->triple = strdup(host);
  }
  if (!m->triple) {
    free(host);
    return gir_errf(err, "out of memory");
  }
  m->host = same_platform(m->triple, host);
  free(host);

  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(m->triple, &target, &msg)) {
    gir_errf(err, "llvm: unknown target triple %s: %s", m->triple, msg ? msg : "");
    LLVMDisposeMessage(msg);
    return -1;
  }
  if (msg) LLVMDisposeMessage(msg);
  char *cpu = opt->cpu ? strdup(opt->cpu) : opt->triple ? strdup("generic") : dup_message(LLVMGetHostCPUName());
  char *feat = opt->features ? strdup(opt->features) : opt->triple ? strdup("") : host_features();
  if (!cpu || !feat) {
    free(cpu);
    free(feat);
    return gir_errf(err, "out of memory");
  }
  LLVMTargetMachineOptionsRef to = LLVMCreateTargetMachineOptions();
  LLVMTargetMachineOptionsSetCPU(to, cpu);
  LLVMTargetMachineOptionsSetFeatures(to, feat);
  if (opt->abi) LLVMTargetMachineOptionsSetABI(to, opt->abi);
  LLVMTargetMachineOptionsSetCodeGenOptLevel(to, cg_level(opt->opt_level));
  LLVMTargetMachineOptionsSetRelocMode(to, LLVMRelocPIC);
  m->tm = LLVMCreateTargetMachineWithOptions(target, m->triple, to);
  LLVMDisposeTargetMachineOptions(to);
  if (!m->tm) {
    gir_errf(err, "llvm: cannot make a target machine for %s (cpu %s, features '%s')", m->triple, cpu, feat);
    free(cpu);
    free(feat);
    return -1;
  }
  *cpu_out = cpu;
  *features_out = feat;
  return 0;
}

/* Whether `features` (a comma-separated "+a,-b" list) turns `name` on. */
static int has_feature(const char *features, const char *name) {
  size_t n = strlen(name);
  for (const char *p = features; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n + 1 && p[0] == '+' && !strncmp(p + 1, name, n)) return 1;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

/* The aarch64 features the code generator itself decides to use (dot4's SDOT/UDOT and
 * USDOT): a named target needs them on the host to run there, a bundle records them
 * for the runtime to check (runtime/cpu.c: the kernel's hwcaps). */
static const char *const aarch64_recorded[] = {"dotprod", "i8mm", NULL};

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1ul << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1ul << 13)
#endif
#endif

/* LLVM's host feature string (malloc'ed). On aarch64 Linux, "+dotprod" and "+i8mm"
 * are added from the hwcaps when the CPU has them and the string does not say so:
 * LLVM 19 reads only a few of /proc/cpuinfo's flags (neon, crc, lse, sve...), so a
 * CPU it does not know by name would otherwise compile without them. */
static char *host_features(void) {
  char *f = dup_message(LLVMGetHostCPUFeatures());
#if defined(__aarch64__) && defined(__linux__)
  unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  int on[2] = {(hw & HWCAP_ASIMDDP) != 0, (hw2 & HWCAP2_I8MM) != 0};
  for (int i = 0; i < 2 && f; i++) {
    if (!on[i] || has_feature(f, aarch64_recorded[i])) continue;
    size_t n = strlen(f) + strlen(aarch64_recorded[i]) + 3;
    char *g = malloc(n);
    if (g) snprintf(g, n, "%s%s+%s", f, *f ? "," : "", aarch64_recorded[i]);
    free(f);
    f = g;
  }
#endif
  return f;
}

/* The CPU features an x86-64 micro-architecture level needs (LLVM's names). */
static const char *const x86_v3[] = {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave", NULL};
static const char *const x86_v4[] = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", NULL};

int tgt_llvm_target_runs_here(const char *name, char *why, size_t why_len) {
  tgt_llvm_options o;
  gir_err err = {{0}};
  if (tgt_llvm_named_target(name, &o, &err) < 0) {
    snprintf(why, why_len, "%s", err.msg);
    return 0;
  }
  if (!o.triple) return 1; /* host */
  char *host = host_triple();
  int same_arch = !strncmp(host, o.triple, strcspn(o.triple, "-")) && host[strcspn(o.triple, "-")] == '-';
  if (!same_arch) {
    snprintf(why, why_len, "target '%s' is %s; this host is %s", name, o.triple, host);
    free(host);
    return 0;
  }
  free(host);
  const char *const *need[2] = {NULL, NULL};
  if (o.cpu && !strcmp(o.cpu, "x86-64-v3")) need[0] = x86_v3;
  if (o.cpu && !strcmp(o.cpu, "x86-64-v4")) need[0] = x86_v3, need[1] = x86_v4;
  if (!strncmp(o.triple, "aarch64", 7)) need[0] = aarch64_recorded; /* those the target's features name */
  char *feats = host_features();
  int ok = 1;
  for (int l = 0; l < 2 && ok; l++)
    for (int i = 0; need[l] && need[l][i] && ok; i++)
      if ((need[l] != aarch64_recorded || has_feature(o.features, need[l][i])) && !has_feature(feats, need[l][i])) {
        snprintf(why, why_len, "target '%s' needs the CPU feature %s, which this host lacks", name, need[l][i]);
        ok = 0;
      }
  free(feats);
  return ok;
}

/* The instruction-set features code compiled with (cpu, features) may use, as the
 * bundle records them for the runtime to check (runtime/cpu.c, FORMAT.md): on x86
 * the host's '+' features, or those an x86-64 level implies; on aarch64 those of
 * aarch64_recorded the features turn on; none for other triples. */
static const char *const x86_recorded[] = {
    "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "aes", "avx", "avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt", "movbe",
    "adx", "sha", "gfni", "vaes", "vpclmulqdq", "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl",
    "avx512ifma", "avx512vbmi", "avx512vbmi2", "avx512vnni", "avx512bitalg", "avx512vpopcntdq", "avx512bf16",
    "avx512fp16", "avxvnni", NULL};

static char *recorded_features(const char *triple, const char *cpu, const char *features) {
  size_t cap = 1024, n = 0;
  char *out = calloc(cap, 1);
  if (out && !strncmp(triple, "aarch64", 7))
    for (int i = 0; aarch64_recorded[i]; i++)
      if (has_feature(features, aarch64_recorded[i]))
        n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "," : "", aarch64_recorded[i]);
  if (!out || strncmp(triple, "x86_64", 6)) return out;
  int v3 = cpu && (!strcmp(cpu, "x86-64-v3") || !strcmp(cpu, "x86-64-v4")), v4 = cpu && !strcmp(cpu, "x86-64-v4");
  for (int i = 0; x86_recorded[i]; i++) {
    const char *f = x86_recorded[i];
    int on = has_feature(features, f);
    for (int k = 0; v3 && !on && x86_v3[k]; k++) on = !strcmp(x86_v3[k], f);
    for (int k = 0; v4 && !on && x86_v4[k]; k++) on = !strcmp(x86_v4[k], f);
    if (v3 && !on && (!strcmp(f, "sse3") || !strcmp(f, "ssse3") || !strcmp(f, "sse4.1") || !strcmp(f, "sse4.2") ||
                      !strcmp(f, "popcnt")))
      on = 1; /* v2, below v3 */
    if (on) n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "," : "", f);
  }
  return out;
}

const char *tgt_llvm_module_features(const tgt_llvm_module *m) { return m->features; }

/* Has the target float16 <-> float32 conversion instructions? (Else fptrunc /
 * fpext to half become libcalls, missing from some targets' libgcc.) */
static int native_half(const char *triple, const char *cpu, const char *features) {
  if (!strncmp(triple, "aarch64", 7) || !strncmp(triple, "arm64", 5)) return 1;
  static const char *const feats[] = {"f16c", "fp16", "fullfp16", "zfhmin", "zfh", "zhinxmin", "zhinx"};
  for (size_t i = 0; i < sizeof feats / sizeof feats[0]; i++)
    if (has_feature(features, feats[i])) return 1;
  if (has_feature(features, "avx512f")) return !strstr(features, "-f16c"); /* AVX-512 implies F16C */
  return !strncmp(triple, "x86_64", 6) && (!strcmp(cpu, "x86-64-v3") || !strcmp(cpu, "x86-64-v4")) &&
         !strstr(features, "-f16c");
}

/* Which VPDPBUSD forms dot4 may use: the 512-bit one with AVX512-VNNI, the 128-
 * and 256-bit ones with AVX512-VNNI and AVX512VL (EVEX) or with AVX-VNNI (VEX);
 * LLVM names both by the same intrinsics. Read from the feature string only (the
 * host's own for the host): a CPU name that implies VNNI without the feature
 * spelled out gets the generic code, which is correct, only slower. */
static void vnni_forms(const char *triple, const char *cpu, const char *features, int *v512, int *v256) {
  int x86 = !strncmp(triple, "x86_64", 6), vnni = x86 && has_feature(features, "avx512vnni");
  int vl = has_feature(features, "avx512vl") || (cpu && !strcmp(cpu, "x86-64-v4"));
  *v512 = vnni;
  *v256 = (vnni && vl) || (x86 && has_feature(features, "avxvnni"));
}

/* Whether a masked vector load is one instruction: x86 with AVX2 (vmaskmovps) or
 * AVX-512 (k-masks). */
static int masked_load_forms(const char *triple, const char *cpu, const char *features) {
  if (strncmp(triple, "x86_64", 6)) return 0;
  return (features && (has_feature(features, "avx512f") || has_feature(features, "avx2"))) ||
         (cpu && (!strcmp(cpu, "x86-64-v4") || !strcmp(cpu, "x86-64-v3")));
}

/* Whether exp may scale by 2^n with VSCALEFPS (AVX-512F; VL for 128 and 256 bits). */
static void scalef_forms(const char *triple, const char *cpu, const char *features, int *s512, int *s256) {
  int v4 = cpu && !strcmp(cpu, "x86-64-v4");
  *s512 = !strncmp(triple, "x86_64", 6) && (has_feature(features, "avx512f") || v4);
  *s256 = *s512 && (has_feature(features, "avx512vl") || v4);
}

/* Which NEON forms dot4 may use: SDOT/UDOT with the dot-product extension, USDOT
 * with I8MM as well. Read from the feature string only (the host's, with its
 * hwcaps, for the host), as for VPDPBUSD. */
static void neon_dot_forms(const char *triple, const char *features, int *dot, int *usdot) {
  *dot = !strncmp(triple, "aarch64", 7) && has_feature(features, "dotprod");
  *usdot = *dot && has_feature(features, "i8mm");
}

static int optimize(tgt_llvm_module *m, int level, gir_err *err) {
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", level);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  int on = level >= 2;
  LLVMPassBuilderOptionsSetLoopVectorization(po, on);
  LLVMPassBuilderOptionsSetSLPVectorization(po, on);
  LLVMPassBuilderOptionsSetLoopInterleaving(po, on);
  LLVMPassBuilderOptionsSetLoopUnrolling(po, level >= 1);
  LLVMErrorRef e = LLVMRunPasses(m->mod, pipeline, m->tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    gir_errf(err, "llvm: %s failed: %s", pipeline, msg);
    LLVMDisposeErrorMessage(msg);
    return -1;
  }
  return 0;
}

tgt_llvm_module *tgt_llvm_compile(const tir_func *const *fns, int32_t n, const tgt_llvm_options *opt, gir_err *err) {
  pthread_once(&targets_once, init_targets);
  tgt_llvm_options host = {.opt_level = 3};
  if (!opt) opt = &host;
  if (opt->opt_level < 0 || opt->opt_level > 3) {
    gir_errf(err, "llvm: optimization level %d is not in 0..3", opt->opt_level);
    return NULL;
  }
  tgt_llvm_module *m = calloc(1, sizeof *m);
  if (!m) {
    gir_errf(err, "out of memory");
    return NULL;
  }
  char *cpu = NULL, *feat = NULL;
  if (make_machine(m, opt, &cpu, &feat, err) < 0 || !(m->features = recorded_features(m->triple, cpu, feat))) {
    if (!m->features && cpu) gir_errf(err, "out of memory");
    free(cpu);
    free(feat);
    tgt_llvm_module_free(m);
    return NULL;
  }
  m->ctx = LLVMContextCreate();
  m->mod = LLVMModuleCreateWithNameInContext("kiln", m->ctx);
  LLVMSetTarget(m->mod, m->triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(m->tm);
  LLVMSetModuleDataLayout(m->mod, dl);
  LLVMDisposeTargetData(dl);

  tgt_lcg g = {.ctx = m->ctx, .mod = m->mod, .err = err, .cpu = cpu, .features = feat};
  g.soft_half = opt->portable || !native_half(m->triple, cpu, feat);
  g.soft_roundeven = opt->portable || !strncmp(m->triple, "arm", 3) || !strncmp(m->triple, "thumb", 5);
  vnni_forms(m->triple, cpu, feat, &g.vnni512, &g.vnni256);
  if (!opt->portable) scalef_forms(m->triple, cpu, feat, &g.scalef512, &g.scalef256);
  g.masked_loads = !opt->portable && masked_load_forms(m->triple, cpu, feat);
  /* x86 without AVX-512: gathers are slow or scalarized (AMD Zen, Intel's gather
   * mitigation), AVX-512 cores keep them (llvm_expr.c, load_as) */
  g.strided_loads = !strncmp(m->triple, "x86_64", 6) && !has_feature(feat, "avx512f") &&
                    !(cpu && !strcmp(cpu, "x86-64-v4"));
  neon_dot_forms(m->triple, feat, &g.neon_dot, &g.neon_usdot);
  g.gpu = opt->gpu;
  if (g.gpu && strncmp(m->triple, "nvptx64", 7)) {
    gir_errf(err, "llvm: GPU code needs the nvptx64 triple, not %s", m->triple);
    free(cpu);
    free(feat);
    tgt_llvm_module_free(m);
    return NULL;
  }
  g.b = LLVMCreateBuilderInContext(m->ctx);
  g.scratch = gir_arena_new();
  g.t_void = LLVMVoidTypeInContext(m->ctx);
  g.t_i1 = LLVMInt1TypeInContext(m->ctx);
  g.t_i8 = LLVMInt8TypeInContext(m->ctx);
  g.t_i16 = LLVMInt16TypeInContext(m->ctx);
  g.t_i32 = LLVMInt32TypeInContext(m->ctx);
  g.t_i64 = LLVMInt64TypeInContext(m->ctx);
  g.t_half = LLVMHalfTypeInContext(m->ctx);
  g.t_float = LLVMFloatTypeInContext(m->ctx);
  g.t_double = LLVMDoubleTypeInContext(m->ctx);
  g.t_ptr = LLVMPointerTypeInContext(m->ctx, 0);
  g.md_loop = LLVMGetMDKindIDInContext(m->ctx, "llvm.loop", 9);
  int rc = g.scratch ? 0 : gir_errf(err, "out of memory");
  if (g.gpu && rc == 0) rc = g.gpu->emit(&g, fns, n);
  for (int32_t i = 0; i < n && rc == 0 && !g.gpu; i++) rc = tgt_llvm_emit_func(&g, fns[i]);
  LLVMDisposeBuilder(g.b);
  gir_arena_free(g.scratch);
  free(cpu);
  free(feat);

  if (rc == 0) {
    char *msg = NULL;
    if (LLVMVerifyModule(m->mod, LLVMReturnStatusAction, &msg))
      rc = gir_errf(err, "llvm: internal error, invalid IR generated: %.400s", msg ? msg : "");
    if (msg) LLVMDisposeMessage(msg);
  }
  if (rc == 0 && opt->gpu) rc = opt->gpu->finish(m->mod, m->triple, err);
  if (rc == 0) rc = optimize(m, opt->opt_level, err);
  if (rc < 0) {
    tgt_llvm_module_free(m);
    return NULL;
  }
  return m;
}

/* --- outputs --- */

static int emit_mem(const tgt_llvm_module *m, LLVMCodeGenFileType kind, LLVMMemoryBufferRef *out, gir_err *err) {
  LLVMModuleRef clone = LLVMCloneModule(m->mod);
  char *msg = NULL;
  LLVMBool bad = LLVMTargetMachineEmitToMemoryBuffer(m->tm, clone, kind, &msg, out);
  LLVMDisposeModule(clone);
  if (bad) {
    gir_errf(err, "llvm: cannot emit %s for %s: %s", kind == LLVMObjectFile ? "an object" : "assembly", m->triple,
             msg ? msg : "");
    if (msg) LLVMDisposeMessage(msg);
    return -1;
  }
  if (msg) LLVMDisposeMessage(msg);
  return 0;
}

/* Copies a memory buffer into malloc'ed bytes (plus a NUL) and disposes it. */
static int take(LLVMMemoryBufferRef mb, void **data, size_t *size, gir_err *err) {
  size_t n = LLVMGetBufferSize(mb);
  char *p = malloc(n + 1);
  if (!p) {
    LLVMDisposeMemoryBuffer(mb);
    return gir_errf(err, "out of memory");
  }
  memcpy(p, LLVMGetBufferStart(mb), n);
  p[n] = 0;
  LLVMDisposeMemoryBuffer(mb);
  *data = p;
  *size = n;
  return 0;
}

int tgt_llvm_emit_object_mem(const tgt_llvm_module *m, void **data, size_t *size, gir_err *err) {
  LLVMMemoryBufferRef mb;
  if (emit_mem(m, LLVMObjectFile, &mb, err) < 0) return -1;
  return take(mb, data, size, err);
}

int tgt_llvm_asm_string(const tgt_llvm_module *m, char **text, size_t *size, gir_err *err) {
  LLVMMemoryBufferRef mb;
  if (emit_mem(m, LLVMAssemblyFile, &mb, err) < 0) return -1;
  return take(mb, (void **)text, size, err);
}

int tgt_llvm_ir_string(const tgt_llvm_module *m, char **text, size_t *size, gir_err *err) {
  char *s = LLVMPrintModuleToString(m->mod);
  size_t n = strlen(s);
  char *p = malloc(n + 1);
  if (p) memcpy(p, s, n + 1);
  LLVMDisposeMessage(s);
  if (!p) return gir_errf(err, "out of memory");
  *text = p;
  *size = n;
  return 0;
}

static int write_all(const void *data, size_t n, FILE *out, const char *what, gir_err *err) {
  if (fwrite(data, 1, n, out) != n) return gir_errf(err, "cannot write %s", what);
  return 0;
}

int tgt_llvm_emit_object(const tgt_llvm_module *m, const char *path, gir_err *err) {
  void *data;
  size_t n;
  if (tgt_llvm_emit_object_mem(m, &data, &n, err) < 0) return -1;
  FILE *f = fopen(path, "wb");
  if (!f) {
    free(data);
    return gir_errf(err, "cannot create %s", path);
  }
  int rc = write_all(data, n, f, path, err);
  if (fclose(f) != 0 && rc == 0) rc = gir_errf(err, "cannot write %s", path);
  free(data);
  return rc;
}

int tgt_llvm_dump_ir(const tgt_llvm_module *m, FILE *out, gir_err *err) {
  char *s;
  size_t n;
  if (tgt_llvm_ir_string(m, &s, &n, err) < 0) return -1;
  int rc = write_all(s, n, out, "the IR dump", err);
  free(s);
  return rc;
}

int tgt_llvm_dump_asm(const tgt_llvm_module *m, FILE *out, gir_err *err) {
  char *s;
  size_t n;
  if (tgt_llvm_asm_string(m, &s, &n, err) < 0) return -1;
  int rc = write_all(s, n, out, "the assembly dump", err);
  free(s);
  return rc;
}

/* --- what the schedule templates need to know --- */

int tgt_llvm_lower_target(const tgt_llvm_options *opt, lower_target *out) {
  *out = lower_target_default();
  out->masked_loads = 0; /* x86 with AVX2 or AVX-512 below */
  char *triple = opt->triple ? dup_message(LLVMNormalizeTargetTriple(opt->triple)) : host_triple();
  char *features = opt->features ? strdup(opt->features) : NULL;
  if (!opt->triple && !opt->features) features = host_features();
  if (!triple) {
    free(features);
    return -1;
  }
  if (!strncmp(triple, "x86_64", 6)) {
    /* the generic x86-64 has SSE2; named targets and the host say more */
    int avx512 = features && has_feature(features, "avx512f"), avx2 = features && has_feature(features, "avx2");
    if (opt->cpu && !strcmp(opt->cpu, "x86-64-v4")) avx512 = 1;
    if (opt->cpu && !strcmp(opt->cpu, "x86-64-v3")) avx2 = 1;
    out->vec_f32 = avx512 ? 16 : avx2 ? 8 : 4;
    out->vec_regs = avx512 ? 32 : 16;
    out->masked_loads = masked_load_forms(triple, opt->cpu, features); /* k-masks; vmaskmovps */
  } else if (!strncmp(triple, "nvptx64", 7)) {
    out->vec_f32 = 1; /* GPU schedules: threads, not vectors (schedule/sched_gpu.c) */
    out->vec_regs = 32;
    out->gpu = 1;
    out->threads = 1;
    out->gpu_sms = opt->cpu && !strcmp(opt->cpu, "sm_80") ? 108 : 132; /* A100; H100 / H200 */
  } else if (!strncmp(triple, "aarch64", 7)) {
    out->vec_f32 = 4;
    out->vec_regs = 32;
  } else if (!strncmp(triple, "arm", 3)) {
    out->vec_f32 = 4;
    out->vec_regs = 16;
  } else {
    out->vec_f32 = 1; /* rv64gc: no vector extension */
    out->vec_regs = 32;
  }
  free(triple);
  free(features);
  return 0;
}
