/* bench.c - kernel benchmark: libreduce against the machine's read bandwidth.
 *
 *   bench/bench [--json] [--runs N] [--threads N] [--case NAME]
 *
 * For each case (a 256 MiB float32 tensor and an axis pattern, plus other
 * dtypes for cases A and C) it times rd_exec_* on one thread and on all
 * threads, takes the median of --runs runs after a warm-up, and reports the
 * input read rate in GB/s and as a percentage of a read-bandwidth probe
 * measured by this program in the same run: a plain multi-accumulator sum of
 * squares over an equally large buffer, which is the physical limit for a
 * reduction that reads its input once.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "f16.h"
#include "reduce.h"

#define MIB (1024u * 1024u)
#define BUF_BYTES (256u * MIB)

struct bench_case {
  const char *name;
  int dtype;
  size_t rank;
  int64_t shape[3];
  size_t naxes;
  int64_t axes[2];
};

/* A-F are the float32 cases of the performance issue; the dtype variants
 * keep the shapes of A and C. */
static const struct bench_case cases[] = {
  {"A", RD_FLOAT32, 1, {67108864}, 0, {0}},
  {"B", RD_FLOAT32, 2, {8192, 8192}, 1, {1}},
  {"C", RD_FLOAT32, 2, {8192, 8192}, 1, {0}},
  {"D", RD_FLOAT32, 3, {256, 512, 512}, 1, {1}},
  {"E", RD_FLOAT32, 3, {512, 512, 256}, 2, {0, 2}},
  {"F", RD_FLOAT32, 2, {4194304, 16}, 1, {1}},
  {"A", RD_FLOAT16, 1, {67108864}, 0, {0}},
  {"C", RD_FLOAT16, 2, {8192, 8192}, 1, {0}},
  {"A", RD_BFLOAT16, 1, {67108864}, 0, {0}},
  {"C", RD_BFLOAT16, 2, {8192, 8192}, 1, {0}},
  {"A", RD_FLOAT64, 1, {67108864}, 0, {0}},
  {"C", RD_FLOAT64, 2, {8192, 8192}, 1, {0}},
  {"A", RD_INT32, 1, {67108864}, 0, {0}},
  {"C", RD_INT32, 2, {8192, 8192}, 1, {0}},
};

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* xorshift64*: reproducible data without libc's rand(). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

static double rng_unit(void)  /* uniform in [-1, 1) */
{
  return (double)(rng_next() >> 11) * 0x1p-52 - 1.0;
}

static void fill(void *buf, int dtype, uint64_t count)
{
  for (uint64_t i = 0; i < count; i++) {
    double v = rng_unit() * 10.0;
    switch (dtype) {
    case RD_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case RD_FLOAT64: ((double *)buf)[i] = v; break;
    case RD_FLOAT16: ((uint16_t *)buf)[i] = rd_f64_to_f16(v); break;
    case RD_BFLOAT16: ((uint16_t *)buf)[i] = rd_f64_to_bf16(v); break;
    case RD_INT32: ((int32_t *)buf)[i] = (int32_t)(v * 1000.0); break;
    default: break;
    }
  }
}

/* ---- the read-bandwidth probe ---------------------------------------- */

struct probe_arg {
  const float *p;
  size_t n;
  double result;
};

/* Four independent 8-float vector accumulators (GCC vector extensions, so
 * the loop is vectorised whatever the optimisation level), so the loop is
 * limited by loads, not by the latency of add chains; float accumulators keep
 * it as cheap as a read can be, and it prefetches 2 KiB ahead as the kernels
 * do (this machine's hardware prefetcher alone leaves bandwidth unused).
 * Built twice: for the baseline ISA and for AVX2, picked at run time like the
 * kernels. */
typedef float v8sf __attribute__((vector_size(32)));

#define PROBE_BODY                                                    \
  struct probe_arg *a = argp;                                         \
  v8sf acc0 = {0}, acc1 = {0}, acc2 = {0}, acc3 = {0};                \
  size_t i = 0;                                                       \
  for (; i + 32 <= a->n; i += 32) {                                   \
    v8sf x0, x1, x2, x3;                                              \
    __builtin_prefetch(a->p + i + 512);                               \
    __builtin_prefetch(a->p + i + 528);                               \
    memcpy(&x0, a->p + i, sizeof x0);                                 \
    memcpy(&x1, a->p + i + 8, sizeof x1);                             \
    memcpy(&x2, a->p + i + 16, sizeof x2);                            \
    memcpy(&x3, a->p + i + 24, sizeof x3);                            \
    acc0 += x0 * x0;                                                  \
    acc1 += x1 * x1;                                                  \
    acc2 += x2 * x2;                                                  \
    acc3 += x3 * x3;                                                  \
  }                                                                   \
  v8sf acc = (acc0 + acc1) + (acc2 + acc3);                           \
  double s = 0;                                                       \
  for (int k = 0; k < 8; k++)                                         \
    s += acc[k];                                                      \
  for (; i < a->n; i++)                                               \
    s += a->p[i] * a->p[i];                                           \
  a->result = s;                                                      \
  return NULL;

