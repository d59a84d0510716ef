/* zbody.h - a POST body sent with Content-Encoding gzip or deflate: decoded
 * as it streams, in the upload calls, before the bytes reach what reads
 * the plain body (post.c's JSON buffer, prefix decoder, tensor data or
 * library stream), so every body format and the streaming path work
 * unchanged.  --max-body bounds the decoded bytes as well as the sent ones
 * (api/encoding.h: a bomb stops one byte past it, in a fixed window).
 *
 * Loop thread only, like post.c.
 */
#ifndef RD_ZBODY_H
#define RD_ZBODY_H

#include <stddef.h>
#include <stdint.h>

#include "encoding.h"

struct server;
struct req;

/* Takes plain body bytes; leaves in *n what it could not take (then the
 * request is PAUSED, suspended until a feed frees room). */
typedef void zbody_sink(struct server *s, struct req *r, const char *data,
                        size_t *n);

/* The decoder of one body and the decoded bytes the sink has not taken. */
struct zbody {
  struct api_inflate z;
  size_t off, len; /* pending: out[off..len) */
  unsigned char out[64 * 1024];
};

/* Sets r->zbody for `coding` (not identity).  0, or RD_E_NOMEM. */
int zbody_open(struct req *r, enum api_coding coding, uint64_t max_out);

/* Upload call: decodes data[0..*n) into the sink; *n is left at what was
 * not consumed (the sink paused).  A decoding error (corrupt, over
 * --max-body) discards the body through `fail`; the rest is dropped
 * undecoded. */
void zbody_upload(struct server *s, struct req *r, const char *data, size_t *n,
                  zbody_sink *sink,
                  void (*fail)(struct req *r, const struct rd_error *err));

/* Final call: hands the sink what is pending and checks that the stream
 * ended (else `fail`: truncated).  Returns 1 if the sink paused (call
 * again at the next final call), else 0. */
int zbody_finish(struct server *s, struct req *r, zbody_sink *sink,
                 void (*fail)(struct req *r, const struct rd_error *err));

void zbody_free(struct zbody *zb);

#endif /* RD_ZBODY_H */
