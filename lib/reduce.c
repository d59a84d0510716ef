/* reduce.c - libreduce: names, validation, plan, execution engine, output.
 *
 * Summation order (a function of the plan alone; see also kernels.h):
 *  - Canonical shape: size-1 dims dropped, adjacent dims with the same
 *    reduce flag merged, giving alternating kept/reduced groups g0..gn-1.
 *    A single element becomes one kept group of size 1; noop plans reduce
 *    nothing (every group kept).
 *  - Parts: the outermost group g0 is cut into plan->nparts ranges of
 *    priv.part_len indices; a part is a contiguous range of the row-major
 *    input.  g0 kept: about one part per 1 MiB of input, parts write
 *    disjoint outputs.  g0 reduced: about one part per 4 MiB, at most
 *    64 MiB of partial accumulators in all, at most 16 parts for Max, Min,
 *    ArgMax, ArgMin (exact selections); each part accumulates its own
 *    partial per output, and the result is ((0 + p0) + p1) + ... in part
 *    order.  Empty inputs and noop plans: one part.  At most RD_MAX_PARTS.
 *  - Innermost group reduced: a "run segment" is the part of one row of the
 *    innermost group that lies in one part.  Its element at offset j goes to
 *    lane j % 16 (each lane sums in order of j); at the end of the segment
 *    the lanes combine in the fixed tree (k, k+8), (k, k+4), (k, k+2),
 *    (k, k+1) and the result is added to the output's accumulator, segments
 *    in row-major order.
 *  - Innermost group kept: acc[j] += x[i][j]^2 with rows i in order.
 *  Integers are summed exactly, so only the float classes depend on this.
 *
 * One engine (`process`) walks elements in row-major order with a cursor
 * (odometer over the outer groups, offset in the innermost row, lane state
 * of the current segment).  The kernels are split-invariant, so the bits
 * cannot depend on how the input arrives: rd_exec_* runs each part from a
 * fresh cursor, rd_stream_* runs the parts in order through one cursor with
 * any chunking, and rd_execute is a stream fed the whole buffer at once.
 */
#include "reduce.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f16.h"
#include "kernels.h"
#include "kernels_rows_int.h"
#include "ops.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

typedef unsigned __int128 u128;

/* Part sizing: a function of the plan only (never of threads). */
#define PART_BYTES_KEPT ((uint64_t)1 << 20)    /* outer group kept */
#define PART_BYTES_REDUCED ((uint64_t)4 << 20) /* outer group reduced */
#define PARTIALS_MAX_BYTES ((uint64_t)64 << 20)
/* The most parts of a plan with the outer group reduced, for the operators
 * whose partial sets are not plain sums (Max, Min, ArgMax, ArgMin, Prod,
 * LogSumExp).  Each part keeps a whole set of outputs, and the sets are
 * merged one after another: for LogSumExp each merge of a column calls
 * exp(), for Prod it is a double-double product.  With 64 parts, those
 * merges and the first touch of the sets took a fifth of case C's time
 * ([8192, 8192] over axis 0; 16 parts: LogSumExp 0.81x, Prod 0.80x the
 * time on one thread).  Max/Min/Arg results are exact selections, the same
 * bits for any split.  Prod and LogSumExp results depend on the split, which
 * is still a function of the plan alone (lib/reduce.h, "Determinism").  16
 * parts still give many per thread on the machines this runs on. */
#define PARTS_MERGED_REDUCED 16

/* ------------------------------------------------------------------ */
/* Errors and names                                                   */
/* ------------------------------------------------------------------ */

static void clear_err(struct rd_error *err)
{
  if (err) {
    err->code = RD_OK;
    err->msg[0] = '\0';
  }
}

const char *rd_strerror(int code)
{
  switch (code) {
  case RD_OK: return "success";
#define RD__DESC(sym, val, name, desc)                                         \
  case sym: return desc;
    RD_ERROR_MAP(RD__DESC)
#undef RD__DESC
  default: return "unknown error";
  }
}

const char *rd_errname(int code)
{
  switch (code) {
  case RD_OK: return "OK";
#define RD__NAME(sym, val, name, desc)                                         \
  case sym: return name;
    RD_ERROR_MAP(RD__NAME)
#undef RD__NAME
  default: return NULL;
  }
}

static const char *const overflow_names[] = { "error", "saturate", "wrap" };

const char *rd_overflow_name(int policy)
{
  if (policy < 0 || policy > RD_OVERFLOW_WRAP)
    return NULL;
  return overflow_names[policy];
}

int rd_overflow_parse(const char *name, enum rd_overflow *out)
{
  for (int i = 0; name && i <= RD_OVERFLOW_WRAP; i++)
    if (strcmp(name, overflow_names[i]) == 0) {
      *out = (enum rd_overflow)i;
      return 0;
    }
  return RD_E_POLICY;
}

/* ------------------------------------------------------------------ */
/* Sizes                                                              */
/* ------------------------------------------------------------------ */

/* Product of dims (0 if any dim is 0, whatever the others), checked against
 * int64 together with the element size. */
static int count_checked(size_t rank, const int64_t *shape, size_t esz,
                         uint64_t *count)
{
  uint64_t n = 1, bytes;
  for (size_t i = 0; i < rank; i++)
    if (shape[i] == 0) {
      *count = 0;
      return 0;
    }
  for (size_t i = 0; i < rank; i++)
    if (__builtin_mul_overflow(n, (uint64_t)shape[i], &n))
      return RD_E_TOO_LARGE;
  if (__builtin_mul_overflow(n, esz ? (uint64_t)esz : 1, &bytes) ||
      bytes > (uint64_t)INT64_MAX)
    return RD_E_TOO_LARGE;
  *count = n;
  return 0;
}

static int check_dims(size_t rank, const int64_t *shape, struct rd_error *err)
{
  if (rank > RD_MAX_RANK)
    return rd__set_err(err, RD_E_RANK,
                       "rank is %zu; the largest supported is %d", rank,
                       RD_MAX_RANK);
  if (rank > 0 && !shape)
    return rd__set_err(err, RD_E_INVALID, "shape is NULL for rank %zu", rank);
  for (size_t i = 0; i < rank; i++)
    if (shape[i] < 0)
      return rd__set_err(err, RD_E_DIM,
                         "shape[%zu] is %" PRId64 "; dims must be >= 0", i,
                         shape[i]);
  return 0;
}

int rd_shape_count(size_t rank, const int64_t *shape, int dtype,
                   uint64_t *count, struct rd_error *err)
{
  size_t esz = 0;
  int rc;
  clear_err(err);
  if ((rc = check_dims(rank, shape, err)) != 0)
    return rc;
  if (dtype != 0 && (esz = rd_dtype_size(dtype)) == 0)
    return rd__set_err(err, RD_E_DTYPE, "dtype %d is not supported", dtype);
  if (count_checked(rank, shape, esz, count) != 0)
    return rd__set_err(err, RD_E_TOO_LARGE,
                       "the element count of the shape times %zu bytes per "
                       "element does not fit in int64",
                       esz ? esz : (size_t)1);
  return 0;
}

/* ------------------------------------------------------------------ */
/* Plan                                                               */
/* ------------------------------------------------------------------ */

void rd_params_init(struct rd_params *p)
{
  memset(p, 0, sizeof *p);
  p->opset = 18;
  p->keepdims = 1;
  p->noop_with_empty_axes = RD_UNSET;
  p->axis = RD_UNSET;
  p->select_last_index = RD_UNSET;
  p->overflow = RD_OVERFLOW_ERROR;
}

