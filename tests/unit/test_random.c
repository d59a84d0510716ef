/* test_random.c - randomized oracle test of libreduce (ReduceL2,
 * ReduceSumSquare) against an independent, slow reference.
 *
 * The reference knows nothing of the library's canonical shapes, kernels or
 * parts: for every output element it walks the elements of its slice by
 * plain index arithmetic over the original shape and sums the squares
 * exactly (floats: a wide fixed-point big integer; integers: a 256-bit
 * integer), then rounds once (floats) or applies the overflow policy
 * (integers).  Every float result is checked against the exactly known
 * value, not against another floating-point computation.
 *
 * Accuracy accepted (why: see check_float()):
 *   float32 / float16 / bfloat16: the correctly rounded value; either
 *     neighbour of the exact value (i.e. within 1 ulp) only when the exact
 *     value lies within W = max(2^-50, (n+2) * 2^-53) relative of a rounding
 *     tie, n = slice length.  W bounds the relative error of a double
 *     accumulation of n non-negative exact terms plus the final sqrt.
 *   float64: within F64_ULPS (4) ulps of the correctly rounded value.
 *   integers: exact.
 *
 * Environment: RD_TEST_SEED (seed, printed), RD_TEST_CASES (number of small
 * random cases), RD_TEST_BIG_CASES (number of 2-12 MiB random cases),
 * RD_TEST_ONLY (run only the random case with that id, as printed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f16.h"
#include "reduce.h"

__extension__ typedef unsigned __int128 u128;

#define DEFAULT_SEED 20240607u
#define DEFAULT_CASES 10000
#define DEFAULT_BIG_CASES 40
#define MAXR 6         /* largest rank the random cases use */
#define MAX_ELEMS 4096 /* cap on elements of one random case */
#define F64_ULPS 4     /* float64 tolerance, see check_float() */
#define MAX_REPORTS 12 /* failing elements printed in detail */

/* ------------------------------------------------------------------ */
/* Random numbers: splitmix64 seeding xoshiro256**                     */
/* ------------------------------------------------------------------ */

struct rng {
  uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
  uint64_t *s = r->s;
  uint64_t res = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return res;
}

/* Uniform in [0, n); the modulo bias is irrelevant for test data. */
static uint64_t rng_below(struct rng *r, uint64_t n)
{
  return n ? rng_next(r) % n : 0;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_unit(struct rng *r)
{
  return (double)(rng_next(r) >> 11) * 0x1p-53;
}

/* ------------------------------------------------------------------ */
/* Element types                                                      */
/* ------------------------------------------------------------------ */

struct fmt {
  int dtype;
  const char *name;
  size_t size;
  int is_float;
  int p, emin, emax;   /* floats: precision, min normal exp, max exp */
  int is_signed, bits; /* integers */
};

static const struct fmt fmts[8] = {
  { RD_FLOAT32, "float32", 4, 1, 24, -126, 127, 0, 0 },
  { RD_FLOAT64, "float64", 8, 1, 53, -1022, 1023, 0, 0 },
  { RD_FLOAT16, "float16", 2, 1, 11, -14, 15, 0, 0 },
  { RD_BFLOAT16, "bfloat16", 2, 1, 8, -126, 127, 0, 0 },
  { RD_INT32, "int32", 4, 0, 0, 0, 0, 1, 32 },
  { RD_INT64, "int64", 8, 0, 0, 0, 0, 1, 64 },
  { RD_UINT32, "uint32", 4, 0, 0, 0, 0, 0, 32 },
  { RD_UINT64, "uint64", 8, 0, 0, 0, 0, 0, 64 },
};

static const struct fmt *fmt_of(int dtype)
{
  for (int i = 0; i < 8; i++)
    if (fmts[i].dtype == dtype)
      return &fmts[i];
  return NULL;
}

/* Raw element bits, zero-extended. */
static uint64_t get_bits(const struct fmt *f, const unsigned char *buf,
                         uint64_t i)
{
  uint16_t h;
  uint32_t w;
  uint64_t d;
  switch (f->size) {
  case 2: memcpy(&h, buf + i * 2, 2); return h;
  case 4: memcpy(&w, buf + i * 4, 4); return w;
  default: memcpy(&d, buf + i * 8, 8); return d;
  }
}

static void put_bits(const struct fmt *f, unsigned char *buf, uint64_t i,
                     uint64_t v)
{
  uint16_t h = (uint16_t)v;
  uint32_t w = (uint32_t)v;
  switch (f->size) {
  case 2: memcpy(buf + i * 2, &h, 2); break;
  case 4: memcpy(buf + i * 4, &w, 4); break;
  default: memcpy(buf + i * 8, &v, 8); break;
  }
}

/* Own decoders (independent of lib/f16.c). */
static double dec_f16(uint16_t h)
{
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0x1f)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp(m, -24);
  else
    v = ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

static double dec_bf16(uint16_t b)
{
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static double dec_float(const struct fmt *f, uint64_t bits)
{
  float x;
  double d;
  uint32_t w = (uint32_t)bits;
  switch (f->dtype) {
  case RD_FLOAT32: memcpy(&x, &w, 4); return x;
  case RD_FLOAT64: memcpy(&d, &bits, 8); return d;
  case RD_FLOAT16: return dec_f16((uint16_t)bits);
  default: return dec_bf16((uint16_t)bits);
  }
}

static int is_nan_bits(const struct fmt *f, uint64_t b)
{
  switch (f->dtype) {
  case RD_FLOAT32: return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu);
  case RD_FLOAT64:
    return (b & 0x7ff0000000000000u) == 0x7ff0000000000000u &&
           (b & 0xfffffffffffffu);
  case RD_FLOAT16: return (b & 0x7c00) == 0x7c00 && (b & 0x3ff);
  default: return (b & 0x7f80) == 0x7f80 && (b & 0x7f);
  }
}

static uint64_t inf_bits(const struct fmt *f)
{
  switch (f->dtype) {
  case RD_FLOAT32: return 0x7f800000u;
  case RD_FLOAT64: return 0x7ff0000000000000u;
  case RD_FLOAT16: return 0x7c00;
  default: return 0x7f80;
  }
}

/* Encodes a non-negative value that is exactly representable in `f` (or
 * +inf).  Returns 0 on success, -1 if `v` is not representable (test bug). */
static int enc_float(const struct fmt *f, double v, uint64_t *out)
{
  float x;
  uint32_t w;
  if (isinf(v)) {
    *out = inf_bits(f);
    return 0;
  }
  switch (f->dtype) {
  case RD_FLOAT64: memcpy(out, &v, 8); return 0;
  case RD_FLOAT32:
  case RD_BFLOAT16:
    x = (float)v;
    if ((double)x != v)
      return -1;
    memcpy(&w, &x, 4);
    if (f->dtype == RD_BFLOAT16) {
      if (w & 0xffff)
        return -1;
      w >>= 16;
    }
    *out = w;
    return 0;
  default: {
    int ex;
    if (v == 0) {
      *out = 0;
      return 0;
    }
    frexp(v, &ex); /* v = m * 2^ex, m in [0.5, 1) */
    if (ex - 1 >= -14)
      *out = (uint64_t)(ex - 1 + 15) << 10 |
             (uint64_t)(ldexp(v, 11 - ex) - 1024.0);
    else
      *out = (uint64_t)ldexp(v, 24);
    return dec_f16((uint16_t)*out) == v ? 0 : -1;
  }
  }
}

/* ------------------------------------------------------------------ */
/* Exact float accumulator: sum of squares as a fixed-point integer S, */
/* value = S * 2^-FA_OFF.  Squares of float64 lie in [2^-2148, 2^2048) */
/* and up to 2^24 terms are summed, so 72 limbs (4608 bits) suffice.   */
/* ------------------------------------------------------------------ */

#define FA_LIMBS 72
#define FA_OFF 2304 /* even, so the sqrt of the scale is exact */

struct facc {
  uint64_t l[FA_LIMBS];
  int nan, inf;
  uint64_t n; /* terms, for the accuracy window */
};

static void facc_clear(struct facc *a)
{
  memset(a, 0, sizeof *a);
}

static void fa_add_at(uint64_t *l, u128 v, int pos)
{
  int i = pos / 64, s = pos % 64;
  uint64_t v0 = (uint64_t)v, v1 = (uint64_t)(v >> 64), w[3];
  if (s == 0) {
    w[0] = v0;
    w[1] = v1;
    w[2] = 0;
  } else {
    w[0] = v0 << s;
    w[1] = (v0 >> (64 - s)) | (v1 << s);
    w[2] = v1 >> (64 - s);
  }
  uint64_t carry = 0;
  for (int k = 0; (k < 3 || carry) && i + k < FA_LIMBS; k++) {
    u128 t = (u128)l[i + k] + (k < 3 ? w[k] : 0) + carry;
    l[i + k] = (uint64_t)t;
    carry = (uint64_t)(t >> 64);
  }
}

static void facc_add(struct facc *a, double x)
{
  a->n++;
  if (isnan(x)) {
    a->nan = 1;
    return;
  }
  if (isinf(x)) {
    a->inf = 1;
    return;
  }
  if (x == 0)
    return;
  int ex;
  double fr = frexp(fabs(x), &ex);
  uint64_t m = (uint64_t)ldexp(fr, 53);
  int e = ex - 53;
  int tz = __builtin_ctzll(m);
  m >>= tz;
  e += tz;
  fa_add_at(a->l, (u128)m * m, 2 * e + FA_OFF);
}

static uint64_t fa_limb(const uint64_t *l, long i)
{
  return (i < 0 || i >= FA_LIMBS) ? 0 : l[i];
}

/* floor(S / 2^lo) mod 2^64; lo may be negative. */
static uint64_t fa_window(const uint64_t *l, long lo)
{
  long i = lo >= 0 ? lo / 64 : -((-lo + 63) / 64);
  int s = (int)(lo - i * 64);
  uint64_t r = fa_limb(l, i) >> s;
  if (s)
    r |= fa_limb(l, i + 1) << (64 - s);
  return r;
}

/* Whether any bit of S below position lo is set. */
static int fa_any_below(const uint64_t *l, long lo)
{
  if (lo <= 0)
    return 0;
  long i = lo / 64;
  int s = (int)(lo % 64);
  for (long k = 0; k < i && k < FA_LIMBS; k++)
    if (l[k])
      return 1;
  return s && i < FA_LIMBS && (l[i] & ((UINT64_C(1) << s) - 1));
}

static long fa_top(const uint64_t *l)
{
  for (long i = FA_LIMBS - 1; i >= 0; i--)
    if (l[i])
      return i * 64 + 63 - __builtin_clzll(l[i]);
  return -1;
}

/* Bit-by-bit floor square root of a 128-bit integer. */
static uint64_t isqrt128(u128 n)
{
  u128 res = 0, bit = (u128)1 << 126;
  while (bit > n)
    bit >>= 2;
  while (bit) {
    if (n >= res + bit) {
      n -= res + bit;
      res = (res >> 1) + bit;
    } else {
      res >>= 1;
    }
    bit >>= 2;
  }
  return (uint64_t)res;
}

/* An exactly known non-negative real: (m + f) * 2^e, f = 0 if !sticky,
 * else 0 < f < 1 (f < 2 after a one-bit normalisation, see round_fmt). */
enum { FX_ZERO, FX_VAL, FX_INF, FX_NAN };
struct fexact {
  int kind;
  uint64_t m;
  int e;
  int sticky;
  uint64_t n;
};

static void facc_result(const struct facc *a, int op, struct fexact *x)
{
  memset(x, 0, sizeof *x);
  x->n = a->n;
  if (a->nan) {
    x->kind = FX_NAN;
    return;
  }
  if (a->inf) {
    x->kind = FX_INF;
    return;
  }
  long b = fa_top(a->l);
  if (b < 0) {
    x->kind = FX_ZERO;
    return;
  }
  x->kind = FX_VAL;
  if (op == RD_OP_SUM_SQUARE) {
    x->m = fa_window(a->l, b - 63);
    x->sticky = fa_any_below(a->l, b - 63);
    x->e = (int)(b - 63 - FA_OFF);
    return;
  }
  /* sqrt(S) = 2^(k/2) sqrt(T + rest), T = floor(S / 2^k) in [2^124, 2^126),
   * k even; floor(sqrt(T)) is then also floor(sqrt(T + rest)). */
  long k = b + 1 - 126;
  if (k % 2)
    k++;
  u128 t = (u128)fa_window(a->l, k + 64) << 64 | fa_window(a->l, k);
  uint64_t r = isqrt128(t);
  x->m = r;
  x->sticky = (u128)r * r != t || fa_any_below(a->l, k);
  x->e = (int)(k / 2 - FA_OFF / 2);
}

static long double fexact_approx(const struct fexact *x)
{
  switch (x->kind) {
  case FX_ZERO: return 0;
  case FX_INF: return INFINITY;
  case FX_NAN: return NAN;
  default: return ldexpl((long double)x->m, x->e);
  }
}

/* Relative half-width of the "near a tie" window, see the file comment. */
static double tie_window(uint64_t n)
{
  double w = ldexp((double)n + 2, -53);
  return w > 0x1p-50 ? w : 0x1p-50;
}

struct rounded {
  int inf;         /* correctly rounded to +inf */
  double val;      /* correctly rounded value (if !inf) */
  double down, up; /* the neighbours of the exact value (up may be inf) */
  int near_tie;    /* exact value within the window of a tie */
};

/* Rounds (m + f) * 2^e to format `f`, to nearest, ties to even.  Integer
 * arithmetic only (long double is not 80-bit everywhere, e.g. valgrind). */
static void round_fmt(const struct fmt *f, const struct fexact *x,
                      struct rounded *out)
{
  uint64_t m = x->m;
  int e = x->e, lz = __builtin_clzll(m);
  m <<= lz;
  e -= lz;
  int ex = e + 63; /* value in [2^ex, 2^(ex+1)) */
  memset(out, 0, sizeof *out);
  if (ex > f->emax) {
    /* >= 2^(emax+1): at least 2^(emax-p) beyond the overflow threshold */
    out->inf = 1;
    out->val = out->down = out->up = INFINITY;
    return;
  }
  int q = (ex > f->emin ? ex : f->emin) - (f->p - 1); /* ulp exponent */
  int d = q - e;           /* bits of m below the ulp: >= 11 */
  uint64_t tr, half, rest; /* rounding bit, anything below it */
  u128 low, mid;           /* m mod 2^d, and 2^(d-1) */
  if (d > 64) {
    tr = half = 0;
    rest = 1;
    low = m;
    mid = d > 127 ? ~(u128)0 : (u128)1 << (d - 1);
  } else {
    tr = d == 64 ? 0 : m >> d;
    half = (m >> (d - 1)) & 1;
    rest = (m & ((UINT64_C(1) << (d - 1)) - 1)) != 0 || x->sticky;
    low = d == 64 ? m : m & ((UINT64_C(1) << d) - 1);
    mid = (u128)1 << (d - 1);
  }
  uint64_t kept = tr + (half && (rest || (tr & 1)));
  double top = ldexp(1, f->emax + 1);
  out->val = ldexp((double)kept, q);
  out->inf = out->val >= top;
  if (out->inf)
    out->val = INFINITY;
  out->down = ldexp((double)tr, q);
  out->up = ldexp((double)(tr + 1), q) >= top ? INFINITY
                                              : ldexp((double)(tr + 1), q);
  /* distance to the tie, in units of 2^e, against the window times m */
  u128 dist = low > mid ? low - mid : mid - low;
  out->near_tie = (double)dist < tie_window(x->n) * (double)m;
}

/* ------------------------------------------------------------------ */
/* Exact integers: 256-bit unsigned                                   */
/* ------------------------------------------------------------------ */

struct ibn {
  uint64_t l[4];
};

static void ibn_add128(struct ibn *a, u128 v)
{
  uint64_t add[2] = { (uint64_t)v, (uint64_t)(v >> 64) }, carry = 0;
  for (int i = 0; i < 4; i++) {
    u128 t = (u128)a->l[i] + (i < 2 ? add[i] : 0) + carry;
    a->l[i] = (uint64_t)t;
    carry = (uint64_t)(t >> 64);
  }
}

static int ibn_cmp(const struct ibn *a, const struct ibn *b)
{
  for (int i = 3; i >= 0; i--)
    if (a->l[i] != b->l[i])
      return a->l[i] < b->l[i] ? -1 : 1;
  return 0;
}

static void ibn_sub(struct ibn *a, const struct ibn *b)
{
  uint64_t borrow = 0;
  for (int i = 0; i < 4; i++) {
    uint64_t x = a->l[i], y = b->l[i];
    uint64_t d = x - y - borrow;
    borrow = (x < y) || (x - y < borrow);
    a->l[i] = d;
  }
}

static void ibn_shr1(struct ibn *a)
{
  for (int i = 0; i < 4; i++)
    a->l[i] = (a->l[i] >> 1) | (i < 3 ? a->l[i + 1] << 63 : 0);
}

/* a += 2^b */
static void ibn_addbit(struct ibn *a, int b)
{
  uint64_t carry = UINT64_C(1) << (b % 64);
  for (int i = b / 64; i < 4 && carry; i++) {
    a->l[i] += carry;
    carry = a->l[i] < carry;
  }
}

static int ibn_top(const struct ibn *a)
{
  for (int i = 3; i >= 0; i--)
    if (a->l[i])
      return i * 64 + 63 - __builtin_clzll(a->l[i]);
  return -1;
}

/* Floor square root, digit by digit (base 4). */
static void ibn_isqrt(const struct ibn *n, struct ibn *res)
{
  struct ibn num = *n, r = { { 0 } };
  int top = ibn_top(&num);
  for (int b = top < 0 ? -2 : (top & ~1); b >= 0; b -= 2) {
    struct ibn t = r;
    ibn_addbit(&t, b);
    if (ibn_cmp(&num, &t) >= 0) {
      ibn_sub(&num, &t);
      ibn_shr1(&r);
      ibn_addbit(&r, b);
    } else {
      ibn_shr1(&r);
    }
  }
  *res = r;
}

static void ibn_to_dec(const struct ibn *a, char *buf, size_t sz)
{
  struct ibn t = *a;
  char tmp[96];
  int n = 0;
  do {
    uint64_t rem = 0;
    for (int i = 3; i >= 0; i--) {
      u128 cur = (u128)rem << 64 | t.l[i];
      t.l[i] = (uint64_t)(cur / 10);
      rem = (uint64_t)(cur % 10);
    }
    tmp[n++] = (char)('0' + rem);
  } while (ibn_top(&t) >= 0);
  size_t j = 0;
  while (n > 0 && j + 1 < sz)
    buf[j++] = tmp[--n];
  buf[j] = 0;
}

/* Magnitude of an integer element. */
static uint64_t int_mag(const struct fmt *f, uint64_t bits)
{
  if (!f->is_signed)
    return bits;
  if (f->bits == 32) {
    int32_t v = (int32_t)(uint32_t)bits;
    return v < 0 ? (uint64_t)0 - (uint64_t)(int64_t)v : (uint64_t)v;
  }
  return (bits >> 63) ? (uint64_t)0 - bits : bits;
}

static uint64_t int_max(const struct fmt *f)
{
  return f->bits == 32 ? (f->is_signed ? INT32_MAX : UINT32_MAX)
                       : (f->is_signed ? (uint64_t)INT64_MAX : UINT64_MAX);
}

/* Expected output bits for an exact integer result; -1 if it overflows
 * under policy "error". */
static int int_expect(const struct fmt *f, int policy, const struct ibn *v,
                      uint64_t *bits)
{
  uint64_t mask = f->bits == 32 ? UINT32_MAX : UINT64_MAX;
  int over = v->l[1] || v->l[2] || v->l[3] || v->l[0] > int_max(f);
  if (!over) {
    *bits = v->l[0];
    return 0;
  }
  if (policy == RD_OVERFLOW_ERROR)
    return -1;
  *bits = policy == RD_OVERFLOW_SATURATE ? int_max(f) : (v->l[0] & mask);
  return 0;
}

/* ------------------------------------------------------------------ */
/* Test cases                                                         */
/* ------------------------------------------------------------------ */

struct tcase {
  uint64_t id;
  int op, dtype, version;
  int64_t opset;
  const struct fmt *f;
  size_t rank;
  int64_t shape[RD_MAX_RANK];
  size_t naxes;
  int64_t axes[RD_MAX_RANK];
  int set_keepdims;
  int64_t keepdims; /* effective (1 when not set) */
  int64_t noop;     /* as passed: RD_UNSET, 0 or 1 */
  int overflow;
  int specials; /* 0 none, 1 inf, 2 NaN and inf */
  int profile;
  /* derived independently of the library */
  int red[RD_MAX_RANK];
  int noop_eff;
  size_t out_rank;
  int64_t out_shape[RD_MAX_RANK];
  uint64_t in_count, out_count;
  unsigned char *in;
};

/* Expected result of one output element. */
struct expect {
  struct fexact fx; /* floats */
  struct ibn iv;    /* integers: exact sum or floor sqrt */
  struct ibn isum;  /* integers: exact sum (for messages) */
};

struct stats {
  uint64_t cases, by_dtype[8], by_version[4], by_op[2];
  uint64_t noop, overflow_err, with_specials, threaded, elems_checked;
  uint64_t near_tie_accepted, f64_off;
  int f64_max_ulps;
  uint64_t multipart;
  size_t max_parts;
  uint64_t failures;
  int reports;
};

static struct stats st;

static int version_index(int v)
{
  return v == 1 ? 0 : v == 11 ? 1 : v == 13 ? 2 : 3;
}

/* Output shape and reduce flags, from the ONNX rules. */
static void tc_derive(struct tcase *tc)
{
  tc->in_count = 1;
  for (size_t d = 0; d < tc->rank; d++) {
    tc->in_count *= (uint64_t)tc->shape[d];
    tc->red[d] = 0;
  }
  tc->noop_eff = 0;
  if (tc->naxes == 0) {
    tc->noop_eff = tc->version == 18 && tc->noop == 1;
    for (size_t d = 0; d < tc->rank; d++)
      tc->red[d] = !tc->noop_eff;
  } else {
    for (size_t i = 0; i < tc->naxes; i++) {
      int64_t a = tc->axes[i] < 0 ? tc->axes[i] + (int64_t)tc->rank
                                  : tc->axes[i];
      tc->red[a] = 1;
    }
  }
  tc->out_rank = 0;
  tc->out_count = 1;
  for (size_t d = 0; d < tc->rank; d++) {
    if (!tc->red[d])
      tc->out_shape[tc->out_rank++] = tc->shape[d];
    else if (tc->keepdims)
      tc->out_shape[tc->out_rank++] = 1;
  }
  for (size_t d = 0; d < tc->out_rank; d++)
    tc->out_count *= (uint64_t)tc->out_shape[d];
}

static void describe_case(const struct tcase *tc)
{
  char buf[512];
  int n = snprintf(buf, sizeof buf,
                   "case %" PRIu64 ": %s %s opset %" PRId64 " (v%d) shape [",
                   tc->id, rd_op_name(tc->op) ? rd_op_name(tc->op) : "?",
                   tc->f->name, tc->opset, tc->version);
  for (size_t d = 0; d < tc->rank; d++)
    n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%" PRId64, d ? "," : "",
                  tc->shape[d]);
  n += snprintf(buf + n, sizeof buf - (size_t)n, "] axes [");
  for (size_t i = 0; i < tc->naxes; i++)
    n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%" PRId64, i ? "," : "",
                  tc->axes[i]);
  snprintf(buf + n, sizeof buf - (size_t)n,
           "] keepdims %" PRId64 "%s noop %s overflow %s", tc->keepdims,
           tc->set_keepdims ? "" : " (default)",
           tc->noop == RD_UNSET ? "unset"
           : tc->noop           ? "1"
                                : "0",
           rd_overflow_name(tc->overflow) ? rd_overflow_name(tc->overflow)
                                          : "?");
  printf("  %s\n", buf);
}

