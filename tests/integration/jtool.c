/* jtool.c - the JSON helper of the integration tests (jq is not on CI).
 *
 *   jtool get  FILE PATH          print the value at PATH (strings raw, the
 *                                 rest as compact JSON); exit 1 if absent
 *   jtool type FILE PATH          object|array|string|integer|real|true|false|null
 *   jtool keys FILE PATH          the keys of an object, sorted, one line
 *   jtool eq   FILE EXPECTED [MODE]
 *                                 structural equality with the JSON text
 *                                 EXPECTED; key order is ignored; without
 *                                 MODE integers compare exactly and other
 *                                 numbers as doubles; under MODE every
 *                                 number is a double and:
 *                                   float32|float16|bfloat16  both sides
 *                                     rounded (nearest even) to that type
 *                                   rel=TOL   |a-e| <= TOL*|e|
 *   jtool opscheck FILE .         the /v1/ops body, read structurally: the
 *                                 arrays made only of dtype names must be
 *                                 8 (2 ops x 4 versions): 4 of the 7 types
 *                                 without bfloat16, 4 of all 8
 *   jtool fuzz SEED COUNT DIR     write COUNT random requests DIR/N.req
 *                                 (ranks 0-4, dims 0-3, random axes,
 *                                 keepdims, op, dtype) with the answer of
 *                                 an independent naive reference in
 *                                 DIR/N.exp and the compare MODE in DIR/N.mode
 *   jtool shortest FILE DTYPE     every number in the "data" array of FILE
 *                                 (raw text) has no more significant digits
 *                                 than the shortest decimal that reads back
 *                                 (strtod, then rounding to DTYPE) to it
 *   jtool gen  OP DTYPE N SCALE [EXTRA]
 *                                 print a request whose data has N elements,
 *                                 element i = SCALE*((i % 7) - 3); EXTRA is
 *                                 raw JSON members inserted before "input"
 *
 * PATH is dot-separated, array indices in decimal ("output.data.0"); "." is
 * the root.  Exit status: 0 yes/ok, 1 no/mismatch (reason on stdout),
 * 2 usage or unreadable JSON.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

enum cmp_mode { CMP_EXACT, CMP_F32, CMP_F16, CMP_BF16, CMP_REL };

struct cmp {
  enum cmp_mode mode;
  double rel;
};

static json_t *load_file(const char *path)
{
  json_error_t e;
  json_t *j = json_load_file(path, JSON_DECODE_ANY, &e);
  if (!j)
    printf("invalid JSON in %s: %s (line %d col %d)\n", path, e.text, e.line,
           e.column);
  return j;
}

/* Walks PATH; NULL if a step is missing. */
static json_t *walk(json_t *j, const char *path)
{
  if (strcmp(path, ".") == 0 || *path == '\0')
    return j;
  char *copy = strdup(path);
  char *save = NULL;
  for (char *tok = strtok_r(copy, ".", &save); tok && j;
       tok = strtok_r(NULL, ".", &save)) {
    if (json_is_object(j)) {
      j = json_object_get(j, tok);
    } else if (json_is_array(j)) {
      char *end;
      errno = 0;
      unsigned long i = strtoul(tok, &end, 10);
      j = (*end || errno) ? NULL : json_array_get(j, i);
    } else {
      j = NULL;
    }
  }
  free(copy);
  return j;
}

/* Rounds to a binary format with `p` stored mantissa bits and exponents
 * [emin, emax], nearest even, directly from the double (no double rounding). */
static double round_bin(double x, int p, int emin, int emax)
{
  if (isnan(x) || isinf(x) || x == 0)
    return x;
  int e;
  frexp(fabs(x), &e);
  int lead = e - 1;
  if (lead < emin)
    lead = emin;
  double q = ldexp(1.0, lead - p);
  double r = nearbyint(x / q) * q;
  if (fabs(r) >= ldexp(1.0, emax + 1))
    return copysign(INFINITY, x);
  return r;
}