static void *probe_run_base(void *argp) { PROBE_BODY }
#if defined(__x86_64__)
__attribute__((target("avx2"))) static void *probe_run_avx2(void *argp) { PROBE_BODY }
#endif

static void *probe_run(void *argp)
{
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2"))
    return probe_run_avx2(argp);
#endif
  return probe_run_base(argp);
}

static double probe_once(const float *p, size_t n, int threads)
{
  pthread_t tid[64];
  struct probe_arg args[64];
  size_t per = n / (size_t)threads;
  double t0 = now_s();
  for (int t = 0; t < threads; t++) {
    args[t].p = p + (size_t)t * per;
    args[t].n = t == threads - 1 ? n - (size_t)t * per : per;
    if (t == 0)
      continue;
    pthread_create(&tid[t], NULL, probe_run, &args[t]);
  }
  probe_run(&args[0]);
  for (int t = 1; t < threads; t++)
    pthread_join(tid[t], NULL);
  double dt = now_s() - t0;
  volatile double sink = 0;
  for (int t = 0; t < threads; t++)
    sink += args[t].result;
  (void)sink;
  return dt;
}

/* Median probe rate in GB/s for `bytes` on `threads`, measured on first use
 * (a warm-up, then `runs` timed runs in scratch `t`) and cached. */
static double probe_gbs(const float *buf, uint64_t bytes, int threads, int runs,
                        double *t, int json)
{
  static struct probe_entry { uint64_t bytes; int threads; double gbs; } cache[16];
  static int ncache;
  for (int i = 0; i < ncache; i++)
    if (cache[i].bytes == bytes && cache[i].threads == threads)
      return cache[i].gbs;
  size_t n = (size_t)(bytes / sizeof(float));
  probe_once(buf, n, threads);
  for (int r = 0; r < runs; r++)
    t[r] = probe_once(buf, n, threads);
  double gbs = (double)bytes / median(t, runs) / 1e9;
  if (ncache < 16)
    cache[ncache++] = (struct probe_entry){bytes, threads, gbs};
  if (json)
    printf("{\"probe\":true,\"bytes\":%llu,\"threads\":%d,\"gbs\":%.2f}\n",
           (unsigned long long)bytes, threads, gbs);
  else
    printf("# read-bandwidth probe over %llu MiB on %d thread%s: %.2f GB/s\n",
           (unsigned long long)(bytes >> 20), threads, threads > 1 ? "s" : "", gbs);
  return gbs;
}

/* ---- running a plan on N threads ------------------------------------- */

struct worker {
  struct rd_exec *ex;
  const void *in;
  size_t nparts;
  size_t next;          /* shared part counter, protected by mu */
  pthread_mutex_t mu;
  int rc;
};

static void *worker_run(void *argp)
{
  struct worker *w = argp;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    size_t part = w->next++;
    pthread_mutex_unlock(&w->mu);
    if (part >= w->nparts)
      return NULL;
    if (rd_exec_part(w->ex, part, w->in) != 0)
      w->rc = -1;
  }
}

static int run_plan(const struct rd_plan *plan, const void *in, void *out,
                    int threads, double *seconds)
{
  struct rd_exec *ex;
  struct rd_error err;
  double t0 = now_s();
  if (rd_exec_create(plan, &ex) != 0)
    return -1;
  struct worker w = {ex, in, plan->nparts, 0, PTHREAD_MUTEX_INITIALIZER, 0};
  pthread_t tid[64];
  for (int t = 1; t < threads; t++)
    pthread_create(&tid[t], NULL, worker_run, &w);
  worker_run(&w);
  for (int t = 1; t < threads; t++)
    pthread_join(tid[t], NULL);
  int rc = w.rc ? w.rc : rd_exec_finish(ex, out, &err);
  rd_exec_destroy(ex);
  *seconds = now_s() - t0;
  return rc;
}

/* ---- main ------------------------------------------------------------ */

static void usage(FILE *f)
{
  fprintf(f, "usage: bench [--json] [--runs N] [--threads N] [--case NAME]\n"
             "  --json        one JSON object per line instead of a table\n"
             "  --runs N      timed runs per figure, median reported (default 7)\n"
             "  --threads N   the 'all threads' count (default: CPUs online)\n"
             "  --case NAME   only cases named NAME (A..F)\n");
}

