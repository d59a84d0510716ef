/* req.h - one HTTP request's context and its life, shared by the files of
 * the front end: server.c (MHD driving: creates, dispatches, completes),
 * http.c (routing, GET answers), post.c (POST bodies and their jobs).
 *
 * Threads: everything here runs on the loop thread (MHD is driven in
 * external epoll mode from the libuv loop, docs/mhd-libuv.md); a pool
 * thread touches only r->job, through job.h, while job_busy().
 *
 * The life of a request is one state, r->state; req_set_state() asserts
 * that every change is one of these edges (a POST body's chunks arrive in
 * the access handler's upload calls; "final" is the call after the body):
 *
 *   NEW --first call--> HEADERS, routed at once if a body follows, else
 *          at the final call (keep-alive: see server.c), then:
 *   HEADERS --refused, or a GET answered--> ANSWERED
 *   HEADERS --POST that does not fit yet (admit.h)--> QUEUED (suspended
 *          before its body, its socket watched for a close)
 *   QUEUED --admitted, resumed--> PREFIX | BODY | DATA | STREAMING
 *   QUEUED --waited --queue-timeout (503), client closed, or no memory for
 *          the body, resumed--> DISCARDING
 *   HEADERS --admitted POST--> PREFIX   .npy, /v2 with blobs: the header
 *                          --> BODY     JSON: the whole body is buffered
 *                          --> DATA     raw, <= --buffer-max: tensor bytes
 *                          --> STREAMING  raw, > --buffer-max: to the job
 *   PREFIX --header read--> DATA | STREAMING | BODY (/v2, data blob not last)
 *   PREFIX, BODY, DATA, STREAMING --bad header, over --max-body, out of
 *          memory, more data than the plan--> DISCARDING (r->derr)
 *   STREAMING --job_stream_write() took less, or the last feed runs at the
 *          final call--> PAUSED (suspended) --feed done--> STREAMING
 *   BODY, DATA, STREAMING --final call, job queued--> RUNNING (suspended)
 *   BODY --final call, small JSON run inline--> DONE
 *   RUNNING --job done, resumed--> DONE --re-entered--> ANSWERED
 *   any reading state, DISCARDING --final call, error--> ANSWERED
 *   any state while pool work holds the job --MHD completes--> ORPHANED
 *          (the job's callback frees it)
 *   otherwise MHD completes --> freed by completed_cb in server.c
 *
 * Not states: `ticket` is the request's admission (admit.h): WAITING in
 * QUEUED, then ADMITTED, holding a --max-pending slot and its planned
 * bytes from admission to completion (answered or not); `query_lost` is an
 * allocation failure of uri_log_cb, answered only by routes that read the
 * query string.
 */
#ifndef RD_REQ_H
#define RD_REQ_H

#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "admit.h"
#include "server.h"
#include "job.h"
#include "pages.h"
#include "zbody.h"
#include "prefix.h"
#include "v2.h"

#define HTTP_ID_MAX 128
#define HTTP_LOG_PATH_MAX 200

#define container_of(ptr, type, member)                                        \
  ((type *)((char *)(ptr)-offsetof(type, member)))

enum req_state {
  REQ_NEW,        /* made by uri_log_cb; the handler has not run */
  REQ_HEADERS,    /* headers read, not routed yet (no body: until the
                     * final call), or a queued answer failed */
  REQ_QUEUED,     /* suspended before the body, waiting for admission */
  REQ_PREFIX,     /* binary body: bytes go to the prefix decoder */
  REQ_BODY,       /* the whole body is copied into r->body (JSON) */
  REQ_DATA,       /* tensor bytes are copied into r->body (planned) */
  REQ_STREAMING,  /* tensor bytes go to job_stream_write() */
  REQ_PAUSED,     /* suspended until a feed of the stream finishes */
  REQ_DISCARDING, /* r->derr is answered at the final call, the rest of
                     * the body is dropped; derr.code 0: more tensor bytes
                     * than the plan, named from the counts at the end */
  REQ_RUNNING,    /* suspended; the job owns the CPU work */
  REQ_DONE,       /* job finished, connection resumed, not answered */
  REQ_ANSWERED,   /* response queued */
  REQ_ORPHANED,   /* completed by MHD while pool work holds the job */
  REQ_NSTATES
};