static double apply_mode(const struct cmp *c, double x)
{
  switch (c->mode) {
  case CMP_F32: return (double)(float)x;
  case CMP_F16: return round_bin(x, 10, -14, 15);
  case CMP_BF16: return round_bin(x, 7, -126, 127);
  default: return x;
  }
}

static int equal(json_t *a, json_t *e, const struct cmp *c, const char *path)
{
  char sub[512];
  if (json_is_number(a) && json_is_number(e)) {
    if (c->mode == CMP_EXACT && json_is_integer(a) && json_is_integer(e)) {
      if (json_integer_value(a) == json_integer_value(e))
        return 1;
    } else {
      double x = apply_mode(c, json_number_value(a));
      double y = apply_mode(c, json_number_value(e));
      if (c->mode == CMP_REL ? fabs(x - y) <= c->rel * fabs(y) : x == y)
        return 1;
    }
    printf("at %s: got %.17g, expected %.17g\n", path, json_number_value(a),
           json_number_value(e));
    return 0;
  }
  if (json_typeof(a) != json_typeof(e)) {
    char *sa = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
    char *se = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY);
    printf("at %s: got %.200s, expected %.200s\n", path, sa ? sa : "?",
           se ? se : "?");
    free(sa);
    free(se);
    return 0;
  }
  switch (json_typeof(a)) {
  case JSON_STRING:
    if (strcmp(json_string_value(a), json_string_value(e)) == 0)
      return 1;
    printf("at %s: got \"%.200s\", expected \"%.200s\"\n", path,
           json_string_value(a), json_string_value(e));
    return 0;
  case JSON_ARRAY:
    if (json_array_size(a) != json_array_size(e)) {
      printf("at %s: got %zu elements, expected %zu\n", path,
             json_array_size(a), json_array_size(e));
      return 0;
    }
    for (size_t i = 0; i < json_array_size(a); i++) {
      snprintf(sub, sizeof sub, "%s.%zu", path, i);
      if (!equal(json_array_get(a, i), json_array_get(e, i), c, sub))
        return 0;
    }
    return 1;
  case JSON_OBJECT: {
    const char *k;
    json_t *v;
    json_object_foreach(e, k, v)
    {
      snprintf(sub, sizeof sub, "%s.%s", path, k);
      json_t *av = json_object_get(a, k);
      if (!av) {
        printf("at %s: missing\n", sub);
        return 0;
      }
      if (!equal(av, v, c, sub))
        return 0;
    }
    json_object_foreach(a, k, v)
    {
      if (!json_object_get(e, k)) {
        printf("at %s.%s: unexpected member\n", path, k);
        return 0;
      }
    }
    return 1;
  }
  default: return 1; /* true, false, null: same type is equal */
  }
}