int main(int argc, char **argv)
{
  int json = 0, runs = 7;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = ncpu > 0 ? (int)ncpu : 1;
  const char *only = NULL;

  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--case") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (runs < 1 || runs > 1000 || threads < 1 || threads > 64) {
    usage(stderr);
    return 2;
  }

  /* Twice the largest input so float64 cases of the same shape fit. */
  size_t cap = 2 * (size_t)BUF_BYTES;
  void *in = aligned_alloc(64, cap);
  void *out = aligned_alloc(64, 64 * MIB);
  if (!in || !out) {
    fprintf(stderr, "bench: cannot allocate %zu bytes\n", cap);
    return 1;
  }
  memset(out, 0, 64 * MIB);

  /* The probe reads a buffer of its own, as large as the case's input (the
   * float16 and float64 cases differ from the 256 MiB float32 ones), so each
   * case is compared with reading the same number of bytes.  Each size is
   * measured once per thread count, when a case first needs it. */
  float *probe_buf = aligned_alloc(64, cap);
  if (!probe_buf) {
    fprintf(stderr, "bench: cannot allocate %zu bytes\n", cap);
    return 1;
  }
  fill(probe_buf, RD_FLOAT32, cap / sizeof(float));
  int probe_threads[2] = {1, threads};
  double *t = calloc((size_t)runs, sizeof(double));
  if (!json)
    printf("%-4s %-9s %-16s %-18s %-7s %6s %9s %8s %6s %5s %8s\n", "case", "dtype", "shape",
           "axes", "op", "thr", "median_ms", "GB/s", "%probe", "parts", "probe");

  int failed = 0;
  static const int ops[2] = {RD_OP_L2, RD_OP_SUM_SQUARE};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    const struct bench_case *bc = &cases[c];
    if (only && strcmp(only, bc->name))
      continue;
    struct rd_params p;
    rd_params_init(&p);
    p.dtype = bc->dtype;
    p.rank = bc->rank;
    p.shape = bc->shape;
    p.axes = bc->axes;
    p.naxes = bc->naxes;
    p.keepdims = 0;
    p.overflow = RD_OVERFLOW_SATURATE;
    uint64_t count = 0;
    rd_shape_count(bc->rank, bc->shape, 0, &count, NULL);
    fill(in, bc->dtype, count);

    char shape[64], axes[32];
    int n = snprintf(shape, sizeof(shape), "[");
    for (size_t d = 0; d < bc->rank; d++)
      n += snprintf(shape + n, sizeof(shape) - (size_t)n, "%s%lld", d ? "," : "",
                    (long long)bc->shape[d]);
    snprintf(shape + n, sizeof(shape) - (size_t)n, "]");
    n = snprintf(axes, sizeof(axes), "[");
    for (size_t d = 0; d < bc->naxes; d++)
      n += snprintf(axes + n, sizeof(axes) - (size_t)n, "%s%lld", d ? "," : "",
                    (long long)bc->axes[d]);
    snprintf(axes + n, sizeof(axes) - (size_t)n, "]%s", bc->naxes ? "" : " (all)");

    for (int o = 0; o < 2; o++) {
      struct rd_plan plan;
      struct rd_error err;
      p.op = ops[o];
      if (rd_plan_init(&plan, &p, &err) != 0) {
        fprintf(stderr, "bench: case %s: %s\n", bc->name, err.msg);
        failed = 1;
        continue;
      }
      for (int m = 0; m < 2; m++) {
        int thr = probe_threads[m];
        double dt;
        if (run_plan(&plan, in, out, thr, &dt) != 0) {  /* warm-up */
          fprintf(stderr, "bench: case %s failed\n", bc->name);
          failed = 1;
          break;
        }
        for (int r = 0; r < runs; r++)
          run_plan(&plan, in, out, thr, &t[r]);
        double med = median(t, runs);
        double gbs = (double)plan.in_bytes / med / 1e9;
        double probe = probe_gbs(probe_buf, plan.in_bytes, thr, runs, t, json);
        double pct = 100.0 * gbs / probe;
        if (json)
          printf("{\"case\":\"%s\",\"dtype\":\"%s\",\"shape\":\"%s\",\"axes\":\"%s\","
                 "\"op\":\"%s\",\"threads\":%d,\"median_ms\":%.3f,\"gbs\":%.2f,"
                 "\"pct_probe\":%.1f,\"probe_gbs\":%.2f,\"parts\":%zu,\"bytes\":%llu}\n",
                 bc->name, rd_dtype_name(bc->dtype), shape, axes, rd_op_name(p.op), thr,
                 med * 1e3, gbs, pct, probe, plan.nparts, (unsigned long long)plan.in_bytes);
        else
          printf("%-4s %-9s %-16s %-18s %-7s %6d %9.2f %8.2f %5.0f%% %5zu %8.2f\n", bc->name,
                 rd_dtype_name(bc->dtype), shape, axes,
                 p.op == RD_OP_L2 ? "L2" : "SumSq", thr, med * 1e3, gbs, pct, plan.nparts,
                 probe);
        fflush(stdout);
      }
    }
  }
  if (!json)
    printf("target: every float32 case (A-F) at >= 85%% of the probe on 1 and on %d threads\n",
           threads);
  free(t);
  free(probe_buf);
  free(in);
  free(out);
  return failed;
}
