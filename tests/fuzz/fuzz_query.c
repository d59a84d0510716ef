/* fuzz_query.c - libFuzzer target: the request metadata of a binary body
 * that comes from the client as text: the query string
 * (api_query_parse() for raw and .npy bodies, then api_binary_plan()), the
 * Content-Type (api_format_of_content_type()) and the Accept header
 * (api_accept_parse(), api_accept_pick()).
 *
 * Input: one flag byte, then the three strings separated by '\n' (any may
 * be empty or missing; NUL bytes end a string early, as they would in an
 * HTTP header).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "binary.h"
#include "reduce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Copies the next '\n'-terminated piece of [*p, end) as a C string. */
static char *next_piece(const uint8_t **p, const uint8_t *end)
{
  const uint8_t *nl = *p < end ? memchr(*p, '\n', (size_t)(end - *p)) : NULL;
  size_t n = nl != NULL ? (size_t)(nl - *p) : (size_t)(end - *p);
  char *s = malloc(n + 1);

  if (s == NULL)
    return NULL;
  memcpy(s, *p, n);
  s[n] = '\0';
  *p += n + (nl != NULL);
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const uint8_t *p = data + (size > 0), *end = data + size;
  uint8_t flags = size > 0 ? data[0] : 0;
  char *qs = next_piece(&p, end);
  char *ct = next_piece(&p, end);
  char *accept = next_piece(&p, end);
  struct api_request req;
  struct api_accept acc;
  struct rd_plan logical, physical;
  struct rd_error err;
  int fmt = (flags & 1) ? API_FMT_NPY : API_FMT_RAW, rc, pick;

  if (qs == NULL || ct == NULL || accept == NULL)
    goto out;

  rc = api_format_of_content_type(ct);
  if (rc < API_FMT_NONE || rc >= API_NFORMATS)
    __builtin_trap();

  rc = api_query_parse(qs, fmt, &req, &err);
  if (rc != 0) {
    if (err.code != rc || api_http_status(rc) != 400 || err.msg[0] == '\0')
      __builtin_trap(); /* a refusal is a 400 that says why */
  } else {
    if (req.params.rank > RD_MAX_RANK || req.params.naxes > RD_MAX_RANK ||
        (req.params.rank > 0 && req.params.shape != req.shape))
      __builtin_trap();
    if (fmt == API_FMT_RAW)
      (void)api_binary_plan(&req.params, (flags >> 1) & 1, &logical, &physical,
                            &err);
  }
  api_request_free(&req);

  rc = api_accept_parse((flags & 4) ? NULL : accept, fmt, &acc, &err);
  if (rc == 0) {
    static const int dtypes[] = { RD_FLOAT32, RD_BFLOAT16, RD_UINT64 };
    rc = api_accept_pick(&acc, dtypes[(flags >> 3) % 3], &pick, &err);
    if (rc == 0 &&
        (pick <= API_FMT_NONE || pick >= API_NFORMATS || acc.q[pick] <= 0))
      __builtin_trap(); /* picked a format the client refused */
  } else if (rc != API_E_NOT_ACCEPTABLE) {
    __builtin_trap();
  }
out:
  free(qs);
  free(ct);
  free(accept);
  return 0;
}