static int cmp_keys(const void *x, const void *y)
{
  return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int cmd_keys(json_t *v)
{
  if (!json_is_object(v))
    return 1;
  size_t n = json_object_size(v), i = 0;
  const char **keys = calloc(n ? n : 1, sizeof *keys);
  const char *k;
  json_t *x;
  json_object_foreach(v, k, x) keys[i++] = k;
  qsort(keys, n, sizeof *keys, cmp_keys);
  for (i = 0; i < n; i++)
    printf("%s%s", i ? " " : "", keys[i]);
  printf("\n");
  free(keys);
  return 0;
}

static int cmd_gen(int argc, char **argv)
{
  if (argc < 6)
    return 2;
  unsigned long long n = strtoull(argv[4], NULL, 10);
  long long scale = strtoll(argv[5], NULL, 10);
  printf("{\"op\":\"%s\",%s\"input\":{\"dtype\":\"%s\",\"shape\":[%llu],"
         "\"data\":[",
         argv[2], argc > 6 ? argv[6] : "", argv[3], n);
  for (unsigned long long i = 0; i < n; i++)
    printf(i ? ",%lld" : "%lld", scale * ((long long)(i % 7) - 3));
  printf("]}}\n");
  return fflush(stdout) ? 2 : 0;
}

static const char *const dtypes[] = { "float32",  "float64", "float16",
                                      "bfloat16", "int32",   "int64",
                                      "uint32",   "uint64" };

static int is_dtype(json_t *v)
{
  if (!json_is_string(v))
    return 0;
  for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
    if (strcmp(json_string_value(v), dtypes[i]) == 0)
      return 1;
  return 0;
}

/* Counts dtype-name arrays by kind: n7 (all but bfloat16), n8 (all 8),
 * other (any other dtype-only array). */
static void ops_walk(json_t *v, int *n7, int *n8, int *other)
{
  const char *k;
  json_t *x;
  size_t i;
  if (json_is_object(v)) {
    json_object_foreach(v, k, x) ops_walk(x, n7, n8, other);
  } else if (json_is_array(v)) {
    int all = json_array_size(v) > 0, bf = 0;
    json_array_foreach(v, i, x)
    {
      if (!is_dtype(x))
        all = 0;
      else if (strcmp(json_string_value(x), "bfloat16") == 0)
        bf = 1;
    }
    if (all) {
      size_t n = json_array_size(v);
      if (n == 7 && !bf)
        (*n7)++;
      else if (n == 8 && bf)
        (*n8)++;
      else
        (*other)++;
    } else {
      json_array_foreach(v, i, x) ops_walk(x, n7, n8, other);
    }
  }
}

/* ---- fuzz: random requests and a naive reference for them ---- */

static unsigned long long fz_state;

static unsigned fz_rand(unsigned n)
{
  /* xorshift64*: deterministic per seed, independent of libc */
  fz_state ^= fz_state >> 12;
  fz_state ^= fz_state << 25;
  fz_state ^= fz_state >> 27;
  return (unsigned)((fz_state * 2685821657736338717ULL) >> 33) % n;
}

/* One random case: writes the request and the expected body. */
static int fuzz_case(const char *dir, int idx)
{
  static const char *const dts[] = { "float32",  "float64", "float16",
                                     "bfloat16", "int32",   "int64",
                                     "uint32",   "uint64" };
  const char *dt = dts[fz_rand(8)];
  int is_int = dt[0] == 'i' || dt[0] == 'u', is_uns = dt[0] == 'u';
  int l2 = fz_rand(2), keep = fz_rand(2);
  int rank = (int)fz_rand(5);
  long dims[4], n = 1;
  for (int d = 0; d < rank; d++) {
    dims[d] = fz_rand(8) == 0 ? 0 : 1 + fz_rand(3);
    n *= dims[d];
  }
  /* axes: a random subset, each axis written positive or negative; an empty
   * subset is sent as [] or omitted, meaning all axes */
  int red[4] = { 0, 0, 0, 0 }, nax = 0;
  char axes[64] = "";
  size_t al = 0;
  for (int d = 0; d < rank; d++) {
    if (fz_rand(2)) {
      red[d] = 1;
      al += (size_t)snprintf(axes + al, sizeof axes - al, "%s%d",
                             nax ? "," : "", fz_rand(2) ? d : d - rank);
      nax++;
    }
  }
  int omit_axes = nax == 0 && fz_rand(2);
  if (nax == 0)
    for (int d = 0; d < rank; d++)
      red[d] = 1;
  /* data: multiples of 1/8 (floats) or small integers, so every square and
   * every partial sum is exact in a double or an integer */
  long *iv = calloc((size_t)n + 1, sizeof *iv);
  for (long k = 0; k < n; k++)
    iv[k] = is_uns ? (long)fz_rand(60) : (long)fz_rand(121) - 60;
  long odims[4], on = 1;
  int orank = 0;
  for (int d = 0; d < rank; d++) {
    if (!red[d])
      odims[orank++] = dims[d];
    else if (keep)
      odims[orank++] = 1;
    on *= red[d] ? 1 : dims[d];
  }
  long double *acc = calloc((size_t)on + 1, sizeof *acc);
  for (long k = 0; k < n; k++) {
    long rest = k, o = 0, stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
      long c = rest % dims[d];
      rest /= dims[d];
      if (!red[d]) {
        o += c * stride;
        stride *= dims[d];
      }
    }
    long double x = is_int ? (long double)iv[k] : (long double)iv[k] / 8;
    acc[o] += x * x;
  }
  char path[4096];
  FILE *f;
  snprintf(path, sizeof path, "%s/%d.req", dir, idx);
  if (!(f = fopen(path, "w")))
    return -1;
  fprintf(f, "{\"op\":\"%s\",\"keepdims\":%s,",
          l2 ? "ReduceL2" : "ReduceSumSquare",
          fz_rand(2) ? (keep ? "1" : "0") : (keep ? "true" : "false"));
  if (!omit_axes)
    fprintf(f, "\"axes\":[%s],", axes);
  fprintf(f, "\"input\":{\"dtype\":\"%s\",\"shape\":[", dt);
  for (int d = 0; d < rank; d++)
    fprintf(f, "%s%ld", d ? "," : "", dims[d]);
  fprintf(f, "],\"data\":[");
  for (long k = 0; k < n; k++) {
    if (is_int)
      fprintf(f, "%s%ld", k ? "," : "", iv[k]);
    else
      fprintf(f, "%s%g", k ? "," : "", (double)iv[k] / 8);
  }
  fprintf(f, "]}}\n");
  fclose(f);
  snprintf(path, sizeof path, "%s/%d.exp", dir, idx);
  if (!(f = fopen(path, "w")))
    return -1;
  fprintf(
    f,
    "{\"op\":\"%s\",\"opset\":18,\"op_version\":18,\"output\":{\"dtype\":\"%s\",\"shape\":[",
    l2 ? "ReduceL2" : "ReduceSumSquare", dt);
  for (int d = 0; d < orank; d++)
    fprintf(f, "%s%ld", d ? "," : "", odims[d]);
  fprintf(f, "],\"data\":[");
  for (long o = 0; o < on; o++) {
    long double v = acc[o];
    if (is_int) {
      /* exact: integer sums, floor of the root by correction */
      long long sum = (long long)v, r = (long long)sqrtl(v);
      while (r * r > sum)
        r--;
      while ((r + 1) * (r + 1) <= sum)
        r++;
      fprintf(f, "%s%lld", o ? "," : "", l2 ? r : sum);
    } else {
      fprintf(f, "%s%.21Lg", o ? "," : "", l2 ? sqrtl(v) : v);
    }
  }
  fprintf(f, "]}}\n");
  fclose(f);
  snprintf(path, sizeof path, "%s/%d.mode", dir, idx);
  if (!(f = fopen(path, "w")))
    return -1;
  fprintf(f, "%s\n",
          strcmp(dt, "float64") == 0 ? "rel=1e-15"
          : is_int                   ? ""
                                     : dt);
  fclose(f);
  free(iv);
  free(acc);
  return 0;
}

