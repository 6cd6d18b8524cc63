/* tun_report.c — what `kiln tune` shows at the end: a table per task (default and
 * tuned time, GFLOPS, % of the measuring cores' peak, trials, errors) with the model's
 * total time before and after, and an SVG plot of each task's best-so-far
 * throughput against trials (a hand-written SVG: lines, axes, a legend). */
#include <errno.h>
#include <math.h>
#include <string.h>
#include "tun_internal.h"

static double gflops(const tun_task *k, double s) { return s > 0 ? (double)k->flops / s * 1e-9 : 0; }

void tun_report_table(FILE *f, const tun_tasks *ts, const tun_result *r, double peak, int32_t threads) {
  fprintf(f, "%-3s %-44s %4s %10s %10s %8s %8s %7s %7s %6s\n", "#", "task", "occ", "default ms", "tuned ms", "speedup",
          "GFLOPS", "% peak", "trials", "errors");
  double before = 0, after = 0;
  for (int i = 0; i < ts->n; i++) {
    const tun_task *k = &ts->tasks[i];
    const tun_task_result *t = &r->tasks[i];
    double d = t->default_s, b = t->best_s > 0 && (d <= 0 || t->best_s < d) ? t->best_s : d;
    char pk[16] = "-";
    if (peak > 0 && b > 0) snprintf(pk, sizeof pk, "%.0f", 100 * gflops(k, b) / peak);
    fprintf(f, "%-3d %-44.44s %4d %10.4f %10.4f %7.2fx %8.1f %7s %7lld %6lld\n", i, k->label, k->occurrences,
            d > 0 ? d * 1e3 : NAN, b > 0 ? b * 1e3 : NAN, d > 0 && b > 0 ? d / b : NAN, gflops(k, b), pk,
            (long long)t->trials, (long long)t->errors);
    if (d > 0 && b > 0) before += d * k->occurrences, after += b * k->occurrences;
  }
  char on[32] = "one core";
  if (threads > 1) snprintf(on, sizeof on, "%d threads", threads);
  fprintf(f, "tuned tasks: %.3f ms -> %.3f ms per run on %s (x%.2f), %lld trials in %.0f s\n", before * 1e3,
          after * 1e3, on, after > 0 ? before / after : NAN, (long long)r->trials, r->seconds);
}

static void xml_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else fputc(*s, f);
  }
}

int tun_report_svg(const char *path, const tun_tasks *ts, const tun_result *r, gir_err *err) {
  FILE *f = fopen(path, "w");
  if (!f) return gir_errf(err, "cannot write the plot '%s': %s", path, strerror(errno));
  const double W = 900, H = 520, L = 70, R = 330, T = 40, B = 50;
  int64_t maxt = 1;
  double maxg = 1;
  for (int i = 0; i < ts->n; i++) {
    const tun_task_result *t = &r->tasks[i];
    if (t->trials > maxt) maxt = t->trials;
    for (int64_t j = 0; j < t->trials; j++) {
      double g = gflops(&ts->tasks[i], t->curve[j]);
      if (g > maxg) maxg = g;
    }
  }
  double pw = W - L - R, ph = H - T - B;
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
             "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          W, H);
  fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"14\">best-so-far GFLOPS vs trials, per task</text>\n", L);
  fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T + ph, L + pw, T + ph);
  fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T, L, T + ph);
  for (int k = 0; k <= 4; k++) {
    double y = T + ph - ph * k / 4, x = L + pw * k / 4;
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.0f</text>\n", L - 6, y + 4, maxg * k / 4);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n", L, y, L + pw, y);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%.0f</text>\n", x, T + ph + 16,
            (double)maxt * k / 4);
  }
  fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">trials</text>\n", L + pw / 2, H - 10);
  fprintf(f, "<text x=\"16\" y=\"%.0f\" transform=\"rotate(-90 16 %.0f)\" text-anchor=\"middle\">GFLOPS</text>\n",
          T + ph / 2, T + ph / 2);
  static const char *colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                 "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  for (int i = 0; i < ts->n; i++) {
    const tun_task_result *t = &r->tasks[i];
    const char *c = colors[i % 10];
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", c,
            i >= 10 ? " stroke-dasharray=\"4 2\"" : "");
    for (int64_t j = 0; j < t->trials; j++) {
      double g = gflops(&ts->tasks[i], t->curve[j]);
      fprintf(f, "%.1f,%.1f ", L + pw * (double)(j + 1) / (double)maxt, T + ph - ph * g / maxg);
    }
    fprintf(f, "\"/>\n");
    if (i < 30) {
      double y = T + 10 + i * 15;
      fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"/>\n",
              L + pw + 12, y - 4, L + pw + 30, y - 4, c);
      fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">%d ", L + pw + 36, y, i);
      xml_text(f, ts->tasks[i].label);
      fprintf(f, "</text>\n");
    }
  }
  fprintf(f, "</svg>\n");
  if (fclose(f) != 0) return gir_errf(err, "writing the plot '%s': %s", path, strerror(errno));
  return 0;
}
