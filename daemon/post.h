/* post.h - the life of a POST body: admission, upload, submit, answer, for
 * POST /v1/reduce (JSON, raw, .npy) and POST /v2/.../infer (JSON, binary
 * extension).  Whatever precedes tensor bytes is read by api/prefix.h;
 * the work runs in a job (job.h); messages come from api/.
 *
 * Loop thread: every function, and the job callbacks (done, stream wake)
 * that end here.  The states and their edges are in req.h.
 */
#ifndef RD_POST_H
#define RD_POST_H

#include <stddef.h>

#include <microhttpd.h>

#include "req.h"

/* First call of POST /v1/reduce or .../infer: every check that can refuse
 * the request before its body (Content-Type or Content-Encoding, Accept,
 * Content-Length, query string, plan of a raw body, draining,
 * --max-pending), then the body's buffer or stream.  Queues the refusal,
 * or moves `r` to a reading state (PREFIX, BODY, DATA, STREAMING). */
enum MHD_Result post_begin_v1(struct server *s, struct req *r);
enum MHD_Result post_begin_v2(struct server *s, struct req *r);

/* Upload call in a reading state: consumes the bytes, leaving in *n those
 * it could not take (the connection is then suspended, PAUSED, until a
 * feed of the stream frees a buffer). */
void post_upload(struct server *s, struct req *r, const char *data, size_t *n);

/* Final call in a reading state: answers an error, or queues the job and
 * suspends (RUNNING), or waits for the stream's last feed (PAUSED). */
enum MHD_Result post_submit(struct server *s, struct req *r);

/* Re-entered in DONE: queues what the job produced. */
enum MHD_Result post_answer(struct req *r);

#endif /* RD_POST_H */
