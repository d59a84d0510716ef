/* jsonfast.c - fast path for a large flat `input.data` array of numbers.
 *
 * Why it exists: jansson's json_loadb() builds a node per element (a
 * malloc'ed json_t of about 50 bytes plus the array's pointer) and reads a
 * 1,000,000-element float32 request at about 40 MB/s; the tree, not the
 * arithmetic, is the daemon's limit on large JSON requests and most of its
 * peak memory.  jansson has no streaming or per-element hook to avoid it.
 *
 * What it does: jf_locate() walks the body just far enough to locate the
 * value of root.input.data (strings with escapes and nesting are tracked,
 * nothing is interpreted) and takes the first ']' after its '[' as its end
 * when no string or container lies between (memchr: no pass of its own
 * over the numbers).  The decoder (json.c) then has jansson parse the
 * whole document with that array replaced by "[]": syntax outside the
 * array, every other field, duplicate keys and the placement of the array
 * are still jansson's to check (a document that fails there is decoded
 * again by the ordinary path, for the usual error).  Then, once the dtype
 * is known, one pass of jf_read() checks each element's syntax and
 * converts it to what jansson would have produced: an int64 for an
 * integer token, the correctly rounded double for any other (jf_exact():
 * Clinger's exact case, else strtod) -- or, for float32, float16 and
 * bfloat16, straight to the dtype's value from a fast approximation that
 * is used only when it provably rounds the same (jf_narrow(), proof
 * there).  An error of the document found before that pass stands only if
 * jf_find() then finds the array valid (jansson reports syntax first).
 *
 * What it costs: this file, a second (small) jansson parse, and the rule
 * that anything unusual leaves the fast path: strings such as "NaN" among
 * the numbers, nesting, keys written with escapes, integers outside int64
 * or reals that could overflow (jansson reports those as errors), tokens
 * longer than 63 bytes, a non-'.' decimal point in the C library's locale.
 * tests/unit/test_jsonfast.c checks that both paths decode any body to the
 * same request or the same error (check_same() there is fuzzing-ready).
 */
#include "jsonfast.h"

#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
/* read_window(): SSSE3, chosen at run time (x86-64 guarantees only SSE2). */
#define JF_WINDOW 1
#include <immintrin.h>
#endif

#include "f16.h"

#define TOKEN_MAX 63

/* Exact powers of ten in double (10^22 is the largest exact one). */
static const double pow10_exact[23] = {
  1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static int is_ws(char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_digit(char c)
{
  return c >= '0' && c <= '9';
}

/* A JSON number token at s[i..len): -?(0|[1-9][0-9]*)(.[0-9]+)?
 * ([eE][+-]?[0-9]+)?.  Returns its end, or 0 if there is none.  Sets
 * *integer (no fraction or exponent) and *safe (jf_next() converts it
 * exactly and jansson accepts it). */
static size_t scan_number(const char *s, size_t len, size_t i, int *integer,
                          int *safe)
{
  size_t start = i, int_start, int_digits, lead;
  long exp = 0;
  int neg = 0, exp_neg = 0;

  if (i < len && s[i] == '-') {
    neg = 1;
    i++;
  }
  int_start = i;
  if (i < len && s[i] == '0') {
    i++;
  } else if (i < len && s[i] >= '1' && s[i] <= '9') {
    while (i < len && is_digit(s[i]))
      i++;
  } else {
    return 0;
  }
  int_digits = i - int_start;
  *integer = 1;
  if (i < len && s[i] == '.') {
    i++;
    if (i >= len || !is_digit(s[i]))
      return 0;
    while (i < len && is_digit(s[i]))
      i++;
    *integer = 0;
  }
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < len && (s[i] == '+' || s[i] == '-'))
      exp_neg = s[i++] == '-';
    if (i >= len || !is_digit(s[i]))
      return 0;
    for (; i < len && is_digit(s[i]); i++)
      if (exp < 100000)
        exp = exp * 10 + (s[i] - '0');
    *integer = 0;
  }
  if (i - start > TOKEN_MAX) {
    *safe = 0;
  } else if (*integer) {
    /* jansson reads integers as int64 and rejects the others. */
    *safe = int_digits < 19 ||
            (int_digits == 19 &&
             memcmp(s + int_start,
                    neg ? "9223372036854775808" : "9223372036854775807",
                    19) <= 0);
  } else {
    /* |value| < 10^(lead + exp) <= 10^308 < DBL_MAX: no overflow (jansson
     * rejects overflow; underflow is accepted by both paths). */
    lead = s[int_start] == '0' ? 0 : int_digits;
    *safe = (long)lead + (exp_neg ? -exp : exp) <= 308;
  }
  return i;
}

/* The array at s[open] == '[': strict JSON syntax, numbers only. */
static int scan_array(const char *s, size_t len, size_t open,
                      struct jf_flat *fl)
{
  size_t i = open + 1, end;
  uint64_t count = 0;
  int integer, safe;

  while (i < len && is_ws(s[i]))
    i++;
  if (i < len && s[i] == ']')
    return 0; /* empty: nothing to gain */
  for (;;) {
    end = scan_number(s, len, i, &integer, &safe);
    if (end == 0 || !safe)
      return 0;
    count++;
    i = end;
    while (i < len && is_ws(s[i]))
      i++;
    if (i >= len)
      return 0;
    if (s[i] == ']')
      break;
    if (s[i] != ',')
      return 0;
    i++;
    while (i < len && is_ws(s[i]))
      i++;
  }
  fl->open = open;
  fl->close = i;
  fl->count = count;
  return 1;
}