struct req {
  struct job job; /* embedded; see job.h for its lifetime;
                                    * job.call is the request's protocol */
  struct server *srv;
  struct MHD_Connection *conn;
  enum req_state state;
  struct admit_ticket ticket; /* admission: waiting, or admitted */
  struct req_watch *watch;    /* admitted or QUEUED: the socket's
                                    * close is watched (req_watch_start) */
  int recall;                 /* resumed from QUEUED: MHD repeats the
                                    * first call (upload size 0) */
  int prefix_first;           /* .npy, /v2 blobs: a header to read */
  int status;                 /* queued status; 0 = none */
  size_t out_bytes;           /* queued body length */
  uint64_t in_bytes;          /* body bytes received, kept or not */
  uint64_t data_bytes;        /* of them, tensor bytes (binary) */
  uint64_t t0_ns;
  char *body; /* BODY: the body; DATA: tensor bytes */
  size_t body_len, body_cap;
  size_t body_ready;        /* bytes of body with resident pages (api/mem.h) */
  uint64_t expect_len;      /* Content-Length, or UINT64_MAX: chunked */
  char *query;              /* raw query string, or NULL */
  int query_lost;           /* out of memory copying it */
  struct api_prefix prefix; /* binary bodies: what precedes the data */
  struct rd_error derr;     /* DISCARDING: the answer */
  struct api_v2_route v2rt; /* a /v2 path: kind, model (op), version */
  char id[HTTP_ID_MAX + 1];
  char method[16];
  char path[HTTP_LOG_PATH_MAX + 1];
  const char *ctype;   /* Content-Type; NULL: application/json */
  unsigned route;      /* index in the route table, or
                                    * METRICS_ROUTE_NONE */
  int format;          /* enum metrics_format of the body */
  struct zbody *zbody; /* Content-Encoding gzip / deflate: the
                                    * body's decoder (zbody.h), else NULL */
  struct page *page;   /* a static page (pages.h): its headers */
  int encoded;         /* the body given is gzip already */
};

/* Moves `r` to `to`, asserting the edge is in the diagram above. */
void req_set_state(struct req *r, enum req_state to);

/* 1 in the states that take body bytes (PREFIX..DISCARDING but PAUSED). */
int req_reading(const struct req *r);

/* Strict Content-Length syntax: digits only, no overflow.  0 or -1. */
int req_parse_length(const char *s, uint64_t *out);

/* 1 if the request's Transfer-Encoding is chunked. */
int req_is_chunked(struct MHD_Connection *conn);

/* Every connection's socket is watched for the client's close
 * (EPOLLRDHUP) from its start to its close: MHD misses it while a request
 * is suspended, and also when it comes with the last bytes MHD read.  On
 * a close: a QUEUED request leaves the queue and is resumed to
 * DISCARDING; otherwise the socket is shut down, so that MHD's next read
 * or write fails and it closes the connection.  req_conn_open/close are
 * MHD's connection notifications (server.c; the result is the socket
 * context); req_watch_start/stop tie an admitted or QUEUED request to its
 * connection's watch (stop is safe when not started). */
void *req_conn_open(struct server *s, struct MHD_Connection *conn);
void req_conn_close(void *watch);
void req_watch_start(struct req *r);
void req_watch_stop(struct req *r);

/* Frees a context (no pool work may hold it). */
void req_free(struct req *r);

/* Queues `body` with the headers every response carries, and for a 200 of
 * a job (`result`, else NULL) its format's headers.  A body of
 * API_GZIP_MIN bytes or more goes out gzipped when Accept-Encoding allows
 * it (unless r->encoded: it is already); every answer has Vary:
 * Accept-Encoding.  `must_free`: `body`
 * is malloc'ed and now belongs to MHD (or is freed here).  ANSWERED. */
enum MHD_Result req_respond_as(struct req *r, int status, const char *body,
                               size_t len, int must_free, const char *allow,
                               const struct job *result);

/* req_respond_as() without a job, of a static body. */
enum MHD_Result req_respond_static(struct req *r, int status, const char *body);

/* Queues the protocol's error body with the status api_http_status()
 * gives `code` (the static out-of-memory body if it cannot be built). */
enum MHD_Result req_respond_error(struct req *r, const char *allow, int code,
                                  const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

enum MHD_Result req_respond_rd_error(struct req *r, const struct rd_error *err);

/* Queues a built body as 200, or the out-of-memory 503 if building it
 * failed (`rc`). */
enum MHD_Result req_respond_built(struct req *r, int rc, struct api_buf *b);

#endif /* RD_REQ_H */
