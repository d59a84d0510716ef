/* prefix.h - a push decoder for everything in front of a tensor's bytes.
 *
 * A binary request body is a prefix, then the tensor data: nothing for
 * application/octet-stream (the query string says dtype and shape), the
 * .npy header for application/x-npy, the JSON header (and an axes blob
 * that precedes the data) for a /v2 infer body with blobs.  The daemon
 * reads bodies in chunks of whatever size the network gives; it offers
 * each chunk to api_prefix_feed() until the decoder answers, then knows
 * the plan inputs, where the data starts and its byte order, so that the
 * data can be buffered or streamed as it arrives.
 *
 * The answer does not depend on how the body was split: the unit test
 * (tests/unit/test_prefix.c) feeds the same bodies cut at every byte and
 * the fuzz target (tests/fuzz/fuzz_prefix.c) compares split and whole.
 *
 * Also here, so that the daemon holds no wire message: the checks of a
 * plan against the body's declared size and of the bytes received at the
 * end of the body.  Thread-safe on distinct objects; no HTTP.
 */
#ifndef API_PREFIX_H
#define API_PREFIX_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "binary.h"
#include "v2.h"

/* What api_prefix_feed() answers. */
enum api_prefix_status {
  API_PREFIX_MORE = 0, /* every byte offered was taken: feed more */
  API_PREFIX_READY,    /* the plan inputs are known; what follows the
                          * bytes taken is tensor data */
  API_PREFIX_WHOLE,    /* /v2 body whose data blob is not last: it cannot
                          * stream; buffer the whole body (it starts with
                          * api_prefix_bytes()) and decode it with
                          * api_v2_decode() */
  API_PREFIX_ERROR     /* *err says why; the rest of the body is junk */
};

/* Which prefix a body has. */
enum api_prefix_kind {
  API_PREFIX_RAW, /* none: application/octet-stream */
  API_PREFIX_NPY, /* a .npy header */
  API_PREFIX_V2   /* a /v2 JSON header, maybe an axes blob */
};

struct api_prefix {
  /* Results, valid once api_prefix_feed() answered READY. */
  struct api_request req; /* params (dtype, rank, shape, axes...) for
                              * job/plan setup; never data */
  uint64_t data_offset;   /* body bytes before the tensor data */
  int swap;               /* the data is not in host byte order */
  int fortran;            /* .npy fortran_order: True */

  /* Private. */
  int kind;           /* enum api_prefix_kind */
  int status;         /* the last answer (MORE until one is given) */
  uint64_t body_len;  /* Content-Length; UINT64_MAX: chunked */
  unsigned char *buf; /* the prefix bytes so far */
  size_t len, want;   /* bytes in buf; bytes buf must hold */
  struct api_npy npy;
  size_t header_len;        /* /v2: Inference-Header-Content-Length */
  int header_done;          /* /v2: JSON header decoded, axes blob next */
  struct api_v2_info *info; /* /v2: filled by the header (not owned) */
};

/* Raw body: the query string's `query` (api_query_parse()) is the whole
 * prefix; the first feed answers READY and takes nothing. */
void api_prefix_init_raw(struct api_prefix *p, const struct api_request *query,
                         uint64_t body_len);

/* .npy body: `query` holds the parameters of the query string; the header
 * adds dtype, rank and shape. */
void api_prefix_init_npy(struct api_prefix *p, const struct api_request *query,
                         uint64_t body_len);

/* /v2 body with Inference-Header-Content-Length `header_len` (> 0): the
 * header is decoded into p->req and `info` (its op and version set by the
 * caller from the route; it must outlive `p`).  0, or API_E_OVERLOADED if
 * the header buffer cannot be allocated. */
int api_prefix_init_v2(struct api_prefix *p, size_t header_len,
                       uint64_t body_len, struct api_v2_info *info,
                       struct rd_error *err);

/* Offers `n` bytes of the body (the next ones after what was taken).
 * Sets *taken to how many it consumed (all of them when it answers MORE)
 * and returns enum api_prefix_status.  Once it answered READY, WHOLE or
 * ERROR, further calls answer the same and take nothing. */
int api_prefix_feed(struct api_prefix *p, const void *data, size_t n,
                    size_t *taken, struct rd_error *err);

/* The prefix bytes taken so far (WHOLE: the JSON header). */
const unsigned char *api_prefix_bytes(const struct api_prefix *p, size_t *len);

/* Checks a plan made from p->req: its tensor bytes against `max_body`
 * (BODY_TOO_LARGE, --max-body named). */
int api_prefix_check_size(const struct api_prefix *p,
                          const struct rd_plan *plan, uint64_t max_body,
                          struct rd_error *err);

/* Checks a plan against the Content-Length: the prefix and exactly the
 * plan's tensor bytes (STREAM_ERROR naming both).  Chunked: no check. */
int api_prefix_check_length(const struct api_prefix *p,
                            const struct rd_plan *plan, struct rd_error *err);

/* The body ended after `in_bytes` bytes, `data_bytes` of them after the
 * prefix: an error if the prefix was not complete (`plan` NULL: never
 * READY) or the data is not exactly the plan's.  0 if all is well. */
int api_prefix_check_end(const struct api_prefix *p, const struct rd_plan *plan,
                         uint64_t in_bytes, uint64_t data_bytes,
                         struct rd_error *err);

/* Frees the buffer (p->req owns nothing); safe to call twice. */
void api_prefix_free(struct api_prefix *p);

#endif /* API_PREFIX_H */
