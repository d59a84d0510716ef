/* prefix.c - the push decoder of what precedes a binary body's tensor
 * bytes (prefix.h): the .npy header, the /v2 JSON header and axes blob.
 *
 * The bytes are collected in p->buf until the parser they belong to can
 * run (api_npy_parse() says how many its header needs; a /v2 header's
 * length comes from Inference-Header-Content-Length), so a chunk boundary
 * anywhere gives the same answer as the whole prefix at once.
 */
#include "config.h" /* autoconf: WORDS_BIGENDIAN */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefix.h"

#ifdef WORDS_BIGENDIAN
#define HOST_BIG 1
#else
#define HOST_BIG 0
#endif

/* "[3,2]" for the input shape of a plan (messages). */
static void shape_text(const struct rd_plan *p, char *buf, size_t cap)
{
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (size_t i = 0; i < p->in_rank && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "",
                          (long long)p->in_shape[i]);
  if (n < cap)
    snprintf(buf + n, cap - n, "]");
}

/* api_request points into itself: copy, then re-point. */
static void copy_query(struct api_prefix *p, const struct api_request *query)
{
  p->req = *query;
  p->req.params.shape = p->req.shape;
  p->req.params.axes = p->req.axes;
  p->req.data = NULL;
  p->req.data_bytes = 0;
}

void api_prefix_init_raw(struct api_prefix *p, const struct api_request *query,
                         uint64_t body_len)
{
  memset(p, 0, sizeof *p);
  p->kind = API_PREFIX_RAW;
  p->body_len = body_len;
  copy_query(p, query);
  p->swap = HOST_BIG; /* raw elements are little-endian */
}

void api_prefix_init_npy(struct api_prefix *p, const struct api_request *query,
                         uint64_t body_len)
{
  memset(p, 0, sizeof *p);
  p->kind = API_PREFIX_NPY;
  p->body_len = body_len;
  copy_query(p, query);
}

int api_prefix_init_v2(struct api_prefix *p, size_t header_len,
                       uint64_t body_len, struct api_v2_info *info,
                       struct rd_error *err)
{
  memset(p, 0, sizeof *p);
  p->kind = API_PREFIX_V2;
  p->body_len = body_len;
  p->header_len = header_len;
  p->want = header_len;
  p->info = info;
  p->req.params.shape = p->req.shape;
  p->req.params.axes = p->req.axes;
  p->buf = malloc(header_len > 0 ? header_len : 1);
  if (p->buf == NULL)
    return api_fail(err, API_E_OVERLOADED,
                    "cannot allocate %zu bytes for "
                    "the JSON header; retry later",
                    header_len);
  return 0;
}

/* Grows the buffer to `want` bytes. */
static int reserve(struct api_prefix *p, size_t want, const char *what,
                   struct rd_error *err)
{
  unsigned char *b = realloc(p->buf, want > 0 ? want : 1);

  if (b == NULL)
    return api_fail(err, API_E_OVERLOADED,
                    "out of memory while reading "
                    "the %s; retry later",
                    what);
  p->buf = b;
  return 0;
}

/* .npy: the buffer always holds `want` bytes: API_NPY_PREFIX first, then
 * what the header length field says (bounded by the parser). */
static int feed_npy(struct api_prefix *p, const unsigned char *data, size_t n,
                    size_t *taken, struct rd_error *err)
{
  while (*taken < n) {
    size_t c;
    int rc;

    if (p->len == p->want) {
      size_t want = p->want == 0 ? API_NPY_PREFIX : p->want;
      if (reserve(p, want, ".npy header", err) != 0)
        return API_PREFIX_ERROR;
      p->want = want;
    }
    c = p->want - p->len;
    if (c > n - *taken)
      c = n - *taken;
    memcpy(p->buf + p->len, data + *taken, c);
    p->len += c;
    *taken += c;
    if (p->len < p->want)
      break;
    rc = api_npy_parse(p->buf, p->len, &p->npy, err);
    if (rc > 0) {
      if ((size_t)rc <= p->len) { /* the parser's contract: it needs more */
        api_fail(err, API_E_INTERNAL,
                 ".npy header parser asked for %d "
                 "bytes with %zu read",
                 rc, p->len);
        return API_PREFIX_ERROR;
      }
      if (reserve(p, (size_t)rc, ".npy header", err) != 0)
        return API_PREFIX_ERROR;
      p->want = (size_t)rc;
      continue;
    }
    if (rc < 0)
      return API_PREFIX_ERROR;
    p->req.params.dtype = p->npy.dtype;
    p->req.params.rank = p->npy.rank;
    memcpy(p->req.shape, p->npy.shape, sizeof p->npy.shape);
    p->swap = p->npy.swap;
    p->fortran = p->npy.fortran;
    p->data_offset = p->npy.header_len;
    return API_PREFIX_READY;
  }
  return API_PREFIX_MORE;
}

/* /v2: the JSON header is decoded once its Inference-Header-Content-Length
 * bytes are here; an axes blob that precedes the data is read next. */