static int check_axes(const struct rd_params *p, unsigned char *red,
                      struct rd_error *err)
{
  int64_t r = (int64_t)p->rank;
  int64_t norm[RD_MAX_RANK];
  if (p->naxes > 0 && !p->axes)
    return rd__set_err(err, RD_E_INVALID, "axes is NULL but naxes is %zu",
                       p->naxes);
  /* Every axis must be in range before duplicates are looked for. */
  for (size_t i = 0; i < p->naxes; i++) {
    int64_t a = p->axes[i];
    if (r == 0)
      return rd__set_err(err, RD_E_AXIS_RANGE,
                         "axis %" PRId64
                         " is out of range for an input of rank 0"
                         " (a scalar has no axes)",
                         a);
    if (a < -r || a > r - 1)
      return rd__set_err(err, RD_E_AXIS_RANGE,
                         "axis %" PRId64 " is out of range [%" PRId64
                         ", %" PRId64 "] for an input of rank %" PRId64,
                         a, -r, r - 1, r);
  }
  for (size_t i = 0; i < p->naxes; i++) {
    int64_t a = p->axes[i] < 0 ? p->axes[i] + r : p->axes[i];
    for (size_t j = 0; j < i; j++)
      if (norm[j] == a)
        return rd__set_err(err, RD_E_AXIS_DUP,
                           "axes[%zu] = %" PRId64 " and axes[%zu] = %" PRId64
                           " both name axis %" PRId64
                           " of an input of rank %" PRId64,
                           j, p->axes[j], i, p->axes[i], a, r);
    /* naxes > rank implies a duplicate, found before norm[] overflows. */
    norm[i] = a;
    red[a] = 1;
  }
  return 0;
}

/* 1 for the operators whose partial sets are sums (PARTS_MERGED_REDUCED). */
static int partials_are_sums(int op)
{
  return op == RD_OP_L2 || op == RD_OP_SUM_SQUARE || op == RD_OP_SUM ||
         op == RD_OP_MEAN || op == RD_OP_L1 || op == RD_OP_LOG_SUM;
}

/* The kernel of a plan: the original ReduceL2/ReduceSumSquare kernels
 * (kernels.c, portable or SIMD) or an operator family kernel (ops.c). */
static const struct rd__kernel *kernel_of(int id)
{
  return id >= RD__K_OPS_BASE ? rd__op_kernel(id) : rd__kernel_for(id);
}

/* Groups of the canonical shape and the part split. */
static void canonicalise(struct rd_plan *pl, const unsigned char *red)
{
  size_t ng = 0;
  uint64_t g0, n;
  pl->nparts = 1;
  pl->priv.part_len = 1;
  if (pl->in_count == 0) {
    pl->priv.ngroups = 0;
    return;
  }
  for (size_t i = 0; i < pl->in_rank; i++) {
    uint64_t d = (uint64_t)pl->in_shape[i];
    if (d == 1)
      continue;
    if (ng > 0 && pl->priv.reduced[ng - 1] == red[i]) {
      pl->priv.size[ng - 1] *= d;
    } else {
      pl->priv.size[ng] = d;
      pl->priv.reduced[ng] = red[i];
      ng++;
    }
  }
  if (ng == 0) { /* a single element: one kept group of size 1 */
    pl->priv.size[0] = 1;
    pl->priv.reduced[0] = 0;
    ng = 1;
  }
  pl->priv.ngroups = ng;
  g0 = pl->priv.size[0];
  if (pl->noop) {
    /* Elementwise: one part. */
    pl->priv.part_len = g0;
    return;
  }
  if (!pl->priv.reduced[0]) {
    n = pl->in_bytes / PART_BYTES_KEPT;
  } else {
    /* Cannot overflow: rd_plan_init checked it against INT64_MAX. */
    uint64_t per_part = pl->out_count * kernel_of(pl->priv.kernel)->acc_size;
    n = pl->in_bytes / PART_BYTES_REDUCED;
    if (per_part > 0 && n > PARTIALS_MAX_BYTES / per_part)
      n = PARTIALS_MAX_BYTES / per_part;
    if (!partials_are_sums(pl->op) && n > PARTS_MERGED_REDUCED)
      n = PARTS_MERGED_REDUCED;
  }
  if (n < 1)
    n = 1;
  if (n > RD_MAX_PARTS)
    n = RD_MAX_PARTS;
  if (n > g0)
    n = g0;
  pl->priv.part_len = (g0 + n - 1) / n;
  pl->nparts = (size_t)((g0 + pl->priv.part_len - 1) / pl->priv.part_len);
  assert(pl->nparts >= 1 && pl->nparts <= RD_MAX_PARTS);
}

/* "float32, float64, ..." : the dtypes of version `v` of `op`. */
static void dtype_list(int op, int v, char *buf, size_t len)
{
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < RD_NDTYPES; i++)
    if (rd_dtype_in_version(op, rd_dtypes[i], v)) {
      int w = snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
                       rd_dtype_name(rd_dtypes[i]));
      if (w < 0 || (size_t)w >= len - n)
        break;
      n += (size_t)w;
    }
}

/* The attributes that only some operators take. */
static int check_op_attrs(const struct rd_op_info *oi,
                          const struct rd_params *p, int version,
                          struct rd_error *err)
{
  if (!oi->is_arg) {
    if (p->axis != RD_UNSET)
      return rd__set_err(
        err, RD_E_ATTRIBUTE,
        "axis is %" PRId64 " but %s takes "
        "no axis attribute (only ArgMax and ArgMin do; use axes)",
        p->axis, oi->name);
    if (p->select_last_index != RD_UNSET)
      return rd__set_err(err, RD_E_ATTRIBUTE,
                         "select_last_index is %" PRId64
                         " but %s takes no such attribute (only ArgMax and "
                         "ArgMin do)",
                         p->select_last_index, oi->name);
    if (p->noop_with_empty_axes != RD_UNSET) {
      if (version < oi->axes_input_version)
        return rd__set_err(err, RD_E_NOOP_VERSION,
                           "noop_with_empty_axes is "
                           "given but %s version %d (opset %" PRId64 ") has no "
                           "such attribute; it needs version %d",
                           oi->name, version, p->opset, oi->axes_input_version);
      if (p->noop_with_empty_axes != 0 && p->noop_with_empty_axes != 1)
        return rd__set_err(err, RD_E_NOOP,
                           "noop_with_empty_axes is %" PRId64
                           "; it must be 0 or 1",
                           p->noop_with_empty_axes);
    }
    return 0;
  }
  if (p->naxes > 0)
    return rd__set_err(err, RD_E_ATTRIBUTE,
                       "axes has %zu entries but %s takes "
                       "no axes; it reduces one axis, given by axis",
                       p->naxes, oi->name);
  if (p->noop_with_empty_axes != RD_UNSET)
    return rd__set_err(err, RD_E_ATTRIBUTE,
                       "noop_with_empty_axes is %" PRId64
                       " but %s takes no such attribute",
                       p->noop_with_empty_axes, oi->name);
  if (p->select_last_index != RD_UNSET) {
    if (version < oi->select_last_version)
      return rd__set_err(err, RD_E_SELECT_LAST_VERSION,
                         "select_last_index is "
                         "given but %s version %d (opset %" PRId64 ") has no "
                         "such attribute; it needs version %d",
                         oi->name, version, p->opset, oi->select_last_version);
    if (p->select_last_index != 0 && p->select_last_index != 1)
      return rd__set_err(err, RD_E_SELECT_LAST,
                         "select_last_index is %" PRId64 "; it must be 0 or 1",
                         p->select_last_index);
  }
  return 0;
}

