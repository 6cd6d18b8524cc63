/* regex.c — RegexFullMatch's patterns (RE2 syntax) compiled at compile time:
 * parse → AST → Thompson NFA → byte DFA by subset construction, so the kernel is a
 * table walk, one lookup per byte, linear in the text like RE2 itself.
 *
 * The subset: literals (UTF-8 sequences kept whole), ., classes [...] / [^...] with
 * ranges and \d \w \s \D \W \S inside, those escapes outside, escaped punctuation,
 * \n \t \r \f \v \a, \xHH and \x{H..}, groups (...), (?:...) and (?P<name>...),
 * alternation, * + ? {n} {n,} {n,m} (a trailing ? — non-greedy — changes nothing
 * in a full match), and the empty-width ^ $ \A \z \b \B. As in RE2 without flags,
 * ^ and $ are the text's ends, \d \w \s and \b are ASCII, and . (and a negated
 * class, \D \W \S) matches one whole character — any byte but \n below 0x80, or a
 * UTF-8 multi-byte sequence (lead and continuation bytes by their ranges; the text
 * is not validated further). Everything else is refused with the construct and
 * its offset: flags (?i), lookaround, backreferences, \p classes, POSIX
 * [:classes:], \C, \Q…\E, non-ASCII characters inside a class.
 *
 * Empty-width assertions are resolved the RE2 way: a DFA state is the set of NFA
 * states reached by consuming bytes (not yet ε-closed) plus what the previous byte
 * was (none: the start; a word byte; another byte). Its ε-closure is taken once
 * the next byte's class (word or not) or the end of the text is known, following
 * each assertion that holds between the two; so each state's row is computed with
 * two closures (next byte a word byte or not) and its accept flag with a third
 * (at the end). Compiling is bounded: at most IMP_REGEX_MAX_STATES states and a
 * budget of NFA-state visits (MAX_WORK), each exceeded with a clear error. */
#include <stdio.h>
#include <string.h>
#include "regex.h"

#define MAX_AST 20000
#define MAX_NFA 20000
#define MAX_REPEAT 1000
#define MAX_WORK (512ll << 20) /* NFA states visited while building the DFA: a bound on compile time */

enum { R_EMPTY, R_SET, R_CAT, R_ALT, R_REP, R_ASSERT };
enum { A_BOT, A_EOT, A_WORDB, A_NWORDB };
enum { P_START, P_WORD, P_OTHER };         /* the previous byte */
enum { X_END = 0, X_WORD = 1, X_OTHER = 2 }; /* the next byte */

typedef struct rnode {
  int kind, a, b, min, max, assert_kind; /* max -1: unbounded */
  uint8_t set[32];
} rnode;

enum { N_SET, N_SPLIT, N_ASSERT, N_MATCH };
typedef struct nstate {
  int op, out, out1, assert_kind;
  uint8_t set[32];
} nstate;

typedef struct rx {
  const uint8_t *p;
  size_t n, pos;
  gir_arena *a;
  rnode *ast;
  int n_ast;
  nstate *nfa;
  int n_nfa, has_word, has_bot;
  char *why;
  size_t why_len;
} rx;

static int fail(rx *r, const char *fmt, const char *what) {
  if (r->why && r->why_len) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    snprintf(r->why, r->why_len, "%s (at offset %zu of the pattern)", msg, r->pos);
  }
  return -1;
}

