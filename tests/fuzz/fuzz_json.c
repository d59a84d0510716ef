/* fuzz_json.c - libFuzzer target: a POST /v1/reduce JSON body through the
 * daemon's whole pipeline minus HTTP: api_json_decode() with the daemon's
 * element bound, rd_plan_init(), rd_execute() and api_json_encode_result()
 * (or api_json_encode_error() for a refused body).
 *
 * Checks beyond "no crash, no sanitizer report": every error has a known
 * wire name and a 4xx/5xx status, every encoded body is valid JSON, and an
 * answer's dtype is the plan's output dtype (int64 for ArgMax/ArgMin);
 * and the decoder's fast path (api/jsonfast.c), forced on whatever the
 * body's size, gives the same request or error as jansson's path; and the
 * push decoder (api/jsonpush.c), fed the body in chunks cut at offsets
 * drawn from the body's own bytes (whole, byte by byte, and at random
 * cuts), gives what api_json_decode() gives (jpush_same.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api.h"
#include "jpush_same.h"
#include "jsonfast.h"
#include "reduce.h"

/* The daemon answers an empty input with at most this many outputs
 * (JOB_MAX_EMPTY_OUTPUT); the fuzzer keeps allocations as small. */
#define FZ_MAX_OUT_BYTES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* `b` is JSON; with a plan, an answer whose output.dtype is the plan's
 * output dtype and whose data has plan->out_count elements. */
static void check_json(const struct api_buf *b, const struct rd_plan *plan)
{
  json_error_t jerr;
  json_t *j = json_loadb(b->data, b->len, JSON_DECODE_ANY, &jerr), *o;
  const char *dt;

  if (j == NULL)
    __builtin_trap(); /* we produced a body that is not JSON */
  if (plan != NULL) {
    o = json_object_get(j, "output");
    dt = json_string_value(json_object_get(o, "dtype"));
    if (dt == NULL || strcmp(dt, rd_dtype_name(plan->out_dtype)) != 0 ||
        (rd_op_info(plan->op)->is_arg && plan->out_dtype != RD_INT64) ||
        json_array_size(json_object_get(o, "data")) != plan->out_count)
      __builtin_trap(); /* the answer does not describe the output */
  }
  json_decref(j);
}

static void encode_error(const struct rd_error *err)
{
  struct api_buf b;
  int status = api_http_status(err->code);

  if (err->code >= 0 || status < 400 || status > 599 ||
      strcmp(api_errname(err->code), "INTERNAL") == 0)
    __builtin_trap(); /* a code without a wire name, or not an error */
  api_buf_init(&b);
  if (api_json_encode_error(err, &b) == 0)
    check_json(&b, NULL);
  api_buf_free(&b);
}

/* The fast path against jansson's path on the same body. */
static void check_paths(const char *body, size_t size)
{
  struct api_request a, b;
  struct rd_error ea, eb;
  int ra, rb;

  memset(&ea, 0, sizeof ea);
  memset(&eb, 0, sizeof eb);
  ra = api_json_decode_path(body, size, (uint64_t)size / 2 + 1, &a, &ea, 0);
  rb = api_json_decode_path(body, size, (uint64_t)size / 2 + 1, &b, &eb, 2);
  if (ra != rb || (ra != 0 && strcmp(ea.msg, eb.msg) != 0) ||
      (ra == 0 &&
       (a.data_bytes != b.data_bytes || a.params.rank != b.params.rank ||
        memcmp(a.shape, b.shape, sizeof a.shape) != 0 ||
        memcmp(a.data, b.data, a.data_bytes) != 0)))
    __builtin_trap(); /* the two paths disagree */
  api_request_free(&a);
  api_request_free(&b);
}

/* The push decoder against api_json_decode() on the same body: whole, byte
 * by byte (short bodies), and cut at offsets drawn from a hash of the body
 * (deterministic, so that a reproducer replays). */
static void check_push(const char *body, size_t size)
{
  uint64_t h = 1469598103934665603u, max = (uint64_t)size / 2 + 1;
  size_t *cuts, n = 0, at = 0, i;

  if (jpush_same(body, size, NULL, 0, (int)(size & 1), max) != NULL)
    __builtin_trap(); /* the push decoder disagrees, fed whole */
  cuts = calloc(size + 1, sizeof *cuts);
  if (cuts == NULL)
    return;
  if (size <= 4096) {
    for (i = 0; i < size; i++)
      cuts[i] = i + 1;
    if (jpush_same(body, size, cuts, size, 0, max) != NULL)
      __builtin_trap(); /* ... fed byte by byte */
  }
  for (i = 0; i < size; i++)
    h = (h ^ (unsigned char)body[i]) * 1099511628211u;
  for (int round = 0; round < 3; round++) {
    for (n = 0, at = 0; at < size; n++) {
      h ^= h >> 29;
      h *= 0xBF58476D1CE4E5B9u;
      at += 1 + (size_t)(h >> 40) % (round == 0 ? 7 : round == 1 ? 64 : 4096);
      cuts[n] = at < size ? at : size;
    }
    if (jpush_same(body, size, cuts, n, round & 1, max) != NULL)
      __builtin_trap(); /* ... fed in random chunks */
  }
  free(cuts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct api_request req;
  struct rd_plan plan;
  struct rd_error err;
  struct api_buf b;
  void *out;
  int rc;

  check_paths((const char *)data, size);
  check_push((const char *)data, size);
  memset(&err, 0, sizeof err);
  /* The daemon's bound: every element takes at least two bytes ("0,"). */
  rc = api_json_decode((const char *)data, size, (uint64_t)size / 2 + 1, &req,
                       &err);
  if (rc != 0) {
    encode_error(&err);
    api_request_free(&req);
    return 0;
  }
  rc = rd_plan_init(&plan, &req.params, &err);
  if (rc != 0) {
    encode_error(&err);
    api_request_free(&req);
    return 0;
  }
  if (plan.in_bytes != req.data_bytes)
    __builtin_trap(); /* decode and plan disagree on the input size */
  if (plan.out_bytes > FZ_MAX_OUT_BYTES) {
    api_request_free(&req);
    return 0;
  }
  out = malloc(plan.out_bytes > 0 ? plan.out_bytes : 1);
  if (out != NULL) {
    rc = rd_execute(&plan, req.data, out, &err);
    if (rc != 0) {
      encode_error(&err);
    } else {
      api_buf_init(&b);
      if (api_json_encode_result(&plan, req.params.opset, out, &b) == 0)
        check_json(&b, &plan);
      api_buf_free(&b);
    }
    free(out);
  }
  api_request_free(&req);
  return 0;
}
