/* jsonpush.h - a push (incremental) decoder of POST /v1/reduce JSON bodies:
 * fed the body chunk by chunk as it arrives, it converts the elements of a
 * flat root.input.data array of numbers straight into the typed tensor
 * buffer, so that the array's text is never kept whole.  The result is
 * api_json_decode()'s on the whole body: the same request (same bits), or
 * the same error (status, message, line and column).  Prefix api_jpush_.
 *
 * Not thread-safe: one decoder is fed by one thread at a time (the daemon
 * feeds it on pool threads, one feed work after another).
 */
#ifndef API_JSONPUSH_H
#define API_JSONPUSH_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"

struct api_jpush;

/* A decoder for a body of `len_hint` bytes (0: unknown, e.g. chunked):
 * a known length bounds the element buffer at once (pages never written
 * are never resident) instead of growing it.  0 or RD_E_NOMEM. */
int api_jpush_create(size_t len_hint, struct api_jpush **out);

/* The next `n` bytes of the body.  `data` must be writable: the decoder
 * writes a terminator into it while reading and restores the byte before
 * returning.  0, or RD_E_NOMEM (finish then answers out of memory). */
int api_jpush_feed(struct api_jpush *p, char *data, size_t n);

/* The body has ended: decodes it as api_json_decode(body, len,
 * max_elements, req, err) would, with the same return value. */
int api_jpush_finish(struct api_jpush *p, uint64_t max_elements,
                     struct api_request *req, struct rd_error *err);

/* Elements converted so far as they arrived (before finish): those of a
 * well-formed flat array of numbers the fast conversion takes are all of
 * them; the rest are left to jansson at finish.  For tests and logs. */
uint64_t api_jpush_taken(const struct api_jpush *p);

/* Frees the decoder (NULL is fine); what finish put in `req` stays. */
void api_jpush_destroy(struct api_jpush *p);

#endif /* API_JSONPUSH_H */