/* Counts a failure; prints the first MAX_REPORTS with their case. */
static void report(const struct tcase *tc, const char *what)
{
  st.failures++;
  if (st.reports++ >= MAX_REPORTS)
    return;
  printf("FAIL: %s\n", what);
  describe_case(tc);
}

/* ------------------------------------------------------------------ */
/* Reference                                                          */
/* ------------------------------------------------------------------ */

/* For every output element in [o0, o1), walk its slice over the original
 * shape; ex[o - o0] receives the result. */
static void ref_compute(const struct tcase *tc, uint64_t o0, uint64_t o1,
                        struct expect *ex_base)
{
  struct expect *ex = ex_base - o0;
  const struct fmt *f = tc->f;
  int64_t stride[RD_MAX_RANK], oidx[RD_MAX_RANK], iidx[RD_MAX_RANK];
  size_t rdims[RD_MAX_RANK], nred = 0;
  struct facc *fa = f->is_float ? malloc(sizeof *fa) : NULL;

  if (f->is_float)
    assert_non_null(fa);
  for (size_t d = tc->rank; d-- > 0;)
    stride[d] = d + 1 == tc->rank ? 1 : stride[d + 1] * tc->shape[d + 1];
  if (!tc->noop_eff)
    for (size_t d = 0; d < tc->rank; d++)
      if (tc->red[d])
        rdims[nred++] = d;

  for (uint64_t o = o0; o < o1; o++) {
    uint64_t rem = o;
    for (size_t d = tc->out_rank; d-- > 0;) {
      oidx[d] = (int64_t)(rem % (uint64_t)tc->out_shape[d]);
      rem /= (uint64_t)tc->out_shape[d];
    }
    int empty = 0;
    if (tc->noop_eff) {
      for (size_t d = 0; d < tc->rank; d++)
        iidx[d] = oidx[d];
    } else {
      size_t k = 0;
      for (size_t d = 0; d < tc->rank; d++) {
        if (!tc->red[d]) {
          iidx[d] = tc->keepdims ? oidx[d] : oidx[k++];
        } else {
          iidx[d] = 0;
          if (tc->shape[d] == 0)
            empty = 1;
        }
      }
    }
    if (fa)
      facc_clear(fa);
    memset(&ex[o], 0, sizeof ex[o]);
    while (!empty) {
      int64_t at = 0;
      for (size_t d = 0; d < tc->rank; d++)
        at += iidx[d] * stride[d];
      uint64_t bits = get_bits(f, tc->in, (uint64_t)at);
      if (fa) {
        facc_add(fa, dec_float(f, bits));
      } else {
        uint64_t m = int_mag(f, bits);
        ibn_add128(&ex[o].isum, (u128)m * m);
      }
      /* odometer over the reduced dims, last fastest */
      size_t j = nred;
      while (j > 0) {
        size_t d = rdims[j - 1];
        if (++iidx[d] < tc->shape[d])
          break;
        iidx[d] = 0;
        j--;
      }
      if (j == 0)
        break;
    }
    if (fa) {
      facc_result(fa, tc->op, &ex[o].fx);
    } else if (tc->op == RD_OP_L2) {
      ibn_isqrt(&ex[o].isum, &ex[o].iv);
    } else {
      ex[o].iv = ex[o].isum;
    }
  }
  free(fa);
}

/* ------------------------------------------------------------------ */
/* Comparison                                                         */
/* ------------------------------------------------------------------ */

/* 0 if `got` is acceptable for the exact result `x`, else -1 with a
 * description in `why`.
 *
 * float32/16/bfloat16: the library accumulates exact squares in double and
 * rounds once; a double sum of n non-negative terms has relative error
 * below (n-1) 2^-53, and sqrt plus the conversion add at most 2^-53, so
 * the result can differ from the correctly rounded one only when the exact
 * value is within tie_window(n) of a tie; then either neighbour (1 ulp) is
 * accepted.
 * float64: compensated summation of non-negative terms has relative error
 * about 2u + O(n u^2) (<= 2 ulps), the final sqrt/scaling adds about one
 * more rounding; F64_ULPS = 4 leaves one ulp of slack beyond that. */
static int check_float(const struct fmt *f, const struct fexact *x,
                       uint64_t got, char *why, size_t wsz, int *ulps_out)
{
  struct rounded r;
  uint64_t exp_bits, down_bits, up_bits;
  double gv = dec_float(f, got);

  if (ulps_out)
    *ulps_out = 0;
  switch (x->kind) {
  case FX_NAN:
    if (is_nan_bits(f, got))
      return 0;
    snprintf(why, wsz, "expected NaN, got %.17g (0x%" PRIx64 ")", gv, got);
    return -1;
  case FX_INF:
    if (got == inf_bits(f))
      return 0;
    snprintf(why, wsz, "expected +inf, got %.17g (0x%" PRIx64 ")", gv, got);
    return -1;
  case FX_ZERO:
    if (got == 0)
      return 0;
    snprintf(why, wsz, "expected +0, got %.17g (0x%" PRIx64 ")", gv, got);
    return -1;
  default: break;
  }
  round_fmt(f, x, &r);
  if (enc_float(f, r.val, &exp_bits) || enc_float(f, r.down, &down_bits) ||
      enc_float(f, r.up, &up_bits)) {
    snprintf(why, wsz, "test bug: unencodable rounded value %.17g", r.val);
    return -1;
  }
  if (is_nan_bits(f, got) || (got >> (f->size * 8 - 1))) {
    snprintf(why, wsz,
             "expected %.21Lg (rounded 0x%" PRIx64 "), got %.17g "
             "(0x%" PRIx64 ")",
             fexact_approx(x), exp_bits, gv, got);
    return -1;
  }
  /* non-negative IEEE values are ordered like their bit patterns */
  uint64_t dist = got > exp_bits ? got - exp_bits : exp_bits - got;
  if (ulps_out)
    *ulps_out = dist > 1000 ? 1000 : (int)dist;
  if (f->dtype == RD_FLOAT64) {
    if (dist <= F64_ULPS)
      return 0;
  } else {
    if (dist == 0)
      return 0;
    if (r.near_tie && (got == down_bits || got == up_bits)) {
      st.near_tie_accepted++;
      return 0;
    }
  }
  snprintf(why, wsz,
           "expected %.21Lg (rounded 0x%" PRIx64 " = %.17g%s), got "
           "%.17g (0x%" PRIx64 "), %" PRIu64 " ulps off, slice of %" PRIu64,
           fexact_approx(x), exp_bits, r.val, r.near_tie ? ", near a tie" : "",
           gv, got, dist, x->n);
  return -1;
}

/* Checks output elements [o0, o1) of `out` (rd_execute's result) against
 * ex[0 .. o1-o0); returns -1 after the first mismatch (reported). */
