/* classify.c — an application of the installed kiln runtime (kiln.h): classifies
 * an image with a bundle that `kiln compile` made from an image classifier.
 *
 *   classify MODEL.kiln IMAGE.ppm [--dump-input FILE.npy]
 *
 * It reads a binary PPM (P6, RGB) or PGM (P5, grey) image, resizes it to the
 * model's input (float32 NCHW, batch 1, 1 or 3 channels) with bilinear
 * interpolation (half-pixel centres, as ONNX Resize's "linear"), scales it to
 * [0, 1] and normalizes it with the ImageNet mean and standard deviation, runs
 * the model and prints the five best classes of its first output: as they are
 * when they already are probabilities, else after a softmax. --dump-input writes
 * the tensor it fed as a .npy file, so that another runtime can be fed exactly
 * the same (tests/py/test_install.py does, with ONNX Runtime).
 *
 * Nothing here is kiln-internal: the runtime is found by pkg-config (Makefile)
 * or find_package(kiln) (CMakeLists.txt). */
#include <kiln/kiln.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIDE 65536 /* image and model sides; an image of at most 2^28 pixels */

typedef struct {
  int width, height, channels; /* channels: 3 (P6) or 1 (P5) */
  float *pixels;               /* height x width x channels, in [0, 1] */
} image;

/* The next header number of a PNM file, after whitespace and # comments. */
static int pnm_number(FILE *f, long max, long *out) {
  int c = getc(f);
  while (c == '#' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
    if (c == '#')
      while (c != '\n' && c != EOF) c = getc(f);
    c = getc(f);
  }
  long v = 0;
  if (c < '0' || c > '9') return -1;
  for (; c >= '0' && c <= '9'; c = getc(f))
    if ((v = v * 10 + (c - '0')) > max) return -1;
  if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return -1; /* one whitespace ends it */
  *out = v;
  return 0;
}

/* Reads a binary PPM or PGM; 0, or -1 with a message in why. */
static int read_pnm(const char *path, image *img, char *why, size_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) return snprintf(why, n, "cannot open %s", path), -1;
  char magic[2] = {0};
  long w, h, maxval;
  int rc = -1;
  if (fread(magic, 1, 2, f) != 2 || magic[0] != 'P' || (magic[1] != '6' && magic[1] != '5'))
    snprintf(why, n, "%s is not a binary PPM (P6) or PGM (P5) image", path);
  else if (pnm_number(f, MAX_SIDE, &w) || pnm_number(f, MAX_SIDE, &h) || pnm_number(f, 65535, &maxval) ||
           w < 1 || h < 1 || maxval < 1 || w * h > (1L << 28))
    snprintf(why, n, "%s: bad header (width and height 1..%d, maxval 1..65535)", path, MAX_SIDE);
  else {
    img->width = (int)w, img->height = (int)h, img->channels = magic[1] == '6' ? 3 : 1;
    size_t samples = (size_t)w * (size_t)h * (size_t)img->channels, bps = maxval > 255 ? 2 : 1;
    unsigned char *raw = malloc(samples * bps);
    img->pixels = malloc(samples * sizeof *img->pixels);
    if (!raw || !img->pixels)
      snprintf(why, n, "out of memory for a %ldx%ld image", w, h);
    else if (fread(raw, bps, samples, f) != samples)
      snprintf(why, n, "%s is truncated: fewer than %ldx%ld pixels", path, w, h);
    else {
      for (size_t i = 0; i < samples; i++) { /* 16-bit samples are big-endian */
        unsigned v = bps == 2 ? (unsigned)raw[2 * i] << 8 | raw[2 * i + 1] : raw[i];
        img->pixels[i] = v > (unsigned)maxval ? 1.0f : (float)v / (float)maxval;
      }
      rc = 0;
    }
    free(raw);
  }
  fclose(f);
  return rc;
}

/* Bilinear sample of channel c at (y, x) of the output grid oh x ow. */
static float sample(const image *img, int c, int y, int x, int oh, int ow) {
  float sy = ((float)y + 0.5f) * (float)img->height / (float)oh - 0.5f;
  float sx = ((float)x + 0.5f) * (float)img->width / (float)ow - 0.5f;
  sy = sy < 0 ? 0 : sy > (float)(img->height - 1) ? (float)(img->height - 1) : sy;
  sx = sx < 0 ? 0 : sx > (float)(img->width - 1) ? (float)(img->width - 1) : sx;
  int y0 = (int)sy, x0 = (int)sx;
  int y1 = y0 + 1 < img->height ? y0 + 1 : y0, x1 = x0 + 1 < img->width ? x0 + 1 : x0;
  float wy = sy - (float)y0, wx = sx - (float)x0;
  const float *p = img->pixels;
  int w = img->width, ch = img->channels;
  float top = p[(y0 * w + x0) * ch + c] * (1 - wx) + p[(y0 * w + x1) * ch + c] * wx;
  float bottom = p[(y1 * w + x0) * ch + c] * (1 - wx) + p[(y1 * w + x1) * ch + c] * wx;
  return top * (1 - wy) + bottom * wy;
}

/* The model's input from the image: C x H x W, normalized. A grey image feeds every
 * channel; a colour image feeds a one-channel model its luma (ITU-R BT.601). */