static int key_is(const char *k, size_t klen, const char *want)
{
  return k != NULL && klen == strlen(want) && memcmp(k, want, klen) == 0;
}

/* The offset of the '[' of root.input.data in `s`, or 0 if there is none
 * (the walk jf_find() and jf_locate() share). */
static size_t find_open(const char *s, size_t len)
{
  /* Container kind and current key at depths 1 (root) and 2. */
  char kind[3] = { 0, 0, 0 };
  const char *key[3] = { NULL, NULL, NULL }, *str = NULL;
  size_t keylen[3] = { 0, 0, 0 }, strlen_ = 0, i = 0, j;
  int depth = 0;

  while (i < len) {
    switch (s[i]) {
    case '"':
      for (j = i + 1; j < len && s[j] != '"'; j++)
        if (s[j] == '\\')
          j++;
      if (j >= len)
        return 0;
      str = s + i + 1;
      strlen_ = j - i - 1;
      i = j + 1;
      continue;
    case ':':
      /* In valid JSON only a key precedes ':' (jansson checks validity). */
      if (depth >= 1 && depth <= 2) {
        key[depth] = str;
        keylen[depth] = strlen_;
      }
      break;
    case '[':
      if (depth == 2 && kind[1] == '{' && kind[2] == '{' &&
          key_is(key[1], keylen[1], "input") &&
          key_is(key[2], keylen[2], "data"))
        return i;
      /* fall through */
    case '{':
      if (++depth <= 2) {
        kind[depth] = s[i];
        key[depth] = NULL;
      }
      break;
    case '}':
    case ']':
      if (--depth < 0)
        return 0;
      break;
    default: break;
    }
    i++;
  }
  return 0;
}

int jf_find(const char *s, size_t len, struct jf_flat *fl)
{
  size_t open = find_open(s, len);

  return open != 0 && scan_array(s, len, open, fl);
}

int jf_locate(const char *s, size_t len, struct jf_flat *fl)
{
  size_t open = find_open(s, len), n;
  const char *close;

  if (open == 0)
    return 0;
  n = len - open - 1;
  close = memchr(s + open + 1, ']', n);
  if (close == NULL)
    return 0;
  /* Without strings and containers inside, the first ']' closes it. */
  n = (size_t)(close - (s + open + 1));
  if (memchr(s + open + 1, '"', n) != NULL ||
      memchr(s + open + 1, '[', n) != NULL ||
      memchr(s + open + 1, '{', n) != NULL)
    return 0;
  fl->open = open;
  fl->close = (size_t)(close - s);
  /* n bytes hold at most (n + 1) / 2 elements ("0,0"). */
  fl->count = (n + 1) / 2;
  return fl->count > 0;
}

/* m and e10 of the digits d[0..nint) '.' d[nint+1..nint+1+nfrac) (no '.'
 * if nfrac is 0) when there are more than 19: leading zeros skipped,
 * digits beyond the 19th dropped (`simple` cleared if one is nonzero). */
static void long_digits(const char *d, size_t nint, size_t nfrac,
                        struct jf_num *n)
{
  uint64_t m = 0;
  long e = 0;
  int nd = 0;
  size_t k;

  for (k = 0; k < nint + (nfrac ? 1 + nfrac : 0); k++) {
    int frac = k > nint, c = d[k] - '0';
    if (k == nint)
      continue; /* the '.' */
    if (m == 0 && c == 0) {
      e -= frac; /* a leading zero is not a significant digit */
    } else if (nd < 19) {
      m = m * 10 + (uint64_t)c;
      nd++;
      e -= frac;
    } else {
      e += !frac; /* dropped: m counts in units of 10^e */
      if (c != 0)
        n->simple = 0;
    }
  }
  n->m = m;
  n->e10 = e;
}

static const uint64_t pow10_u64[9] = {
  1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
};

/* The run of digits at s[i], read no further than s[end] (a ']'): adds
 * them to *m (m * 10^n + the run's value, wrapping if long: callers use
 * m only for at most 19 digits) and returns their count n.  Eight bytes
 * at a time on little-endian machines: a byte is a digit iff it is at
 * most 9 after xor 0x30, which (a + 0x76) | a tests in bit 7 (a carry
 * out of a byte only follows a non-digit); then three multiplications
 * combine the digits pairwise (the first byte is the most significant;
 * the bytes after the run are shifted out first). */
static size_t digit_run(const char *s, size_t i, size_t end, uint64_t *m)
{
  size_t start = i;
  uint64_t v = *m;

#if defined(__GNUC__) && defined(__BYTE_ORDER__) &&                            \
  __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  while (i + 8 <= end + 1) {
    uint64_t w, a, mask;
    unsigned nd;
    memcpy(&w, s + i, sizeof w);
    a = w ^ 0x3030303030303030u;
    mask = ((a + 0x7676767676767676u) | a) & 0x8080808080808080u;
    nd = mask != 0 ? (unsigned)__builtin_ctzll(mask) >> 3 : 8;
    if (nd == 0)
      break;
    a <<= 8 * (8 - nd);
    a = ((a & 0x0F0F0F0F0F0F0F0Fu) * 2561) >> 8;
    a = ((a & 0x00FF00FF00FF00FFu) * 6553601) >> 16;
    a = ((a & 0x0000FFFF0000FFFFu) * 42949672960001u) >> 32;
    v = v * pow10_u64[nd] + a;
    i += nd;
    if (nd < 8) {
      *m = v;
      return i - start;
    }
  }
#else
  (void)end;
#endif
  for (; is_digit(s[i]); i++)
    v = v * 10 + (uint64_t)(s[i] - '0');
  *m = v;
  return i - start;
}