/* ArgMax/ArgMin: the one reduced axis, normalised, into red[]. */
static int check_axis(const struct rd_params *p, int64_t *axis,
                      unsigned char *red, struct rd_error *err)
{
  int64_t r = (int64_t)p->rank, a = p->axis == RD_UNSET ? 0 : p->axis;
  if (r == 0)
    return rd__set_err(
      err, RD_E_AXIS_RANGE,
      "axis %" PRId64 " is out of range "
      "for an input of rank 0 (a scalar has no axis to reduce)",
      a);
  if (a < -r || a > r - 1)
    return rd__set_err(err, RD_E_AXIS_RANGE,
                       "axis %" PRId64 " is out of range [%" PRId64 ", %" PRId64
                       "] for an input of rank %" PRId64,
                       a, -r, r - 1, r);
  *axis = a < 0 ? a + r : a;
  red[*axis] = 1;
  return 0;
}

/* The checks that need no shape arithmetic, in the documented order: op,
 * opset, dtype, dtype in version, the op's attributes, keepdims, overflow
 * policy, dims.  Returns the version (> 0) or an RD_E_* code. */
static int check_params(const struct rd_op_info *oi, const struct rd_params *p,
                        struct rd_error *err)
{
  int version, rc;
  char list[160];

  if ((version = rd_op_version(p->op, p->opset)) < 0)
    return rd__set_err(err, RD_E_OPSET, "opset is %" PRId64 "; it must be >= 1",
                       p->opset);
  if (!rd_dtype_name(p->dtype))
    return rd__set_err(err, RD_E_DTYPE, "dtype %d is not supported", p->dtype);
  if (!rd_dtype_in_version(p->op, p->dtype, version)) {
    dtype_list(p->op, version, list, sizeof list);
    return rd__set_err(err, RD_E_DTYPE_VERSION,
                       "dtype %s is not allowed by %s "
                       "version %d (opset %" PRId64 "); its dtypes: %s",
                       rd_dtype_name(p->dtype), oi->name, version, p->opset,
                       list);
  }
  if ((rc = check_op_attrs(oi, p, version, err)) != 0)
    return rc;
  if (p->keepdims != 0 && p->keepdims != 1)
    return rd__set_err(err, RD_E_KEEPDIMS,
                       "keepdims is %" PRId64 "; it must be 0 or 1",
                       p->keepdims);
  if (!rd_overflow_name(p->overflow))
    return rd__set_err(err, RD_E_POLICY,
                       "overflow policy is %d; it must be "
                       "error (0), saturate (1) or wrap (2)",
                       p->overflow);
  if ((rc = check_dims(p->rank, p->shape, err)) != 0)
    return rc;
  return version;
}

/* The input's size, the reduced dims (red[]), the noop flag and the output
 * shape and size of `pl` (op, dtypes and element sizes already set). */
static int plan_shapes(struct rd_plan *pl, const struct rd_op_info *oi,
                       const struct rd_params *p, unsigned char *red,
                       struct rd_error *err)
{
  int rc;

  pl->in_rank = p->rank;
  for (size_t i = 0; i < p->rank; i++)
    pl->in_shape[i] = p->shape[i];
  if (count_checked(pl->in_rank, pl->in_shape, pl->elem_size, &pl->in_count))
    return rd__set_err(err, RD_E_TOO_LARGE,
                       "the input has more than %" PRId64
                       " bytes (%zu bytes per element)",
                       INT64_MAX, pl->elem_size);
  pl->in_bytes = pl->in_count * pl->elem_size;

  if (oi->is_arg) {
    if ((rc = check_axis(p, &pl->axis, red, err)) != 0)
      return rc;
    pl->select_last_index = p->select_last_index == 1;
  } else if ((rc = check_axes(p, red, err)) != 0) {
    return rc;
  }
  pl->noop = !oi->is_arg && p->noop_with_empty_axes == 1 && p->naxes == 0;
  if (!pl->noop && p->naxes == 0 && !oi->is_arg)
    memset(red, 1, RD_MAX_RANK);
  for (size_t i = 0; i < pl->in_rank; i++) {
    if (!red[i] || pl->noop)
      pl->out_shape[pl->out_rank++] = pl->in_shape[i];
    else if (p->keepdims)
      pl->out_shape[pl->out_rank++] = 1;
  }
  if (pl->noop)
    memset(red, 0, RD_MAX_RANK);
  /* A reduced empty dim can make the output larger than the input. */
  if (count_checked(pl->out_rank, pl->out_shape, pl->out_elem_size,
                    &pl->out_count))
    return rd__set_err(err, RD_E_TOO_LARGE,
                       "the output has more than %" PRId64
                       " bytes (%zu bytes per element)",
                       INT64_MAX, pl->out_elem_size);
  pl->out_bytes = pl->out_count * pl->out_elem_size;
  return 0;
}

/* The kernel of `pl`, and a check that its accumulators are addressable
 * (checked again at allocation). */
static int plan_kernel(struct rd_plan *pl, const char *opname,
                       struct rd_error *err)
{
  uint64_t acc_bytes;

  pl->priv.kernel = rd__op_kernel_id(pl->op, pl->dtype, pl->select_last_index);
  if (pl->priv.kernel < 0 || !kernel_of(pl->priv.kernel))
    return rd__set_err(err, RD_E_DTYPE, "no %s kernel for dtype %s", opname,
                       rd_dtype_name(pl->dtype)); /* not reached: table gap */
  if (__builtin_mul_overflow(pl->out_count,
                             (uint64_t)kernel_of(pl->priv.kernel)->acc_size,
                             &acc_bytes) ||
      acc_bytes > (uint64_t)INT64_MAX)
    return rd__set_err(err, RD_E_TOO_LARGE,
                       "the output's %" PRIu64 " elements "
                       "need more accumulator memory than int64 can count",
                       pl->out_count);
  return 0;
}

int rd_plan_init(struct rd_plan *plan, const struct rd_params *p,
                 struct rd_error *err)
{
  struct rd_plan pl;
  unsigned char red[RD_MAX_RANK] = { 0 };
  const struct rd_op_info *oi;
  int version, rc;

  clear_err(err);
  memset(&pl, 0, sizeof pl);
  if (!plan || !p)
    return rd__set_err(err, RD_E_INVALID, "plan or params is NULL");
  if (!(oi = rd_op_info(p->op)))
    return rd__set_err(err, RD_E_OP,
                       "op is %d; it must be an enum rd_op value "
                       "(1 ReduceL2 .. %d ArgMin)",
                       p->op, RD_OP_COUNT);
  if ((version = check_params(oi, p, err)) < 0)
    return version;
  pl.op = p->op;
  pl.version = version;
  pl.dtype = p->dtype;
  pl.out_dtype = rd_op_out_dtype(p->op, p->dtype);
  pl.overflow = p->overflow;
  pl.elem_size = rd_dtype_size(p->dtype);
  pl.out_elem_size = rd_dtype_size(pl.out_dtype);
  if ((rc = plan_shapes(&pl, oi, p, red, err)) != 0 ||
      (rc = plan_kernel(&pl, oi->name, err)) != 0)
    return rc;
  canonicalise(&pl, red);
  *plan = pl;
  return 0;
}

/* ------------------------------------------------------------------ */
/* Engine                                                             */
/* ------------------------------------------------------------------ */

struct geom {
  const struct rd__kernel *k;
  size_t esz, accsz, ng;
  size_t osz;     /* bytes per output slot of the buffers */
  int direct;     /* slots are finished output elements */
  int direct_int; /* direct, integer class: finalised by rd__finalize() */
  int direct_op;  /* rd__ops_direct(): rows by rd__ops_rows_out() */
  int l2, dtype;
  int ofin;             /* direct float: rd__rows_out()'s enum rd__out_fin */
  int sq;               /* ReduceL2/ReduceSumSquare (kernels.c) */
  struct rd__final fin; /* finalisation of the other operators */
  uint64_t inner;       /* size of the innermost group */
  int inner_red;
  int outer_red;                 /* partials per part needed */
  uint64_t unit;                 /* elements per outer-group index */
  uint64_t ostride[RD_MAX_RANK]; /* output stride of kept groups */
};