static int feed_v2(struct api_prefix *p, const unsigned char *data, size_t n,
                   size_t *taken, struct rd_error *err)
{
  struct api_v2_info *info = p->info;
  size_t c;

  c = p->want - p->len < n - *taken ? p->want - p->len : n - *taken;
  memcpy(p->buf + p->len, data + *taken, c);
  p->len += c;
  *taken += c;
  if (p->len < p->want)
    return API_PREFIX_MORE;

  if (!p->header_done) {
    if (api_v2_decode_header((const char *)p->buf, p->header_len, 1,
                             p->header_len / 2 + 1, &p->req, info, err) != 0)
      return API_PREFIX_ERROR;
    p->header_done = 1;
    if (p->body_len != UINT64_MAX &&
        p->body_len - p->header_len != info->blob_total) {
      api_fail(err, RD_E_STREAM,
               "Content-Length %llu leaves %llu bytes "
               "after the %zu-byte JSON header; the inputs' "
               "binary_data_size add up to %llu",
               (unsigned long long)p->body_len,
               (unsigned long long)(p->body_len - p->header_len), p->header_len,
               (unsigned long long)info->blob_total);
      return API_PREFIX_ERROR;
    }
    if (!api_v2_streamable(info)) {
      api_request_free(&p->req);
      return API_PREFIX_WHOLE;
    }
    if (info->axes_blob) {
      if (reserve(p, p->header_len + (size_t)info->axes_size + 1, "axes blob",
                  err) != 0)
        return API_PREFIX_ERROR;
      p->want = p->header_len + (size_t)info->axes_size;
      /* The axes blob may already be here. */
      return feed_v2(p, data, n, taken, err);
    }
  } else if (api_v2_set_axes(&p->req, info, p->buf + p->header_len, err) != 0) {
    return API_PREFIX_ERROR;
  }
  p->data_offset = p->len;
  p->swap = HOST_BIG; /* blobs are little-endian */
  return API_PREFIX_READY;
}

int api_prefix_feed(struct api_prefix *p, const void *data, size_t n,
                    size_t *taken, struct rd_error *err)
{
  *taken = 0;
  if (p->status != API_PREFIX_MORE)
    return p->status;
  switch (p->kind) {
  case API_PREFIX_RAW: p->status = API_PREFIX_READY; break;
  case API_PREFIX_NPY: p->status = feed_npy(p, data, n, taken, err); break;
  default: p->status = feed_v2(p, data, n, taken, err); break;
  }
  return p->status;
}

const unsigned char *api_prefix_bytes(const struct api_prefix *p, size_t *len)
{
  *len = p->len;
  return p->buf;
}

int api_prefix_check_size(const struct api_prefix *p,
                          const struct rd_plan *plan, uint64_t max_body,
                          struct rd_error *err)
{
  char shape[RD_MAX_RANK * 21 + 3];

  (void)p;
  if (plan->in_bytes <= max_body)
    return 0;
  shape_text(plan, shape, sizeof shape);
  return api_fail(err, API_E_BODY_TOO_LARGE,
                  "shape %s of %s needs %llu "
                  "bytes, above the limit of %llu bytes (--max-body)",
                  shape, rd_dtype_name(plan->dtype),
                  (unsigned long long)plan->in_bytes,
                  (unsigned long long)max_body);
}

int api_prefix_check_length(const struct api_prefix *p,
                            const struct rd_plan *plan, struct rd_error *err)
{
  char shape[RD_MAX_RANK * 21 + 3];
  uint64_t hdr = p->data_offset;

  if (p->body_len == UINT64_MAX || p->body_len - hdr == plan->in_bytes)
    return 0;
  shape_text(plan, shape, sizeof shape);
  if (p->kind == API_PREFIX_NPY)
    return api_fail(err, RD_E_STREAM,
                    "the .npy header declares shape %s "
                    "of %s: %llu data bytes; Content-Length %llu leaves "
                    "%llu after the %llu-byte header",
                    shape, rd_dtype_name(plan->dtype),
                    (unsigned long long)plan->in_bytes,
                    (unsigned long long)p->body_len,
                    (unsigned long long)(p->body_len - hdr),
                    (unsigned long long)hdr);
  return api_fail(err, RD_E_STREAM,
                  "shape %s of %s needs exactly %llu "
                  "bytes; Content-Length is %llu",
                  shape, rd_dtype_name(plan->dtype),
                  (unsigned long long)plan->in_bytes,
                  (unsigned long long)p->body_len);
}

int api_prefix_check_end(const struct api_prefix *p, const struct rd_plan *plan,
                         uint64_t in_bytes, uint64_t data_bytes,
                         struct rd_error *err)
{
  char shape[RD_MAX_RANK * 21 + 3];

  if (plan == NULL && p->kind == API_PREFIX_V2)
    return api_fail(err, RD_E_STREAM,
                    "the body ended after %llu bytes, "
                    "before the JSON header (Inference-Header-Content-"
                    "Length %zu) and the blobs before the data",
                    (unsigned long long)in_bytes, p->header_len);
  if (plan == NULL)
    return api_fail(err, API_E_BAD_NPY,
                    "the body ended after %llu bytes, "
                    "inside the .npy header (truncated)",
                    (unsigned long long)in_bytes);
  if (data_bytes == plan->in_bytes)
    return 0;
  shape_text(plan, shape, sizeof shape);
  return api_fail(err, RD_E_STREAM,
                  "shape %s of %s needs %llu bytes%s; "
                  "received %llu",
                  shape, rd_dtype_name(plan->dtype),
                  (unsigned long long)plan->in_bytes,
                  p->kind == API_PREFIX_NPY ? " after the .npy header" : "",
                  (unsigned long long)data_bytes);
}

void api_prefix_free(struct api_prefix *p)
{
  free(p->buf);
  p->buf = NULL;
  p->len = p->want = 0;
  api_request_free(&p->req);
}
