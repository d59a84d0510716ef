/* jpush_same.h - the oracle of the push decoder (api/jsonpush.c), shared
 * by tests/unit/test_jsonpush.c and tests/fuzz/fuzz_json.c: the body fed
 * in chunks must decode to exactly what api_json_decode() gives on the
 * whole body (return value, error code and message, parameters, element
 * bytes).  Header-only, static: each program includes it once. */
#ifndef JPUSH_SAME_H
#define JPUSH_SAME_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "jsonpush.h"

/* Feeds body[0..len) cut at the `ncuts` increasing offsets `cuts`, each
 * chunk from a writable copy that must come back unchanged.  `hint` is
 * the length the decoder is told (0 or len).  Returns NULL if both agree,
 * else what differs (a static string). */
static const char *jpush_same(const char *body, size_t len, const size_t *cuts,
                              size_t ncuts, int hint, uint64_t max_elements)
{
  struct api_request a, b;
  struct rd_error ea, eb;
  struct api_jpush *p;
  const char *why = NULL;
  size_t at = 0, i;
  int ra, rb;
  char *chunk;

  memset(&ea, 0, sizeof ea);
  memset(&eb, 0, sizeof eb);
  ra = api_json_decode(body, len, max_elements, &a, &ea);
  if (api_jpush_create(hint ? len : 0, &p) != 0)
    return "create failed";
  for (i = 0; i <= ncuts && why == NULL; i++) {
    size_t to = i < ncuts ? cuts[i] : len, n;
    if (to < at || to > len)
      continue;
    n = to - at;
    chunk = malloc(n > 0 ? n : 1);
    if (chunk == NULL) {
      why = "out of memory";
      break;
    }
    if (n > 0)
      memcpy(chunk, body + at, n);
    if (api_jpush_feed(p, chunk, n) != 0)
      why = "feed failed";
    else if (n > 0 && memcmp(chunk, body + at, n) != 0)
      why = "feed left the chunk changed";
    free(chunk);
    at = to;
  }
  rb = why == NULL ? api_jpush_finish(p, max_elements, &b, &eb) : -1;
  api_jpush_destroy(p);
  if (why == NULL) {
    if (ra != rb)
      why = "return values differ";
    else if (ra != 0 && (ea.code != eb.code || strcmp(ea.msg, eb.msg) != 0))
      why = "errors differ";
    else if (ra != 0 && a.params.op != b.params.op)
      why = "the op of the error differs";
    else if (ra == 0 &&
             (a.params.op != b.params.op || a.params.opset != b.params.opset ||
              a.params.dtype != b.params.dtype ||
              a.params.rank != b.params.rank ||
              a.params.naxes != b.params.naxes ||
              a.params.keepdims != b.params.keepdims ||
              a.params.axis != b.params.axis ||
              a.params.noop_with_empty_axes != b.params.noop_with_empty_axes ||
              a.params.select_last_index != b.params.select_last_index ||
              a.params.overflow != b.params.overflow ||
              memcmp(a.shape, b.shape, a.params.rank * sizeof a.shape[0]) ||
              memcmp(a.axes, b.axes, a.params.naxes * sizeof a.axes[0]) ||
              a.data_bytes != b.data_bytes ||
              memcmp(a.data, b.data, a.data_bytes) != 0))
      why = "requests differ";
  }
  if (why != NULL && getenv("JPUSH_VERBOSE") != NULL)
    fprintf(stderr, "jpush_same: %s: rc %d/%d\n  %s\n  %s\n", why, ra, rb,
            ra ? ea.msg : "", rb ? eb.msg : "");
  if (ra == 0)
    api_request_free(&a);
  if (rb == 0)
    api_request_free(&b);
  return why;
}

#endif /* JPUSH_SAME_H */