struct cursor {
  int rc;                    /* direct_int: the first output error, or 0 */
  uint64_t err_o;            /* its output index */
  struct rd_error err;       /* its message */
  uint64_t off;              /* offset in the current innermost row */
  uint64_t idx[RD_MAX_RANK]; /* odometer over groups 0 .. ng-2 */
  uint64_t obase;            /* output index of the row's first element */
  uint64_t seg;              /* elements in the current run segment */
  union rd__lanes lanes;
};

static void geom_init(struct geom *g, const struct rd_plan *pl)
{
  uint64_t prod = 1;
  memset(g, 0, sizeof *g);
  g->k = kernel_of(pl->priv.kernel);
  g->sq = pl->op == RD_OP_L2 || pl->op == RD_OP_SUM_SQUARE;
  g->fin.op = pl->op;
  g->fin.dtype = pl->dtype;
  g->fin.out_dtype = pl->out_dtype;
  g->fin.overflow = pl->overflow;
  g->fin.row = rd__op_row(pl->op);
  g->fin.family = pl->dtype == RD_FLOAT64 ? g->fin.row->f64_family
                  : (pl->dtype == RD_FLOAT32 || pl->dtype == RD_FLOAT16 ||
                     pl->dtype == RD_BFLOAT16)
                    ? g->fin.row->float_family
                    : g->fin.row->int_family;
  g->fin.count = pl->out_count ? pl->in_count / pl->out_count : 0;
  g->fin.acc_class = g->k->acc_class;
  g->esz = pl->elem_size;
  g->accsz = g->k->acc_size;
  g->osz = g->accsz;
  g->ng = pl->priv.ngroups;
  if (g->ng == 0)
    return;
  g->inner = pl->priv.size[g->ng - 1];
  g->inner_red = pl->priv.reduced[g->ng - 1];
  g->outer_red = pl->priv.reduced[0];
  g->unit = pl->in_count / pl->priv.size[0];
  g->l2 = pl->op == RD_OP_L2;
  g->dtype = pl->dtype;
  /* [kept, reduced]: every output is one whole run, and parts (cut in the
   * kept group) never split a run, so a finished run is written out as the
   * output element at once instead of going through an accumulator and a
   * final pass.  Integers too: the first overflow error (the lowest output
   * index, as finish would have found it) is kept in the cursor and
   * reported by finish. */
  /* prodlse: float Prod and LogSumExp (ops.c) are direct too; frows: so is
   * the float Sum family (double lanes, RD__F_SUMD: Sum, Mean, L1, LogSum),
   * its finalisation g->ofin. */
  g->direct_op = rd__ops_direct(pl->op, pl->dtype) && pl->in_count > 0;
  g->ofin = g->fin.row->fin == RD__FIN_SQRT   ? RD__OUT_SQRT
            : g->fin.row->fin == RD__FIN_MEAN ? RD__OUT_MEAN
            : g->fin.row->fin == RD__FIN_LOG  ? RD__OUT_LOG
                                              : RD__OUT_SUM;
  g->direct = (g->sq || g->direct_op || g->fin.family == RD__F_SUMD) &&
              g->ng == 2 && !g->outer_red && g->inner_red;
  g->direct_op = g->direct_op && g->direct;
  g->direct_int = g->direct && (g->k->acc_class == RD__ACC_U128 ||
                                g->k->acc_class == RD__ACC_U192);
  g->osz = g->direct ? pl->out_elem_size : g->accsz;
  for (size_t i = g->ng; i-- > 0;)
    if (!pl->priv.reduced[i]) {
      g->ostride[i] = prod;
      prod *= pl->priv.size[i];
    }
}

static void part_range(const struct rd_plan *pl, const struct geom *g,
                       size_t part, uint64_t *start, uint64_t *end)
{
  uint64_t a = part * pl->priv.part_len, b = a + pl->priv.part_len;
  assert(part < pl->nparts);
  if (b > pl->priv.size[0])
    b = pl->priv.size[0];
  *start = a * g->unit;
  *end = b * g->unit;
}

/* Positions the cursor at flat element e with an empty run segment. */
static void cursor_init(struct cursor *c, const struct rd_plan *pl,
                        const struct geom *g, uint64_t e)
{
  uint64_t row = e / g->inner;
  memset(c, 0, sizeof *c);
  if (g->k->init)
    g->k->init(&c->lanes, 1);
  c->off = e % g->inner;
  for (size_t i = g->ng - 1; i-- > 0;) {
    c->idx[i] = row % pl->priv.size[i];
    row /= pl->priv.size[i];
    if (!pl->priv.reduced[i])
      c->obase += c->idx[i] * g->ostride[i];
  }
}

static void next_row(struct cursor *c, const struct rd_plan *pl,
                     const struct geom *g)
{
  for (size_t i = g->ng - 1; i-- > 0;) {
    int kept = !pl->priv.reduced[i];
    if (++c->idx[i] < pl->priv.size[i]) {
      if (kept)
        c->obase += g->ostride[i];
      return;
    }
    if (kept)
      c->obase -= (pl->priv.size[i] - 1) * g->ostride[i];
    c->idx[i] = 0;
  }
}

/* Output o of an integer direct plan from its accumulator; the first error
 * is kept in the cursor (outputs arrive in increasing order). */
static void out_int(struct cursor *c, const struct geom *g, const void *a,
                    unsigned char *out, uint64_t o)
{
  struct rd_error e;
  int rc = rd__finalize(&g->fin, a, out + o * g->osz, o, &e);
  if (rc != 0 && c->rc == 0) {
    c->rc = rc;
    c->err_o = o;
    c->err = e;
  }
}

/* Rows per block of rows_out_int(): the accumulators stay in L1. */
#define INT_BLOCK 64

/* `rows` whole runs of an integer direct plan, from output c->obase on:
 * rows() into zeroed accumulators, then each finalised. */
static void rows_out_int(struct cursor *c, const struct geom *g,
                         unsigned char *out, const unsigned char *x,
                         size_t rows)
{
  struct rd__u192 a[INT_BLOCK]; /* large enough for either class */
  uint64_t o = c->obase;
  while (rows > 0) {
    size_t m = rows < INT_BLOCK ? rows : INT_BLOCK;
    /* Short rows: kernels_rows_int.c writes the rows it can do exactly in
     * 64 bits (the same bits); the others (`left`) go the general way. */
    uint64_t left = UINT64_MAX;
    if (g->inner <= RD__ROWS_INT_MAX_N)
      left = rd__rows_int(g->k, g->dtype, g->l2, out + o * g->osz, x,
                          (size_t)g->inner, m);
    if (left == 0) {
      /* every row written */
    } else if (left == UINT64_MAX ||
               (size_t)__builtin_popcountll(left) * 4 > m) {
      memset(a, 0, m * g->accsz);
      g->k->rows(a, x, (size_t)g->inner, m);
      for (size_t r = 0; r < m; r++)
        out_int(c, g, (const unsigned char *)a + r * g->accsz, out, o + r);
    } else {
      for (; left != 0; left &= left - 1) { /* increasing r: error order */
        size_t r = (size_t)__builtin_ctzll(left);
        memset(a, 0, g->accsz);
        g->k->rows(a, x + r * g->inner * g->esz, (size_t)g->inner, 1);
        out_int(c, g, a, out, o + r);
      }
    }
    o += m;
    x += m * g->inner * g->esz;
    rows -= m;
  }
}

