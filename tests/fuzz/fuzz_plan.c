/* fuzz_plan.c - libFuzzer target: the library's plan step and its three
 * executors on random shapes, axes and attributes.
 *
 * The first bytes choose rd_params (op - every operator of the table -,
 * opset, dtype, rank, dims, axes, keepdims, noop_with_empty_axes, axis,
 * select_last_index, overflow policy), deliberately reaching
 * out-of-range values; the rest fill the input tensor.  When the plan is
 * accepted and small, rd_execute(), rd_stream_* (in fuzzer-chosen chunk
 * sizes, splitting elements) and rd_exec_* (parts in reverse order) must
 * agree bit for bit and on the error code - the documented contract.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"

#define FZ_MAX_BYTES (1u << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct src {
  const uint8_t *p;
  size_t n;
};

static uint8_t take(struct src *s)
{
  uint8_t v = 0;

  if (s->n > 0) {
    v = *s->p++;
    s->n--;
  }
  return v;
}

static int64_t take_dim(struct src *s)
{
  uint8_t b = take(s);

  switch (b >> 5) {
  case 0: /* the odd ones: negative, zero, huge */
    switch (b & 7) {
    case 0: return -1;
    case 1: return 0;
    case 2: return INT64_MAX;
    case 3: return INT64_MIN;
    case 4: return (int64_t)1 << 32;
    case 5: return ((int64_t)1 << 62) + 1;
    default: return 0;
    }
  case 1: return 1;
  default: return (int64_t)(b & 7) + 1; /* small dims: executable */
  }
}

static const int opsets[] = {
  1, 10, 11, 12, 13, 17, 18, 19, 20, 21, 0, -1, 1000
};
static const int dtypes[] = { RD_FLOAT32, RD_FLOAT64, RD_FLOAT16, RD_BFLOAT16,
                              RD_INT32,   RD_INT64,   RD_UINT32,  RD_UINT64,
                              RD_INT8,    RD_UINT8,   RD_INT16,   RD_UINT16,
                              RD_BOOL,    0,          8,          99 };

static void run(const struct rd_plan *plan, const uint8_t *in,
                struct src *chunks)
{
  struct rd_error e1, e2, e3;
  struct rd_stream *st = NULL;
  struct rd_exec *ex = NULL;
  size_t ob = plan->out_bytes > 0 ? (size_t)plan->out_bytes : 1;
  uint8_t *o1 = malloc(ob), *o2 = malloc(ob), *o3 = malloc(ob);
  int r1, r2 = RD_E_NOMEM, r3 = RD_E_NOMEM;

  if (o1 == NULL || o2 == NULL || o3 == NULL)
    goto out;
  memset(o1, 0xa5, ob);
  memset(o2, 0x5a, ob);
  memset(o3, 0x3c, ob);
  r1 = rd_execute(plan, in, o1, &e1);

  if (rd_stream_create(plan, &st) == 0) {
    size_t off = 0;
    r2 = 0;
    while (off < plan->in_bytes && r2 == 0) {
      size_t len = (size_t)take(chunks) % 37 + 1;
      if (len > plan->in_bytes - off)
        len = (size_t)plan->in_bytes - off;
      r2 = rd_stream_feed(st, in + off, len, &e2);
      off += len;
    }
    if (r2 == 0 && rd_stream_consumed(st) != plan->in_bytes)
      __builtin_trap();
    if (r2 == 0)
      r2 = rd_stream_finish(st, o2, &e2);
  }
  if (rd_exec_create(plan, &ex) == 0) {
    r3 = 0;
    for (size_t k = plan->nparts; k-- > 0 && r3 == 0;)
      r3 = rd_exec_part(ex, k, in);
    if (r3 == 0)
      r3 = rd_exec_finish(ex, o3, &e3);
  }
  if (r1 != r2 || r1 != r3)
    __builtin_trap(); /* the executors disagree on success or error */
  if (r1 == 0 && (memcmp(o1, o2, (size_t)plan->out_bytes) != 0 ||
                  memcmp(o1, o3, (size_t)plan->out_bytes) != 0))
    __builtin_trap(); /* ... or on the bits of the result */
out:
  rd_stream_destroy(st);
  rd_exec_destroy(ex);
  free(o1);
  free(o2);
  free(o3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct src s = { data, size };
  int64_t shape[RD_MAX_RANK + 2], axes[RD_MAX_RANK + 2];
  struct rd_params p;
  struct rd_plan plan;
  struct rd_error err;
  uint8_t flags;
  uint8_t *in;

  rd_params_init(&p);
  flags = take(&s);
  p.op = (flags & 3) == 3 ? 0 : (flags & 3); /* 1, 2, or invalid 0 */
  if (flags & 64)                            /* any op, or invalid 13 */
    p.op = take(&s) % (RD_OP_COUNT + 2);
  p.opset = opsets[take(&s) % (sizeof opsets / sizeof opsets[0])];
  p.dtype = dtypes[take(&s) % (sizeof dtypes / sizeof dtypes[0])];
  p.rank = take(&s) % (RD_MAX_RANK + 3); /* up to RD_MAX_RANK + 2 */
  for (size_t i = 0; i < p.rank; i++)
    shape[i] = take_dim(&s);
  p.naxes = take(&s) % (RD_MAX_RANK + 3);
  if (p.naxes > 0 && (flags & 4))
    p.naxes = p.naxes % 4; /* mostly few axes */
  for (size_t i = 0; i < p.naxes; i++)
    axes[i] = (int8_t)take(&s) % 40;
  p.shape = shape;
  p.axes = axes;
  if (flags & 8)
    p.keepdims = (int8_t)take(&s) % 3; /* 0, 1, or invalid */
  if (flags & 16)
    p.noop_with_empty_axes = (int8_t)take(&s) % 3;
  if (flags & 32)
    p.overflow = take(&s) % 4; /* 3 is invalid */
  if (flags & 128) {
    uint8_t b = take(&s);
    if (b & 1)
      p.axis = (int8_t)take(&s) % 40; /* ArgMax/ArgMin; else refused */
    if (b & 2)
      p.select_last_index = (int8_t)take(&s) % 3;
  }

  memset(&err, 0, sizeof err);
  if (rd_plan_init(&plan, &p, &err) != 0) {
    if (err.code >= 0 || rd_errname(err.code) == NULL || err.msg[0] == '\0')
      __builtin_trap(); /* every refusal names a known code and says why */
    return 0;
  }
  if (plan.in_bytes > FZ_MAX_BYTES || plan.out_bytes > FZ_MAX_BYTES)
    return 0;
  in = malloc(plan.in_bytes > 0 ? (size_t)plan.in_bytes : 1);
  if (in == NULL)
    return 0;
  /* Input bytes: the rest of the data, repeated (all zero if none). */
  for (size_t i = 0; i < plan.in_bytes; i++)
    in[i] = s.n > 0 ? s.p[i % s.n] : 0;
  run(&plan, in, &s);
  free(in);
  return 0;
}