static int is_word(int c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static void set_add(uint8_t *s, int c) { s[c >> 3] |= (uint8_t)(1u << (c & 7)); }
static int set_has(const uint8_t *s, int c) { return (s[c >> 3] >> (c & 7)) & 1; }

static int node(rx *r, int kind, int a, int b) {
  if (r->n_ast >= MAX_AST) return fail(r, "%s", "the pattern is too large");
  rnode *x = &r->ast[r->n_ast];
  memset(x, 0, sizeof *x);
  x->kind = kind, x->a = a, x->b = b;
  return r->n_ast++;
}
static int set_node(rx *r, const uint8_t *set) {
  int i = node(r, R_SET, -1, -1);
  if (i >= 0) memcpy(r->ast[i].set, set, 32);
  return i;
}
static int byte_node(rx *r, int c) {
  uint8_t s[32] = {0};
  set_add(s, c);
  return set_node(r, s);
}
static int range_node(rx *r, int lo, int hi) {
  uint8_t s[32] = {0};
  for (int c = lo; c <= hi; c++) set_add(s, c);
  return set_node(r, s);
}
static int cat(rx *r, int a, int b) { return a < 0 || b < 0 ? -1 : node(r, R_CAT, a, b); }
static int alt(rx *r, int a, int b) { return a < 0 || b < 0 ? -1 : node(r, R_ALT, a, b); }

/* Any UTF-8 multi-byte character. */
static int utf8_multi(rx *r) {
  int c2 = cat(r, range_node(r, 0xC2, 0xDF), range_node(r, 0x80, 0xBF));
  int c3 = cat(r, range_node(r, 0xE0, 0xEF), cat(r, range_node(r, 0x80, 0xBF), range_node(r, 0x80, 0xBF)));
  int c4 = cat(r, range_node(r, 0xF0, 0xF4),
               cat(r, range_node(r, 0x80, 0xBF), cat(r, range_node(r, 0x80, 0xBF), range_node(r, 0x80, 0xBF))));
  return alt(r, c2, alt(r, c3, c4));
}

/* A class: ASCII members in set, multi: also every multi-byte character. */
static int class_node(rx *r, const uint8_t *set, int multi) {
  uint8_t s[32];
  memcpy(s, set, 32);
  for (int c = 128; c < 256; c++) s[c >> 3] &= (uint8_t)~(1u << (c & 7));
  int x = set_node(r, s);
  return multi ? alt(r, x, utf8_multi(r)) : x;
}

/* \d \w \s and their negations into set (ASCII) / *multi; 0, or -1 if c is none. */
static int shorthand(int c, uint8_t *set, int *multi) {
  int neg = c == 'D' || c == 'W' || c == 'S';
  int lc = neg ? c + 32 : c;
  if (lc != 'd' && lc != 'w' && lc != 's') return -1;
  for (int b = 0; b < 128; b++) {
    int in = lc == 'd' ? (b >= '0' && b <= '9') : lc == 'w' ? is_word(b)
                                                          : (b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r');
    if (in != neg) set_add(set, b);
  }
  if (neg) *multi = 1;
  return 0;
}

static int hexval(int c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A single-character escape after '\' (r->pos at the letter): its code point, or -1. */
static long escape_char(rx *r) {
  int c = r->p[r->pos];
  switch (c) {
  case 'n': r->pos++; return '\n';
  case 't': r->pos++; return '\t';
  case 'r': r->pos++; return '\r';
  case 'f': r->pos++; return '\f';
  case 'v': r->pos++; return '\v';
  case 'a': r->pos++; return 7;
  case 'x': {
    r->pos++;
    long v = 0;
    if (r->pos < r->n && r->p[r->pos] == '{') {
      r->pos++;
      int digits = 0;
      while (r->pos < r->n && hexval(r->p[r->pos]) >= 0 && digits < 8) v = v * 16 + hexval(r->p[r->pos++]), digits++;
      if (!digits || r->pos >= r->n || r->p[r->pos] != '}' || v > 0x10FFFF) return fail(r, "%s", "bad \\x{...} escape");
      r->pos++;
      return v;
    }
    for (int i = 0; i < 2; i++) {
      if (r->pos >= r->n || hexval(r->p[r->pos]) < 0) return fail(r, "%s", "bad \\x escape");
      v = v * 16 + hexval(r->p[r->pos++]);
    }
    return v;
  }
  default:
    if (c >= '1' && c <= '9') return fail(r, "%s", "backreferences (\\1 …) are not supported (nor by RE2)");
    if (c == 'p' || c == 'P') return fail(r, "%s", "Unicode classes \\p{…} are not supported");
    if (c == 'C' || c == 'Q' || c == 'E' || c == 'Z' || c == '0' || c == 'G' || c == 'K')
      return fail(r, "the escape \\%s is not supported", (const char[]){(char)c, 0});
    if (c < 128 && !is_word(c)) { /* escaped punctuation */
      r->pos++;
      return c;
    }
    return fail(r, "the escape \\%s is not supported", (const char[]){(char)c, 0});
  }
}

/* The UTF-8 bytes of code point v as a concatenation. */
static int codepoint_node(rx *r, long v) {
  uint8_t b[4];
  int n;
  if (v < 0x80) b[0] = (uint8_t)v, n = 1;
  else if (v < 0x800) b[0] = (uint8_t)(0xC0 | (v >> 6)), b[1] = (uint8_t)(0x80 | (v & 63)), n = 2;
  else if (v < 0x10000)
    b[0] = (uint8_t)(0xE0 | (v >> 12)), b[1] = (uint8_t)(0x80 | ((v >> 6) & 63)), b[2] = (uint8_t)(0x80 | (v & 63)), n = 3;
  else
    b[0] = (uint8_t)(0xF0 | (v >> 18)), b[1] = (uint8_t)(0x80 | ((v >> 12) & 63)), b[2] = (uint8_t)(0x80 | ((v >> 6) & 63)),
    b[3] = (uint8_t)(0x80 | (v & 63)), n = 4;
  int x = byte_node(r, b[0]);
  for (int i = 1; i < n; i++) x = cat(r, x, byte_node(r, b[i]));
  return x;
}

static int parse_class(rx *r) {
  uint8_t set[32] = {0};
  int multi = 0, neg = 0, first = 1;
  r->pos++; /* [ */
  if (r->pos < r->n && r->p[r->pos] == '^') neg = 1, r->pos++;
  for (;;) {
    if (r->pos >= r->n) return fail(r, "%s", "missing ] at the end of a class");
    int c = r->p[r->pos];
    if (c == ']' && !first) break;
    first = 0;
    if (c == '[' && r->pos + 1 < r->n && r->p[r->pos + 1] == ':') return fail(r, "%s", "POSIX classes [:name:] are not supported");
    long lo;
    if (c == '\\') {
      r->pos++;
      if (r->pos >= r->n) return fail(r, "%s", "trailing \\");
      if (shorthand(r->p[r->pos], set, &multi) == 0) {
        r->pos++;
        continue;
      }
      if (r->p[r->pos] == 'b' || r->p[r->pos] == 'B') return fail(r, "%s", "\\b inside a class");
      if ((lo = escape_char(r)) < 0) return -1;
    } else {
      lo = c;
      r->pos++;
    }
    long hi = lo;
    if (r->pos + 1 < r->n && r->p[r->pos] == '-' && r->p[r->pos + 1] != ']') {
      r->pos++;
      int d = r->p[r->pos];
      if (d == '\\') {
        r->pos++;
        if (r->pos >= r->n) return fail(r, "%s", "trailing \\");
        if ((hi = escape_char(r)) < 0) return -1;
      } else
        hi = d, r->pos++;
      if (hi < lo) return fail(r, "%s", "a class range whose end is below its start");
    }
    if (hi >= 128) return fail(r, "%s", "non-ASCII characters inside a class are not supported");
    for (long x = lo; x <= hi; x++) set_add(set, (int)x);
  }
  r->pos++; /* ] */
  if (neg) {
    for (int b = 0; b < 32; b++) set[b] = (uint8_t)~set[b];
    multi = !multi;
  }
  return class_node(r, set, multi);
}

static int parse_alt(rx *r, int depth);

static int parse_atom(rx *r, int depth) {
  int c = r->p[r->pos];
  switch (c) {
  case '(': {
    r->pos++;
    if (r->pos < r->n && r->p[r->pos] == '?') {
      if (r->pos + 1 < r->n && r->p[r->pos + 1] == ':') r->pos += 2;
      else if (r->pos + 2 < r->n && r->p[r->pos + 1] == 'P' && r->p[r->pos + 2] == '<') {
        while (r->pos < r->n && r->p[r->pos] != '>') r->pos++;
        if (r->pos >= r->n) return fail(r, "%s", "unterminated group name");
        r->pos++;
      } else if (r->pos + 1 < r->n && (r->p[r->pos + 1] == '=' || r->p[r->pos + 1] == '!' || r->p[r->pos + 1] == '<'))
        return fail(r, "%s", "lookaround (?= (?! (?<= is not supported (nor by RE2)");
      else
        return fail(r, "%s", "flags (?i) (?s) (?m) … are not supported");
    }
    int x = parse_alt(r, depth + 1);
    if (x < 0) return -1;
    if (r->pos >= r->n || r->p[r->pos] != ')') return fail(r, "%s", "missing )");
    r->pos++;
    return x;
  }
  case ')': return fail(r, "%s", "unexpected )");
  case '*': case '+': case '?': return fail(r, "%s", "a repetition operator with nothing to repeat");
  case '[': return parse_class(r);
  case '.': {
    uint8_t set[32] = {0};
    for (int b = 0; b < 128; b++)
      if (b != '\n') set_add(set, b);
    r->pos++;
    return class_node(r, set, 1);
  }
  case '^': case '$': {
    r->pos++;
    int x = node(r, R_ASSERT, -1, -1);
    if (x >= 0) r->ast[x].assert_kind = c == '^' ? A_BOT : A_EOT;
    if (c == '^') r->has_bot = 1;
    return x;
  }
  case '\\': {
    r->pos++;
    if (r->pos >= r->n) return fail(r, "%s", "trailing \\");
    int e = r->p[r->pos];
    uint8_t set[32] = {0};
    int multi = 0;
    if (shorthand(e, set, &multi) == 0) {
      r->pos++;
      return class_node(r, set, multi);
    }
    if (e == 'b' || e == 'B' || e == 'A' || e == 'z') {
      r->pos++;
      int x = node(r, R_ASSERT, -1, -1);
      if (x < 0) return -1;
      r->ast[x].assert_kind = e == 'b' ? A_WORDB : e == 'B' ? A_NWORDB : e == 'A' ? A_BOT : A_EOT;
      if (e == 'b' || e == 'B') r->has_word = 1;
      if (e == 'A') r->has_bot = 1;
      return x;
    }
    long v = escape_char(r);
    return v < 0 ? -1 : codepoint_node(r, v);
  }
  default: {
    r->pos++;
    int x = byte_node(r, c);
    if (c >= 0xC0) /* a multi-byte character stays one atom */
      while (x >= 0 && r->pos < r->n && (r->p[r->pos] & 0xC0) == 0x80) x = cat(r, x, byte_node(r, r->p[r->pos++]));
    return x;
  }
  }
}

/* {n}, {n,}, {n,m} at r->pos: 1 parsed, 0 not a repetition (a literal {). */
static int parse_braces(rx *r, int *min, int *max) {
  size_t p = r->pos + 1;
  long lo = 0, hi;
  int d = 0;
  while (p < r->n && r->p[p] >= '0' && r->p[p] <= '9' && lo <= 100000) lo = lo * 10 + (r->p[p++] - '0'), d++;
  if (!d) return 0;
  hi = lo;
  if (p < r->n && r->p[p] == ',') {
    p++;
    int d2 = 0;
    hi = 0;
    while (p < r->n && r->p[p] >= '0' && r->p[p] <= '9' && hi <= 100000) hi = hi * 10 + (r->p[p++] - '0'), d2++;
    if (!d2) hi = -1;
  }
  if (p >= r->n || r->p[p] != '}') return 0;
  if (lo > MAX_REPEAT || hi > MAX_REPEAT) return fail(r, "%s", "a repetition count over 1000 (RE2's limit)");
  if (hi >= 0 && hi < lo) return fail(r, "%s", "a repetition {n,m} with m < n");
  *min = (int)lo, *max = (int)hi;
  r->pos = p + 1;
  return 1;
}

static int parse_repeat(rx *r, int depth) {
  int x = parse_atom(r, depth);
  if (x < 0) return -1;
  if (r->pos >= r->n) return x;
  int c = r->p[r->pos], min, max;
  if (c == '*') min = 0, max = -1, r->pos++;
  else if (c == '+') min = 1, max = -1, r->pos++;
  else if (c == '?') min = 0, max = 1, r->pos++;
  else if (c == '{') {
    int b = parse_braces(r, &min, &max);
    if (b <= 0) return b < 0 ? -1 : x;
  } else
    return x;
  if (r->pos < r->n && r->p[r->pos] == '?') r->pos++; /* non-greedy: the same in a full match */
  if (r->pos < r->n && (r->p[r->pos] == '*' || r->p[r->pos] == '+' || r->p[r->pos] == '?'))
    return fail(r, "%s", "a repetition of a repetition (bad repetition operator in RE2)");
  int y = node(r, R_REP, x, -1);
  if (y >= 0) r->ast[y].min = min, r->ast[y].max = max;
  return y;
}

static int parse_cat(rx *r, int depth) {
  int x = node(r, R_EMPTY, -1, -1);
  while (x >= 0 && r->pos < r->n && r->p[r->pos] != '|' && r->p[r->pos] != ')') x = cat(r, x, parse_repeat(r, depth));
  return x;
}

static int parse_alt(rx *r, int depth) {
  if (depth > 200) return fail(r, "%s", "groups nest too deeply");
  int x = parse_cat(r, depth);
  while (x >= 0 && r->pos < r->n && r->p[r->pos] == '|') {
    r->pos++;
    x = alt(r, x, parse_cat(r, depth));
  }
  return x;
}

/* --- NFA, built right to left: build(x, next) is the start of x followed by next --- */

static int nstate_new(rx *r, int op, int out, int out1) {
  if (r->n_nfa >= MAX_NFA) return fail(r, "%s", "the pattern needs too many NFA states (large repetitions?)");
  nstate *s = &r->nfa[r->n_nfa];
  memset(s, 0, sizeof *s);
  s->op = op, s->out = out, s->out1 = out1;
  return r->n_nfa++;
}

static int build(rx *r, int x, int next, int depth) {
  if (next < 0 || depth > 10000) return next < 0 ? -1 : fail(r, "%s", "the pattern nests too deeply");
  const rnode *a = &r->ast[x];
  switch (a->kind) {
  case R_EMPTY: return next;
  case R_SET: {
    int s = nstate_new(r, N_SET, next, -1);
    if (s >= 0) memcpy(r->nfa[s].set, a->set, 32);
    return s;
  }
  case R_ASSERT: {
    int s = nstate_new(r, N_ASSERT, next, -1);
    if (s >= 0) r->nfa[s].assert_kind = a->assert_kind;
    return s;
  }
  case R_CAT: return build(r, a->a, build(r, a->b, next, depth + 1), depth + 1);
  case R_ALT: {
    int l = build(r, a->a, next, depth + 1), rr = build(r, a->b, next, depth + 1);
    return l < 0 || rr < 0 ? -1 : nstate_new(r, N_SPLIT, l, rr);
  }
  case R_REP: {
    int min = a->min, max = a->max, sub = a->a, s;
    if (max < 0) { /* x{min,}: min copies, then a loop */
      int loop = nstate_new(r, N_SPLIT, -1, next);
      if (loop < 0) return -1;
      int body = build(r, sub, loop, depth + 1);
      if (body < 0) return -1;
      r->nfa[loop].out = body;
      s = loop;
    } else { /* x{min,max}: min copies, then max-min nested optional ones */
      s = next;
      for (int i = 0; i < max - min && s >= 0; i++) {
        int body = build(r, sub, s, depth + 1);
        s = body < 0 ? -1 : nstate_new(r, N_SPLIT, body, next);
      }
    }
    for (int i = 0; i < min && s >= 0; i++) s = build(r, sub, s, depth + 1);
    return s;
  }
  }
  return fail(r, "%s", "internal error");
}

/* --- DFA --- */

typedef struct dfa {
  rx *r;
  int words;        /* uint64 words per NFA set */
  uint64_t *kernels; /* per DFA state: its NFA set (unclosed) */
  int *prev;
  int n, cap, max;
  int *hash;        /* open addressing: DFA state + 1, 0 empty */
  int hcap;
  int *stack, *closure;
  uint64_t *seen;
} dfa;

static uint64_t hash_set(const uint64_t *s, int words, int prev) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)prev;
  for (int i = 0; i < words; i++) h = (h ^ s[i]) * 1099511628211ull;
  h ^= h >> 33, h *= 0xff51afd7ed558ccdull, h ^= h >> 33; /* the table index takes the low bits: mix the high ones in */
  return h;
}

/* The state for (kernel, prev), added if new: its index, or -1 (too many). */
static int intern(dfa *d, const uint64_t *k, int prev) {
  int empty = 1;
  for (int i = 0; i < d->words && empty; i++) empty = !k[i];
  if (empty) prev = P_OTHER;                          /* the dead state */
  else if (!d->r->has_word) prev = prev == P_START && d->r->has_bot ? P_START : P_OTHER; /* only ^ looks back */
  uint64_t h = hash_set(k, d->words, prev);
  for (int i = (int)(h & (uint64_t)(d->hcap - 1));; i = (i + 1) & (d->hcap - 1)) {
    int q = d->hash[i] - 1;
    if (q < 0) break;
    if (d->prev[q] == prev && !memcmp(d->kernels + (size_t)q * d->words, k, (size_t)d->words * 8)) return q;
  }
  if (d->n >= d->max) return -1;
  if (d->n == d->cap) {
    int nc = d->cap * 2;
    d->kernels = gir_arena_grow(d->r->a, d->kernels, (size_t)d->cap * d->words, (size_t)nc * d->words, 8);
    d->prev = gir_arena_grow(d->r->a, d->prev, (size_t)d->cap, (size_t)nc, sizeof *d->prev);
    if (!d->kernels || !d->prev) return -1;
    d->cap = nc;
  }
  int q = d->n++;
  memcpy(d->kernels + (size_t)q * d->words, k, (size_t)d->words * 8);
  d->prev[q] = prev;
  int i = (int)(h & (uint64_t)(d->hcap - 1));
  while (d->hash[i]) i = (i + 1) & (d->hcap - 1);
  d->hash[i] = q + 1;
  return q;
}

static int holds(int kind, int prev, int next) {
  int wp = prev == P_WORD, wn = next == X_WORD;
  switch (kind) {
  case A_BOT: return prev == P_START;
  case A_EOT: return next == X_END;
  case A_WORDB: return wp != wn;
  default: return wp == wn;
  }
}

/* The ε-closure of kernel k between prev and next, into d->closure; its size. */
static int close_over(dfa *d, const uint64_t *k, int prev, int next) {
  const nstate *nfa = d->r->nfa;
  int ns = 0, nc = 0;
  memset(d->seen, 0, (size_t)d->words * 8);
  for (int i = 0; i < d->r->n_nfa; i++)
    if ((k[i >> 6] >> (i & 63)) & 1) d->stack[ns++] = i, d->seen[i >> 6] |= 1ull << (i & 63);
  while (ns) {
    int s = d->stack[--ns];
    d->closure[nc++] = s;
    int to[2] = {-1, -1};
    if (nfa[s].op == N_SPLIT) to[0] = nfa[s].out, to[1] = nfa[s].out1;
    else if (nfa[s].op == N_ASSERT && holds(nfa[s].assert_kind, prev, next)) to[0] = nfa[s].out;
    for (int j = 0; j < 2; j++)
      if (to[j] >= 0 && !((d->seen[to[j] >> 6] >> (to[j] & 63)) & 1))
        d->seen[to[j] >> 6] |= 1ull << (to[j] & 63), d->stack[ns++] = to[j];
  }
  return nc;
}

int imp_regex_compile(const char *pattern, size_t len, int32_t max_states, gir_arena *a, imp_regex_dfa *out,
                      char *why, size_t why_len) {
  rx r = {.p = (const uint8_t *)pattern, .n = len, .a = a, .why = why, .why_len = why_len};
  if (why && why_len) why[0] = 0;
  r.ast = gir_arena_calloc(a, MAX_AST, sizeof *r.ast);
  r.nfa = gir_arena_calloc(a, MAX_NFA, sizeof *r.nfa);
  if (!r.ast || !r.nfa) return fail(&r, "%s", "out of memory");
  int root = parse_alt(&r, 0);
  if (root < 0) return -1;
  if (r.pos < r.n) return fail(&r, "%s", "unexpected )");
  int match = nstate_new(&r, N_MATCH, -1, -1);
  int start = match < 0 ? -1 : build(&r, root, match, 0);
  if (start < 0) return -1;

  dfa d = {.r = &r, .words = (r.n_nfa + 63) / 64, .cap = 16, .max = max_states > 0 ? max_states : IMP_REGEX_MAX_STATES};
  d.hcap = 1;
  while (d.hcap < 2 * d.max) d.hcap *= 2;
  d.kernels = gir_arena_calloc(a, (size_t)d.cap * d.words, 8);
  d.prev = gir_arena_calloc(a, (size_t)d.cap, sizeof *d.prev);
  d.hash = gir_arena_calloc(a, (size_t)d.hcap, sizeof *d.hash);
  d.stack = gir_arena_calloc(a, (size_t)r.n_nfa + 1, sizeof *d.stack);
  d.closure = gir_arena_calloc(a, (size_t)r.n_nfa + 1, sizeof *d.closure);
  d.seen = gir_arena_calloc(a, (size_t)d.words, 8);
  uint64_t *k = gir_arena_calloc(a, (size_t)d.words, 8);
  int32_t *table = gir_arena_calloc(a, (size_t)d.max * IMP_REGEX_COLS, sizeof *table);
  if (!d.kernels || !d.prev || !d.hash || !d.stack || !d.closure || !d.seen || !k || !table)
    return fail(&r, "%s", "out of memory");
  k[start >> 6] |= 1ull << (start & 63);
  intern(&d, k, P_START);
  long long work = 0;
  for (int q = 0; q < d.n; q++) {
    int32_t *row = table + (size_t)q * IMP_REGEX_COLS;
    int prev = d.prev[q];
    for (int next = X_WORD; next <= X_OTHER; next++) {
      int nc = close_over(&d, d.kernels + (size_t)q * d.words, prev, next);
      work += (long long)nc * 257 + r.n_nfa + 512ll * d.words;
      if (work > MAX_WORK) {
        if (why && why_len)
          snprintf(why, why_len, "the pattern is too complex to compile into a DFA (%d states built, each a set of "
                                 "many NFA states)", d.n);
        return -1;
      }
      for (int c = 0; c < 256; c++) {
        if ((is_word(c) ? X_WORD : X_OTHER) != next) continue;
        memset(k, 0, (size_t)d.words * 8);
        for (int i = 0; i < nc; i++) {
          const nstate *s = &r.nfa[d.closure[i]];
          if (s->op == N_SET && set_has(s->set, c)) k[s->out >> 6] |= 1ull << (s->out & 63);
        }
        int to = intern(&d, k, is_word(c) ? P_WORD : P_OTHER);
        if (to < 0) {
          if (why && why_len)
            snprintf(why, why_len, "the pattern needs more than %d DFA states (kiln compiles it to a DFA)", d.max);
          return -1;
        }
        row[c] = to;
      }
    }
    int nc = close_over(&d, d.kernels + (size_t)q * d.words, prev, X_END);
    row[256] = 0;
    for (int i = 0; i < nc; i++) row[256] |= r.nfa[d.closure[i]].op == N_MATCH;
  }
  out->n_states = d.n;
  out->table = table;
  return 0;
}

int imp_regex_full_match(const imp_regex_dfa *d, const uint8_t *s, size_t n) {
  int32_t q = 0;
  for (size_t i = 0; i < n; i++) q = d->table[(size_t)q * IMP_REGEX_COLS + s[i]];
  return d->table[(size_t)q * IMP_REGEX_COLS + 256] != 0;
}