/* Reads the number token at s[i] (jf_read's grammar and limits, as
 * scan_number()), no further than s[end].  Returns its end, or 0. */
static size_t read_number(const char *s, size_t i, size_t end, struct jf_num *n)
{
  size_t start = i, int_start, int_digits, frac_digits = 0;
  uint64_t m = 0;
  long x = 0;
  int exp_neg = 0, lead;

  n->neg = s[i] == '-';
  i += (size_t)n->neg;
  int_start = i;
  n->simple = 1;
  if (s[i] == '0') {
    i++;
  } else if (s[i] >= '1' && s[i] <= '9') {
    /* Usually short: byte by byte. */
    for (; is_digit(s[i]); i++)
      m = m * 10 + (uint64_t)(s[i] - '0');
  } else {
    return 0;
  }
  int_digits = i - int_start;
  n->tok = s + start;
  if (s[i] != '.' && s[i] != 'e' && s[i] != 'E') {
    /* An integer: jansson takes it as int64 or rejects it. */
    if (i - start > TOKEN_MAX || int_digits > 19 ||
        (int_digits == 19 &&
         memcmp(s + int_start,
                n->neg ? "9223372036854775808" : "9223372036854775807",
                19) > 0))
      return 0;
    n->kind = JF_INT;
    n->m = m;
    n->i = n->neg ? (int64_t)(0 - m) : (int64_t)m;
    if (n->neg && m == (uint64_t)1 << 63)
      n->i = INT64_MIN;
    n->toklen = i - start;
    return i;
  }
  if (s[i] == '.') {
    i++;
    if ((frac_digits = digit_run(s, i, end, &m)) == 0)
      return 0;
    i += frac_digits;
  }
  if (int_digits + frac_digits <= 19) {
    /* Leading zeros added nothing to m: it holds every digit. */
    n->m = m;
    n->e10 = -(long)frac_digits;
  } else {
    long_digits(s + int_start, int_digits, frac_digits, n);
  }
  if (s[i] == 'e' || s[i] == 'E') {
    i++;
    if (s[i] == '+' || s[i] == '-')
      exp_neg = s[i++] == '-';
    if (!is_digit(s[i]))
      return 0;
    for (; is_digit(s[i]); i++)
      if (x < 100000)
        x = x * 10 + (s[i] - '0');
  }
  x = exp_neg ? -x : x;
  lead = s[int_start] == '0' ? 0 : (int)(int_digits > 400 ? 400 : int_digits);
  /* |value| < 10^(lead + x) <= 10^308 < DBL_MAX: no overflow (jansson
   * rejects overflow; underflow is accepted by both paths). */
  if (i - start > TOKEN_MAX || lead + x > 308)
    return 0;
  n->kind = JF_REAL;
  n->e10 += x;
  n->toklen = i - start;
  return i;
}

#ifdef JF_WINDOW
/* The common token, -?[0-9]+(.[0-9]+)? of at most 16 bytes after the sign
 * and no exponent, from one 16-byte window and without a branch on its
 * digits: read_number()'s loops mispredict about once per token when the
 * lengths vary, which was most of its cost.  The window's bytes are
 * classified (the token ends at the first that is neither a digit nor
 * '.'), one shuffle drops the '.' and moves the nd digits to the top
 * bytes (leading zeros come in below), and three multiply-adds combine
 * them into two 8-digit halves.  Returns the token's end, with *n as
 * read_number() sets it; 0 for anything else (an exponent, a leading
 * zero, a lone '-' or '.', more than 16 bytes, or a window that would
 * reach s[end]): read_number() then decides, errors included. */
__attribute__((target("ssse3"), always_inline)) static inline size_t
read_window(const char *s, size_t i, size_t end, struct jf_num *n)
{
  size_t start = i;
  int neg = s[i] == '-';
  unsigned dig, dot, other, len, at, nd;
  __m128i v, d, k, t;
  char c;

  i += (size_t)neg;
  if (i + 16 > end)
    return 0;
  v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
  d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
  /* A digit iff its byte minus '0' is at most 9, unsigned. */
  dig = (unsigned)_mm_movemask_epi8(
    _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d));
  dot = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('.')));
  other = ~(dig | dot) & 0xFFFFu;
  if (other == 0 || (dig & 1u) == 0)
    return 0;
  len = (unsigned)__builtin_ctz(other);
  dot &= (1u << len) - 1;
  at = dot != 0 ? (unsigned)__builtin_ctz(dot) : len; /* the integer part */
  c = s[i + len];
  if (c == 'e' || c == 'E' || (dot & (dot - 1)) != 0 || at + 1 == len ||
      (s[i] == '0' && at > 1))
    return 0;
  nd = len - (dot != 0);
  /* Byte j of the result is digit j - (16 - nd), which sits one byte
   * further up from the '.' on; a negative index shuffles in a zero. */
  k = _mm_add_epi8(_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                 14, 15),
                   _mm_set1_epi8((char)(nd - 16)));
  k = _mm_sub_epi8(k, _mm_cmpgt_epi8(k, _mm_set1_epi8((char)(at - 1))));
  d = _mm_shuffle_epi8(d, k);
  /* Byte 0 is the most significant: pairs, fours, then eights. */
  t = _mm_maddubs_epi16(d, _mm_setr_epi8(10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10,
                                         1, 10, 1, 10, 1));
  t = _mm_madd_epi16(t, _mm_setr_epi16(100, 1, 100, 1, 100, 1, 100, 1));
  t = _mm_packs_epi32(t, t);
  t = _mm_madd_epi16(t, _mm_setr_epi16(10000, 1, 10000, 1, 10000, 1, 10000, 1));
  n->m = (uint64_t)(uint32_t)_mm_cvtsi128_si32(t) * 100000000u +
         (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(t, 4));
  n->neg = neg;
  n->simple = 1;
  n->tok = s + start;
  n->toklen = i + len - start;
  if (dot == 0) {
    n->kind = JF_INT; /* at most 16 digits: within int64 */
    n->i = neg ? -(int64_t)n->m : (int64_t)n->m;
  } else {
    n->kind = JF_REAL;
    n->e10 = -(long)(len - at - 1);
  }
  return i + len;
}

