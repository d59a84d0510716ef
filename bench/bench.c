/* bench.c - kernel benchmark: libreduce against the machine's read bandwidth.
 *
 *   bench/bench [--json] [--runs N] [--threads N] [--op NAME] [--case NAME]
 *
 * For every operator and case (a 256 MiB float32 tensor and an axis pattern,
 * A-F; ReduceL2 and ReduceSumSquare also in float64, float16, bfloat16,
 * int32, uint32, int64 and uint64, the same shapes)
 * it times rd_exec_* on one thread and on all threads, takes the median of
 * --runs runs after a warm-up, and reports the input read rate in GB/s and as
 * a percentage of a read-bandwidth probe run alternately with the figure's
 * runs, over as many bytes on as many threads: a plain multi-accumulator sum
 * of squares in the widest vectors the CPU has, which is the physical limit
 * for a reduction that reads its input once.  Each row is marked against its
 * target: 85% of the probe, 40% for ReduceProd and ReduceLogSumExp.
 *
 * ArgMax and ArgMin reduce one axis: the last reduced axis of the case (case
 * A, a full reduction, uses axis 0).  ReduceProd and ReduceLogSum read
 * positive data near 1 so that their results stay finite; the other
 * operators read uniform data in [-10, 10).  bench/ort.mjs generates the same
 * float32 values for ONNX Runtime.
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
#include "kernels.h"
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
/* The float32 cases; ReduceL2 and ReduceSumSquare also run each of them in
 * every type of other_dtypes[] (the same shape, so as many elements). */
static const struct bench_case cases[] = {
  { "A", RD_FLOAT32, 1, { 67108864 }, 0, { 0 } },
  { "B", RD_FLOAT32, 2, { 8192, 8192 }, 1, { 1 } },
  { "C", RD_FLOAT32, 2, { 8192, 8192 }, 1, { 0 } },
  { "D", RD_FLOAT32, 3, { 256, 512, 512 }, 1, { 1 } },
  { "E", RD_FLOAT32, 3, { 512, 512, 256 }, 2, { 0, 2 } },
  { "F", RD_FLOAT32, 2, { 4194304, 16 }, 1, { 1 } },
};

static const int other_dtypes[] = { RD_FLOAT64, RD_FLOAT16, RD_BFLOAT16,
                                    RD_INT32,   RD_UINT32,  RD_INT64,
                                    RD_UINT64 };

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

/* xorshift64*: reproducible data without libc's rand(); fill() restarts it,
 * so every input of a dtype starts with the same values (bench/ort.mjs runs
 * the same generator). */
#define RNG_SEED 0x9e3779b97f4a7c15ull
static uint64_t rng_state = RNG_SEED;
static uint64_t rng_next(void)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

static double rng_unit(void) /* uniform in [-1, 1) */
{
  return (double)(rng_next() >> 11) * 0x1p-52 - 1.0;
}

/* `count` elements of `dtype` from the start of the stream: uniform in
 * [-10, 10), or (`positive`) 1 + u * 1e-6 with u uniform in [-0.5, 0.5). */