static void preprocess(const image *img, int C, int H, int W, float *out) {
  static const float mean3[3] = {0.485f, 0.456f, 0.406f}, std3[3] = {0.229f, 0.224f, 0.225f};
  for (int c = 0; c < C; c++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++) {
        float v = img->channels == C   ? sample(img, c, y, x, H, W)
                  : img->channels == 1 ? sample(img, 0, y, x, H, W)
                                       : 0.299f * sample(img, 0, y, x, H, W) + 0.587f * sample(img, 1, y, x, H, W) +
                                             0.114f * sample(img, 2, y, x, H, W);
        float mean = C == 3 ? mean3[c] : 0.449f, sd = C == 3 ? std3[c] : 0.226f; /* grey: the averages */
        out[((size_t)c * H + y) * W + x] = (v - mean) / sd;
      }
}

/* Writes a float32 C-order .npy file (format version 1.0). */
static int write_npy(const char *path, const float *data, int rank, const int64_t *dims, int64_t count) {
  char header[256], shape[160] = "";
  size_t o = 0;
  for (int d = 0; d < rank; d++) o += (size_t)snprintf(shape + o, sizeof shape - o, "%lld, ", (long long)dims[d]);
  int len = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%.*s), }",
                     (int)(o > 0 ? o - 2 : 0), shape);
  while ((10 + len + 1) % 64 != 0) header[len++] = ' '; /* magic, version, length, header, '\n' */
  header[len++] = '\n';
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 255), (unsigned char)(len >> 8)};
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)len, f) == (size_t)len &&
           fwrite(data, sizeof *data, (size_t)count, f) == (size_t)count; /* little-endian hosts */
  return fclose(f) == 0 && ok ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc != 3 && !(argc == 5 && !strcmp(argv[3], "--dump-input"))) {
    fprintf(stderr, "usage: %s MODEL.kiln IMAGE.ppm|IMAGE.pgm [--dump-input FILE.npy]\n", argv[0]);
    return 2;
  }
  char why[1024] = "";
  image img = {0};
  kiln_model *m = NULL;
  float *input = NULL;
  int rc = 1;
  kiln_tensor_info in, out;
  kiln_status st = kiln_model_open(argv[1], NULL, &m, why, sizeof why);
  if (st != KILN_OK) {
    fprintf(stderr, "classify: %s: %s\n", kiln_status_str(st), why);
    return 1;
  }
  if (kiln_model_input_info(m, 0, &in) != KILN_OK || kiln_model_output_info(m, 0, &out) != KILN_OK) {
    fprintf(stderr, "classify: %s\n", kiln_model_last_error(m));
    goto done;
  }
  if (in.dtype != KILN_DTYPE_FLOAT32 || in.rank != 4 || in.dims[0] != 1 || (in.dims[1] != 1 && in.dims[1] != 3) ||
      in.dims[2] < 1 || in.dims[3] < 1 || in.dims[2] > MAX_SIDE || in.dims[3] > MAX_SIDE ||
      out.dtype != KILN_DTYPE_FLOAT32 || out.elements < 1) {
    fprintf(stderr, "classify: the model must take one float32 image [1, 1 or 3, H, W] and give float32 scores\n");
    goto done;
  }
  if (read_pnm(argv[2], &img, why, sizeof why) < 0) {
    fprintf(stderr, "classify: %s\n", why);
    goto done;
  }
  int C = (int)in.dims[1], H = (int)in.dims[2], W = (int)in.dims[3];
  if (!(input = malloc((size_t)in.bytes))) {
    fprintf(stderr, "classify: out of memory\n");
    goto done;
  }
  preprocess(&img, C, H, W, input);
  if (argc == 5 && write_npy(argv[4], input, in.rank, in.dims, in.elements) < 0) {
    fprintf(stderr, "classify: cannot write %s\n", argv[4]);
    goto done;
  }
  const void *data;
  if (kiln_model_set_input(m, in.name, in.dtype, in.rank, in.dims, input, (size_t)in.bytes) != KILN_OK ||
      kiln_model_run(m) != KILN_OK || kiln_model_output(m, 0, &data, &out) != KILN_OK) {
    fprintf(stderr, "classify: %s\n", kiln_model_last_error(m));
    goto done;
  }
  /* probabilities as they are; anything else (logits) through a softmax */
  const float *s = data;
  int64_t n = out.elements;
  double sum = 0, mx = s[0];
  int probs = 1;
  for (int64_t i = 0; i < n; i++) {
    probs &= s[i] >= 0 && s[i] <= 1;
    sum += s[i];
    mx = s[i] > mx ? s[i] : mx;
  }
  probs &= fabs(sum - 1) < 1e-3;
  double z = 0;
  for (int64_t i = 0; !probs && i < n; i++) z += exp(s[i] - mx);
  printf("model %s: input '%s' [1, %d, %d, %d], image %dx%d %s, %lld classes (%s)\n", kiln_model_name(m), in.name, C,
         H, W, img.width, img.height, img.channels == 3 ? "RGB" : "grey", (long long)n,
         probs ? "probabilities" : "softmax of the scores");
  int64_t top[5];
  int k = 0;
  for (; k < 5 && k < n; k++) { /* the k-th best: the largest not taken yet, lowest index first */
    top[k] = -1;
    for (int64_t i = 0; i < n; i++) {
      int taken = 0;
      for (int j = 0; j < k; j++) taken |= top[j] == i;
      if (!taken && (top[k] < 0 || s[i] > s[top[k]])) top[k] = i;
    }
    double p = probs ? s[top[k]] : exp(s[top[k]] - mx) / z;
    printf("%d. class %lld %.6f\n", k + 1, (long long)top[k], p);
  }
  rc = 0;
done:
  free(input);
  free(img.pixels);
  kiln_model_close(m);
  return rc;
}