/* Whether read_window() may run here: checked once per call of jf_read()
 * or jf_fill_narrow() (a load of what the C runtime found at start-up). */
static int window_ok(void)
{
  return __builtin_cpu_supports("ssse3");
}
#endif

/* One element and its separator (jf_read()). */
static inline __attribute__((always_inline)) int
read_elem(const char *s, size_t end, size_t *pos, struct jf_num *n, int *last)
{
  size_t i = *pos;

  while (is_ws(s[i]))
    i++;
  if ((i = read_number(s, i, end, n)) == 0)
    return -1;
  while (is_ws(s[i]))
    i++;
  if (s[i] == ',') {
    *last = 0;
  } else if (s[i] == ']') {
    *last = 1;
  } else {
    return -1;
  }
  *pos = i + 1;
  return 0;
}

#ifdef JF_WINDOW
/* read_elem() for an element that read_window() takes, followed at once by
 * ',' or ']'; read_elem() itself for any other. */
__attribute__((target("ssse3"), always_inline)) static inline int
read_elem_window(const char *s, size_t end, size_t *pos, struct jf_num *n,
                 int *last)
{
  size_t j = read_window(s, *pos, end, n);

  if (j != 0 && (s[j] == ',' || s[j] == ']')) {
    *last = s[j] == ']';
    *pos = j + 1;
    return 0;
  }
  return read_elem(s, end, pos, n, last);
}

__attribute__((target("ssse3"))) static size_t
read_window_once(const char *s, size_t i, size_t end, struct jf_num *n)
{
  return read_window(s, i, end, n);
}

__attribute__((target("ssse3"))) static int
read_one_window(const char *s, size_t end, size_t *pos, struct jf_num *n,
                int *last)
{
  return read_elem_window(s, end, pos, n, last);
}
#endif

size_t jf__read_window(const char *s, size_t i, size_t end, struct jf_num *n)
{
#ifdef JF_WINDOW
  if (window_ok())
    return read_window_once(s, i, end, n);
#else
  (void)s, (void)i, (void)end, (void)n;
#endif
  return 0;
}

int jf_read_path(const char *s, size_t end, size_t *pos, struct jf_num *n,
                 int *last, int window)
{
#ifdef JF_WINDOW
  if (window && window_ok())
    return read_one_window(s, end, pos, n, last);
#else
  (void)window;
#endif
  return read_elem(s, end, pos, n, last);
}

int jf_read(const char *s, size_t end, size_t *pos, struct jf_num *n, int *last)
{
  return jf_read_path(s, end, pos, n, last, 1);
}

int jf_exact(const struct jf_num *n, double *d)
{
  char buf[TOKEN_MAX + 1];
  char *end;

  if (n->kind == JF_INT) {
    *d = (double)n->i;
    return 0;
  }
  /* Clinger's exact case: m and 10^|e10| are exact doubles, and one
   * correctly rounded IEEE operation gives the correctly rounded value. */
  if (n->simple && n->m <= ((uint64_t)1 << 53) && n->e10 >= -22 &&
      n->e10 <= 22) {
    double v = (double)n->m;
    v = n->e10 < 0 ? v / pow10_exact[-n->e10] : v * pow10_exact[n->e10];
    *d = n->neg ? -v : v;
    return 0;
  }
  memcpy(buf, n->tok, n->toklen);
  buf[n->toklen] = '\0';
  *d = strtod(buf, &end);
  return end == buf + n->toklen ? 0 : -1; /* a decimal point not '.' */
}

/* One rounding to a narrow float dtype (RD_FLOAT32, RD_FLOAT16,
 * RD_BFLOAT16) into dst, as api__store_float() does it. */
static void store_narrow(int dtype, double d, unsigned char *dst)
{
  if (dtype == RD_FLOAT32) {
    float f = (float)d;
    memcpy(dst, &f, sizeof f);
  } else {
    uint16_t h = dtype == RD_FLOAT16 ? rd_f64_to_f16(d) : rd_f64_to_bf16(d);
    memcpy(dst, &h, sizeof h);
  }
}