/* Whole rows from the cursor (at a row start) that share the next outer
 * index: consecutive outputs (inner reduced) or the same outputs (inner
 * kept).  Returns how many rows the kernel call covered. */
static uint64_t whole_rows(struct cursor *c, const struct rd_plan *pl,
                           const struct geom *g, unsigned char *acc,
                           const unsigned char *x, uint64_t n)
{
  uint64_t rows = n / g->inner, left;
  size_t o = g->ng - 2;
  if (g->ng < 2)
    rows = 1;
  else if (rows > (left = pl->priv.size[o] - c->idx[o]))
    rows = left;
  assert(rows >= 1 && rows * g->inner <= n);
  if (g->direct_int)
    rows_out_int(c, g, acc, x, (size_t)rows);
  else if (g->direct_op) /* prodlse */
    rd__ops_rows_out(g->k, &g->fin, acc + c->obase * g->osz, x,
                     (size_t)g->inner, (size_t)rows);
  else if (g->direct)
    rd__rows_out(g->k, g->dtype, acc + c->obase * g->osz, x, (size_t)g->inner,
                 (size_t)rows, g->ofin);
  else if (g->inner_red)
    g->k->rows(acc + c->obase * g->accsz, x, (size_t)g->inner, (size_t)rows);
  else
    g->k->cols(acc + c->obase * g->accsz, x, (size_t)g->inner, (size_t)rows);
  if (g->ng >= 2) {
    /* Jump to the last row, then step with carry into outer groups. */
    c->idx[o] += rows - 1;
    if (g->inner_red)
      c->obase += rows - 1; /* group o is the innermost kept: stride 1 */
  }
  next_row(c, pl, g);
  return rows;
}

/* Ends the current run segment: its lanes go to the row's accumulator, or
 * in direct mode (where a segment is a whole run) to the output slot. */
static void flush_segment(struct cursor *c, const struct geom *g,
                          unsigned char *acc)
{
  if (g->direct) {
    union {
      struct rd__blue b;
      struct rd__u192 w;
      double d;
      struct rd__acc_prod prod; /* prodlse: direct_op */
      struct rd__acc_lse lse;
      struct rd__acc_key key; /* float32 Max/Min/Arg: direct_op */
      struct rd__acc_arg arg;
    } tmp;
    memset(&tmp, 0, sizeof tmp);
    if (g->direct_op) { /* prodlse: the empty state, then finalised */
      g->k->init(&tmp, 1);
      g->k->flush(&c->lanes, &tmp);
      (void)rd__finalize(&g->fin, &tmp, acc + c->obase * g->osz, c->obase,
                         NULL);
      c->seg = 0;
      return;
    }
    g->k->flush(&c->lanes, &tmp);
    if (g->direct_int)
      out_int(c, g, &tmp, acc, c->obase);
    else if (!g->sq) /* frows: float Sum family, finalize.c's value */
      (void)rd__finalize(&g->fin, &tmp, acc + c->obase * g->osz, c->obase,
                         NULL);
    else
      rd__float_store(g->dtype, rd__acc_value(g->k->acc_class, &tmp, g->l2),
                      acc + c->obase * g->osz);
  } else {
    g->k->flush(&c->lanes, acc + c->obase * g->accsz);
  }
  c->seg = 0;
}

/* Adds n elements at x (all inside one part) to the accumulators `acc`. */
static void process(struct cursor *c, const struct rd_plan *pl,
                    const struct geom *g, unsigned char *acc,
                    const unsigned char *x, uint64_t n)
{
  while (n > 0) {
    uint64_t take = g->inner - c->off;
    assert(c->off < g->inner); /* the cursor is inside a row */
    if (c->off == 0 && n >= g->inner) {
      uint64_t rows = whole_rows(c, pl, g, acc, x, n);
      x += rows * g->inner * g->esz;
      n -= rows * g->inner;
      continue;
    }
    if (take > n)
      take = n;
    if (g->inner_red) {
      g->k->run(&c->lanes, x, (size_t)take, c->seg);
      c->seg += take;
    } else {
      g->k->cols(acc + (c->obase + c->off) * g->accsz, x, (size_t)take, 1);
    }
    c->off += take;
    x += take * g->esz;
    n -= take;
    if (c->off == g->inner) {
      if (g->inner_red)
        flush_segment(c, g, acc);
      c->off = 0;
      next_row(c, pl, g);
    }
  }
}

/* At the end of a part: a run split by the part boundary is flushed. */
static void end_segment(struct cursor *c, const struct geom *g,
                        unsigned char *acc)
{
  if (g->inner_red && c->seg > 0)
    flush_segment(c, g, acc);
}

/* ------------------------------------------------------------------ */
/* Output (finalize.c does the conversion and the overflow policy)    */
/* ------------------------------------------------------------------ */

/* Writes output element o from accumulator acc. */
static int store(const struct rd_plan *pl, const struct geom *g,
                 const void *acc, unsigned char *out, uint64_t o,
                 struct rd_error *err)
{
  assert(o < pl->out_count);
  return rd__finalize(&g->fin, acc, out + o * pl->out_elem_size, o, err);
}

/* ------------------------------------------------------------------ */
/* Allocation                                                         */
/* ------------------------------------------------------------------ */

/* Sets n accumulators to the empty state (zero bytes unless the kernel
 * says otherwise). */
static void acc_empty(const struct rd__kernel *k, void *acc, uint64_t n)
{
  if (n == 0)
    return;
  if (k->init)
    k->init(acc, (size_t)n);
  else
    memset(acc, 0, (size_t)(n * k->acc_size));
}

/* dst[i] = dst[i] combined with src[i], i < n. */
static void acc_merge_n(const struct rd__kernel *k, void *dst, const void *src,
                        uint64_t n)
{
  if (!k->merge) {
    rd__acc_merge_n(k->acc_class, dst, src, (size_t)n);
    return;
  }
  for (uint64_t i = 0; i < n; i++)
    k->merge((unsigned char *)dst + i * k->acc_size,
             (const unsigned char *)src + i * k->acc_size);
}

static void *alloc_accs(uint64_t nsets, uint64_t count, size_t accsz)
{
  uint64_t bytes;
  if (__builtin_mul_overflow(nsets, count, &bytes) ||
      __builtin_mul_overflow(bytes, (uint64_t)accsz, &bytes) ||
      bytes > SIZE_MAX - 63)
    return NULL;
  /* Zeroed: all-zero bytes are the empty accumulator of the original
   * classes; the callers run acc_empty() for the others.  Aligned to a
   * cache line, not calloc's 16 bytes: the kernels load and store 64-byte
   * vectors of accumulators, and each one split across two lines cost
   * case D (a column set of 512 doubles per outer index, kernels_avx512.c
   * z_cols1) 1.3x the time; where calloc's block began depended on
   * earlier allocations, so the case moved from run to run. */
  bytes = bytes ? (bytes + 63) / 64 * 64 : 64;
  void *p = aligned_alloc(64, (size_t)bytes);
  if (p)
    memset(p, 0, (size_t)bytes);
  return p;
}

/* Large sets (tens of MiB of partials) cost more in page faults than in
 * use: at about 1.3 us per 4 KiB page here, 32 MiB of float64 partials took
 * 11 ms of a 65 ms reduction, and two threads faulting in the same process
 * serialise.  Where the system offers transparent huge pages on request,
 * such sets are mapped directly (zero-filled by the kernel) and asked for
 * huge pages: 16 faults instead of 8192.  Elsewhere, or if mapping fails,
 * calloc. */
