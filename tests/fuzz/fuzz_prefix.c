/* fuzz_prefix.c - libFuzzer target: api/prefix.c, the push decoder of what
 * precedes a binary body's tensor data, as the daemon feeds it.  The first
 * three input bytes choose the body kind (.npy or /v2), a cut position
 * and, for /v2, Inference-Header-Content-Length; the rest is the body.
 * The body is decoded whole, cut in two, and byte by byte: the three
 * answers, bytes taken, plan inputs and errors must be identical, errors
 * must name a code and say why, and a READY prefix's plan goes through the
 * length checks.  This is the /v2 binary extension's fuzz target.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "binary.h"
#include "prefix.h"
#include "reduce.h"
#include "v2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct answer {
  int status, code;
  size_t taken;
  char msg[RD_ERRMSG_MAX];
  struct rd_params params;
  int64_t shape[RD_MAX_RANK], axes[RD_MAX_RANK];
  uint64_t data_offset;
  int swap, fortran;
};

/* Feeds `body` in pieces of at most `step` bytes (0: all at once, then
 * `cut` first). */
static void decode(int v2, size_t hl, const uint8_t *body, size_t len,
                   size_t cut, size_t step, struct answer *a)
{
  struct api_prefix p;
  struct api_v2_info info;
  struct api_request q;
  struct rd_error err;
  size_t at = 0, taken;
  int st = API_PREFIX_MORE, first = 1;

  memset(a, 0, sizeof *a);
  memset(&q, 0, sizeof q);
  rd_params_init(&q.params); /* axis, select_last_index: RD_UNSET */
  memset(&err, 0, sizeof err);
  memset(&info, 0, sizeof info);
  q.params.op = RD_OP_L2;
  q.params.opset = 18;
  q.params.keepdims = 1;
  info.op = RD_OP_SUM_SQUARE;
  if (v2) {
    if (api_prefix_init_v2(&p, hl, len, &info, &err) != 0)
      __builtin_trap(); /* a small header always fits */
  } else {
    api_prefix_init_npy(&p, &q, len);
  }
  while (st == API_PREFIX_MORE && at < len) {
    size_t n = step != 0 ? step : first ? cut : len - at;
    first = 0;
    if (n > len - at)
      n = len - at;
    st = api_prefix_feed(&p, body + at, n, &taken, &err);
    if (taken > n || (st == API_PREFIX_MORE && taken != n))
      __builtin_trap(); /* took what it was not given, or kept some */
    a->taken += taken;
    at += n;
  }
  a->status = st;
  if (st == API_PREFIX_ERROR) {
    if (err.code == 0 || err.msg[0] == '\0' || api_http_status(err.code) == 500)
      __builtin_trap(); /* refusals name a code and say why */
    a->code = err.code;
    memcpy(a->msg, err.msg, sizeof a->msg);
  } else if (st == API_PREFIX_READY) {
    struct rd_plan logical, physical;
    a->params = p.req.params;
    a->params.shape = NULL;
    a->params.axes = NULL;
    memcpy(a->shape, p.req.shape, sizeof a->shape);
    memcpy(a->axes, p.req.axes, sizeof a->axes);
    a->data_offset = p.data_offset;
    a->swap = p.swap;
    a->fortran = p.fortran;
    if (p.data_offset != a->taken || p.data_offset > len)
      __builtin_trap(); /* the data starts right after the prefix */
    if (api_binary_plan(&p.req.params, p.fortran, &logical, &physical, &err) ==
        0) {
      (void)api_prefix_check_size(&p, &logical, 1u << 20, &err);
      (void)api_prefix_check_length(&p, &logical, &err);
      (void)api_prefix_check_end(&p, &logical, len, len - p.data_offset, &err);
    }
  } else if (st == API_PREFIX_MORE) {
    (void)api_prefix_check_end(&p, NULL, len, 0, &err);
  }
  api_prefix_free(&p);
}

static int same(const struct answer *a, const struct answer *b)
{
  return a->status == b->status && a->code == b->code && a->taken == b->taken &&
         strcmp(a->msg, b->msg) == 0 && a->params.dtype == b->params.dtype &&
         a->params.rank == b->params.rank &&
         a->params.naxes == b->params.naxes &&
         memcmp(a->shape, b->shape, sizeof a->shape) == 0 &&
         memcmp(a->axes, b->axes, sizeof a->axes) == 0 &&
         a->data_offset == b->data_offset && a->swap == b->swap &&
         a->fortran == b->fortran;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct answer whole, split, bytes;
  size_t len, cut, hl;
  int v2;

  if (size < 3 || size > 4096)
    return 0;
  v2 = data[0] & 1;
  len = size - 3;
  cut = len != 0 ? data[1] % (len + 1) : 0;
  /* /v2: a header of 1..len bytes (the daemon needs one shorter than the
   * body, or a chunked body). */
  hl = len != 0 ? 1 + (((size_t)data[2] << 4 | (data[0] >> 4)) % len) : 1;
  data += 3;

  decode(v2, hl, data, len, len, 0, &whole);
  decode(v2, hl, data, len, cut, 0, &split);
  decode(v2, hl, data, len, 0, 1, &bytes);
  if (!same(&whole, &split) || !same(&whole, &bytes))
    __builtin_trap(); /* the answer depends on the chunking */
  return 0;
}