static void fill(void *buf, int dtype, uint64_t count, int positive)
{
  rng_state = RNG_SEED;
  for (uint64_t i = 0; i < count; i++) {
    double v = positive
                 ? 1.0 + ((double)(rng_next() >> 11) * 0x1p-53 - 0.5) * 1e-6
                 : rng_unit() * 10.0;
    switch (dtype) {
    case RD_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case RD_FLOAT64: ((double *)buf)[i] = v; break;
    case RD_FLOAT16: ((uint16_t *)buf)[i] = rd_f64_to_f16(v); break;
    case RD_BFLOAT16: ((uint16_t *)buf)[i] = rd_f64_to_bf16(v); break;
    case RD_INT32: ((int32_t *)buf)[i] = (int32_t)(v * 1000.0); break;
    case RD_UINT32:
      ((uint32_t *)buf)[i] = (uint32_t)((v + 10.0) * 1000.0);
      break;
    case RD_INT64: ((int64_t *)buf)[i] = (int64_t)(v * 1000.0); break;
    case RD_UINT64:
      ((uint64_t *)buf)[i] = (uint64_t)((v + 10.0) * 1000.0);
      break;
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

/* Four independent vector accumulators of 16 floats (GCC vector extensions,
 * so the loop is vectorised whatever the optimisation level), so the loop is
 * limited by loads, not by the latency of add chains; float accumulators keep
 * it as cheap as a read can be, and it prefetches 2 KiB ahead as the kernels
 * do (this machine's hardware prefetcher alone leaves bandwidth unused).
 * probe_sum is inlined into one function per ISA and picked at run time: with
 * AVX-512 each accumulator is one register, as a user's own loop compiled for
 * the machine would use; with AVX2 two, with the baseline ISA four. */
typedef float v16sf __attribute__((vector_size(64)));

static inline __attribute__((always_inline)) void probe_sum(struct probe_arg *a)
{
  v16sf acc0 = { 0 }, acc1 = { 0 }, acc2 = { 0 }, acc3 = { 0 };
  size_t i = 0;
  for (; i + 64 <= a->n; i += 64) {
    v16sf x0, x1, x2, x3;
    __builtin_prefetch(a->p + i + 512);
    __builtin_prefetch(a->p + i + 528);
    __builtin_prefetch(a->p + i + 544);
    __builtin_prefetch(a->p + i + 560);
    memcpy(&x0, a->p + i, sizeof x0);
    memcpy(&x1, a->p + i + 16, sizeof x1);
    memcpy(&x2, a->p + i + 32, sizeof x2);
    memcpy(&x3, a->p + i + 48, sizeof x3);
    acc0 += x0 * x0;
    acc1 += x1 * x1;
    acc2 += x2 * x2;
    acc3 += x3 * x3;
  }
  v16sf acc = (acc0 + acc1) + (acc2 + acc3);
  double s = 0;
  for (int k = 0; k < 16; k++)
    s += acc[k];
  for (; i < a->n; i++)
    s += a->p[i] * a->p[i];
  a->result = s;
}

static void *probe_run_base(void *argp)
{
  probe_sum(argp);
  return NULL;
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) static void *probe_run_avx2(void *argp)
{
  probe_sum(argp);
  return NULL;
}
__attribute__((target("avx512f"))) static void *probe_run_avx512(void *argp)
{
  probe_sum(argp);
  return NULL;
}
#endif

/* The probe's variant: the widest this CPU has, or the one named by
 * `want` ("avx512f", "avx2", "baseline") if the CPU has it; NULL if not. */
static void *(*probe_pick(const char *want, const char **isa))(void *)
{
#if defined(__x86_64__)
  if ((!want || !strcmp(want, "avx512f")) &&
      __builtin_cpu_supports("avx512f")) {
    *isa = "avx512f";
    return probe_run_avx512;
  }
  if ((!want || !strcmp(want, "avx2")) && __builtin_cpu_supports("avx2")) {
    *isa = "avx2";
    return probe_run_avx2;
  }
#endif
  if (want && strcmp(want, "baseline"))
    return NULL;
  *isa = "baseline";
  return probe_run_base;
}

static void *(*probe_run)(void *);
static const char *probe_isa;

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

/* ---- running a plan on N threads ------------------------------------- */

struct worker {
  struct rd_exec *ex;
  const void *in;
  size_t nparts;
  size_t next; /* shared part counter, protected by mu */
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
  if (rd_exec_create_out(plan, out, &ex) != 0)
    return -1;
  struct worker w = { ex, in, plan->nparts, 0, PTHREAD_MUTEX_INITIALIZER, 0 };
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

#define MIN_RUNS 3 /* timed runs of a slow figure, at least */
#define SLOW_S 2.0 /* seconds after which a figure is slow */

/* ---- one row --------------------------------------------------------- */

/* The target in percent of the probe (issue 16: float32 and the types of
 * other_dtypes[]); 0: none (the 8- and 16-bit integers and bool). */
static int target_pct(int op, int dtype)
{
  int listed = dtype == RD_FLOAT32;
  for (size_t i = 0; i < sizeof other_dtypes / sizeof other_dtypes[0]; i++)
    listed |= dtype == other_dtypes[i];
  if (!listed)
    return 0;
  return op == RD_OP_PROD || op == RD_OP_LOG_SUM_EXP ? 40 : 85;
}

/* "ReduceLogSumExp" -> "LogSumExp"; "ArgMax" stays. */
static const char *op_short(int op)
{
  const char *name = rd_op_name(op);
  return strncmp(name, "Reduce", 6) ? name : name + 6;
}

static void dims_str(char *buf, size_t size, size_t n, const int64_t *v)
{
  int k = snprintf(buf, size, "[");
  for (size_t d = 0; d < n; d++)
    k += snprintf(buf + k, size - (size_t)k, "%s%lld", d ? "," : "",
                  (long long)v[d]);
  snprintf(buf + k, size - (size_t)k, "]");
}

struct bench_ctx {
  int json, runs;
  int threads[2]; /* 1 and the 'all threads' count */
  void *in, *out;
  float *probe_buf;
  double *t, *tp; /* runs scratch: the plan's, the probe's */
  int filled_dtype, filled_positive;
  uint64_t filled_count;
  int targets, targets_met;
};

/* Times `op` on case `bc` on 1 and on all threads and prints the rows.
 * Returns 0, or 1 if the plan or a run failed. */
static int bench_row(struct bench_ctx *cx, int op, const struct bench_case *bc)
{
  int is_arg = rd_op_info(op)->is_arg;
  struct rd_params p;
  rd_params_init(&p);
  p.op = op;
  p.dtype = bc->dtype;
  p.rank = bc->rank;
  p.shape = bc->shape;
  p.keepdims = 0;
  if (is_arg) {
    p.axis = bc->naxes ? bc->axes[bc->naxes - 1] : 0;
  } else {
    p.axes = bc->axes;
    p.naxes = bc->naxes;
  }
  if (bc->dtype != RD_FLOAT32 && bc->dtype != RD_FLOAT16 &&
      bc->dtype != RD_BFLOAT16 && bc->dtype != RD_FLOAT64)
    p.overflow = RD_OVERFLOW_SATURATE;

  struct rd_plan plan;
  struct rd_error err;
  if (rd_plan_init(&plan, &p, &err) != 0) {
    fprintf(stderr, "bench: %s case %s %s: %s\n", rd_op_name(op), bc->name,
            rd_dtype_name(bc->dtype), err.msg);
    return 1;
  }
  int positive = op == RD_OP_PROD || op == RD_OP_LOG_SUM;
  if (cx->filled_dtype != bc->dtype || cx->filled_positive != positive ||
      cx->filled_count != plan.in_count) {
    fill(cx->in, bc->dtype, plan.in_count, positive);
    cx->filled_dtype = bc->dtype;
    cx->filled_positive = positive;
    cx->filled_count = plan.in_count;
  }

  char shape[64], axes[32];
  dims_str(shape, sizeof(shape), bc->rank, bc->shape);
  if (is_arg)
    snprintf(axes, sizeof(axes), "axis %lld", (long long)plan.axis);
  else {
    dims_str(axes, sizeof(axes), bc->naxes, bc->axes);
    if (!bc->naxes)
      snprintf(axes, sizeof(axes), "[] (all)");
  }
  int target = target_pct(op, bc->dtype);

  for (int m = 0; m < 2; m++) {
    int thr = cx->threads[m];
    double dt;
    size_t probe_n = (size_t)(plan.in_bytes / sizeof(float));
    probe_once(cx->probe_buf, probe_n, thr); /* warm-ups */
    if (run_plan(&plan, cx->in, cx->out, thr, &dt) != 0) {
      fprintf(stderr, "bench: %s case %s %s failed\n", rd_op_name(op), bc->name,
              rd_dtype_name(bc->dtype));
      return 1;
    }
    /* The probe runs alternately with the plan, on the same byte count and
     * threads, so both see the same load of a shared machine.  Slow figures
     * stop after MIN_RUNS once they took SLOW_S seconds, so that every
     * operator on every case fits in a few minutes. */
    int done = 0;
    double spent = 0;
    while (done < cx->runs && !(done >= MIN_RUNS && spent >= SLOW_S)) {
      cx->tp[done] = probe_once(cx->probe_buf, probe_n, thr);
      run_plan(&plan, cx->in, cx->out, thr, &cx->t[done]);
      spent += cx->t[done++];
    }
    double med = median(cx->t, done);
    double gbs = (double)plan.in_bytes / med / 1e9;
    double probe = (double)plan.in_bytes / median(cx->tp, done) / 1e9;
    double pct = 100.0 * gbs / probe;
    int met = pct >= target;
    if (target) {
      cx->targets++;
      cx->targets_met += met;
    }
    if (cx->json) {
      char tgt[64] = "";
      if (target)
        snprintf(tgt, sizeof(tgt), ",\"target_pct\":%d,\"target_met\":%s",
                 target, met ? "true" : "false");
      printf(
        "{\"case\":\"%s\",\"dtype\":\"%s\",\"shape\":\"%s\",\"axes\":\"%s\","
        "\"op\":\"%s\",\"threads\":%d,\"median_ms\":%.3f,\"gbs\":%.2f,"
        "\"pct_probe\":%.1f,\"probe_gbs\":%.2f,\"parts\":%zu,\"bytes\":%llu,"
        "\"runs\":%d%s}\n",
        bc->name, rd_dtype_name(bc->dtype), shape, axes, rd_op_name(op), thr,
        med * 1e3, gbs, pct, probe, plan.nparts,
        (unsigned long long)plan.in_bytes, done, tgt);
    } else {
      char tgt[32] = "-";
      if (target)
        snprintf(tgt, sizeof(tgt), "%d%% %s", target, met ? "met" : "NOT met");
      printf(
        "%-4s %-9s %-16s %-18s %-9s %6d %9.2f %8.2f %5.0f%% %5zu %8.2f  %s\n",
        bc->name, rd_dtype_name(bc->dtype), shape, axes, op_short(op), thr,
        med * 1e3, gbs, pct, plan.nparts, probe, tgt);
    }
    fflush(stdout);
  }
  return 0;
}

/* ---- main ------------------------------------------------------------ */

#define RUNS_DEFAULT 5

static void usage(FILE *f)
{
  fprintf(
    f,
    "usage: bench [--json] [--runs N] [--threads N] [--op NAME] [--case NAME]\n"
    "  --json        one JSON object per line instead of a table\n"
    "  --runs N      timed runs per figure, median reported (default %d;\n"
    "                3 once a figure's runs took 2 s)\n"
    "  --threads N   the 'all threads' count (default: CPUs online)\n"
    "  --op NAME     only operator NAME (ReduceSum or Sum, ArgMax, ...)\n"
    "  --case NAME   only cases named NAME (A..F)\n"
    "  --dtype NAME  the float32 cases A-F in element type NAME instead\n"
    "                (ReduceL2 and ReduceSumSquare unless --op is given)\n"
    "  --probe ISA   probe variant avx512f, avx2 or baseline (default: the\n"
    "                widest the CPU has)\n",
    RUNS_DEFAULT);
}

/* Operator by ONNX name or without its "Reduce" prefix; 0 if unknown. */
static int parse_op(const char *name)
{
  enum rd_op op;
  char full[64];
  if (rd_op_parse(name, &op) == 0)
    return (int)op;
  snprintf(full, sizeof(full), "Reduce%s", name);
  if (rd_op_parse(full, &op) == 0)
    return (int)op;
  return 0;
}

int main(int argc, char **argv)
{
  int json = 0, runs = RUNS_DEFAULT, only_op = 0;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = ncpu > 0 ? (int)ncpu : 1;
  const char *only = NULL, *probe_want = NULL;
  int only_dtype = -1;

  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--case") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
      enum rd_dtype dt;
      if (rd_dtype_parse(argv[++i], &dt) != 0) {
        fprintf(stderr, "bench: --dtype: unknown element type '%s'\n", argv[i]);
        return 2;
      }
      only_dtype = (int)dt;
    } else if (!strcmp(argv[i], "--probe") && i + 1 < argc)
      probe_want = argv[++i];
    else if (!strcmp(argv[i], "--op") && i + 1 < argc) {
      only_op = parse_op(argv[++i]);
      if (!only_op) {
        fprintf(stderr, "bench: --op: unknown operator '%s'\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(argv[i], "--help")) {
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
  probe_run = probe_pick(probe_want, &probe_isa);
  if (!probe_run) {
    fprintf(stderr, "bench: --probe: '%s' is not available on this CPU\n",
            probe_want);
    return 2;
  }

  /* Twice the largest input so float64 cases of the same shape fit. */
  size_t cap = 2 * (size_t)BUF_BYTES;
  struct bench_ctx cx = { .json = json,
                          .runs = runs,
                          .threads = { 1, threads } };
  cx.in = aligned_alloc(64, cap);
  cx.out = aligned_alloc(64, 64 * MIB);
  /* The probe reads a buffer of its own, as large as the case's input (the
   * float16 and float64 cases differ from the 256 MiB float32 ones), so each
   * case is compared with reading the same number of bytes. */
  cx.probe_buf = aligned_alloc(64, cap);
  cx.t = calloc((size_t)runs, sizeof(double));
  cx.tp = calloc((size_t)runs, sizeof(double));
  if (!cx.in || !cx.out || !cx.probe_buf || !cx.t || !cx.tp) {
    fprintf(stderr, "bench: cannot allocate %zu bytes\n", 2 * cap + 64 * MIB);
    return 1;
  }
  memset(cx.out, 0, 64 * MIB);
  fill(cx.probe_buf, RD_FLOAT32, cap / sizeof(float), 0);

  if (json)
    printf("{\"probe\":true,\"isa\":\"%s\",\"accumulators\":\"4 x 16 floats\","
           "\"kernels\":\"%s\"}\n",
           probe_isa, rd__kernels_name(rd__kernels_active()));
  else {
    printf(
      "# read-bandwidth probe: %s, 4 x 16-float accumulators, run alternately with each "
      "figure's runs over as many bytes on as many threads\n",
      probe_isa);
    printf("# kernels: %s (REDUCED_KERNELS=avx512|avx2|portable asks for "
           "another)\n",
           rd__kernels_name(rd__kernels_active()));
    printf(
      "# ArgMax/ArgMin reduce one axis: the last reduced axis of the case (A: axis 0); "
      "ReduceProd/ReduceLogSum read positive data near 1\n");
    printf("%-4s %-9s %-16s %-18s %-9s %6s %9s %8s %6s %5s %8s  %s\n", "case",
           "dtype", "shape", "axes", "op", "thr", "median_ms", "GB/s", "%probe",
           "parts", "probe", "target");
  }

  int failed = 0;
  for (int op = 1; op <= RD_OP_COUNT; op++) {
    if (only_op && op != only_op)
      continue;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
      const struct bench_case *bc = &cases[c];
      struct bench_case alt;
      if (only && strcmp(only, bc->name))
        continue;
      if (only_dtype >= 0) { /* the float32 cases in another type */
        if (bc->dtype != RD_FLOAT32 ||
            (!only_op && op != RD_OP_L2 && op != RD_OP_SUM_SQUARE))
          continue;
        alt = *bc;
        alt.dtype = only_dtype;
        failed |= bench_row(&cx, op, &alt);
        continue;
      }
      failed |= bench_row(&cx, op, bc);
      /* Other dtypes: ReduceL2 and ReduceSumSquare only. */
      if (op != RD_OP_L2 && op != RD_OP_SUM_SQUARE)
        continue;
      for (size_t d = 0; d < sizeof other_dtypes / sizeof other_dtypes[0];
           d++) {
        alt = *bc;
        alt.dtype = other_dtypes[d];
        failed |= bench_row(&cx, op, &alt);
      }
    }
  }
  if (json)
    printf("{\"summary\":true,\"probe_isa\":\"%s\",\"kernels\":\"%s\","
           "\"targets\":%d,\"targets_met\":%d}\n",
           probe_isa, rd__kernels_name(rd__kernels_active()), cx.targets,
           cx.targets_met);
  else
    printf(
      "target: every case (A-F) at >= 85%% of the probe (ReduceProd, "
      "ReduceLogSumExp: >= 40%%) on 1 and on %d threads, float32 for every "
      "operator and float64, float16, bfloat16, int32, uint32, int64, uint64 "
      "for ReduceL2 and ReduceSumSquare: %d of %d met\n",
      threads, cx.targets_met, cx.targets);
  free(cx.t);
  free(cx.tp);
  free(cx.probe_buf);
  free(cx.in);
  free(cx.out);
  return failed;
}