#define BIG_ACCS ((uint64_t)4 << 20)

static void *alloc_accs_big(uint64_t nsets, uint64_t count, size_t accsz,
                            size_t *mapped)
{
  *mapped = 0;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  uint64_t bytes;
  if (!__builtin_mul_overflow(nsets, count, &bytes) &&
      !__builtin_mul_overflow(bytes, (uint64_t)accsz, &bytes) &&
      bytes >= BIG_ACCS && bytes <= SIZE_MAX) {
    void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      (void)madvise(p, (size_t)bytes, MADV_HUGEPAGE); /* a hint only */
      *mapped = (size_t)bytes;
      return p;
    }
  }
#endif
  return alloc_accs(nsets, count, accsz);
}

static void free_accs_big(void *p, size_t mapped)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (mapped > 0) {
    munmap(p, mapped);
    return;
  }
#endif
  (void)mapped;
  free(p);
}

/* ------------------------------------------------------------------ */
/* rd_exec                                                            */
/* ------------------------------------------------------------------ */

struct rd_exec {
  struct rd_plan plan;
  struct geom g;
  unsigned char *acc; /* outer kept: one set; outer reduced: one per part */
  size_t acc_map;     /* bytes mapped for acc by alloc_accs_big(), or 0 */
  int borrowed;       /* acc is the caller's output (rd_exec_create_out) */
  int bound;          /* rd_exec_create_out: finish takes only bound_out */
  void *bound_out;
  /* Bound, outer group kept, not direct: each part's outputs (those of its
   * outer indices, which no other part adds to) are finished by the part
   * itself, on its thread, into bound_out, while its accumulators are
   * still in cache; rd_exec_finish() then writes nothing.  (Case D,
   * [256,512,512] over axis 1: the serial final pass took 0.67 ms of
   * 10.5.) */
  int part_out;
  /* Outer reduced with several parts: the partial sets are merged into
   * `total` in part order as soon as they are done, by whichever part's
   * thread finds the next one done (exec_merge_done()), so the merge runs
   * beside the parts still running instead of after them all.  mu guards
   * done[], merged and merging. */
  unsigned char *total; /* sets 0 .. merged-1 merged from empty, or NULL */
  size_t merged;
  int merging; /* a thread is merging (outside mu) */
  pthread_mutex_t mu;
  unsigned char done[RD_MAX_PARTS];
  uint64_t bad[RD_MAX_PARTS]; /* first invalid bool element, per part */
  unsigned char badval[RD_MAX_PARTS];
  struct cursor_error {
    int rc;
    uint64_t o;
    struct rd_error err;
  } ferr[RD_MAX_PARTS]; /* direct_int: the first output error, per part */
};

/* bool input: the first byte other than 0 or 1 among n elements. */
static int bool_scan(const unsigned char *x, uint64_t n, uint64_t *at)
{
  for (uint64_t i = 0; i < n; i++)
    if (x[i] > 1) {
      *at = i;
      return 1;
    }
  return 0;
}

static int bad_bool(struct rd_error *err, uint64_t e, unsigned v)
{
  return rd__set_err(err, RD_E_ELEMENT,
                     "input element %" PRIu64 " (flat "
                     "row-major index) is %u; a bool element must be 0 or 1",
                     e, v);
}

/* direct_out: in direct mode the parts write finished outputs there (the
 * slots are output elements: osz == out_elem_size). */
static int exec_create(const struct rd_plan *plan, void *direct_out,
                       struct rd_exec **out)
{
  struct rd_exec *ex;
  *out = NULL;
  if (!(ex = calloc(1, sizeof *ex)))
    return RD_E_NOMEM;
  ex->plan = *plan;
  geom_init(&ex->g, plan);
  if (ex->g.direct && direct_out && plan->out_bytes > 0) {
    ex->acc = direct_out;
    ex->borrowed = 1;
  } else {
    ex->acc = alloc_accs_big(ex->g.outer_red ? plan->nparts : 1,
                             plan->out_count, ex->g.osz, &ex->acc_map);
  }
  if (ex->acc && ex->g.outer_red && plan->nparts > 1 && plan->out_count > 0 &&
      !(ex->total = alloc_accs(1, plan->out_count, ex->g.accsz))) {
    free_accs_big(ex->acc, ex->acc_map);
    ex->acc = NULL;
  }
  if (!ex->acc || pthread_mutex_init(&ex->mu, NULL) != 0) {
    if (ex->acc && !ex->borrowed)
      free_accs_big(ex->acc, ex->acc_map);
    free(ex->total);
    free(ex);
    return RD_E_NOMEM;
  }
  ex->part_out = direct_out && !ex->g.direct && ex->g.ng >= 2 &&
                 !ex->g.outer_red && plan->out_count > 0 && plan->in_count > 0;
  /* with a total, or with part_out, each part empties its own set or
   * range (on its own thread, where the pages are first touched) */
  if (ex->total)
    acc_empty(ex->g.k, ex->total, plan->out_count);
  else if (ex->g.k->init && !ex->g.direct && !ex->part_out)
    acc_empty(ex->g.k, ex->acc,
              (ex->g.outer_red ? plan->nparts : 1) * plan->out_count);
  for (size_t p = 0; p < RD_MAX_PARTS; p++)
    ex->bad[p] = UINT64_MAX;
  *out = ex;
  return 0;
}

int rd_exec_create(const struct rd_plan *plan, struct rd_exec **out)
{
  return exec_create(plan, NULL, out);
}

int rd_exec_create_out(const struct rd_plan *plan, void *out,
                       struct rd_exec **ex)
{
  int rc;
  if (ex)
    *ex = NULL;
  if (!plan || !ex || (!out && plan->out_bytes > 0))
    return RD_E_INVALID;
  if ((rc = exec_create(plan, out, ex)) != 0)
    return rc;
  (*ex)->bound = 1;
  (*ex)->bound_out = out;
  return 0;
}

/* Runs on the caller's thread; distinct parts touch disjoint memory. */
/* Marks `part` done and, unless another thread is at it, merges every
 * set from the first unmerged one while the next is done: each set exactly
 * once, in part order, so `total` is ((0 + p0) + p1) + ... as
 * write_outputs() would add them.  Runs on the part's thread; the merge
 * itself outside the lock, so the other parts only wait to mark theirs. */
static void exec_merge_done(struct rd_exec *ex, size_t part)
{
  const uint64_t set_bytes = ex->plan.out_count * ex->g.accsz;
  pthread_mutex_lock(&ex->mu);
  ex->done[part] = 1;
  if (ex->total && !ex->merging) {
    ex->merging = 1;
    while (ex->merged < ex->plan.nparts && ex->done[ex->merged]) {
      const unsigned char *set = ex->acc + ex->merged * set_bytes;
      pthread_mutex_unlock(&ex->mu);
      acc_merge_n(ex->g.k, ex->total, set, ex->plan.out_count);
      pthread_mutex_lock(&ex->mu);
      ex->merged++;
    }
    ex->merging = 0;
  }
  pthread_mutex_unlock(&ex->mu);
}

/* part_out: the outer indices a..b-1 of the kept outer group that `part`
 * covers (its outputs are a..b-1 times the group's output stride). */
static void part_out_range(const struct rd_exec *ex, size_t part, uint64_t *a,
                           uint64_t *b)
{
  const struct rd_plan *pl = &ex->plan;
  *a = part * pl->priv.part_len;
  *b = *a + pl->priv.part_len;
  if (*b > pl->priv.size[0])
    *b = pl->priv.size[0];
}