/* Why jf_narrow() gives round_t(round_d(x)), where x is the token's exact
 * value, round_d the correctly rounded double (what jansson's strtod
 * makes) and round_t the dtype's round-to-nearest-even conversion of a
 * double:
 *
 * 1. x = m * 10^e (m < 10^19 holds every significant digit: `simple`).
 *    d' = fl(fl(m) * P), with P the double nearest to 10^e (exact for
 *    0 <= e <= 22; a multiplication costs less than a division by the
 *    exact 10^-e).  Each of fl(m), P and the product has a relative error of at most 2^-53 with
 *    round-to-nearest, or 2^-52 if the compiler were to round the table's
 *    literals or the integer conversion to a neighbour (C leaves that
 *    open), so d' = x (1 + t) with |t| < 3 * 2^-52 * 1.01.
 * 2. JF_EXP_MAX bounds |e| so that d' is a normal double far from 0 and
 *    infinity: then 2^-53 |d'| < ulp(d'), the spacing of doubles in the
 *    binade of d', and |x - d'| < 3.1 * 2 * 2^-53 |d'| / (1 - |t|)
 *    < 7 ulp(d').
 * 3. lo and hi are the doubles `margin` (16) steps of the bit pattern
 *    below and above d'.  Going up, steps only grow; going down, they may
 *    halve once when a binade is crossed, so lo <= d' - 8 ulp(d') and
 *    hi >= d' + 16 ulp(d').  Hence lo < x < hi.
 * 4. round_d is monotone and fixes doubles, so lo <= round_d(x) <= hi.
 *    round_t is monotone too (round to nearest, ties to even, including
 *    underflow to subnormals or zero and overflow to infinity), so
 *    round_t(lo) <= round_t(round_d(x)) <= round_t(hi): when the two ends
 *    agree, so does the middle.  Otherwise a rounding boundary of the
 *    dtype lies near x and the caller converts exactly (jf_exact()).
 * tests/unit/test_jsonfast.c compares it with strtod() and a cast on
 * random and near-midpoint decimals, and shows that margin 0 fails. */
#define JF_EXP_MAX 80
static const double pow10_table[JF_EXP_MAX + 1] = {
  1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23,
  1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31, 1e32, 1e33, 1e34, 1e35,
  1e36, 1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43, 1e44, 1e45, 1e46, 1e47,
  1e48, 1e49, 1e50, 1e51, 1e52, 1e53, 1e54, 1e55, 1e56, 1e57, 1e58, 1e59,
  1e60, 1e61, 1e62, 1e63, 1e64, 1e65, 1e66, 1e67, 1e68, 1e69, 1e70, 1e71,
  1e72, 1e73, 1e74, 1e75, 1e76, 1e77, 1e78, 1e79, 1e80,
};
static const double pow10_neg[JF_EXP_MAX + 1] = {
  1e0,   1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7,  1e-8,  1e-9,  1e-10,
  1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17, 1e-18, 1e-19, 1e-20, 1e-21,
  1e-22, 1e-23, 1e-24, 1e-25, 1e-26, 1e-27, 1e-28, 1e-29, 1e-30, 1e-31, 1e-32,
  1e-33, 1e-34, 1e-35, 1e-36, 1e-37, 1e-38, 1e-39, 1e-40, 1e-41, 1e-42, 1e-43,
  1e-44, 1e-45, 1e-46, 1e-47, 1e-48, 1e-49, 1e-50, 1e-51, 1e-52, 1e-53, 1e-54,
  1e-55, 1e-56, 1e-57, 1e-58, 1e-59, 1e-60, 1e-61, 1e-62, 1e-63, 1e-64, 1e-65,
  1e-66, 1e-67, 1e-68, 1e-69, 1e-70, 1e-71, 1e-72, 1e-73, 1e-74, 1e-75, 1e-76,
  1e-77, 1e-78, 1e-79, 1e-80,
};

static inline int narrow_elem(int dtype, const struct jf_num *n,
                              unsigned margin, unsigned char *dst)
{
  unsigned char tmp[2];
  uint64_t u, lo, hi;
  double d, dlo, dhi;

  if (n->kind == JF_INT) {
    /* int64 -> double is one correctly rounded conversion, as the
     * ordinary path's (double)json_integer_value(). */
    store_narrow(dtype, (double)n->i, dst);
    return 1;
  }
  if (!n->simple || n->e10 < -JF_EXP_MAX || n->e10 > JF_EXP_MAX)
    return 0;
  if (n->m == 0) {
    store_narrow(dtype, n->neg ? -0.0 : 0.0, dst); /* exactly zero */
    return 1;
  }
  d = (double)n->m;
  d *= n->e10 < 0 ? pow10_neg[-n->e10] : pow10_table[n->e10];
  /* 1 <= m < 10^19 and |e10| <= 80: 1e-80 <= d' < 1e100, so the steps
   * below stay within the finite, normal, positive doubles. */
  d = n->neg ? -d : d;
  memcpy(&u, &d, sizeof u);
  /* Sign and magnitude: subtracting from the bits moves toward zero. */
  lo = u - margin;
  hi = u + margin;
  memcpy(&dlo, &lo, sizeof dlo);
  memcpy(&dhi, &hi, sizeof dhi);
  if (dtype == RD_FLOAT32) {
    float flo = (float)dlo, fhi = (float)dhi;
    uint32_t blo, bhi;
    memcpy(&blo, &flo, sizeof blo);
    memcpy(&bhi, &fhi, sizeof bhi);
    memcpy(dst, &fhi, sizeof fhi);
    return blo == bhi;
  }
  store_narrow(dtype, dlo, tmp);
  store_narrow(dtype, dhi, dst);
  return memcmp(tmp, dst, 2) == 0;
}