/* Significant digits of a decimal token ("0.00250" -> 2, "250000" -> 2). */
static int sig_digits(const char *t, size_t len)
{
  char d[64];
  size_t n = 0;
  for (size_t k = 0; k < len && (t[k] != 'e' && t[k] != 'E'); k++)
    if (t[k] >= '0' && t[k] <= '9' && n < sizeof d)
      d[n++] = t[k];
  size_t a = 0, b = n;
  while (a < b && d[a] == '0')
    a++;
  while (b > a && d[b - 1] == '0')
    b--;
  return (int)(b - a);
}

static int cmd_shortest(const char *file, const char *dtype)
{
  struct cmp c = { CMP_EXACT, 0 };
  if (strcmp(dtype, "float32") == 0)
    c.mode = CMP_F32;
  else if (strcmp(dtype, "float16") == 0)
    c.mode = CMP_F16;
  else if (strcmp(dtype, "bfloat16") == 0)
    c.mode = CMP_BF16;
  FILE *f = fopen(file, "rb");
  if (!f)
    return 2;
  static char buf[1 << 20];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[len] = '\0';
  char *p = strstr(buf, "\"data\"");
  if (!p || !(p = strchr(p, '[')))
    return 2;
  int bad = 0;
  for (p++; *p && *p != ']';) {
    while (*p == ' ' || *p == ',' || *p == '\n')
      p++;
    char *end = p;
    while (*end && *end != ',' && *end != ']' && *end != ' ')
      end++;
    if (*p != '"' && end > p) {
      double v = apply_mode(&c, strtod(p, NULL));
      int need = 17;
      for (int prec = 1; prec <= 17; prec++) {
        char t[64];
        snprintf(t, sizeof t, "%.*e", prec - 1, v);
        if (apply_mode(&c, strtod(t, NULL)) == v) {
          need = prec;
          break;
        }
      }
      int have = sig_digits(p, (size_t)(end - p));
      if (v != 0 && have > need) {
        printf("%.*s has %d significant digits; %d suffice for %s\n",
               (int)(end - p), p, have, need, dtype);
        bad = 1;
      }
    }
    p = end;
  }
  return bad;
}