/* part_out: writes the outputs of `part` (outer indices a..b-1 of the
 * kept outer group: outputs a..b-1 times its output stride) from the
 * accumulators into bound_out, in increasing order, stopping at the first
 * error, which goes to the cursor as a direct plan's would.  Runs on the
 * part's thread. */
static void part_outputs(struct rd_exec *ex, size_t part, struct cursor *c)
{
  const struct rd_plan *pl = &ex->plan;
  const struct geom *g = &ex->g;
  uint64_t a, b;
  part_out_range(ex, part, &a, &b);
  if (g->k->acc_class == RD__ACC_F64 &&
      (g->sq || g->fin.family == RD__F_SUMD)) {
    /* float32/float16/bfloat16 squares, Sum, Mean, L1, LogSum: no errors;
     * a vector form where the kernel has one */
    rd__accs_out(
      g->k, g->dtype, g->ofin, (size_t)g->fin.count,
      (const double *)(const void *)(ex->acc + a * g->ostride[0] * g->accsz),
      (unsigned char *)ex->bound_out + a * g->ostride[0] * pl->out_elem_size,
      (size_t)((b - a) * g->ostride[0]));
    return;
  }
  for (uint64_t o = a * ex->g.ostride[0]; o < b * ex->g.ostride[0]; o++) {
    int rc = store(pl, &ex->g, ex->acc + o * ex->g.accsz, ex->bound_out, o,
                   &c->err);
    if (rc != 0) {
      c->rc = rc;
      c->err_o = o;
      return;
    }
  }
}

int rd_exec_part(struct rd_exec *ex, size_t part, const void *in)
{
  const struct rd_plan *pl;
  struct cursor c;
  uint64_t start, end;
  unsigned char *acc;
  if (!ex || part >= ex->plan.nparts || ex->done[part])
    return RD_E_INVALID;
  pl = &ex->plan;
  if (pl->in_count > 0) {
    if (!in)
      return RD_E_INVALID;
    acc = ex->acc;
    if (ex->g.outer_red)
      acc += (uint64_t)part * pl->out_count * ex->g.accsz;
    part_range(pl, &ex->g, part, &start, &end);
    if (pl->dtype == RD_BOOL) {
      uint64_t at;
      const unsigned char *x = (const unsigned char *)in + start;
      if (bool_scan(x, end - start, &at)) {
        ex->bad[part] = start + at;
        ex->badval[part] = x[at];
      }
    }
    if (ex->total && ex->g.k->init)
      acc_empty(ex->g.k, acc, pl->out_count);
    if (ex->part_out && ex->g.k->init) {
      uint64_t a, b;
      part_out_range(ex, part, &a, &b);
      acc_empty(ex->g.k, acc + a * ex->g.ostride[0] * ex->g.accsz,
                (b - a) * ex->g.ostride[0]);
    }
    cursor_init(&c, pl, &ex->g, start);
    process(&c, pl, &ex->g, acc,
            (const unsigned char *)in + start * pl->elem_size, end - start);
    end_segment(&c, &ex->g, acc);
    if (ex->part_out)
      part_outputs(ex, part, &c);
    if (c.rc != 0) {
      ex->ferr[part].rc = c.rc;
      ex->ferr[part].o = c.err_o;
      ex->ferr[part].err = c.err;
    }
  }
  exec_merge_done(ex, part);
  return 0;
}

/* A direct plan's output error found while the parts ran (the first, at
 * output o): the outputs before it are written, as write_outputs() would
 * have, and the error is returned. */
static int direct_error(const struct rd_plan *pl, const struct geom *g,
                        const unsigned char *acc, void *out, int rc, uint64_t o,
                        const struct rd_error *e, struct rd_error *err)
{
  if (o > 0 && (const void *)acc != out)
    memcpy(out, acc, (size_t)(o * g->osz));
  (void)pl;
  if (err)
    *err = *e;
  return rc;
}

/* Outputs per block of write_outputs(): the block's running sums stay in
 * L1 while the partial sets stream past in part order. */
#define MERGE_BLOCK 64

/* Writes every output; partials (if any) are added in part order, each
 * output's sum starting from zero: ((0 + p0) + p1) + ... -- or, with a
 * base (the sets before these, merged), from the base. */
static int write_outputs(const struct rd_plan *pl, const struct geom *g,
                         const unsigned char *base, const unsigned char *acc,
                         size_t nsets, void *out, struct rd_error *err)
{
  uint64_t set_bytes = pl->out_count * g->accsz;
  union {
    struct rd__blue b;
    struct rd__u192 w;
    u128 q;
    double d;
    struct rd__acc_lse lse;
    struct rd__acc_ilse ilse;
    struct rd__acc_prod prod;
    struct rd__acc_iprod iprod;
    struct rd__acc_arg arg;
  } tmp[MERGE_BLOCK];
  if (g->direct) {
    if (pl->out_bytes > 0 && (const void *)acc != out)
      memcpy(out, acc, (size_t)pl->out_bytes);
    return 0;
  }
  for (uint64_t o0 = 0; o0 < pl->out_count; o0 += MERGE_BLOCK) {
    size_t m = pl->out_count - o0 < MERGE_BLOCK ? (size_t)(pl->out_count - o0)
                                                : MERGE_BLOCK;
    const unsigned char *a = acc + o0 * g->accsz;
    int rc;
    if (base && nsets == 0) {
      a = base + o0 * g->accsz;
    } else if (nsets > 0) {
      if (base)
        memcpy(tmp, base + o0 * g->accsz, m * g->accsz);
      else
        acc_empty(g->k, tmp, m);
      for (size_t p = 0; p < nsets; p++)
        acc_merge_n(g->k, tmp, a + p * set_bytes, m);
      a = (const unsigned char *)tmp;
    }
    for (size_t i = 0; i < m; i++)
      if ((rc = store(pl, g, a + i * g->accsz, out, o0 + i, err)) != 0)
        return rc;
  }
  return 0;
}

int rd_exec_finish(struct rd_exec *ex, void *out, struct rd_error *err)
{
  clear_err(err);
  if (!ex)
    return rd__set_err(err, RD_E_INVALID, "execution is NULL");
  for (size_t p = 0; p < ex->plan.nparts; p++)
    if (!ex->done[p])
      return rd__set_err(err, RD_E_INVALID, "part %zu of %zu has not run", p,
                         ex->plan.nparts);
  if (ex->plan.out_count > 0 && !out)
    return rd__set_err(err, RD_E_INVALID, "output buffer is NULL");
  if (ex->bound && out != ex->bound_out)
    return rd__set_err(err, RD_E_INVALID,
                       "output buffer is not the one given to "
                       "rd_exec_create_out");
  for (size_t p = 0; p < ex->plan.nparts; p++)
    if (ex->bad[p] != UINT64_MAX) /* parts are in flat order */
      return bad_bool(err, ex->bad[p], ex->badval[p]);
  for (size_t p = 0; p < ex->plan.nparts; p++)
    if (ex->ferr[p].rc != 0) /* parts hold increasing outputs */
      return direct_error(&ex->plan, &ex->g, ex->part_out ? out : ex->acc, out,
                          ex->ferr[p].rc, ex->ferr[p].o, &ex->ferr[p].err, err);
  if (ex->part_out) /* every output is written */
    return 0;
  if (ex->total) /* the sets not merged yet (none if the parts ran in
                  * order), after the total */
    return write_outputs(&ex->plan, &ex->g, ex->total,
                         ex->acc +
                           ex->merged * ex->plan.out_count * ex->g.accsz,
                         ex->plan.nparts - ex->merged, out, err);
  return write_outputs(&ex->plan, &ex->g, NULL, ex->acc,
                       ex->g.outer_red ? ex->plan.nparts : 0, out, err);
}