static int check_range(const struct tcase *tc, uint64_t o0, uint64_t o1,
                       const struct expect *ex_base, const unsigned char *out)
{
  const struct fmt *f = tc->f;
  const struct expect *ex = ex_base - o0;
  char why[400], msg[600];
  for (uint64_t o = o0; o < o1; o++) {
    uint64_t got = get_bits(f, out, o);
    st.elems_checked++;
    if (f->is_float) {
      int ulps;
      if (check_float(f, &ex[o].fx, got, why, sizeof why, &ulps) == 0) {
        if (f->dtype == RD_FLOAT64 && ulps > st.f64_max_ulps)
          st.f64_max_ulps = ulps;
        if (f->dtype == RD_FLOAT64 && ulps)
          st.f64_off++;
        continue;
      }
    } else {
      uint64_t want = 0;
      int over = int_expect(f, tc->overflow, &ex[o].iv, &want) != 0;
      if (over || want == got) /* overflow: judged by the return code */
        continue;
      char dec[96];
      ibn_to_dec(&ex[o].iv, dec, sizeof dec);
      snprintf(why, sizeof why,
               "exact %s, expected bits 0x%" PRIx64 ", got 0x%" PRIx64, dec,
               want, got);
    }
    snprintf(msg, sizeof msg, "output %" PRIu64 ": %s", o, why);
    report(tc, msg);
    return -1; /* one report per case is enough */
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* Running the library                                                */
/* ------------------------------------------------------------------ */

struct part_ctx {
  struct rd_exec *ex;
  const void *in;
  const size_t *order;
  size_t n;
  atomic_size_t next;
  atomic_int bad;
};

/* Runs on each worker thread: takes parts from the shared shuffled list. */
static void *part_worker(void *arg)
{
  struct part_ctx *c = arg;
  size_t i;
  while ((i = atomic_fetch_add(&c->next, 1)) < c->n)
    if (rd_exec_part(c->ex, c->order[i], c->in) != 0)
      atomic_fetch_add(&c->bad, 1);
  return NULL;
}

#define CANARY 0xa5
#define GUARD 16

static unsigned char *alloc_out(uint64_t bytes)
{
  unsigned char *p = malloc((size_t)bytes + GUARD);
  assert_non_null(p);
  memset(p, CANARY, (size_t)bytes + GUARD);
  return p;
}

static int guard_ok(const unsigned char *p, uint64_t bytes)
{
  for (size_t i = 0; i < GUARD; i++)
    if (p[bytes + i] != CANARY)
      return 0;
  return 1;
}

struct run_opts {
  int threads;        /* 0: parts in shuffled order on this thread */
  size_t fixed_chunk; /* 0: random chunk sizes */
};

/* rd_exec_* with shuffled parts; returns the finish code. */
static int run_parts(const struct tcase *tc, const struct rd_plan *plan,
                     struct rng *r, const struct run_opts *ro,
                     unsigned char *out, struct rd_error *err)
{
  struct rd_exec *ex = NULL;
  char msg[300];
  int rc = rd_exec_create(plan, &ex);
  if (rc != 0 || !ex) {
    snprintf(msg, sizeof msg, "rd_exec_create returned %d", rc);
    report(tc, msg);
    return -1000;
  }
  size_t n = plan->nparts, order[RD_MAX_PARTS];
  for (size_t i = 0; i < n; i++)
    order[i] = i;
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)rng_below(r, i), t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
  if (rng_below(r, 8) == 0 && rd_exec_part(ex, n, tc->in) != RD_E_INVALID)
    report(tc, "rd_exec_part(nparts) did not return RD_E_INVALID");
  struct part_ctx c = { .ex = ex, .in = tc->in, .order = order, .n = n };
  atomic_init(&c.next, 0);
  atomic_init(&c.bad, 0);
  if (ro->threads > 0) {
    pthread_t th[4];
    int started = 0;
    for (int i = 0; i < ro->threads && i < 4; i++)
      if (pthread_create(&th[started], NULL, part_worker, &c) == 0)
        started++;
    assert_true(started > 0);
    for (int i = 0; i < started; i++)
      pthread_join(th[i], NULL);
    st.threaded++;
  } else {
    part_worker(&c);
  }
  if (atomic_load(&c.bad))
    report(tc, "rd_exec_part failed");
  rc = rd_exec_finish(ex, out, err);
  rd_exec_destroy(ex);
  return rc;
}

static size_t pick_chunk(struct rng *r, int mode, size_t esz)
{
  switch (mode == 3 ? (int)rng_below(r, 3) : mode) {
  case 0: return 1;
  case 1: return 1 + (size_t)rng_below(r, 2 * esz + 1);
  default: return 1 + (size_t)rng_below(r, rng_below(r, 2) ? 64 : 8192);
  }
}

/* rd_stream_* with chunked feeding; returns the finish code. */
static int run_stream(const struct tcase *tc, const struct rd_plan *plan,
                      struct rng *r, const struct run_opts *ro,
                      unsigned char *out, struct rd_error *err, char *how,
                      size_t howsz)
{
  static const char *const modes[4] = { "1-byte chunks",
                                        "chunks of 1 to 2*elem+1 bytes",
                                        "chunks of 1-8192 bytes",
                                        "mixed chunks" };
  struct rd_stream *s = NULL;
  struct rd_error ferr = { 0, "" };
  char msg[300];
  uint64_t total = plan->in_bytes, fed = 0;
  int mode = (int)rng_below(r, 4), rc;

  if ((mode == 0 && total > 40000) || (mode == 1 && total > (1 << 20)))
    mode = 3;
  if (ro->fixed_chunk)
    snprintf(how, howsz, "rd_stream_* (%zu-byte chunks)", ro->fixed_chunk);
  else
    snprintf(how, howsz, "rd_stream_* (%s)", modes[mode]);
  rc = rd_stream_create(plan, &s);
  if (rc != 0 || !s) {
    snprintf(msg, sizeof msg, "rd_stream_create returned %d", rc);
    report(tc, msg);
    return -1000;
  }
  while (fed < total) {
    size_t len = ro->fixed_chunk ? ro->fixed_chunk
                                 : pick_chunk(r, mode, tc->f->size);
    if (len > total - fed) {
      /* sometimes offer one byte too many: must be refused whole */
      if (!ro->fixed_chunk && rng_below(r, 4) == 0) {
        rc = rd_stream_feed(s, tc->in + fed, (size_t)(total - fed) + 1, &ferr);
        if (rc != RD_E_STREAM || ferr.code != RD_E_STREAM ||
            rd_stream_consumed(s) != fed) {
          snprintf(msg, sizeof msg,
                   "overlong feed at %" PRIu64 ": rc %d, "
                   "consumed %" PRIu64,
                   fed, rc, rd_stream_consumed(s));
          report(tc, msg);
        }
      }
      len = (size_t)(total - fed);
    }
    rc = rd_stream_feed(s, tc->in + fed, len, &ferr);
    fed += len;
    if (rc != 0 || rd_stream_consumed(s) != fed) {
      snprintf(msg, sizeof msg,
               "rd_stream_feed(%zu) at %" PRIu64 ": rc %d "
               "(%s), consumed %" PRIu64,
               len, fed - len, rc, ferr.msg, rd_stream_consumed(s));
      report(tc, msg);
      rd_stream_destroy(s);
      return -1000;
    }
  }
  if (total > 0 && rng_below(r, 8) == 0) {
    rc = rd_stream_feed(s, tc->in, 1, &ferr);
    if (rc != RD_E_STREAM || rd_stream_consumed(s) != total)
      report(tc, "feeding past the end was not refused with RD_E_STREAM");
  }
  rc = rd_stream_finish(s, out, err);
  rd_stream_destroy(s);
  return rc;
}

/* A stream finished early must fail with RD_E_STREAM. */
static void check_short_stream(const struct tcase *tc,
                               const struct rd_plan *plan, struct rng *r)
{
  struct rd_stream *s = NULL;
  struct rd_error err;
  if (plan->in_bytes == 0 || rd_stream_create(plan, &s) != 0)
    return;
  uint64_t len = rng_below(r, plan->in_bytes);
  unsigned char *out = alloc_out(plan->out_bytes);
  if (rd_stream_feed(s, tc->in, (size_t)len, &err) != 0 ||
      rd_stream_finish(s, out, &err) != RD_E_STREAM || err.code != RD_E_STREAM)
    report(tc, "a stream short of plan->in_bytes did not fail with "
               "RD_E_STREAM");
  rd_stream_destroy(s);
  free(out);
}

static int plan_params(const struct tcase *tc, struct rd_plan *plan,
                       struct rd_error *err)
{
  struct rd_params p;
  rd_params_init(&p);
  p.op = tc->op;
  p.opset = tc->opset;
  p.dtype = tc->dtype;
  p.rank = tc->rank;
  p.shape = tc->shape;
  p.axes = tc->naxes ? tc->axes : NULL;
  p.naxes = tc->naxes;
  if (tc->set_keepdims)
    p.keepdims = tc->keepdims;
  p.noop_with_empty_axes = tc->noop;
  if (!tc->f->is_float)
    p.overflow = tc->overflow;
  return rd_plan_init(plan, &p, err);
}

static void check_plan(const struct tcase *tc, const struct rd_plan *pl)
{
  char msg[300];
  int ok = pl->op == tc->op && pl->version == tc->version &&
           pl->dtype == tc->dtype && pl->elem_size == tc->f->size &&
           pl->in_rank == tc->rank && pl->out_rank == tc->out_rank &&
           pl->in_count == tc->in_count && pl->out_count == tc->out_count &&
           pl->in_bytes == tc->in_count * tc->f->size &&
           pl->out_bytes == tc->out_count * tc->f->size && pl->nparts >= 1 &&
           pl->nparts <= RD_MAX_PARTS && (!tc->noop_eff || pl->noop == 1) &&
           (tc->f->is_float || pl->overflow == tc->overflow);
  for (size_t d = 0; ok && d < tc->rank; d++)
    ok = pl->in_shape[d] == tc->shape[d];
  for (size_t d = 0; ok && d < tc->out_rank; d++)
    ok = pl->out_shape[d] == tc->out_shape[d];
  if (ok)
    return;
  int n = snprintf(msg, sizeof msg,
                   "plan mismatch: version %d, out_rank %zu "
                   "(want %zu), out_count %" PRIu64 " (want %" PRIu64
                   "), nparts %zu, noop %d, out_shape [",
                   pl->version, pl->out_rank, tc->out_rank, pl->out_count,
                   tc->out_count, pl->nparts, pl->noop);
  for (size_t d = 0; d < pl->out_rank && d < RD_MAX_RANK && n < 250; d++)
    n += snprintf(msg + n, sizeof msg - (size_t)n, "%s%" PRId64, d ? "," : "",
                  pl->out_shape[d]);
  snprintf(msg + n, sizeof msg - (size_t)n, "]");
  report(tc, msg);
}

/* Whether `msg` contains the decimal number `dec` as a whole number. */
static int has_number(const char *msg, const char *dec)
{
  size_t n = strlen(dec);
  for (const char *p = strstr(msg, dec); p; p = strstr(p + 1, dec))
    if ((p == msg || p[-1] < '0' || p[-1] > '9') && (p[n] < '0' || p[n] > '9'))
      return 1;
  return 0;
}

/* Whether `msg` names the exact value of output `o` (its result, or for
 * ReduceL2 its sum of squares). */
static int overflow_msg_names(const struct expect *e, const char *msg)
{
  char dec[96];
  ibn_to_dec(&e->iv, dec, sizeof dec);
  if (has_number(msg, dec))
    return 1;
  ibn_to_dec(&e->isum, dec, sizeof dec);
  return has_number(msg, dec);
}

#define REF_BLOCK 4096 /* output elements per reference block */

/* Reports where `b` (from `how`) first differs from rd_execute's `a`. */
static void report_diff(const struct tcase *tc, const char *how,
                        const unsigned char *a, const unsigned char *b)
{
  char msg[400];
  uint64_t o = 0, ndiff = 0, first = 0;
  for (o = 0; o < tc->out_count; o++)
    if (get_bits(tc->f, a, o) != get_bits(tc->f, b, o) && ndiff++ == 0)
      first = o;
  snprintf(msg, sizeof msg,
           "%s output differs from rd_execute in %" PRIu64 " of %" PRIu64
           " elements; first: output %" PRIu64 " is 0x%" PRIx64
           ", rd_execute 0x%" PRIx64,
           how, ndiff, tc->out_count, first, get_bits(tc->f, b, first),
           get_bits(tc->f, a, first));
  report(tc, msg);
}

/* Plans, executes three ways (rd_execute, rd_exec_* with shuffled parts,
 * rd_stream_* in chunks), checks that the three agree bit for bit, then
 * checks rd_execute's output against the reference block by block. */
static void run_case(struct tcase *tc, struct rng *r, const struct run_opts *ro)
{
  struct rd_plan plan;
  struct rd_error err, err2, err3;
  char msg[600], emsg[RD_ERRMSG_MAX];
  uint64_t fails0 = st.failures;

  memset(&err, 0, sizeof err);
  tc_derive(tc);
  int rc = plan_params(tc, &plan, &err);
  if (rc != 0) {
    snprintf(msg, sizeof msg, "rd_plan_init returned %d: %s", rc, err.msg);
    report(tc, msg);
    return;
  }
  check_plan(tc, &plan);
  if (st.failures != fails0)
    return;
  if (plan.nparts > 1)
    st.multipart++;
  if (plan.nparts > st.max_parts)
    st.max_parts = plan.nparts;

  uint64_t ob = plan.out_bytes;
  unsigned char *o1 = alloc_out(ob), *o2 = alloc_out(ob), *o3 = alloc_out(ob);
  memset(&err, 0, sizeof err);
  rc = rd_execute(&plan, tc->in, o1, &err);
  memcpy(emsg, err.msg, sizeof emsg);
  if (err.code != rc) {
    snprintf(msg, sizeof msg, "rd_execute returned %d, err.code %d", rc,
             err.code);
    report(tc, msg);
  }
  if (!guard_ok(o1, ob))
    report(tc, "rd_execute wrote past out_bytes");

  memset(&err2, 0, sizeof err2);
  int rc2 = run_parts(tc, &plan, r, ro, o2, &err2);
  if (rc2 != -1000) {
    if (rc2 != rc || err2.code != rc2) {
      snprintf(msg, sizeof msg,
               "rd_exec_finish returned %d (err.code %d), "
               "rd_execute %d",
               rc2, err2.code, rc);
      report(tc, msg);
    } else if (rc == 0 && memcmp(o1, o2, (size_t)ob) != 0) {
      report_diff(tc, "rd_exec_* (parts shuffled)", o1, o2);
    }
    if (!guard_ok(o2, ob))
      report(tc, "rd_exec_finish wrote past out_bytes");
  }

  memset(&err3, 0, sizeof err3);
  char stream_how[64];
  int rc3 = run_stream(tc, &plan, r, ro, o3, &err3, stream_how,
                       sizeof stream_how);
  if (rc3 != -1000) {
    if (rc3 != rc || err3.code != rc3) {
      snprintf(msg, sizeof msg,
               "rd_stream_finish returned %d (err.code %d: "
               "%s), rd_execute %d",
               rc3, err3.code, rc3 ? err3.msg : "", rc);
      report(tc, msg);
    } else if (rc == 0 && memcmp(o1, o3, (size_t)ob) != 0) {
      report_diff(tc, stream_how, o1, o3);
    }
    if (!guard_ok(o3, ob))
      report(tc, "rd_stream_finish wrote past out_bytes");
  }
  if (!ro->fixed_chunk && rng_below(r, 8) == 0)
    check_short_stream(tc, &plan, r);

  /* the reference, block by block */
  size_t blk = tc->out_count < REF_BLOCK ? (size_t)tc->out_count : REF_BLOCK;
  struct expect *ex = calloc(blk ? blk : 1, sizeof *ex);
  assert_non_null(ex);
  int any_over = 0, named = 0, mismatch = 0;
  for (uint64_t b = 0; b < tc->out_count; b += blk) {
    uint64_t e = b + blk < tc->out_count ? b + blk : tc->out_count;
    ref_compute(tc, b, e, ex);
    if (!tc->f->is_float)
      for (uint64_t o = b; o < e; o++) {
        uint64_t bits;
        if (int_expect(tc->f, tc->overflow, &ex[o - b].iv, &bits) == 0)
          continue;
        any_over = 1;
        if (rc == RD_E_OVERFLOW && !named)
          named = overflow_msg_names(&ex[o - b], emsg);
      }
    if (rc == 0 && !mismatch)
      mismatch = check_range(tc, b, e, ex, o1) != 0;
  }
  free(ex);
  int want_rc = any_over ? RD_E_OVERFLOW : 0;
  if (want_rc)
    st.overflow_err++;
  if (rc != want_rc) {
    snprintf(msg, sizeof msg, "rd_execute returned %d (%s), expected %d", rc,
             rc ? emsg : "", want_rc);
    report(tc, msg);
  } else if (rc == RD_E_OVERFLOW && !named) {
    snprintf(msg, sizeof msg, "overflow message names no exact value: %s",
             emsg);
    report(tc, msg);
  }

  free(o1);
  free(o2);
  free(o3);
}

/* ------------------------------------------------------------------ */
/* Value generation                                                   */
/* ------------------------------------------------------------------ */

static uint64_t f32_bits(float x)
{
  uint32_t w;
  memcpy(&w, &x, 4);
  return w;
}

static uint64_t f64_bits(double x)
{
  uint64_t w;
  memcpy(&w, &x, 8);
  return w;
}

/* One element's bits.  profile 0: tame; 1: full range with extremes. */
static uint64_t gen_value(struct rng *r, const struct fmt *f, int profile,
                          int specials)
{
  uint64_t sign = rng_below(r, 2);
  unsigned k = (unsigned)rng_below(r, 20);

  if (f->is_float && specials && rng_below(r, 30) == 0) {
    int which = (int)rng_below(r, specials == 2 ? 4 : 2); /* 0,1 inf */
    static const uint64_t sp[4][4] = {
      { 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00123u },
      { 0x7ff0000000000000u, 0xfff0000000000000u, 0x7ff8000000000000u,
        0xfff4000000000001u },
      { 0x7c00, 0xfc00, 0x7e00, 0xfd01 },
      { 0x7f80, 0xff80, 0x7fc0, 0xffc1 },
    };
    int row = f->dtype == RD_FLOAT32   ? 0
              : f->dtype == RD_FLOAT64 ? 1
              : f->dtype == RD_FLOAT16 ? 2
                                       : 3;
    return sp[row][which];
  }
  switch (f->dtype) {
  case RD_FLOAT32: {
    static const float ext[] = {
      FLT_MAX, FLT_MIN, 0x1p-149f, 1e20f, 1e-25f,
      0.0f,    3.4e38f, 1.5e-45f,  1e19f, 0x1p-126f
    };
    float v;
    if (profile && k < 3)
      return f32_bits(ext[rng_below(r, 10)]) | sign << 31;
    if (profile && k < 6) { /* any finite pattern */
      uint64_t b = rng_next(r) & 0x7fffffffu;
      return b >= 0x7f800000u ? b - 0x00800000u : b | sign << 31;
    }
    if (k < 12)
      v = (float)(rng_unit(r) * 20.0 - 10.0);
    else if (k < 17)
      v = (float)ldexp((double)(rng_next(r) >> 40), (int)rng_below(r, 41) - 44);
    else
      v = (float)((int)rng_below(r, 11) - 5);
    return f32_bits(v);
  }
  case RD_FLOAT64: {
    static const double ext[] = {
      DBL_MAX, DBL_MIN,  0x1p-1074, 1e200,  1e-200,
      0.0,     1.5e-160, 1e300,     1e-300, 1e-155
    };
    double v;
    if (profile && k < 3)
      return f64_bits(ext[rng_below(r, 10)]) | sign << 63;
    if (profile && k < 6) { /* any finite pattern, subnormals included */
      uint64_t e = rng_below(r, 2047);
      return sign << 63 | e << 52 | (rng_next(r) >> 12);
    }
    if (k < 12)
      v = rng_unit(r) * 20.0 - 10.0;
    else if (k < 17)
      v = ldexp((double)(rng_next(r) >> 11), (int)rng_below(r, 81) - 93);
    else
      v = (double)((int)rng_below(r, 11) - 5);
    return f64_bits(v);
  }
  case RD_FLOAT16: {
    static const uint16_t ext[] = { 0x7bff, 0x0001, 0x0400, 0x03ff, 0x0000,
                                    0x5bff, 0x5c00, 0x5e00, 0x2000, 0x3c00 };
    if (profile && k < 3)
      return ext[rng_below(r, 10)] | sign << 15;
    if (profile && k < 8)
      return sign << 15 | rng_below(r, 31) << 10 | rng_below(r, 1024);
    return sign << 15 | (10 + rng_below(r, 11)) << 10 | rng_below(r, 1024);
  }
  case RD_BFLOAT16: {
    static const uint16_t ext[] = { 0x7f7f, 0x0001, 0x0080, 0x007f, 0x0000,
                                    0x5f80, 0x6000, 0x1e00, 0x3f80, 0x60ad };
    if (profile && k < 3)
      return ext[rng_below(r, 10)] | sign << 15;
    if (profile && k < 8)
      return sign << 15 | rng_below(r, 255) << 7 | rng_below(r, 128);
    return sign << 15 | (120 + rng_below(r, 15)) << 7 | rng_below(r, 128);
  }
  default: break;
  }
  /* integers: profile 0 small, 1 medium, 2 full range with extremes */
  uint64_t mag, mask = f->bits == 32 ? UINT32_MAX : UINT64_MAX;
  if (profile == 0) {
    mag = rng_below(r, 101);
  } else if (profile == 1) {
    mag = rng_below(r, f->bits == 32 ? (f->is_signed ? 46342 : 65537)
                                     : (f->is_signed ? UINT64_C(3037000501)
                                                     : UINT64_C(4294967297)));
  } else {
    static const uint64_t ext[] = { 0x80000000u,
                                    0x7fffffffu,
                                    0xffffffffu,
                                    46340,
                                    46341,
                                    65535,
                                    65536,
                                    UINT64_C(0x8000000000000000),
                                    UINT64_C(0x7fffffffffffffff),
                                    UINT64_MAX,
                                    UINT64_C(3037000499),
                                    UINT64_C(3037000500),
                                    UINT64_C(4294967295),
                                    UINT64_C(4294967296) };
    if (k < 8)
      return ext[rng_below(r, 14)] & mask;
    return rng_next(r) & mask;
  }
  if (f->is_signed && sign)
    return ((uint64_t)0 - mag) & mask;
  return mag;
}

/* ------------------------------------------------------------------ */
/* Random case generation                                             */
/* ------------------------------------------------------------------ */

/* A shape of 2 to 12 MiB: big enough for the library to cut it into
 * several parts. */
static void gen_big_shape(struct tcase *tc, struct rng *r)
{
  static const int64_t dims[] = { 1, 2, 3, 5, 8, 17, 64, 127, 256, 1000, 4099 };
  uint64_t lo = (UINT64_C(2) << 20) / tc->f->size, hi = 6 * lo;
  tc->rank = 1 + (size_t)rng_below(r, 4);
  for (size_t d = 0; d < tc->rank; d++)
    tc->shape[d] = dims[rng_below(r, sizeof dims / sizeof dims[0])];
  for (;;) {
    uint64_t n = 1;
    size_t big = 0;
    for (size_t d = 0; d < tc->rank; d++) {
      n *= (uint64_t)tc->shape[d];
      if (tc->shape[d] > tc->shape[big])
        big = d;
    }
    if (n < lo)
      tc->shape[rng_below(r, tc->rank)] *= 2;
    else if (n > hi)
      tc->shape[big] /= 2;
    else
      break;
  }
}

static void gen_case(struct tcase *tc, struct rng *r, uint64_t id, int is_big)
{
  static const int vers[4] = { 1, 11, 13, 18 };
  static const int64_t lo[4] = { 1, 11, 13, 18 }, hi[4] = { 10, 12, 17, 25 };
  memset(tc, 0, sizeof *tc);
  tc->id = id;
  tc->f = &fmts[rng_below(r, 8)];
  tc->dtype = tc->f->dtype;
  tc->op = rng_below(r, 2) ? RD_OP_L2 : RD_OP_SUM_SQUARE;
  int vi = tc->dtype == RD_BFLOAT16 ? 2 + (int)rng_below(r, 2)
                                    : (int)rng_below(r, 4);
  tc->version = vers[vi];
  tc->opset = lo[vi] + (int64_t)rng_below(r, (uint64_t)(hi[vi] - lo[vi] + 1));

  /* shape: mostly small dims, some 1s and 0s, sometimes one long dim */
  tc->rank = (size_t)rng_below(r, MAXR + 1);
  if (is_big)
    tc->rank = 0; /* shape made below */
  int zero_ok = rng_below(r, 10) == 0;
  for (size_t d = 0; d < tc->rank; d++) {
    unsigned k = (unsigned)rng_below(r, 20);
    tc->shape[d] = k < 5                 ? 1
                   : (k == 5 && zero_ok) ? 0
                                         : 2 + (int64_t)rng_below(r, 4);
  }
  if (tc->rank && rng_below(r, 5) == 0)
    tc->shape[rng_below(r, tc->rank)] = 6 + (int64_t)rng_below(r, 1500);
  if (is_big)
    gen_big_shape(tc, r);
  for (;;) { /* shrink the largest dim until the tensor is small enough */
    uint64_t n = 1;
    size_t big = 0;
    for (size_t d = 0; d < tc->rank; d++) {
      n *= (uint64_t)tc->shape[d];
      if (tc->shape[d] > tc->shape[big])
        big = d;
    }
    if (is_big || n <= MAX_ELEMS)
      break;
    tc->shape[big] = tc->shape[big] / 2;
  }

  /* axes: empty, or a random non-empty subset in random order */
  if (tc->rank > 0 && rng_below(r, 5) != 0) {
    for (size_t d = 0; d < tc->rank; d++)
      if (rng_below(r, 2))
        tc->axes[tc->naxes++] = (int64_t)d;
    if (tc->naxes == 0)
      tc->axes[tc->naxes++] = (int64_t)rng_below(r, tc->rank);
    for (size_t i = tc->naxes; i > 1; i--) {
      size_t j = (size_t)rng_below(r, i);
      int64_t t = tc->axes[i - 1];
      tc->axes[i - 1] = tc->axes[j];
      tc->axes[j] = t;
    }
    for (size_t i = 0; i < tc->naxes; i++)
      if (rng_below(r, 2))
        tc->axes[i] -= (int64_t)tc->rank;
  }
  tc->set_keepdims = rng_below(r, 4) != 0;
  tc->keepdims = tc->set_keepdims ? (int64_t)rng_below(r, 2) : 1;
  tc->noop = RD_UNSET;
  if (tc->version == 18) {
    unsigned k = (unsigned)rng_below(r, 4);
    tc->noop = k == 0 ? RD_UNSET : k == 1 ? 0 : 1;
  }
  tc->overflow = tc->f->is_float ? RD_OVERFLOW_ERROR : (int)rng_below(r, 3);
  if (tc->f->is_float) {
    tc->profile = rng_below(r, 5) < 3 ? 0 : 1;
    unsigned k = (unsigned)rng_below(r, 20);
    tc->specials = k < 15 ? 0 : k < 17 ? 1 : 2;
  } else {
    unsigned k = (unsigned)rng_below(r, 20);
    tc->profile = k < 9 ? 0 : k < 16 ? 1 : 2;
  }

  tc_derive(tc);
  tc->in = malloc((size_t)(tc->in_count * tc->f->size) + GUARD);
  assert_non_null(tc->in);
  for (uint64_t i = 0; i < tc->in_count; i++)
    put_bits(tc->f, tc->in, i, gen_value(r, tc->f, tc->profile, tc->specials));
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
  const char *s = getenv(name);
  if (!s || !*s)
    return dflt;
  char *end;
  unsigned long long v = strtoull(s, &end, 0);
  return *end ? dflt : (uint64_t)v;
}

#define BIG_ID0 1000000 /* ids of the big random cases start here */

/* Runs random cases [id0, id0 + n) (big: 2-12 MiB tensors) and prints a
 * summary. */
static void run_random(uint64_t id0, uint64_t n, int big)
{
  uint64_t seed = env_u64("RD_TEST_SEED", DEFAULT_SEED);
  uint64_t only = env_u64("RD_TEST_ONLY", UINT64_MAX);
  const char *what = big ? "big cases" : "cases";
  printf("test_random: seed %" PRIu64 " (set RD_TEST_SEED to change), "
         "%" PRIu64 " %s\n",
         seed, n, what);
  memset(&st, 0, sizeof st);

  for (uint64_t id = id0; id < id0 + n; id++) {
    if (only != UINT64_MAX && id != only)
      continue;
    struct rng r;
    struct tcase tc;
    rng_seed(&r, seed ^ (id * 0x9e3779b97f4a7c15u));
    gen_case(&tc, &r, id, big);
    if (only != UINT64_MAX)
      describe_case(&tc);
    struct run_opts ro = { 0, 0 };
    if (rng_below(&r, big ? 2 : 8) == 0)
      ro.threads = 2 + (int)rng_below(&r, 3);
    st.cases++;
    st.by_dtype[tc.f - fmts]++;
    st.by_version[version_index(tc.version)]++;
    st.by_op[tc.op == RD_OP_L2]++;
    st.noop += tc.noop_eff;
    st.with_specials += tc.specials != 0;
    run_case(&tc, &r, &ro);
    free(tc.in);
  }
  printf("test_random: %s by dtype:", what);
  for (int i = 0; i < 8; i++)
    printf(" %s %" PRIu64, fmts[i].name, st.by_dtype[i]);
  printf("\ntest_random: v1 %" PRIu64 ", v11 %" PRIu64 ", v13 %" PRIu64
         ", v18 %" PRIu64 "; SumSquare %" PRIu64 ", L2 %" PRIu64
         "; noop %" PRIu64 ", overflow errors %" PRIu64 ", NaN/inf %" PRIu64
         ", threaded %" PRIu64 ", several parts %" PRIu64 " (max %zu)\n",
         st.by_version[0], st.by_version[1], st.by_version[2], st.by_version[3],
         st.by_op[0], st.by_op[1], st.noop, st.overflow_err, st.with_specials,
         st.threaded, st.multipart, st.max_parts);
  printf("test_random: %" PRIu64 " output elements checked; 32/16-bit: "
         "%" PRIu64 " accepted 1 ulp off near a tie; float64: %" PRIu64
         " not correctly rounded, max %d ulps; %" PRIu64 " failures\n",
         st.elems_checked, st.near_tie_accepted, st.f64_off, st.f64_max_ulps,
         st.failures);
  if (st.failures)
    printf("test_random: reproduce one case with RD_TEST_SEED=%" PRIu64
           " RD_TEST_ONLY=<case>\n",
           seed);
  assert_int_equal(st.failures, 0);
}

static void test_random_cases(void **state)
{
  (void)state;
  run_random(0, env_u64("RD_TEST_CASES", DEFAULT_CASES), 0);
}

/* Tensors of 2-12 MiB, which the library cuts into several parts. */
static void test_random_big_cases(void **state)
{
  (void)state;
  run_random(BIG_ID0, env_u64("RD_TEST_BIG_CASES", DEFAULT_BIG_CASES), 1);
}

/* ------------------------------------------------------------------ */
/* Large cases                                                        */
/* ------------------------------------------------------------------ */

/* 2048 x 2048 float32: rd_execute, parts on 2 threads and 64 KiB stream
 * chunks must agree bit for bit and match the reference. */
static void test_large_determinism(void **state)
{
  (void)state;
  struct tcase tc;
  struct rng r;
  rng_seed(&r, env_u64("RD_TEST_SEED", DEFAULT_SEED) + 1);
  memset(&st, 0, sizeof st);
  memset(&tc, 0, sizeof tc);
  tc.f = fmt_of(RD_FLOAT32);
  tc.dtype = RD_FLOAT32;
  tc.rank = 2;
  tc.shape[0] = tc.shape[1] = 2048;
  tc.in_count = 2048 * 2048;
  tc.in = malloc((size_t)tc.in_count * 4 + GUARD);
  assert_non_null(tc.in);
  for (uint64_t i = 0; i < tc.in_count; i++)
    put_bits(tc.f, tc.in, i, gen_value(&r, tc.f, 0, 0));
  for (int k = 0; k < 4; k++) {
    tc.id = (uint64_t)k;
    tc.op = k & 1 ? RD_OP_L2 : RD_OP_SUM_SQUARE;
    tc.opset = 18;
    tc.version = 18;
    tc.naxes = k < 2 ? 0 : 1;
    tc.axes[0] = 0;
    tc.set_keepdims = 1;
    tc.keepdims = 0;
    tc.noop = RD_UNSET;
    struct run_opts ro = { 2, 65536 };
    run_case(&tc, &r, &ro);
  }
  free(tc.in);
  printf("test_random: large determinism: %" PRIu64 " outputs checked, "
         "plans of up to %zu parts, %" PRIu64 " failures\n",
         st.elems_checked, st.max_parts, st.failures);
  assert_int_equal(st.failures, 0);
}

/* Eight interleaved float32 accumulators, like ONNX Runtime's full
 * reduction (Eigen squaredNorm); only to prove the check rejects it. */
static float ort_like_ssq(const float *x, size_t n)
{
  float lane[8] = { 0 };
  for (size_t i = 0; i < n; i++)
    lane[i % 8] += x[i] * x[i];
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
         ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/* 10^7 float32 values uniform in [-10, 10]: both ops within 1 ulp (ORT is
 * about 5e-4 relative off on such data). */
static void test_accuracy_1e7(void **state)
{
  (void)state;
  const size_t n = 10000000;
  struct tcase tc;
  struct rng r;
  char why[400];
  rng_seed(&r, env_u64("RD_TEST_SEED", DEFAULT_SEED) + 2);
  memset(&st, 0, sizeof st);
  memset(&tc, 0, sizeof tc);
  tc.f = fmt_of(RD_FLOAT32);
  tc.dtype = RD_FLOAT32;
  tc.rank = 1;
  tc.shape[0] = (int64_t)n;
  tc.in = malloc(n * 4 + GUARD);
  assert_non_null(tc.in);
  float *x = (float *)(void *)tc.in;
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(rng_unit(&r) * 20.0 - 10.0);
  for (int k = 0; k < 2; k++) {
    tc.id = (uint64_t)k;
    tc.op = k ? RD_OP_L2 : RD_OP_SUM_SQUARE;
    tc.opset = 13;
    tc.version = 13;
    tc.set_keepdims = 1;
    tc.keepdims = 0;
    tc.noop = RD_UNSET;
    struct run_opts ro = { 2, 65536 };
    run_case(&tc, &r, &ro);
  }
  /* the same check must reject an ONNX-Runtime-like float32 result */
  struct facc *fa = calloc(1, sizeof *fa);
  struct fexact fx;
  assert_non_null(fa);
  for (size_t i = 0; i < n; i++)
    facc_add(fa, x[i]);
  facc_result(fa, RD_OP_SUM_SQUARE, &fx);
  float ort = ort_like_ssq(x, n);
  long double rel = fabsl((long double)ort - fexact_approx(&fx)) /
                    fexact_approx(&fx);
  printf("test_random: 1e7 float32: exact sum %.17Lg, 8-lane float32 %.9g "
         "(relative error %.2Lg)\n",
         fexact_approx(&fx), (double)ort, rel);
  assert_int_equal(check_float(tc.f, &fx, f32_bits(ort), why, sizeof why, NULL),
                   -1);
  free(fa);
  free(tc.in);
  assert_int_equal(st.failures, 0);
}

/* ------------------------------------------------------------------ */
/* Self-checks of the oracle                                          */
/* ------------------------------------------------------------------ */

static void exact_of(const double *v, size_t n, int op, struct fexact *x)
{
  struct facc *fa = calloc(1, sizeof *fa);
  assert_non_null(fa);
  for (size_t i = 0; i < n; i++)
    facc_add(fa, v[i]);
  facc_result(fa, op, x);
  free(fa);
}

static uint64_t expect_bits(const struct fmt *f, const struct fexact *x)
{
  struct rounded r;
  uint64_t b = 0;
  round_fmt(f, x, &r);
  assert_int_equal(enc_float(f, r.val, &b), 0);
  return b;
}

/* The comparison accepts the right answer and rejects near misses. */
static void test_selfcheck_compare(void **state)
{
  (void)state;
  char why[400];
  static const double v[] = { 3.0, 4.0, 0.1, 1e-3, 7.25 };
  for (int i = 0; i < 4; i++) {
    const struct fmt *f = &fmts[i];
    for (int op = RD_OP_L2; op <= RD_OP_SUM_SQUARE; op++) {
      struct fexact x;
      exact_of(v, 5, op, &x);
      uint64_t b = expect_bits(f, &x);
      uint64_t off = f->dtype == RD_FLOAT64 ? F64_ULPS + 1 : 2;
      assert_int_equal(check_float(f, &x, b, why, sizeof why, NULL), 0);
      assert_int_equal(check_float(f, &x, b + off, why, sizeof why, NULL), -1);
      assert_int_equal(check_float(f, &x, b - off, why, sizeof why, NULL), -1);
      if (f->dtype != RD_FLOAT64) /* not near a tie: 1 ulp off is wrong */
        assert_int_equal(check_float(f, &x, b + 1, why, sizeof why, NULL), -1);
      assert_int_equal(check_float(f, &x, inf_bits(f), why, sizeof why, NULL),
                       -1);
      assert_int_equal(check_float(f, &x, b | UINT64_C(1) << (f->size * 8 - 1),
                                   why, sizeof why, NULL),
                       -1);
    }
  }
  /* an exact tie: 1 + 2^-24 lies between float32 1 and 1 + 2^-23 */
  const struct fmt *f32 = fmt_of(RD_FLOAT32);
  double tie[2] = { 1.0, 0x1p-12 };
  struct fexact x;
  exact_of(tie, 2, RD_OP_SUM_SQUARE, &x);
  assert_int_equal(expect_bits(f32, &x), 0x3f800000u); /* ties to even */
  assert_int_equal(check_float(f32, &x, 0x3f800001u, why, sizeof why, NULL), 0);
  assert_int_equal(check_float(f32, &x, 0x3f800002u, why, sizeof why, NULL),
                   -1);
  assert_int_equal(check_float(f32, &x, 0x3f7fffffu, why, sizeof why, NULL),
                   -1);
  /* NaN, inf and zero must match in kind */
  double nanv[2] = { 1.0, NAN }, infv[2] = { 1.0, -INFINITY },
         zero[1] = { -0.0 };
  exact_of(nanv, 2, RD_OP_L2, &x);
  assert_int_equal(check_float(f32, &x, 0x7fc00000u, why, sizeof why, NULL), 0);
  assert_int_equal(check_float(f32, &x, 0x7f800000u, why, sizeof why, NULL),
                   -1);
  exact_of(infv, 2, RD_OP_L2, &x);
  assert_int_equal(check_float(f32, &x, 0x7f800000u, why, sizeof why, NULL), 0);
  assert_int_equal(check_float(f32, &x, 0x7f7fffffu, why, sizeof why, NULL),
                   -1);
  assert_int_equal(check_float(f32, &x, 0xff800000u, why, sizeof why, NULL),
                   -1);
  exact_of(zero, 1, RD_OP_L2, &x);
  assert_int_equal(check_float(f32, &x, 0, why, sizeof why, NULL), 0);
  assert_int_equal(check_float(f32, &x, 0x80000000u, why, sizeof why, NULL),
                   -1);
  /* integers: exact value, policies */
  const struct fmt *i32 = fmt_of(RD_INT32), *u32 = fmt_of(RD_UINT32);
  struct ibn s = { { 0 } };
  uint64_t bits;
  ibn_add128(&s, 25);
  assert_int_equal(int_expect(i32, RD_OVERFLOW_ERROR, &s, &bits), 0);
  assert_int_equal(bits, 25);
  ibn_add128(&s, (u128)70000 * 70000 - 24); /* 70000^2 + 1 */
  assert_int_equal(int_expect(u32, RD_OVERFLOW_ERROR, &s, &bits), -1);
  assert_int_equal(int_expect(u32, RD_OVERFLOW_WRAP, &s, &bits), 0);
  assert_int_equal(bits, 605032705u); /* from the semantics note */
  assert_int_equal(int_expect(u32, RD_OVERFLOW_SATURATE, &s, &bits), 0);
  assert_int_equal(bits, UINT32_MAX);
  assert_int_equal(int_expect(i32, RD_OVERFLOW_SATURATE, &s, &bits), 0);
  assert_int_equal(bits, INT32_MAX);
}

/* The reference itself, on values known independently. */
static void test_selfcheck_reference(void **state)
{
  (void)state;
  const struct fmt *f32 = fmt_of(RD_FLOAT32), *f64 = fmt_of(RD_FLOAT64);
  const struct fmt *f16 = fmt_of(RD_FLOAT16), *bf = fmt_of(RD_BFLOAT16);
  struct fexact x;
  double a[2] = { 3.0, 4.0 };
  exact_of(a, 2, RD_OP_L2, &x);
  assert_int_equal(expect_bits(f32, &x), f32_bits(5.0f));
  assert_int_equal(x.sticky, 0);
  exact_of(a, 2, RD_OP_SUM_SQUARE, &x);
  assert_int_equal(expect_bits(f64, &x), f64_bits(25.0));
  double b[2] = { 1e-25f, 1e-25f }; /* float32 values */
  exact_of(b, 2, RD_OP_L2, &x);     /* expected values from Python decimal */
  assert_int_equal(expect_bits(f32, &x), 0x162f1238u);
  exact_of(b, 2, RD_OP_SUM_SQUARE, &x);
  assert_int_equal(expect_bits(f32, &x), 0); /* 2e-50 underflows */
  double c[1] = { 1e20f };
  exact_of(c, 1, RD_OP_SUM_SQUARE, &x);
  assert_int_equal(expect_bits(f32, &x), 0x7f800000u);
  exact_of(c, 1, RD_OP_L2, &x);
  assert_int_equal(expect_bits(f32, &x), f32_bits(1e20f));
  double d[2] = { 1e200, 1e-200 };
  exact_of(d, 2, RD_OP_L2, &x);
  assert_int_equal(expect_bits(f64, &x), f64_bits(1e200));
  exact_of(d + 1, 1, RD_OP_L2, &x);
  assert_int_equal(expect_bits(f64, &x), f64_bits(1e-200));
  double e[2] = { 0.1, 0.2 };
  exact_of(e, 2, RD_OP_L2, &x);
  assert_int_equal(expect_bits(f64, &x), UINT64_C(0x3fcc9f25c5bfedda));
  double h[2] = { 300.0, 400.0 }; /* float16: L2 500, SumSquare inf */
  exact_of(h, 2, RD_OP_L2, &x);
  assert_int_equal(expect_bits(f16, &x), 0x5fd0);
  exact_of(h, 2, RD_OP_SUM_SQUARE, &x);
  assert_int_equal(expect_bits(f16, &x), 0x7c00);
  double g[1] = { 0x1p-24 }; /* min subnormal float16: square underflows */
  exact_of(g, 1, RD_OP_SUM_SQUARE, &x);
  assert_int_equal(expect_bits(f16, &x), 0);
  exact_of(g, 1, RD_OP_L2, &x);
  assert_int_equal(expect_bits(f16, &x), 0x0001);
  double k[2] = { 3.0, 4.0 }; /* bfloat16 25 is exact */
  exact_of(k, 2, RD_OP_SUM_SQUARE, &x);
  assert_int_equal(expect_bits(bf, &x), 0x41c8);
  /* 0.1 * 1000 in float16: 1000 * fl16(0.1)^2 = 9.99... */
  double t[1000];
  for (int i = 0; i < 1000; i++)
    t[i] = dec_f16(0x2e66); /* fl16(0.1) = 0.0999755859375 */
  exact_of(t, 1000, RD_OP_SUM_SQUARE, &x);
  assert_int_equal(expect_bits(f16, &x), 0x48ff); /* 9.9921875 */

  /* integer square roots */
  struct ibn n = { { 0 } }, rt;
  ibn_add128(&n, (u128)1 << 126);
  ibn_isqrt(&n, &rt);
  assert_true(rt.l[0] == UINT64_C(1) << 63 && rt.l[1] == 0);
  memset(&n, 0, sizeof n);
  ibn_add128(&n, ~(u128)0);
  ibn_isqrt(&n, &rt);
  assert_true(rt.l[0] == UINT64_MAX && rt.l[1] == 0);
  ibn_add128(&n, 1); /* 2^128 */
  ibn_isqrt(&n, &rt);
  assert_true(rt.l[0] == 0 && rt.l[1] == 1);
  memset(&n, 0, sizeof n); /* int64 [3e9, 3e9] -> 4242640687 */
  ibn_add128(&n, (u128)3000000000u * 3000000000u);
  ibn_add128(&n, (u128)3000000000u * 3000000000u);
  ibn_isqrt(&n, &rt);
  assert_int_equal(rt.l[0], UINT64_C(4242640687));
  struct rng r;
  rng_seed(&r, 7);
  for (int i = 0; i < 2000; i++) {
    uint64_t m = rng_next(&r) >> rng_below(&r, 64);
    u128 sq = (u128)m * m;
    memset(&n, 0, sizeof n);
    ibn_add128(&n, sq);
    ibn_isqrt(&n, &rt);
    assert_true(rt.l[0] == m && rt.l[1] == 0);
    assert_int_equal(isqrt128(sq), m);
    if (m) {
      memset(&n, 0, sizeof n);
      ibn_add128(&n, sq - 1);
      ibn_isqrt(&n, &rt);
      assert_int_equal(rt.l[0], m - 1);
      assert_int_equal(isqrt128(sq - 1), m - 1);
    }
  }
  char dec[96];
  memset(&n, 0, sizeof n);
  ibn_add128(&n, ~(u128)0);
  ibn_add128(&n, ~(u128)0);
  ibn_to_dec(&n, dec, sizeof dec);
  assert_string_equal(dec, "680564733841876926926749214863536422910");

  /* own 16-bit decoders agree with the library's exact widenings */
  for (uint32_t h16 = 0; h16 < 65536; h16++) {
    double mine = dec_f16((uint16_t)h16), lib = rd_f16_to_f64((uint16_t)h16);
    assert_true(isnan(mine) ? isnan(lib) : f64_bits(mine) == f64_bits(lib));
    mine = dec_bf16((uint16_t)h16);
    lib = rd_bf16_to_f64((uint16_t)h16);
    assert_true(isnan(mine) ? isnan(lib) : f64_bits(mine) == f64_bits(lib));
    if (!isnan(mine) && !signbit(mine)) {
      uint64_t back;
      assert_int_equal(enc_float(bf, mine, &back), 0);
      assert_int_equal(back, h16);
    }
    mine = dec_f16((uint16_t)h16);
    if (!isnan(mine) && !signbit(mine)) {
      uint64_t back;
      assert_int_equal(enc_float(f16, mine, &back), 0);
      assert_int_equal(back, h16);
    }
  }
}

/* ================================================================== */
/* The other ten operators: an independent reference                  */
/* ================================================================== */

/* For every operator, version and dtype of the table, random cases are
 * reduced by the library (rd_execute, rd_exec_* with shuffled parts,
 * rd_stream_* with random chunks: byte-identical) and compared with a
 * reference that walks each output's slice by index arithmetic over the
 * original shape:
 *  - integers: exact (128-bit sums and products with overflow tracking),
 *    then the overflow policy; integer LogSum / LogSumExp in __float128
 *    (113 bits), truncated toward zero;
 *  - floats: __float128 sums / products (products with a separate binary
 *    exponent), whose own error (n * 2^-112 of the sum of magnitudes) is
 *    added to the issue's bounds: Sum, Mean within 1 ulp + 2^-45 A (float64
 *    2 ulp + 2^-90 A); L1, Prod 1 ulp (float64 2); LogSum 1 ulp +
 *    2^-44 A/|S| (float64 4 ulp + 2^-50 A/|S|); LogSumExp 1 ulp +
 *    2^-44 (1 + |m|) (float64 4 ulp + 2^-50 (1 + |m|));
 *  - Max, Min, ArgMax, ArgMin: exact, bit for bit (Max of {-0, +0} is +0,
 *    Min -0; NaN wins; Arg: first index, last with select_last_index, NaN
 *    counts as both the largest and the smallest).
 * Empty slices must give the documented empty-set values or
 * UNDEFINED_RESULT, and the first failing output (in index order) decides
 * the return code. */

#include <quadmath.h>

typedef __float128 q128;
__extension__ typedef __int128 i128;

struct nf_type {
  int dtype, is_float, p, emin, emax, bits, is_signed;
  size_t size;
};

static const struct nf_type nf_types[13] = {
  { RD_FLOAT32, 1, 24, -126, 127, 32, 1, 4 },
  { RD_FLOAT64, 1, 53, -1022, 1023, 64, 1, 8 },
  { RD_FLOAT16, 1, 11, -14, 15, 16, 1, 2 },
  { RD_BFLOAT16, 1, 8, -126, 127, 16, 1, 2 },
  { RD_INT8, 0, 0, 0, 0, 8, 1, 1 },
  { RD_UINT8, 0, 0, 0, 0, 8, 0, 1 },
  { RD_INT16, 0, 0, 0, 0, 16, 1, 2 },
  { RD_UINT16, 0, 0, 0, 0, 16, 0, 2 },
  { RD_INT32, 0, 0, 0, 0, 32, 1, 4 },
  { RD_UINT32, 0, 0, 0, 0, 32, 0, 4 },
  { RD_INT64, 0, 0, 0, 0, 64, 1, 8 },
  { RD_UINT64, 0, 0, 0, 0, 64, 0, 8 },
  { RD_BOOL, 0, 0, 0, 0, 1, 0, 1 },
};

static const struct nf_type *nf_type_of(int dt)
{
  for (int i = 0; i < 13; i++)
    if (nf_types[i].dtype == dt)
      return &nf_types[i];
  return NULL;
}

static uint64_t nf_get(const struct nf_type *t, const unsigned char *buf,
                       uint64_t i)
{
  uint64_t v = 0;
  memcpy(&v, buf + i * t->size, t->size); /* little-endian host */
  return v;
}

static double nf_fval(const struct nf_type *t, uint64_t bits)
{
  float f;
  double d;
  uint32_t w = (uint32_t)bits;
  switch (t->dtype) {
  case RD_FLOAT32: memcpy(&f, &w, 4); return f;
  case RD_FLOAT64: memcpy(&d, &bits, 8); return d;
  case RD_FLOAT16: return dec_f16((uint16_t)bits);
  default: return dec_bf16((uint16_t)bits);
  }
}

static i128 nf_ival(const struct nf_type *t, uint64_t bits)
{
  if (t->dtype == RD_BOOL)
    return bits & 0xff;
  if (!t->is_signed)
    return (i128)(t->bits == 64 ? bits : bits & ((UINT64_C(1) << t->bits) - 1));
  if (t->bits == 64)
    return (int64_t)bits;
  {
    uint64_t sign = UINT64_C(1) << (t->bits - 1);
    uint64_t m = bits & ((sign << 1) - 1);
    return (i128)(int64_t)(m ^ sign) - (i128)(int64_t)sign;
  }
}

static void nf_irange(const struct nf_type *t, i128 *lo, i128 *hi)
{
  if (t->dtype == RD_BOOL) {
    *lo = 0;
    *hi = 1;
  } else if (t->is_signed) {
    *hi = ((i128)1 << (t->bits - 1)) - 1;
    *lo = -*hi - 1;
  } else {
    *lo = 0;
    *hi = ((i128)1 << t->bits) - 1;
  }
}

/* One expected output: an error code, an exact bit pattern, or a real
 * value with a tolerance (floats). */
struct nf_exp {
  int code;  /* 0, RD_E_OVERFLOW or RD_E_UNDEFINED */
  int exact; /* bits must equal `bits` */
  uint64_t bits;
  int nan;       /* float result must be NaN */
  int any;       /* ill-conditioned beyond the bound: not checked */
  q128 val, tol; /* |got - val| <= tol (or the same infinity) */
};

struct nf_case {
  struct rd_params p;
  int64_t shape[RD_MAX_RANK], axes[RD_MAX_RANK];
  const struct nf_type *t;
  unsigned char *in;
  uint64_t count;
  char desc[400];
};

static q128 nf_ulp(const struct nf_type *t, q128 x)
{
  int e;
  if (x < 0)
    x = -x;
  if (x == 0)
    return ldexpq(1, t->emin - (t->p - 1));
  frexpq(x, &e);
  e -= 1; /* x in [2^e, 2^(e+1)) */
  if (e < t->emin)
    e = t->emin;
  return ldexpq(1, e - (t->p - 1));
}

static q128 nf_maxfinite(const struct nf_type *t)
{
  return ldexpq(2 - ldexpq(1, 1 - t->p), t->emax);
}

/* The float output bit pattern of value x (exact input: used for Max/Min). */
static uint64_t nf_fbits(const struct nf_type *t, double x)
{
  switch (t->dtype) {
  case RD_FLOAT32: {
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  case RD_FLOAT64: {
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
  }
  case RD_FLOAT16: return rd_f64_to_f16(x); /* exact: x is a float16 */
  default: return rd_f64_to_bf16(x);
  }
}

/* Integer expectation of an exact value under the policy. */
static void nf_iexp(const struct nf_type *t, int policy, i128 v, int over,
                    int neg, uint64_t wrap, struct nf_exp *e)
{
  i128 lo, hi;
  uint64_t mask = t->bits == 64 ? UINT64_MAX : (UINT64_C(1) << t->bits) - 1;
  nf_irange(t, &lo, &hi);
  memset(e, 0, sizeof *e);
  e->exact = 1;
  if (!over && v >= lo && v <= hi) {
    e->bits = (uint64_t)v & mask;
    return;
  }
  if (!over) {
    neg = v < 0;
    wrap = (uint64_t)v;
  }
  if (policy == RD_OVERFLOW_ERROR)
    e->code = RD_E_OVERFLOW;
  else if (policy == RD_OVERFLOW_SATURATE)
    e->bits = (uint64_t)(neg ? lo : hi) & mask;
  else
    e->bits = wrap & mask;
}

static void nf_fexp(const struct nf_type *t, q128 v, q128 tol, struct nf_exp *e)
{
  memset(e, 0, sizeof *e);
  if (isnanq(v)) {
    e->nan = 1;
    return;
  }
  e->val = v;
  e->tol = tol;
}

/* The slice of output o: element indices in row-major order. */
struct nf_slices {
  uint64_t *start, *idx;
};

static void nf_slices(const struct nf_case *c, const struct rd_plan *pl,
                      struct nf_slices *s)
{
  size_t r = c->p.rank;
  unsigned char red[RD_MAX_RANK] = { 0 };
  uint64_t ostride[RD_MAX_RANK], prod = 1, *fill;
  const struct rd_op_info *oi = rd_op_info(c->p.op);
  int noop = !oi->is_arg && c->p.noop_with_empty_axes == 1 && c->p.naxes == 0;
  if (oi->is_arg) {
    int64_t a = c->p.axis == RD_UNSET ? 0 : c->p.axis;
    red[a < 0 ? a + (int64_t)r : a] = 1;
  } else if (!noop) {
    for (size_t i = 0; i < r; i++)
      red[i] = c->p.naxes == 0;
    for (size_t i = 0; i < c->p.naxes; i++)
      red[c->axes[i] < 0 ? c->axes[i] + (int64_t)r : c->axes[i]] = 1;
  }
  for (size_t i = r; i-- > 0;) {
    ostride[i] = red[i] ? 0 : prod;
    if (!red[i])
      prod *= (uint64_t)c->shape[i];
  }
  assert_true(prod == pl->out_count || pl->in_count == 0);
  s->start = calloc(pl->out_count + 1, sizeof *s->start);
  s->idx = malloc((c->count + 1) * sizeof *s->idx);
  fill = calloc(pl->out_count + 1, sizeof *fill);
  assert_non_null(s->start);
  assert_non_null(s->idx);
  assert_non_null(fill);
  for (int pass = 0; pass < 2; pass++) {
    for (uint64_t e = 0; e < c->count; e++) {
      uint64_t rem = e, o = 0;
      for (size_t i = r; i-- > 0;) {
        uint64_t d = (uint64_t)c->shape[i], k = rem % d;
        rem /= d;
        o += k * ostride[i];
      }
      if (pass == 0)
        s->start[o + 1]++;
      else
        s->idx[s->start[o] + fill[o]++] = e;
    }
    if (pass == 0)
      for (uint64_t o = 0; o < pl->out_count; o++)
        s->start[o + 1] += s->start[o];
  }
  free(fill);
}

/* Max/Min key: -0 < +0 (the library's documented order). */
static int nf_fless(double a, double b)
{
  if (a == b)
    return signbit(a) && !signbit(b);
  return a < b;
}

static void nf_expect(const struct nf_case *c, const struct rd_plan *pl,
                      const uint64_t *ix, uint64_t n, struct nf_exp *e)
{
  const struct nf_type *t = c->t;
  int op = c->p.op, f64 = t->dtype == RD_FLOAT64;
  int pol = c->p.overflow;
  memset(e, 0, sizeof *e);

  if (op == RD_OP_ARGMAX || op == RD_OP_ARGMIN) {
    int mx = op == RD_OP_ARGMAX, last = pl->select_last_index;
    int64_t best = -1, nan = -1;
    double bf = 0;
    i128 bi = 0;
    if (n == 0) {
      e->code = RD_E_UNDEFINED;
      return;
    }
    for (uint64_t k = 0; k < n; k++) {
      uint64_t b = nf_get(t, c->in, ix[k]);
      if (t->is_float) {
        double v = nf_fval(t, b);
        if (isnan(v)) {
          if (nan < 0 || last)
            nan = (int64_t)k;
          continue;
        }
        if (best < 0 || (mx ? v > bf : v < bf) || (last && v == bf)) {
          best = (int64_t)k;
          bf = v;
        }
      } else {
        i128 v = nf_ival(t, b);
        if (best < 0 || (mx ? v > bi : v < bi) || (last && v == bi)) {
          best = (int64_t)k;
          bi = v;
        }
      }
    }
    e->exact = 1;
    e->bits = (uint64_t)(nan >= 0 ? nan : best);
    return;
  }

  if (op == RD_OP_MAX || op == RD_OP_MIN) {
    int mx = op == RD_OP_MAX;
    e->exact = 1;
    if (t->is_float) {
      double b = mx ? -INFINITY : INFINITY;
      for (uint64_t k = 0; k < n; k++) {
        double v = nf_fval(t, nf_get(t, c->in, ix[k]));
        if (isnan(v)) {
          e->exact = 0;
          e->nan = 1;
          return;
        }
        if (mx ? nf_fless(b, v) : nf_fless(v, b))
          b = v;
      }
      e->bits = nf_fbits(t, b);
    } else {
      i128 lo, hi, b;
      nf_irange(t, &lo, &hi);
      b = mx ? lo : hi;
      for (uint64_t k = 0; k < n; k++) {
        i128 v = nf_ival(t, nf_get(t, c->in, ix[k]));
        if (mx ? v > b : v < b)
          b = v;
      }
      nf_iexp(t, pol, b, 0, 0, 0, e);
    }
    return;
  }

  if (!t->is_float) {
    i128 s = 0;
    switch (op) {
    case RD_OP_SUM:
    case RD_OP_L1:
    case RD_OP_MEAN:
    case RD_OP_LOG_SUM:
      for (uint64_t k = 0; k < n; k++) {
        i128 v = nf_ival(t, nf_get(t, c->in, ix[k]));
        s += op == RD_OP_L1 && v < 0 ? -v : v;
      }
      if (op == RD_OP_MEAN) {
        if (n == 0) {
          e->code = RD_E_UNDEFINED;
          return;
        }
        s /= (i128)n; /* C: toward zero */
      } else if (op == RD_OP_LOG_SUM) {
        q128 l, k;
        if (s <= 0) {
          e->code = RD_E_UNDEFINED;
          return;
        }
        l = logq((q128)s);
        k = floorq(l);
        if (expq(k + 1) <= (q128)s)
          k += 1;
        else if (k > 0 && expq(k) > (q128)s)
          k -= 1;
        s = (i128)k;
      }
      nf_iexp(t, pol, s, 0, 0, 0, e);
      return;
    case RD_OP_PROD: {
      unsigned __int128 mag = 1;
      int over = 0, neg = 0, zero = 0;
      uint64_t wrap = 1;
      for (uint64_t k = 0; k < n; k++) {
        i128 v = nf_ival(t, nf_get(t, c->in, ix[k]));
        wrap *= (uint64_t)v;
        if (v == 0) {
          zero = 1;
          continue;
        }
        neg ^= v < 0;
        if (!over &&
            __builtin_mul_overflow(mag, (unsigned __int128)(v < 0 ? -v : v),
                                   &mag))
          over = 1;
      }
      if (zero)
        nf_iexp(t, pol, 0, 0, 0, 0, e);
      else if (over || mag > ((unsigned __int128)1 << 126))
        nf_iexp(t, pol, 0, 1, neg, wrap, e);
      else
        nf_iexp(t, pol, neg ? -(i128)mag : (i128)mag, 0, 0, 0, e);
      return;
    }
    default: { /* LogSumExp */
      i128 m = 0;
      q128 sum = 0, l;
      if (n == 0) {
        e->code = RD_E_UNDEFINED;
        return;
      }
      for (uint64_t k = 0; k < n; k++) {
        i128 v = nf_ival(t, nf_get(t, c->in, ix[k]));
        if (k == 0 || v > m)
          m = v;
      }
      {
        /* T = log(sum) >= 0 is 0 exactly only for a single maximum and
         * nothing else; quad underflow of far-below terms must not make
         * T look like 0. */
        uint64_t at_max = 0;
        q128 tq, fq;
        i128 res;
        for (uint64_t k = 0; k < n; k++) {
          i128 v = nf_ival(t, nf_get(t, c->in, ix[k]));
          at_max += v == m;
          sum += expq((q128)(v - m));
        }
        tq = logq(sum);
        fq = floorq(tq);
        if (expq(fq + 1) <= sum)
          fq += 1;
        res = m + (i128)fq;
        if (res < 0 && !(at_max == 1 && n == 1))
          res += 1; /* L in (res, res + 1): toward zero */
        l = 0;
        (void)l;
        nf_iexp(t, pol, res, 0, 0, 0, e);
      }
      return;
    }
    }
  }

  /* floats */
  {
    int nan = 0, pinf = 0, ninf = 0;
    q128 s = 0, a = 0, ulps = f64 ? 2 : 1;
    for (uint64_t k = 0; k < n; k++) {
      double v = nf_fval(t, nf_get(t, c->in, ix[k]));
      nan |= isnan(v);
      pinf |= v == INFINITY;
      ninf |= v == -INFINITY;
    }
    switch (op) {
    case RD_OP_SUM:
    case RD_OP_L1:
    case RD_OP_MEAN:
    case RD_OP_LOG_SUM: {
      q128 v, tol, c1 = f64 ? ldexpq(1, -90) : ldexpq(1, -45);
      if (op == RD_OP_L1 && (pinf || ninf) && !nan) {
        nf_fexp(t, INFINITY, 0, e);
        return;
      }
      if (nan || (pinf && ninf)) {
        e->nan = 1;
        return;
      }
      if (pinf || ninf) {
        q128 inf = pinf ? (q128)INFINITY : -(q128)INFINITY;
        if (op == RD_OP_LOG_SUM)
          inf = pinf ? (q128)INFINITY : (q128)NAN;
        nf_fexp(t, inf, 0, e);
        return;
      }
      for (uint64_t k = 0; k < n; k++) {
        double x = nf_fval(t, nf_get(t, c->in, ix[k]));
        s += op == RD_OP_L1 ? fabs(x) : x;
        a += fabs(x);
      }
      tol = a * ldexpq((q128)n + 1, -112); /* the reference's own error */
      if (op == RD_OP_MEAN) {
        if (n == 0) {
          e->nan = 1;
          return;
        }
        v = s / n;
        tol = tol / n + ulps * nf_ulp(t, v) + c1 * a / n;
      } else if (op == RD_OP_LOG_SUM) {
        if (fabsq(s) <= (f64 ? ldexpq(1, -80) : ldexpq(1, -40)) * a && a > 0) {
          /* |S| below the sum's own error bound: log S has no bound */
          e->any = 1;
          return;
        }
        if (s == 0) {
          nf_fexp(t, -(q128)INFINITY, 0, e);
          return;
        }
        if (s < 0) {
          e->nan = 1;
          return;
        }
        v = logq(s);
        tol = (f64 ? 4 : 1) * nf_ulp(t, v) +
              (f64 ? ldexpq(1, -50) : ldexpq(1, -44)) * a / s + tol / s;
      } else {
        v = s;
        tol += ulps * nf_ulp(t, v) + (op == RD_OP_SUM ? c1 * a : 0);
      }
      nf_fexp(t, v, tol, e);
      return;
    }
    case RD_OP_PROD: {
      int zero = 0, neg = 0;
      long ex = 0;
      q128 m = 1, v;
      for (uint64_t k = 0; k < n; k++) {
        double x = nf_fval(t, nf_get(t, c->in, ix[k]));
        int e2;
        neg ^= signbit(x) != 0;
        if (x == 0)
          zero = 1;
        else if (!isinf(x) && !isnan(x)) {
          m *= frexpq((q128)x, &e2);
          ex += e2;
          m = frexpq(m, &e2);
          ex += e2;
        }
      }
      if (nan || (zero && (pinf || ninf))) {
        e->nan = 1;
        return;
      }
      if (pinf || ninf)
        v = INFINITY;
      else if (zero)
        v = 0;
      else if (ex > 20000)
        v = INFINITY;
      else if (ex < -20000)
        v = 0;
      else
        v = ldexpq(fabsq(m), (int)ex);
      if (neg)
        v = -v;
      nf_fexp(t, v,
              (isinfq(v) || v == 0)
                ? 0
                : ulps * nf_ulp(t, v) + fabsq(v) * ldexpq((q128)n + 1, -111),
              e);
      if (v == 0) {
        e->exact = 1;
        e->bits = nf_fbits(t, neg ? -0.0 : 0.0);
      }
      return;
    }
    default: { /* LogSumExp */
      q128 m = -(q128)INFINITY, sum = 0, v;
      if (nan) {
        e->nan = 1;
        return;
      }
      if (pinf) {
        nf_fexp(t, INFINITY, 0, e);
        return;
      }
      for (uint64_t k = 0; k < n; k++) {
        double x = nf_fval(t, nf_get(t, c->in, ix[k]));
        if (x > m)
          m = x;
      }
      if (isinfq(m)) {
        nf_fexp(t, -(q128)INFINITY, 0, e);
        return;
      }
      for (uint64_t k = 0; k < n; k++) {
        double x = nf_fval(t, nf_get(t, c->in, ix[k]));
        if (x != -INFINITY)
          sum += expq((q128)x - m);
      }
      v = m + logq(sum);
      nf_fexp(t, v,
              (f64 ? 4 : 1) * nf_ulp(t, v) +
                (f64 ? ldexpq(1, -50) : ldexpq(1, -44)) * (1 + fabsq(m)) +
                ldexpq((q128)n + 1, -110),
              e);
      return;
    }
    }
  }
}

/* 1 if output bits `got` satisfy the expectation. */
static int nf_ok(const struct nf_type *ot, const struct nf_exp *e, uint64_t got)
{
  uint64_t mask = ot->size == 8 ? UINT64_MAX
                                : (UINT64_C(1) << (8 * ot->size)) - 1;
  double g;
  got &= mask;
  if (e->any)
    return 1;
  if (e->exact)
    return got == (e->bits & mask);
  g = nf_fval(ot, got);
  if (e->nan)
    return isnan(g);
  if (isnan(g))
    return 0;
  if (isinfq(e->val))
    return isinf(g) && (g > 0) == (e->val > 0);
  if (fabsq(e->val) > nf_maxfinite(ot)) {
    /* rounds to infinity, or to the largest finite value within tol */
    if (isinf(g))
      return (g > 0) == (e->val > 0);
  }
  if (isinf(g)) {
    q128 lim = nf_maxfinite(ot) + nf_ulp(ot, nf_maxfinite(ot)) / 2;
    return fabsq(e->val) + e->tol >= lim && (g > 0) == (e->val > 0);
  }
  return fabsq((q128)g - e->val) <= e->tol;
}

static struct {
  uint64_t cases, outputs, errors, per_op[RD_OP_COUNT + 1];
  uint64_t dtv[RD_OP_COUNT + 1][RD_NDTYPES];
} nst;

static int nf_dtype_index(int dt)
{
  for (int i = 0; i < RD_NDTYPES; i++)
    if (rd_dtypes[i] == dt)
      return i;
  return 0;
}

/* One element of type t; profile 0 ordinary, 1 specials, 2 extremes,
 * 3 small integers (many ties). */
static uint64_t nf_gen(struct rng *r, const struct nf_type *t, int profile)
{
  uint64_t x = rng_next(r);
  if (t->dtype == RD_BOOL)
    return x & 1;
  if (!t->is_float) {
    i128 lo, hi;
    nf_irange(t, &lo, &hi);
    switch (profile == 1 ? (int)rng_below(r, 3) : profile) {
    case 0: return (uint64_t)(int64_t)((int64_t)rng_below(r, 201) - 100);
    case 2: {
      uint64_t k = rng_below(r, 6);
      if (k == 0)
        return (uint64_t)lo;
      if (k == 1)
        return (uint64_t)hi;
      if (k == 2)
        return (uint64_t)(hi - 1);
      return x;
    }
    default: return (uint64_t)(int64_t)((int64_t)rng_below(r, 7) - 3);
    }
  }
  {
    double v;
    switch (profile) {
    case 1:
      switch (rng_below(r, 10)) {
      case 0: v = NAN; break;
      case 1: v = INFINITY; break;
      case 2: v = -INFINITY; break;
      case 3: v = 0.0; break;
      case 4: v = -0.0; break;
      case 5:
        v = ldexp(1.0, t->emin - (t->p - 1)) * (double)(1 + rng_below(r, 3));
        break;
      default: v = (rng_unit(r) - 0.5) * 8; break;
      }
      break;
    case 2:
      v = ldexp(rng_unit(r) + 0.5,
                (int)rng_below(r, (uint64_t)(t->emax - t->emin)) + t->emin);
      if (x & 1)
        v = -v;
      break;
    case 3: v = (double)((int)rng_below(r, 7) - 3); break;
    default: v = (rng_unit(r) - 0.5) * 20; break;
    }
    switch (t->dtype) {
    case RD_FLOAT32: {
      float f = (float)v;
      uint32_t u;
      memcpy(&u, &f, 4);
      return u;
    }
    case RD_FLOAT64: {
      uint64_t u;
      memcpy(&u, &v, 8);
      return u;
    }
    case RD_FLOAT16: return rd_f64_to_f16(v);
    default: return rd_f64_to_bf16(v);
    }
  }
}

static void nf_gen_case(struct nf_case *c, struct rng *r, int op)
{
  const struct rd_op_info *oi = rd_op_info(op);
  int dts[RD_NDTYPES], ndt = 0, version, profile;
  uint64_t n;
  static const int64_t dims[] = { 0, 1, 1, 2, 2, 3, 3, 4, 5, 7, 16, 33 };
  rd_params_init(&c->p);
  c->p.op = op;
  c->p.opset = 1 + (int64_t)rng_below(r, 22);
  version = rd_op_version(op, c->p.opset);
  for (int i = 0; i < RD_NDTYPES; i++)
    if (rd_dtype_in_version(op, rd_dtypes[i], version))
      dts[ndt++] = rd_dtypes[i];
  assert_true(ndt > 0);
  c->p.dtype = dts[rng_below(r, (uint64_t)ndt)];
  c->t = nf_type_of(c->p.dtype);
  do {
    c->p.rank = (size_t)rng_below(r, 5);
    if (oi->is_arg && c->p.rank == 0)
      c->p.rank = 1;
    n = 1;
    for (size_t i = 0; i < c->p.rank; i++) {
      c->shape[i] = dims[rng_below(r, sizeof dims / sizeof dims[0])];
      n *= (uint64_t)c->shape[i];
    }
  } while (n > 3000);
  c->p.shape = c->shape;
  c->p.axes = c->axes;
  c->count = n;
  if (oi->is_arg) {
    c->p.axis = (int64_t)rng_below(r, c->p.rank) -
                (rng_below(r, 2) ? (int64_t)c->p.rank : 0);
    if (rng_below(r, 4) == 0 && c->p.axis == 0)
      c->p.axis = RD_UNSET;
    if (version >= 12 && rng_below(r, 2))
      c->p.select_last_index = (int64_t)rng_below(r, 2);
  } else {
    if (c->p.rank > 0 && rng_below(r, 3))
      for (size_t i = 0; i < c->p.rank; i++)
        if (rng_below(r, 2))
          c->axes[c->p.naxes++] = (int64_t)i -
                                  (rng_below(r, 2) ? (int64_t)c->p.rank : 0);
    if (version >= oi->axes_input_version && rng_below(r, 3) == 0)
      c->p.noop_with_empty_axes = (int64_t)rng_below(r, 2);
  }
  c->p.keepdims = (int64_t)rng_below(r, 2);
  c->p.overflow = (int)rng_below(r, 3);
  profile = (int)rng_below(r, 4);
  c->in = malloc((size_t)(n * c->t->size) + 1);
  assert_non_null(c->in);
  for (uint64_t e = 0; e < n; e++) {
    uint64_t b = nf_gen(r, c->t, rng_below(r, 8) == 0 ? 1 : profile);
    memcpy(c->in + e * c->t->size, &b, c->t->size);
  }
  snprintf(c->desc, sizeof c->desc, "%s opset %" PRId64 " (v%d) %s rank %zu",
           oi->name, c->p.opset, version,
           c->t->dtype == RD_BOOL ? "bool" : rd_dtype_name(c->p.dtype),
           c->p.rank);
}

/* Runs the three ways; returns the rd_execute code and fills out. */
static int nf_run(const struct nf_case *c, const struct rd_plan *pl,
                  struct rng *r, unsigned char *out, struct rd_error *err)
{
  unsigned char *o2 = alloc_out(pl->out_bytes), *o3 = alloc_out(pl->out_bytes);
  struct rd_error e2, e3;
  struct rd_exec *ex;
  struct rd_stream *s;
  size_t order[RD_MAX_PARTS];
  int rc1, rc2, rc3;
  uint64_t fed = 0;
  rc1 = rd_execute(pl, c->in, out, err);
  assert_int_equal(rd_exec_create(pl, &ex), 0);
  for (size_t i = 0; i < pl->nparts; i++)
    order[i] = i;
  for (size_t i = pl->nparts; i > 1; i--) {
    size_t j = (size_t)rng_below(r, i), t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
  for (size_t i = 0; i < pl->nparts; i++)
    assert_int_equal(rd_exec_part(ex, order[i], c->in), 0);
  rc2 = rd_exec_finish(ex, o2, &e2);
  rd_exec_destroy(ex);
  assert_int_equal(rd_stream_create(pl, &s), 0);
  while (fed < pl->in_bytes) {
    size_t len = 1 + (size_t)rng_below(r, rng_below(r, 2) ? 2 * c->t->size + 1
                                                          : 700);
    if (len > pl->in_bytes - fed)
      len = (size_t)(pl->in_bytes - fed);
    assert_int_equal(rd_stream_feed(s, c->in + fed, len, &e3), 0);
    fed += len;
  }
  rc3 = rd_stream_finish(s, o3, &e3);
  rd_stream_destroy(s);
  if (rc1 != rc2 || rc1 != rc3)
    fail_msg("%s: execute %d, parts %d, stream %d", c->desc, rc1, rc2, rc3);
  if (rc1 == 0 && (memcmp(out, o2, (size_t)pl->out_bytes) != 0 ||
                   memcmp(out, o3, (size_t)pl->out_bytes) != 0))
    fail_msg("%s: execute, parts and stream outputs differ", c->desc);
  if (rc1 != 0 &&
      (strcmp(err->msg, e2.msg) != 0 || strcmp(err->msg, e3.msg) != 0))
    fail_msg("%s: messages differ: \"%s\" / \"%s\" / \"%s\"", c->desc, err->msg,
             e2.msg, e3.msg);
  assert_true(guard_ok(out, pl->out_bytes));
  assert_true(guard_ok(o2, pl->out_bytes));
  assert_true(guard_ok(o3, pl->out_bytes));
  free(o2);
  free(o3);
  return rc1;
}

/* Checks one case; returns the number of mismatches (0). */
static int nf_check(struct nf_case *c, struct rng *r)
{
  struct rd_plan pl;
  struct rd_error err;
  struct nf_slices sl;
  const struct nf_type *ot;
  unsigned char *out;
  int rc, want = 0, bad = 0;
  uint64_t first = UINT64_MAX;
  rc = rd_plan_init(&pl, &c->p, &err);
  if (rc != 0)
    fail_msg("%s: rd_plan_init: %d %s", c->desc, rc, err.msg);
  ot = nf_type_of(pl.out_dtype);
  out = alloc_out(pl.out_bytes);
  rc = nf_run(c, &pl, r, out, &err);
  nf_slices(c, &pl, &sl);
  for (uint64_t o = 0; o < pl.out_count; o++) {
    struct nf_exp e;
    nf_expect(c, &pl, sl.idx + sl.start[o], sl.start[o + 1] - sl.start[o], &e);
    if (e.code != 0) {
      if (first == UINT64_MAX) {
        first = o;
        want = e.code;
      }
      continue;
    }
    if (rc == 0 && !nf_ok(ot, &e, nf_get(ot, out, o))) {
      if (bad++ < 5) {
        double g = ot->is_float ? nf_fval(ot, nf_get(ot, out, o)) : 0;
        print_error("%s: output[%" PRIu64 "] bits 0x%" PRIx64 " (%.17g) "
                    "expected %s 0x%" PRIx64 " / %.17g tol %.3g (slice %" PRIu64
                    " elements)\n",
                    c->desc, o, nf_get(ot, out, o), g,
                    e.exact ? "bits"
                    : e.nan ? "NaN"
                            : "value",
                    e.bits, (double)e.val, (double)e.tol,
                    sl.start[o + 1] - sl.start[o]);
      }
    }
    nst.outputs++;
  }
  if (rc != want) {
    print_error("%s: rc %d (%s), expected %d at output %" PRIu64 "\n", c->desc,
                rc, err.msg, want, first);
    bad++;
  } else if (rc != 0) {
    char idx[48];
    snprintf(idx, sizeof idx, "output[%" PRIu64 "]", first);
    if (!strstr(err.msg, idx) || !strstr(err.msg, rd_op_name(c->p.op))) {
      print_error("%s: message \"%s\" does not name %s\n", c->desc, err.msg,
                  idx);
      bad++;
    }
    nst.errors++;
  }
  free(sl.start);
  free(sl.idx);
  free(out);
  nst.cases++;
  nst.per_op[c->p.op]++;
  nst.dtv[c->p.op][nf_dtype_index(c->p.dtype)]++;
  return bad;
}

static void test_ops_random(void **state)
{
  struct rng r;
  uint64_t seed = env_u64("RD_TEST_SEED", DEFAULT_SEED) ^ 0x0f5eed;
  uint64_t ncases = env_u64("RD_TEST_OP_CASES", 2500);
  int bad = 0;
  (void)state;
  rng_seed(&r, seed);
  for (uint64_t i = 0; i < ncases; i++)
    for (int op = RD_OP_SUM; op <= RD_OP_ARGMIN; op++) {
      struct nf_case c;
      memset(&c, 0, sizeof c);
      nf_gen_case(&c, &r, op);
      bad += nf_check(&c, &r);
      free(c.in);
      if (bad > 20)
        fail_msg("too many mismatches");
    }
  printf("ops oracle: %" PRIu64 " cases, %" PRIu64 " outputs checked, %" PRIu64
         " expected errors\n",
         nst.cases, nst.outputs, nst.errors);
  /* every (op, dtype) the table allows was drawn */
  for (int op = RD_OP_SUM; op <= RD_OP_ARGMIN; op++)
    for (int i = 0; i < RD_NDTYPES; i++) {
      int any = 0;
      for (int v = 1; v <= 22; v++)
        any |= rd_dtype_in_version(op, rd_dtypes[i], rd_op_version(op, v));
      if (any && nst.dtv[op][i] == 0)
        fail_msg("%s %s never drawn", rd_op_name(op),
                 rd_dtype_name(rd_dtypes[i]));
    }
  assert_int_equal(bad, 0);
}

/* Negative controls: the checker rejects a wrong answer of each family. */
static void test_ops_controls(void **state)
{
  const struct nf_type *f32 = nf_type_of(RD_FLOAT32),
                       *f64 = nf_type_of(RD_FLOAT64),
                       *i32 = nf_type_of(RD_INT32), *i64 = nf_type_of(RD_INT64);
  struct nf_exp e;
  float one = 1.0f;
  uint32_t u;
  (void)state;
  /* float sums: exact 1, tolerance one ulp: 1 + 2 ulp is refused */
  nf_fexp(f32, 1, nf_ulp(f32, 1), &e);
  memcpy(&u, &one, 4);
  assert_true(nf_ok(f32, &e, u));
  assert_true(nf_ok(f32, &e, u + 1));
  assert_false(nf_ok(f32, &e, u + 2));
  /* NaN expected: a number is refused, and the other way round */
  nf_fexp(f64, NAN, 0, &e);
  assert_false(nf_ok(f64, &e, 0));
  nf_fexp(f64, 0, 1, &e);
  assert_false(nf_ok(f64, &e, UINT64_C(0x7ff8000000000000)));
  /* infinities must have the sign */
  nf_fexp(f64, INFINITY, 0, &e);
  assert_false(nf_ok(f64, &e, UINT64_C(0xfff0000000000000)));
  assert_true(nf_ok(f64, &e, UINT64_C(0x7ff0000000000000)));
  /* integers: exact, policy */
  nf_iexp(i32, RD_OVERFLOW_SATURATE, (i128)INT32_MAX + 5, 0, 0, 0, &e);
  assert_true(nf_ok(i32, &e, (uint32_t)INT32_MAX));
  assert_false(nf_ok(i32, &e, (uint32_t)INT32_MAX - 1));
  nf_iexp(i32, RD_OVERFLOW_WRAP, (i128)INT32_MAX + 1, 0, 0, 0, &e);
  assert_true(nf_ok(i32, &e, 0x80000000u));
  nf_iexp(i64, RD_OVERFLOW_ERROR, (i128)INT64_MAX + 1, 0, 0, 0, &e);
  assert_int_equal(e.code, RD_E_OVERFLOW);
  /* Max/Min order: -0 < +0 */
  assert_true(nf_fless(-0.0, 0.0));
  assert_false(nf_fless(0.0, -0.0));
  /* A whole case with a deliberately corrupted expected value must be
   * reported: run a known case and flip the library's output. */
  {
    struct nf_case c;
    struct rd_plan pl;
    struct rd_error err;
    struct rng r;
    static const int ops[5] = { RD_OP_SUM, RD_OP_MAX, RD_OP_ARGMAX, RD_OP_PROD,
                                RD_OP_LOG_SUM_EXP };
    rng_seed(&r, 99);
    for (int k = 0; k < 5; k++) {
      struct nf_slices sl;
      unsigned char *out;
      struct nf_exp x;
      int found = 0;
      for (int tries = 0; tries < 200 && !found; tries++) {
        memset(&c, 0, sizeof c);
        nf_gen_case(&c, &r, ops[k]);
        if (rd_plan_init(&pl, &c.p, &err) != 0 || pl.out_count == 0 ||
            c.count == 0) {
          free(c.in);
          continue;
        }
        out = alloc_out(pl.out_bytes);
        if (rd_execute(&pl, c.in, out, &err) == 0) {
          const struct nf_type *ot = nf_type_of(pl.out_dtype);
          nf_slices(&c, &pl, &sl);
          nf_expect(&c, &pl, sl.idx, sl.start[1], &x);
          if (x.code == 0 && !x.nan && (x.exact || !isinfq(x.val))) {
            uint64_t g = nf_get(ot, out, 0);
            assert_true(nf_ok(ot, &x, g));
            /* 2^20 ulps off (floats) or +1 (exact) must be refused */
            assert_false(nf_ok(ot, &x, x.exact ? g ^ 1 : g + (1u << 20)));
            found = 1;
          }
          free(sl.start);
          free(sl.idx);
        }
        free(out);
        free(c.in);
      }
      assert_true(found);
    }
  }
}

/* Named semantics of the issue, each with its own values. */
static int nf_one(int op, int dt, int64_t opset, size_t rank,
                  const int64_t *shape, const void *in, void *out,
                  struct rd_error *err, int64_t noop)
{
  struct rd_params p;
  struct rd_plan pl;
  int rc;
  rd_params_init(&p);
  p.op = op;
  p.dtype = dt;
  p.opset = opset;
  p.rank = rank;
  p.shape = shape;
  if (noop >= 0)
    p.noop_with_empty_axes = noop;
  if ((rc = rd_plan_init(&pl, &p, err)) != 0)
    return rc;
  return rd_execute(&pl, in, out, err);
}

static void test_ops_semantics(void **state)
{
  struct rd_error err;
  int64_t s2[1] = { 2 }, s3[1] = { 3 }, s0[1] = { 0 }, s5[1] = { 5 };
  (void)state;
  {
    double x[2] = { 1000, 1000 }, y[2] = { -1000, -1000 }, o;
    assert_int_equal(nf_one(RD_OP_LOG_SUM_EXP, RD_FLOAT64, 18, 1, s2, x, &o,
                            &err, -1),
                     0);
    assert_true(fabs(o - (1000 + M_LN2)) <= 2e-13);
    assert_int_equal(nf_one(RD_OP_LOG_SUM_EXP, RD_FLOAT64, 18, 1, s2, y, &o,
                            &err, -1),
                     0);
    assert_true(fabs(o - (-1000 + M_LN2)) <= 2e-13);
  }
  {
    int32_t x[2] = { -7, 2 }, o;
    assert_int_equal(nf_one(RD_OP_MEAN, RD_INT32, 18, 1, s2, x, &o, &err, -1),
                     0);
    assert_int_equal(o, -2);
  }
  {
    /* a product that overflows and later meets a 0 is 0 */
    int32_t x[3] = { 65536, 65536, 0 }, o = 7;
    assert_int_equal(nf_one(RD_OP_PROD, RD_INT32, 18, 1, s3, x, &o, &err, -1),
                     0);
    assert_int_equal(o, 0);
  }
  {
    float x[4] = { 1e30f, 1e30f, 1e-30f, 1e-30f }, o;
    int64_t s4[1] = { 4 };
    assert_int_equal(nf_one(RD_OP_PROD, RD_FLOAT32, 18, 1, s4, x, &o, &err, -1),
                     0);
    assert_true(fabsf(o - 1.0f) <= 1.2e-7f);
  }
  {
    /* |INT32_MIN| in L1 follows the policy: error by default */
    int32_t x[1] = { INT32_MIN }, o;
    int64_t s1[1] = { 1 };
    assert_int_equal(nf_one(RD_OP_L1, RD_INT32, 18, 1, s1, x, &o, &err, -1),
                     RD_E_OVERFLOW);
    assert_non_null(strstr(err.msg, "2147483648"));
  }
  {
    /* empty sets */
    float o;
    int32_t oi;
    int64_t ol;
    unsigned char ob;
    assert_int_equal(nf_one(RD_OP_MAX, RD_FLOAT32, 18, 1, s0, NULL, &o, &err,
                            -1),
                     0);
    assert_true(isinf(o) && o < 0);
    assert_int_equal(nf_one(RD_OP_MIN, RD_INT32, 18, 1, s0, NULL, &oi, &err,
                            -1),
                     0);
    assert_int_equal(oi, INT32_MAX);
    assert_int_equal(nf_one(RD_OP_MAX, RD_BOOL, 20, 1, s0, NULL, &ob, &err, -1),
                     0);
    assert_int_equal(ob, 0);
    assert_int_equal(nf_one(RD_OP_MIN, RD_BOOL, 20, 1, s0, NULL, &ob, &err, -1),
                     0);
    assert_int_equal(ob, 1);
    assert_int_equal(nf_one(RD_OP_PROD, RD_FLOAT32, 18, 1, s0, NULL, &o, &err,
                            -1),
                     0);
    assert_true(o == 1.0f);
    assert_int_equal(nf_one(RD_OP_MEAN, RD_FLOAT32, 18, 1, s0, NULL, &o, &err,
                            -1),
                     0);
    assert_true(isnan(o));
    assert_int_equal(nf_one(RD_OP_LOG_SUM, RD_FLOAT32, 18, 1, s0, NULL, &o,
                            &err, -1),
                     0);
    assert_true(isinf(o) && o < 0);
    assert_int_equal(nf_one(RD_OP_MEAN, RD_INT32, 18, 1, s0, NULL, &oi, &err,
                            -1),
                     RD_E_UNDEFINED);
    assert_non_null(strstr(err.msg, "ReduceMean"));
    assert_non_null(strstr(err.msg, "output[0]"));
    assert_int_equal(nf_one(RD_OP_LOG_SUM_EXP, RD_INT64, 18, 1, s0, NULL, &ol,
                            &err, -1),
                     RD_E_UNDEFINED);
    assert_int_equal(nf_one(RD_OP_ARGMAX, RD_FLOAT32, 13, 1, s0, NULL, &ol,
                            &err, -1),
                     RD_E_UNDEFINED);
  }
  {
    /* integer LogSum of a sum <= 0; exact truncation next to e^k */
    int64_t x[2] = { 3, -3 }, o, s1[1] = { 1 };
    assert_int_equal(nf_one(RD_OP_LOG_SUM, RD_INT64, 18, 1, s2, x, &o, &err,
                            -1),
                     RD_E_UNDEFINED);
    assert_non_null(strstr(err.msg, "sum is 0"));
    for (int k = 1; k <= 43; k++) {
      q128 ek = expq((q128)k);
      int64_t lo = (int64_t)floorq(ek), hi = lo + 1;
      assert_int_equal(nf_one(RD_OP_LOG_SUM, RD_INT64, 18, 1, s1, &lo, &o, &err,
                              -1),
                       0);
      assert_int_equal(o, k - 1);
      assert_int_equal(nf_one(RD_OP_LOG_SUM, RD_INT64, 18, 1, s1, &hi, &o, &err,
                              -1),
                       0);
      assert_int_equal(o, k);
    }
  }
  {
    /* integer LogSumExp truncates toward zero: [-1, -2] -> -0.687 -> 0;
     * [-5] -> -5 exactly; [-5, -5] -> -4.307 -> -4 */
    int32_t a[2] = { -1, -2 }, b[1] = { -5 }, c[2] = { -5, -5 }, o;
    int64_t s1[1] = { 1 };
    assert_int_equal(nf_one(RD_OP_LOG_SUM_EXP, RD_INT32, 18, 1, s2, a, &o, &err,
                            -1),
                     0);
    assert_int_equal(o, 0);
    assert_int_equal(nf_one(RD_OP_LOG_SUM_EXP, RD_INT32, 18, 1, s1, b, &o, &err,
                            -1),
                     0);
    assert_int_equal(o, -5);
    assert_int_equal(nf_one(RD_OP_LOG_SUM_EXP, RD_INT32, 18, 1, s2, c, &o, &err,
                            -1),
                     0);
    assert_int_equal(o, -4);
  }
  {
    /* NaN and ties in ArgMax/ArgMin; NaN in Max */
    float x[5] = { 1, NAN, 5, NAN, 0 };
    float t[5] = { 2, 7, 7, 1, 1 };
    int64_t o;
    float m;
    assert_int_equal(nf_one(RD_OP_ARGMAX, RD_FLOAT32, 13, 1, s5, x, &o, &err,
                            -1),
                     0);
    assert_int_equal(o, 1);
    assert_int_equal(nf_one(RD_OP_ARGMIN, RD_FLOAT32, 13, 1, s5, x, &o, &err,
                            -1),
                     0);
    assert_int_equal(o, 1);
    assert_int_equal(nf_one(RD_OP_ARGMAX, RD_FLOAT32, 13, 1, s5, t, &o, &err,
                            -1),
                     0);
    assert_int_equal(o, 1);
    assert_int_equal(nf_one(RD_OP_ARGMIN, RD_FLOAT32, 13, 1, s5, t, &o, &err,
                            -1),
                     0);
    assert_int_equal(o, 3);
    assert_int_equal(nf_one(RD_OP_MAX, RD_FLOAT32, 18, 1, s5, x, &m, &err, -1),
                     0);
    assert_true(isnan(m));
  }
  {
    /* LogSumExp specials */
    double a[2] = { INFINITY, -INFINITY }, b[2] = { -INFINITY, -INFINITY },
           c[2] = { NAN, INFINITY }, o;
    assert_int_equal(nf_one(RD_OP_LOG_SUM_EXP, RD_FLOAT64, 18, 1, s2, a, &o,
                            &err, -1),
                     0);
    assert_true(isinf(o) && o > 0);
    assert_int_equal(nf_one(RD_OP_LOG_SUM_EXP, RD_FLOAT64, 18, 1, s2, b, &o,
                            &err, -1),
                     0);
    assert_true(isinf(o) && o < 0);
    assert_int_equal(nf_one(RD_OP_LOG_SUM_EXP, RD_FLOAT64, 18, 1, s2, c, &o,
                            &err, -1),
                     0);
    assert_true(isnan(o));
  }
  {
    /* noop_with_empty_axes=1: elementwise parts */
    float x[3] = { -2, 0, 4 }, o[3];
    int32_t xi[3] = { -2, 0, 4 }, oi[3];
    assert_int_equal(nf_one(RD_OP_L1, RD_FLOAT32, 18, 1, s3, x, o, &err, 1), 0);
    assert_true(o[0] == 2 && o[1] == 0 && o[2] == 4);
    assert_int_equal(nf_one(RD_OP_LOG_SUM, RD_FLOAT32, 18, 1, s3, x, o, &err,
                            1),
                     0);
    assert_true(isnan(o[0]) && isinf(o[1]) && o[1] < 0 &&
                fabsf(o[2] - logf(4)) < 1e-6f);
    assert_int_equal(nf_one(RD_OP_SUM, RD_INT32, 13, 1, s3, xi, oi, &err, 1),
                     0);
    assert_true(oi[0] == -2 && oi[1] == 0 && oi[2] == 4);
    assert_int_equal(nf_one(RD_OP_PROD, RD_INT32, 18, 1, s3, xi, oi, &err, 1),
                     0);
    assert_true(oi[0] == -2 && oi[1] == 0 && oi[2] == 4);
    assert_int_equal(nf_one(RD_OP_LOG_SUM_EXP, RD_INT32, 18, 1, s3, xi, oi,
                            &err, 1),
                     0);
    assert_true(oi[0] == -2 && oi[1] == 0 && oi[2] == 4);
  }
  {
    /* bool: a byte other than 0/1 is an error naming the element */
    unsigned char b[5] = { 0, 1, 1, 7, 2 }, o;
    assert_int_equal(nf_one(RD_OP_MAX, RD_BOOL, 20, 1, s5, b, &o, &err, -1),
                     RD_E_ELEMENT);
    assert_non_null(strstr(err.msg, "element 3"));
    assert_int_equal(nf_one(RD_OP_MAX, RD_BOOL, 18, 1, s5, b, &o, &err, -1),
                     RD_E_DTYPE_VERSION);
  }
  {
    /* rank 0 */
    float x = -3, o;
    int64_t ol;
    assert_int_equal(nf_one(RD_OP_L1, RD_FLOAT32, 18, 0, NULL, &x, &o, &err,
                            -1),
                     0);
    assert_true(o == 3);
    assert_int_equal(nf_one(RD_OP_ARGMAX, RD_FLOAT32, 13, 0, NULL, &x, &ol,
                            &err, -1),
                     RD_E_AXIS_RANGE);
  }
  {
    /* Max of {-0, +0} is +0 and Min -0, in either order */
    float a[2] = { -0.0f, 0.0f }, b[2] = { 0.0f, -0.0f }, o;
    assert_int_equal(nf_one(RD_OP_MAX, RD_FLOAT32, 18, 1, s2, a, &o, &err, -1),
                     0);
    assert_true(o == 0 && !signbit(o));
    assert_int_equal(nf_one(RD_OP_MAX, RD_FLOAT32, 18, 1, s2, b, &o, &err, -1),
                     0);
    assert_true(o == 0 && !signbit(o));
    assert_int_equal(nf_one(RD_OP_MIN, RD_FLOAT32, 18, 1, s2, a, &o, &err, -1),
                     0);
    assert_true(o == 0 && signbit(o));
  }
}

/* Multi-part plans of the new ops: identical bits every way, and checked. */
static void test_ops_big(void **state)
{
  static const struct {
    int op, dt;
    int64_t shape[2];
    int64_t axis;
  } bc[] = {
    { RD_OP_SUM, RD_FLOAT32, { 1100003, 3 }, 0 },
    { RD_OP_ARGMAX, RD_FLOAT32, { 1100003, 3 }, 0 },
    { RD_OP_ARGMIN, RD_INT32, { 3, 1100003 }, 1 },
    { RD_OP_MAX, RD_FLOAT64, { 600001, 2 }, 0 },
    { RD_OP_PROD, RD_FLOAT64, { 600001, 2 }, 0 },
    { RD_OP_LOG_SUM_EXP, RD_FLOAT32, { 1100003, 2 }, 0 },
    { RD_OP_MEAN, RD_INT64, { 600001, 2 }, 0 },
    { RD_OP_LOG_SUM_EXP, RD_INT32, { 1100003, 2 }, 0 },
    /* long float32 runs: the block loops (ties, sparse NaNs) */
    { RD_OP_ARGMAX, RD_FLOAT32, { 3, 400001 }, 1 },
    { RD_OP_ARGMIN, RD_FLOAT32, { 3, 400001 }, -1 },
    { RD_OP_MAX, RD_FLOAT32, { 3, 400001 }, 1 },
    { RD_OP_MIN, RD_FLOAT32, { 2, 700001 }, 1 },
    { RD_OP_ARGMAX, RD_FLOAT32, { 1, 1100003 }, 1 },
    { RD_OP_PROD, RD_FLOAT32, { 2, 600001 }, 1 },
  };
  struct rng r;
  (void)state;
  rng_seed(&r, 4242);
  for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++) {
    struct nf_case c;
    struct rd_plan pl;
    struct rd_error err;
    memset(&c, 0, sizeof c);
    rd_params_init(&c.p);
    c.p.op = bc[i].op;
    c.p.dtype = bc[i].dt;
    c.p.opset = rd_op_info(bc[i].op)->is_arg ? 13 : 18;
    c.p.rank = 2;
    c.shape[0] = bc[i].shape[0];
    c.shape[1] = bc[i].shape[1];
    c.p.shape = c.shape;
    c.p.axes = c.axes;
    if (rd_op_info(bc[i].op)->is_arg) {
      c.p.axis = bc[i].axis;
      if (i % 2)
        c.p.select_last_index = 1;
    } else {
      c.axes[0] = bc[i].axis;
      c.p.naxes = 1;
    }
    c.t = nf_type_of(c.p.dtype);
    c.count = (uint64_t)(c.shape[0] * c.shape[1]);
    c.in = malloc((size_t)(c.count * c.t->size));
    assert_non_null(c.in);
    for (uint64_t e = 0; e < c.count; e++) {
      uint64_t b = bc[i].op == RD_OP_PROD && c.p.dtype == RD_FLOAT32
                     ? (nf_gen(&r, c.t, 0) % 3 ? 0x3f800001u : 0x3f7fffffu)
                   : bc[i].op == RD_OP_PROD ? nf_gen(&r, c.t, 0) % 2
                                                ? 0x3ff0000000000100ull
                                                : 0x3fefffffffffff00ull
                                            : nf_gen(&r, c.t,
                                                     e % 100003 == 7 ? 1
                                                     : i >= 8        ? 3
                                                                     : 0);
      memcpy(c.in + e * c.t->size, &b, c.t->size);
    }
    snprintf(c.desc, sizeof c.desc, "big %s %s", rd_op_name(c.p.op),
             rd_dtype_name(c.p.dtype));
    assert_int_equal(rd_plan_init(&pl, &c.p, &err), 0);
    assert_true(pl.nparts > 1 || i >= 8);
    assert_int_equal(nf_check(&c, &r), 0);
    free(c.in);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_selfcheck_compare),
    cmocka_unit_test(test_selfcheck_reference),
    cmocka_unit_test(test_random_cases),
    cmocka_unit_test(test_random_big_cases),
    cmocka_unit_test(test_large_determinism),
    cmocka_unit_test(test_accuracy_1e7),
    cmocka_unit_test(test_ops_controls),
    cmocka_unit_test(test_ops_semantics),
    cmocka_unit_test(test_ops_random),
    cmocka_unit_test(test_ops_big),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