int jf_narrow(int dtype, const struct jf_num *n, unsigned margin,
              unsigned char *dst)
{
  return narrow_elem(dtype, n, margin, dst);
}

/* jf_fill_narrow()'s loop. */
static int fill_narrow(const char *s, size_t end, size_t *pos, int dtype,
                       unsigned char *out, uint64_t max, uint64_t *k,
                       struct jf_num *n, int *last)
{
  size_t esize = dtype == RD_FLOAT32 ? 4 : 2;

  *last = 0;
  while (!*last) {
    if (*k == max || read_elem(s, end, pos, n, last) != 0)
      return -1;
    if (!narrow_elem(dtype, n, JF_MARGIN, out + *k * esize))
      return 1;
    ++*k;
  }
  return 0;
}

#ifdef JF_WINDOW
/* fill_narrow() for CPUs with SSSE3: the same elements, results and
 * returns, with its common case in one tight loop.  An element that
 * read_window() takes, followed at once by ',' or ']', is converted from
 * a local jf_num that stays in registers; any other element (white space,
 * an exponent, a long token, the window at the array's end) goes through
 * read_elem() and narrow_elem() as in fill_narrow(). */
__attribute__((target("ssse3"))) static int
fill_narrow_window(const char *s, size_t end, size_t *pos, int dtype,
                   unsigned char *out, uint64_t max, uint64_t *k,
                   struct jf_num *n, int *last)
{
  size_t esize = dtype == RD_FLOAT32 ? 4 : 2, i = *pos;
  uint64_t kk = *k;
  struct jf_num t;
  int end_now = 0, rc = 0;

  /* i, kk and t are locals (stored back once) so that they stay in
   * registers. */
  while (!end_now) {
    if (kk == max || read_elem_window(s, end, &i, &t, &end_now) != 0) {
      rc = -1;
      break;
    }
    if (!narrow_elem(dtype, &t, JF_MARGIN, out + kk * esize)) {
      *n = t;
      rc = 1;
      break;
    }
    kk++;
  }
  *k = kk;
  *pos = i;
  *last = end_now;
  return rc;
}

/* fill_narrow_window() for float32 on CPUs with AVX-512 F, DQ and BW: the
 * same elements, results, returns and positions.  Why: narrow_elem() was
 * half of the parse of a 1M-element body (9.5 of 21 ms).  Batches of
 * JF_BATCH elements are read first (read_batch(), else one by one with
 * read_elem_window() as there); when every one is an integer or a plain
 * real whose value is m * 10^e10 with m < 2^53 and -15 <= e10 <= 0 (the
 * window's tokens), narrow_elem()'s steps run on all of them at once in
 * double lanes (f32_lanes()): m converted exactly, times the same
 * pow10_neg[] entry, the sign, the bit patterns `margin` below and above,
 * both rounded to float32, compared.  Those are the same IEEE operations
 * in the same order, so a lane gives narrow_elem()'s bits or fails where
 * it fails.  A batch with a failed lane (an integer narrow_elem() would
 * store without the check, or a value near a rounding boundary), or with
 * another kind of element, goes element by element through
 * narrow_elem(); an element it leaves undecided ends the call there (1,
 * as fill_narrow_window() returns it), and the elements read after it
 * are read again by the next call.  The last few before `max` go to
 * fill_narrow_window(). */
#define JF_BATCH 8
#define JF_EXACT_M ((uint64_t)1 << 53)

/* read_window() on the four tokens s[st[r]..sp[r]) (r = 0..3, '-' and
 * all), one 16-byte window per 128-bit lane: the same acceptance (each
 * condition is read_window()'s, the token's end known to be the ',' at
 * sp[r]) and the same mantissa, exponent and sign.  0 if any token is not
 * taken; else 1, with the four mantissas in qwords 0, 2, 4, 6 of *mq,
 * e10's negations in e[0..3], and bit r of *negm and *intm set for a '-'
 * and for an integer. */
__attribute__((target("avx512f,avx512dq,avx512bw"),
               always_inline)) static inline int
read_four(const char *s, size_t end, const size_t st[4], const size_t sp[4],
          __m512i *mq, uint64_t e[4], unsigned *negm, unsigned *intm)
{
  const __m512i iota = _mm512_broadcast_i32x4(
    _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  __m512i v, d, k, nd16 = _mm512_setzero_si512(), at1 = nd16, t;
  size_t ii[4], len[4];
  uint64_t dig, dot;

  for (int r = 0; r < 4; r++) {
    int neg = s[st[r]] == '-';
    ii[r] = st[r] + (size_t)neg;
    /* a ',' right after a '-' or at st: len 0 (read_window(): no digit) */
    len[r] = sp[r] - ii[r];
    if (len[r] - 1 > 14 || ii[r] + 16 > end) /* 1..15, window inside */
      return 0;
    *negm |= (unsigned)neg << r;
  }
#define JF_W(r) _mm_loadu_si128((const __m128i *)(const void *)(s + ii[r]))
  v = _mm512_inserti32x4(
    _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(JF_W(0)),
                                          JF_W(1), 1),
                       JF_W(2), 2),
    JF_W(3), 3);
