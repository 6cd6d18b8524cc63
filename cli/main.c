/* main.c — the `kiln` command: dispatches to a subcommand. Each subcommand lives
 * in its own file and returns the process exit status (0 ok, 1 bad input or
 * failure, 2 usage); all of them parse their options through one table (args.c). */
#include <stdio.h>
#include <string.h>
#include "cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "kiln %s — an optimizing compiler for ONNX models\n"
          "usage:\n"
          "  kiln compile MODEL.onnx -o MODEL.kiln [--target T] [--input-shape NAME:DIMS]... [--dump-after=STEP]\n"
          "  kiln run MODEL.kiln [--input NAME=FILE.npy]... [--inputs FILE.npz] [--output-dir DIR] [--outputs FILE.npz]\n"
          "                      [--threads N] [--repeat N] [--profile] [--trace FILE.json]\n"
          "  kiln bench MODEL(.onnx|.kiln) [--threads N] [--repeat N] [--warmup N] [--compare onnxruntime] [--json]\n"
          "  kiln inspect MODEL.onnx [--input-shape NAME:DIMS]... [--fused] [--dot FILE] [--svg FILE] [--print]\n"
          "  kiln interpret MODEL.onnx --test-data DIR [--input-shape NAME:DIMS]...\n"
          "  kiln lower MODEL.onnx [--test-data DIR]   (print the loop IR of every kernel)\n"
          "  kiln check MODEL.onnx --test-data DIR     (compile, run the bundle, compare with the test outputs)\n"
          "  kiln tune MODEL.onnx --records FILE [--trials N] [--transfer-from FILE]... [--tasks LIST] [--time-budget S]\n"
          "  kiln COMMAND --help                       (every option of a command)\n"
          "  kiln --version\n",
          KILN_VERSION);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "inspect")) return kiln_cmd_inspect(argc - 2, argv + 2);
  if (!strcmp(argv[1], "interpret")) return kiln_cmd_interpret(argc - 2, argv + 2);
  if (!strcmp(argv[1], "lower")) return kiln_cmd_lower(argc - 2, argv + 2);
  if (!strcmp(argv[1], "check")) return kiln_cmd_check(argc - 2, argv + 2);
  if (!strcmp(argv[1], "compile")) return kiln_cmd_compile(argc - 2, argv + 2);
  if (!strcmp(argv[1], "run")) return kiln_cmd_run(argc - 2, argv + 2);
  if (!strcmp(argv[1], "bench")) return kiln_cmd_bench(argc - 2, argv + 2);
  if (!strcmp(argv[1], "tune")) return kiln_cmd_tune(argc - 2, argv + 2);
  if (!strcmp(argv[1], "--version")) {
    printf("kiln %s\n", KILN_VERSION);
    return 0;
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage(stdout);
    return 0;
  }
  fprintf(stderr, "kiln: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