void rd_exec_destroy(struct rd_exec *ex)
{
  if (ex) {
    if (!ex->borrowed)
      free_accs_big(ex->acc, ex->acc_map);
    free(ex->total);
    pthread_mutex_destroy(&ex->mu);
    free(ex);
  }
}

/* ------------------------------------------------------------------ */
/* rd_stream                                                          */
/* ------------------------------------------------------------------ */

struct rd_stream {
  struct rd_plan plan;
  struct geom g;
  struct cursor c;
  uint64_t consumed; /* bytes */
  uint64_t e;        /* elements processed */
  size_t part;
  uint64_t part_end;      /* flat element index ending the current part */
  unsigned char carry[8]; /* bytes of a split element */
  size_t ncarry;
  unsigned char *cur;   /* accumulators of the current part */
  unsigned char *total; /* sum of finished parts (== cur if outer kept) */
  int borrowed;         /* cur is the caller's output buffer */
  uint64_t bad;         /* first invalid bool element, or UINT64_MAX */
  unsigned badval;
};

/* direct_out: in direct mode, finished outputs go straight there (used by
 * rd_execute, which has the output buffer from the start). */
static int stream_create(const struct rd_plan *plan, void *direct_out,
                         struct rd_stream **out)
{
  struct rd_stream *s;
  uint64_t start;
  *out = NULL;
  if (!(s = calloc(1, sizeof *s)))
    return RD_E_NOMEM;
  s->plan = *plan;
  geom_init(&s->g, plan);
  if (s->g.direct && direct_out && plan->out_bytes > 0) {
    s->cur = direct_out;
    s->borrowed = 1;
  } else {
    s->cur = alloc_accs(1, plan->out_count, s->g.osz);
  }
  s->total = s->g.outer_red ? alloc_accs(1, plan->out_count, s->g.accsz)
                            : s->cur;
  if (!s->cur || !s->total) {
    rd_stream_destroy(s);
    return RD_E_NOMEM;
  }
  s->bad = UINT64_MAX;
  if (s->g.k->init && !s->g.direct) {
    acc_empty(s->g.k, s->cur, plan->out_count);
    if (s->total != s->cur)
      acc_empty(s->g.k, s->total, plan->out_count);
  }
  if (plan->in_count > 0) {
    part_range(plan, &s->g, 0, &start, &s->part_end);
    cursor_init(&s->c, plan, &s->g, 0);
  }
  *out = s;
  return 0;
}

int rd_stream_create(const struct rd_plan *plan, struct rd_stream **out)
{
  return stream_create(plan, NULL, out);
}

static void stream_end_part(struct rd_stream *s)
{
  const struct rd_plan *pl = &s->plan;
  uint64_t start;
  end_segment(&s->c, &s->g, s->cur);
  if (s->g.outer_red) {
    acc_merge_n(s->g.k, s->total, s->cur, pl->out_count);
    acc_empty(s->g.k, s->cur, pl->out_count);
  }
  if (++s->part < pl->nparts)
    part_range(pl, &s->g, s->part, &start, &s->part_end);
}

static void stream_elems(struct rd_stream *s, const unsigned char *x,
                         uint64_t n)
{
  uint64_t at;
  if (s->plan.dtype == RD_BOOL && s->bad == UINT64_MAX &&
      bool_scan(x, n, &at)) {
    s->bad = s->e + at;
    s->badval = x[at];
  }
  while (n > 0) {
    uint64_t take = s->part_end - s->e;
    assert(s->e < s->part_end); /* a finished part moved part_end on */
    if (take > n)
      take = n;
    process(&s->c, &s->plan, &s->g, s->cur, x, take);
    s->e += take;
    x += take * s->plan.elem_size;
    n -= take;
    if (s->e == s->part_end)
      stream_end_part(s);
  }
}

int rd_stream_feed(struct rd_stream *s, const void *bytes, size_t len,
                   struct rd_error *err)
{
  const unsigned char *p = bytes;
  size_t esz;
  uint64_t whole;
  clear_err(err);
  if (!s || (len > 0 && !bytes))
    return rd__set_err(err, RD_E_INVALID, "stream or bytes is NULL");
  if (len > s->plan.in_bytes - s->consumed)
    return rd__set_err(err, RD_E_STREAM,
                       "%zu more bytes after %" PRIu64
                       " exceed the input size of %" PRIu64 " bytes",
                       len, s->consumed, s->plan.in_bytes);
  if (len == 0)
    return 0;
  esz = s->plan.elem_size;
  s->consumed += len;
  if (s->ncarry > 0) {
    size_t k = esz - s->ncarry;
    if (k > len)
      k = len;
    memcpy(s->carry + s->ncarry, p, k);
    s->ncarry += k;
    p += k;
    len -= k;
    if (s->ncarry < esz)
      return 0;
    stream_elems(s, s->carry, 1);
    s->ncarry = 0;
  }
  whole = len / esz;
  stream_elems(s, p, whole);
  p += whole * esz;
  len -= (size_t)(whole * esz);
  if (len > 0)
    memcpy(s->carry, p, len);
  s->ncarry = len;
  return 0;
}

uint64_t rd_stream_consumed(const struct rd_stream *s)
{
  return s ? s->consumed : 0;
}

int rd_stream_finish(struct rd_stream *s, void *out, struct rd_error *err)
{
  clear_err(err);
  if (!s)
    return rd__set_err(err, RD_E_INVALID, "stream is NULL");
  if (s->consumed != s->plan.in_bytes)
    return rd__set_err(err, RD_E_STREAM,
                       "got %" PRIu64 " input bytes; the shape "
                       "needs %" PRIu64,
                       s->consumed, s->plan.in_bytes);
  if (s->plan.out_count > 0 && !out)
    return rd__set_err(err, RD_E_INVALID, "output buffer is NULL");
  if (s->bad != UINT64_MAX)
    return bad_bool(err, s->bad, s->badval);
  if (s->c.rc != 0)
    return direct_error(&s->plan, &s->g, s->total, out, s->c.rc, s->c.err_o,
                        &s->c.err, err);
  return write_outputs(&s->plan, &s->g, NULL, s->total, 0, out, err);
}

void rd_stream_destroy(struct rd_stream *s)
{
  if (s) {
    if (s->total != s->cur)
      free(s->total);
    if (!s->borrowed)
      free(s->cur);
    free(s);
  }
}

/* ------------------------------------------------------------------ */
/* rd_execute                                                         */
/* ------------------------------------------------------------------ */

/* A stream fed the whole buffer: the same engine and order, and only two
 * accumulator sets whatever nparts is. */
int rd_execute(const struct rd_plan *plan, const void *in, void *out,
               struct rd_error *err)
{
  struct rd_stream *s;
  int rc;
  clear_err(err);
  if (!plan)
    return rd__set_err(err, RD_E_INVALID, "plan is NULL");
  if (plan->in_bytes > SIZE_MAX)
    return rd__set_err(err, RD_E_NOMEM,
                       "the input of %" PRIu64 " bytes cannot be "
                       "addressed",
                       plan->in_bytes);
  if (plan->in_bytes > 0 && !in)
    return rd__set_err(err, RD_E_INVALID, "input buffer is NULL");
  if ((rc = stream_create(plan, out, &s)) != 0)
    return rd__set_err(err, rc, "no memory for %" PRIu64 " accumulators",
                       plan->out_count);
  rc = rd_stream_feed(s, in, (size_t)plan->in_bytes, err);
  if (rc == 0)
    rc = rd_stream_finish(s, out, err);
  rd_stream_destroy(s);
  return rc;
}