#undef JF_W
  d = _mm512_sub_epi8(v, _mm512_set1_epi8('0'));
  dig = _mm512_cmple_epu8_mask(d, _mm512_set1_epi8(9));
  dot = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('.'));
  for (int r = 0; r < 4; r++) {
    unsigned dg = (unsigned)(dig >> (16 * r)) & 0xFFFFu;
    unsigned dt = (unsigned)(dot >> (16 * r)) & 0xFFFFu;
    unsigned tm = (1u << len[r]) - 1, at, nd;
    /* every byte before the ',' a digit or '.', the first a digit */
    if (((dg | dt) & tm) != tm || (dg & 1u) == 0)
      return 0;
    dt &= tm;
    at = dt != 0 ? (unsigned)__builtin_ctz(dt) : (unsigned)len[r];
    if ((dt & (dt - 1)) != 0 || at + 1 == len[r] || (s[ii[r]] == '0' && at > 1))
      return 0;
    nd = (unsigned)len[r] - (dt != 0);
    e[r] = dt != 0 ? len[r] - at - 1 : 0;
    *intm |= (unsigned)(dt == 0) << r;
    nd16 = _mm512_mask_set1_epi8(nd16, (__mmask64)0xFFFF << (16 * r),
                                 (char)(nd - 16));
    at1 = _mm512_mask_set1_epi8(at1, (__mmask64)0xFFFF << (16 * r),
                                (char)(at - 1));
  }
  /* read_window()'s shuffle, madds and packs, lane by lane */
  k = _mm512_add_epi8(iota, nd16);
  k = _mm512_mask_add_epi8(k, _mm512_cmpgt_epi8_mask(k, at1), k,
                           _mm512_set1_epi8(1));
  d = _mm512_shuffle_epi8(d, k);
  t = _mm512_maddubs_epi16(d, _mm512_set1_epi16(0x010A));
  t = _mm512_madd_epi16(t, _mm512_set1_epi32(0x00010064));
  t = _mm512_packs_epi32(t, t);
  t = _mm512_madd_epi16(t, _mm512_set1_epi32(0x00012710));
  *mq = _mm512_add_epi64(_mm512_mul_epu32(t, _mm512_set1_epi64(100000000)),
                         _mm512_srli_epi64(t, 32));
  return 1;
}

/* The serial loop reads an element, finds where it ends, then starts the
 * next one there: one dependent chain (about 11 ns an element on the
 * development machine, 8 with this).  Here the ends come first: one
 * compare per 64 bytes marks every ',' of the next 128 bytes, and the
 * JF_BATCH elements that end at the first JF_BATCH of them are read four
 * at a time (read_four()).  When each element starts just after the
 * previous ',' and read_window() would end it exactly at its own ',',
 * this is what read_elem_window() would have read, element by element:
 * 1, with *i after the last ',' and the lanes' inputs in *mv, *ev, *sv.
 * 0 for anything else (white space, fewer commas, a token read_window()
 * leaves, the array's last 128 bytes): the caller then reads the batch
 * serially from *i. */
__attribute__((target("avx512f,avx512dq,avx512bw"),
               always_inline)) static inline int
read_batch(const char *s, size_t end, size_t *i, __m512i *mv, __m512i *ev,
           __m512i *sv)
{
  const __m512i comma = _mm512_set1_epi8(',');
  size_t at = *i, st[JF_BATCH], sp[JF_BATCH];
  uint64_t m0, m1, e[JF_BATCH];
  unsigned negm = 0, intm = 0, n4 = 0, i4 = 0;
  __m512i lo4, hi4;
  __mmask8 zero;

  if (end - at < 128)
    return 0;
  m0 = _mm512_cmpeq_epi8_mask(_mm512_loadu_si512(s + at), comma);
  m1 = _mm512_cmpeq_epi8_mask(_mm512_loadu_si512(s + at + 64), comma);
  if (__builtin_popcountll(m0) + __builtin_popcountll(m1) < JF_BATCH)
    return 0;
  for (int q = 0; q < JF_BATCH; q++) {
    if (m0 != 0) {
      sp[q] = at + (size_t)__builtin_ctzll(m0);
      m0 &= m0 - 1;
    } else {
      sp[q] = at + 64 + (size_t)__builtin_ctzll(m1);
      m1 &= m1 - 1;
    }
    st[q] = q == 0 ? at : sp[q - 1] + 1;
  }
  if (!read_four(s, end, st, sp, &lo4, e, &negm, &intm) ||
      !read_four(s, end, st + 4, sp + 4, &hi4, e + 4, &n4, &i4))
    return 0;
  negm |= n4 << 4;
  intm |= i4 << 4;
  *mv = _mm512_permutex2var_epi64(lo4,
                                  _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14),
                                  hi4);
  *ev = _mm512_loadu_si512(e);
  /* the serial loop's signs: a real's is its '-', an integer's that of
   * its value ("-0" is the integer 0, stored as +0) */
  zero = _mm512_cmpeq_epi64_mask(*mv, _mm512_setzero_si512());
  *sv = _mm512_maskz_mov_epi64((__mmask8)(negm & ~(intm & zero)),
                               _mm512_set1_epi64(
                                 (long long)((uint64_t)1 << 63)));
  *i = sp[JF_BATCH - 1] + 1;
  return 1;
}

/* narrow_elem()'s steps on 8 elements in double lanes (see above): 1 with
 * the 8 float32 values stored at dst, 0 (nothing stored) when a lane
 * needs narrow_elem() itself.  mv: the mantissas (< 2^53), ev: -e10 (0..15),
 * sv: the sign bits. */