static const char *type_name(json_t *v)
{
  static const char *names[] = { "object", "array", "string", "integer",
                                 "real",   "true",  "false",  "null" };
  return names[json_typeof(v)];
}

int main(int argc, char **argv)
{
  if (argc >= 2 && strcmp(argv[1], "gen") == 0)
    return cmd_gen(argc, argv);
  if (argc == 4 && strcmp(argv[1], "shortest") == 0)
    return cmd_shortest(argv[2], argv[3]);
  if (argc == 5 && strcmp(argv[1], "fuzz") == 0) {
    fz_state = strtoull(argv[2], NULL, 10) * 0x9E3779B97F4A7C15ULL + 1;
    for (int k = 0; k < atoi(argv[3]); k++)
      if (fuzz_case(argv[4], k))
        return 2;
    return 0;
  }
  if (argc < 4) {
    fprintf(stderr,
            "usage: jtool get|type|keys FILE PATH | eq FILE EXPECTED [MODE]"
            " | gen OP DTYPE N SCALE [EXTRA]\n");
    return 2;
  }
  json_t *doc = load_file(argv[2]);
  if (!doc)
    return 2;
  int rc = 1;
  if (strcmp(argv[1], "eq") == 0) {
    struct cmp c = { CMP_EXACT, 0 };
    const char *m = argc > 4 ? argv[4] : "";
    if (strcmp(m, "float32") == 0)
      c.mode = CMP_F32;
    else if (strcmp(m, "float16") == 0)
      c.mode = CMP_F16;
    else if (strcmp(m, "bfloat16") == 0)
      c.mode = CMP_BF16;
    else if (strncmp(m, "rel=", 4) == 0) {
      c.mode = CMP_REL;
      c.rel = atof(m + 4);
    } else if (*m) {
      fprintf(stderr, "jtool: bad mode %s\n", m);
      return 2;
    }
    json_error_t e;
    json_t *exp = json_loads(argv[3], JSON_DECODE_ANY, &e);
    if (!exp) {
      fprintf(stderr, "jtool: bad expected JSON: %s\n", e.text);
      return 2;
    }
    rc = equal(doc, exp, &c, "$") ? 0 : 1;
    json_decref(exp);
  } else {
    json_t *v = walk(doc, argv[3]);
    if (!v) {
      printf("(absent)\n");
    } else if (strcmp(argv[1], "get") == 0) {
      if (json_is_string(v)) {
        printf("%s\n", json_string_value(v));
      } else {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY |
                                  JSON_REAL_PRECISION(17));
        printf("%s\n", s ? s : "");
        free(s);
      }
      rc = 0;
    } else if (strcmp(argv[1], "type") == 0) {
      printf("%s\n", type_name(v));
      rc = 0;
    } else if (strcmp(argv[1], "keys") == 0) {
      rc = cmd_keys(v);
    } else if (strcmp(argv[1], "opscheck") == 0) {
      int n7 = 0, n8 = 0, other = 0;
      ops_walk(v, &n7, &n8, &other);
      printf(
        "dtype lists: %d without bfloat16 (7 types), %d with all 8, %d other\n",
        n7, n8, other);
      rc = (n7 == 4 && n8 == 4 && other == 0) ? 0 : 1;
    } else {
      rc = 2;
    }
  }
  json_decref(doc);
  return rc;
}
