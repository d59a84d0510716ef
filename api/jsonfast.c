/* jsonfast.c - fast path for a large flat `input.data` array of numbers.
 *
 * Why it exists: jansson's json_loadb() builds a node per element (a
 * malloc'ed json_t of about 50 bytes plus the array's pointer) and reads a
 * 1,000,000-element float32 request at about 40 MB/s; the tree, not the
 * arithmetic, is the daemon's limit on large JSON requests and most of its
 * peak memory.  jansson has no streaming or per-element hook to avoid it.
 *
 * What it does: jf_find() walks the body just far enough to locate the
 * value of root.input.data (strings with escapes and nesting are tracked,
 * nothing is interpreted), then checks that this value is an array of JSON
 * numbers in the strict grammar, counting them.  The decoder (json.c) then
 * has jansson parse the whole document with that array replaced by "[]":
 * syntax outside the array, every other field, duplicate keys and the
 * placement of the array are still jansson's to check (a document that
 * fails there is decoded again by the ordinary path, for the usual error).
 * jf_next() converts the elements to what jansson would have produced: an
 * int64 for an integer token, the correctly rounded double for any other
 * (Clinger's exact case: at most 2^53 as significand and a power of ten up
 * to 1e22 give one correctly rounded IEEE operation; otherwise strtod).
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

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int jf_find(const char *s, size_t len, struct jf_flat *fl)
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
        return scan_array(s, len, i, fl);
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

int jf_next(const char *s, size_t *pos, struct jf_num *n)
{
  size_t i = *pos, start, digits = 0;
  uint64_t m = 0;
  long exp = 0, frac = 0;
  int neg, exp_neg = 0, exact = 1;

  while (is_ws(s[i]) || s[i] == ',' || s[i] == '[')
    i++;
  start = i;
  neg = s[i] == '-';
  i += (size_t)neg;
  for (; is_digit(s[i]); i++) {
    if (digits < 19)
      m = m * 10 + (uint64_t)(s[i] - '0');
    else
      exact = 0;
    digits += digits > 0 || s[i] != '0';
  }
  if (s[i] != '.' && s[i] != 'e' && s[i] != 'E') {
    /* Integer token, within int64 (jf_find checked): 19 digits at most. */
    n->kind = JF_INT;
    n->i = neg ? (int64_t)(0 - m) : (int64_t)m;
    if (neg && m == (uint64_t)1 << 63)
      n->i = INT64_MIN;
    *pos = i;
    return 0;
  }
  if (s[i] == '.')
    for (i++; is_digit(s[i]); i++) {
      if (digits < 19) {
        m = m * 10 + (uint64_t)(s[i] - '0');
        frac++;
      } else if (s[i] != '0') {
        exact = 0;
      }
      digits += digits > 0 || s[i] != '0';
    }
  if (s[i] == 'e' || s[i] == 'E') {
    i++;
    if (s[i] == '+' || s[i] == '-')
      exp_neg = s[i++] == '-';
    for (; is_digit(s[i]); i++)
      if (exp < 100000)
        exp = exp * 10 + (s[i] - '0');
  }
  n->kind = JF_REAL;
  exp = (exp_neg ? -exp : exp) - frac;
  if (exact && m <= ((uint64_t)1 << 53) && exp >= -22 && exp <= 22) {
    double d = (double)m;
    d = exp < 0 ? d / pow10_exact[-exp] : d * pow10_exact[exp];
    n->d = neg ? -d : d;
  } else {
    char buf[TOKEN_MAX + 1];
    char *end;
    size_t tl = i - start;
    if (tl > TOKEN_MAX)
      return -1;
    memcpy(buf, s + start, tl);
    buf[tl] = '\0';
    errno = 0;
    n->d = strtod(buf, &end);
    if (end != buf + tl)
      return -1; /* a locale whose decimal point is not '.' */
  }
  *pos = i;
  return 0;
}
