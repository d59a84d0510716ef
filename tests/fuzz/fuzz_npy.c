/* fuzz_npy.c - libFuzzer target: a .npy request body as the daemon reads
 * it.  The header goes through api_npy_parse() the way api/prefix.c
 * calls it (API_NPY_PREFIX bytes first, then exactly the length it asks
 * for); a valid header's dtype and shape, with query-string-like attributes
 * from the last input bytes, go through api_binary_plan() (Fortran order
 * included); when the data is small it is byte-swapped, transposed, reduced
 * and encoded back as .npy, whose header must parse to the output's dtype
 * and shape.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "binary.h"
#include "reduce.h"

#define FZ_MAX_BYTES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const struct rd_plan *plan, int64_t opset,
                      const void *out)
{
  struct api_buf b;
  struct api_npy back;
  struct rd_error err;
  int rc;

  api_buf_init(&b);
  rc = api_encode_result(API_FMT_NPY, plan, opset, out, &b, &err);
  if (rc == 0) {
    if (api_npy_parse(b.data, b.len, &back, &err) != 0 ||
        back.dtype != plan->dtype || back.rank != plan->out_rank ||
        back.fortran ||
        memcmp(back.shape, plan->out_shape,
               plan->out_rank * sizeof back.shape[0]) != 0 ||
        b.len != back.header_len + plan->out_bytes)
      __builtin_trap(); /* our own .npy does not read back */
  } else if (rc != API_E_NOT_ACCEPTABLE || plan->dtype != RD_BFLOAT16) {
    if (rc != RD_E_NOMEM)
      __builtin_trap();
  }
  api_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct api_npy npy;
  struct api_request req;
  struct rd_plan logical, physical;
  struct rd_error err;
  size_t want = API_NPY_PREFIX, tail;
  uint8_t flags;
  int rc;

  /* The last byte, if any, sets the attributes; the rest is the body. */
  if (size == 0)
    return 0;
  flags = data[size - 1];
  size--;

  for (;;) {
    size_t have = want < size ? want : size;
    rc = api_npy_parse(data, have, &npy, &err);
    if (rc <= 0)
      break;
    if ((size_t)rc <= have || (size_t)rc > API_NPY_HEADER_MAX)
      __builtin_trap(); /* asked for no more, or for more than the cap */
    if ((size_t)rc > size)
      return 0; /* the body ends inside the header */
    want = (size_t)rc;
  }
  if (rc < 0) {
    if (err.code != rc || api_http_status(rc) != 400 || err.msg[0] == '\0')
      __builtin_trap(); /* refusals are 400s that say why */
    return 0;
  }
  if (npy.header_len > size || npy.rank > RD_MAX_RANK)
    __builtin_trap();

  memset(&req, 0, sizeof req);
  rd_params_init(&req.params);
  req.params.op = (flags & 1) ? RD_OP_SUM_SQUARE : RD_OP_L2;
  req.params.opset = (flags & 2) ? 18 : 13;
  req.params.dtype = npy.dtype;
  req.params.rank = npy.rank;
  memcpy(req.shape, npy.shape, sizeof req.shape);
  req.params.shape = req.shape;
  req.params.keepdims = (flags >> 2) & 1;
  req.params.naxes = npy.rank > 0 ? (flags >> 3) % 3 : 0;
  for (size_t i = 0; i < req.params.naxes; i++)
    req.axes[i] = (int64_t)((flags >> (5 + i)) % npy.rank) -
                  (int64_t)(i & 1) * (int64_t)npy.rank;
  req.params.axes = req.axes;
  req.params.overflow = RD_OVERFLOW_WRAP;

  if (api_binary_plan(&req.params, npy.fortran, &logical, &physical, &err) != 0)
    return 0;
  if (logical.in_bytes != physical.in_bytes ||
      logical.out_bytes != physical.out_bytes)
    __builtin_trap(); /* the two views of one array differ in size */
  tail = size - npy.header_len;
  if (logical.in_bytes > tail || logical.in_bytes > FZ_MAX_BYTES ||
      logical.out_bytes > FZ_MAX_BYTES)
    return 0;

  {
    size_t ib = logical.in_bytes > 0 ? (size_t)logical.in_bytes : 1;
    size_t ob = logical.out_bytes > 0 ? (size_t)logical.out_bytes : 1;
    uint8_t *in = malloc(ib), *c = malloc(ib), *out = malloc(ob);
    if (in != NULL && c != NULL && out != NULL) {
      memcpy(in, data + npy.header_len, (size_t)logical.in_bytes);
      if (npy.swap)
        api_swap_bytes(in, (size_t)logical.in_bytes, logical.elem_size);
      if (npy.fortran && npy.rank > 1) {
        api_fortran_to_c(in, c, npy.rank, npy.shape, logical.elem_size);
        rc = rd_execute(&logical, c, out, &err);
      } else {
        rc = rd_execute(&physical, in, out, &err);
      }
      if (rc == 0)
        roundtrip(&logical, req.params.opset, out);
    }
    free(in);
    free(c);
    free(out);
  }
  return 0;
}