__attribute__((target("avx512f,avx512dq"), always_inline)) static inline int
f32_lanes(__m512i mv, __m512i ev, __m512i sv, unsigned char *dst)
{
  const __m512i margin = _mm512_set1_epi64((long long)JF_MARGIN);
  __m512d d =
    _mm512_mul_pd(_mm512_cvtepi64_pd(mv),
                  _mm512_permutex2var_pd(_mm512_loadu_pd(pow10_neg), ev,
                                         _mm512_loadu_pd(pow10_neg + 8)));
  __m512i u, lo, hi;
  __m256 flo, fhi;
  __mmask8 ok;

  u = _mm512_xor_si512(_mm512_castpd_si512(d), sv);
  lo = _mm512_sub_epi64(u, margin);
  hi = _mm512_add_epi64(u, margin);
  flo = _mm512_cvtpd_ps(_mm512_castsi512_pd(lo));
  fhi = _mm512_cvtpd_ps(_mm512_castsi512_pd(hi));
  ok = (__mmask8)_mm256_movemask_ps(_mm256_castsi256_ps(
    _mm256_cmpeq_epi32(_mm256_castps_si256(flo), _mm256_castps_si256(fhi))));
  /* zero: narrow_elem() stores the signed zero, which fhi is */
  ok |= _mm512_cmpeq_epi64_mask(mv, _mm512_setzero_si512());
  if (ok != 0xff)
    return 0;
  _mm256_storeu_ps((float *)(void *)dst, fhi);
  return 1;
}

__attribute__((target("avx512f,avx512dq,avx512bw"))) static int
fill_f32_batch(const char *s, size_t end, size_t *pos, unsigned char *out,
               uint64_t max, uint64_t *k, struct jf_num *n, int *last)
{
  size_t i = *pos, after[JF_BATCH];
  uint64_t kk = *k;
  struct jf_num t[JF_BATCH];
  int end_now = 0, rc = 0;

  while (!end_now) {
    uint64_t mm[JF_BATCH], ee[JF_BATCH], sg[JF_BATCH];
    int nb = 0, vec = 1, lasts[JF_BATCH], bad = 0;
    __m512i mv, ev, sv;
    size_t at = i;

    if (max - kk < JF_BATCH) { /* the last few: one at a time */
      *k = kk;
      *pos = i;
      return fill_narrow_window(s, end, pos, RD_FLOAT32, out, max, k, n, last);
    }
    if (read_batch(s, end, &i, &mv, &ev, &sv)) {
      if (f32_lanes(mv, ev, sv, out + kk * 4)) {
        kk += JF_BATCH;
        continue;
      }
      /* A lane failed (rare): the batch again, serially, which keeps
       * what narrow_elem() needs. */
      i = at;
    }
    while (nb < JF_BATCH && !end_now) {
      struct jf_num *u = &t[nb];
      if (read_elem_window(s, end, &i, u, &end_now) != 0) {
        bad = 1;
        break;
      }
      lasts[nb] = end_now;
      after[nb] = i;
      if (u->kind == JF_INT) {
        uint64_t a = u->i < 0 ? (uint64_t)0 - (uint64_t)u->i : (uint64_t)u->i;
        mm[nb] = a;
        ee[nb] = 0;
        sg[nb] = u->i < 0 ? (uint64_t)1 << 63 : 0;
        vec &= a < JF_EXACT_M;
      } else {
        mm[nb] = u->m;
        ee[nb] = (uint64_t)-u->e10;
        sg[nb] = u->neg ? (uint64_t)1 << 63 : 0;
        vec &= u->simple && u->m < JF_EXACT_M && u->e10 <= 0 && u->e10 >= -15;
      }
      nb++;
    }
    if (vec && nb == JF_BATCH &&
        f32_lanes(_mm512_loadu_si512(mm), _mm512_loadu_si512(ee),
                  _mm512_loadu_si512(sg), out + kk * 4)) {
      kk += JF_BATCH;
      continue;
    }
    /* a lane failed, or a short or broken batch: element by element */
    for (int q = 0; q < nb; q++) {
      if (!narrow_elem(RD_FLOAT32, &t[q], JF_MARGIN, out + kk * 4)) {
        *n = t[q];
        i = after[q];
        end_now = lasts[q];
        rc = 1;
        break;
      }
      kk++;
    }
    if (rc == 1)
      break;
    if (bad) {
      rc = -1; /* i is where that element starts */
      break;
    }
  }
  *k = kk;
  *pos = i;
  *last = end_now;
  return rc;
}

static int batch_ok(void)
{
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw");
}
#endif

int jf_fill_narrow_path(const char *s, size_t end, size_t *pos, int dtype,
                        unsigned char *out, uint64_t max, uint64_t *k,
                        struct jf_num *n, int *last, int window)
{
#ifdef JF_WINDOW
  if (window == 2 && dtype == RD_FLOAT32 && batch_ok())
    return fill_f32_batch(s, end, pos, out, max, k, n, last);
  if (window && window_ok())
    return fill_narrow_window(s, end, pos, dtype, out, max, k, n, last);
#else
  (void)window;
#endif
  return fill_narrow(s, end, pos, dtype, out, max, k, n, last);
}

int jf_fill_narrow(const char *s, size_t end, size_t *pos, int dtype,
                   unsigned char *out, uint64_t max, uint64_t *k,
                   struct jf_num *n, int *last)
{
  return jf_fill_narrow_path(s, end, pos, dtype, out, max, k, n, last, 2);
}
