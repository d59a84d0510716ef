/* req.c - the request context: its state edges and its responses (loop
 * thread, inside the access handler).  The diagram is in req.h. */
#include "config.h"   /* autoconf */

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "proto.h"
#include "req.h"

#define HTTP_RETRY_AFTER "1"
#define HTTP_AUTH_CHALLENGE "Bearer realm=\"reduced\""

#define S(x) (1u << REQ_##x)
#define READING (S(PREFIX) | S(BODY) | S(DATA) | S(STREAMING))

/* edges[from]: the states `from` may move to (req.h).  Any state but NEW
 * may become ORPHANED. */
static const unsigned edges[REQ_NSTATES] = {
  [REQ_NEW] = S(HEADERS),
  [REQ_HEADERS] = S(ANSWERED) | READING,
  [REQ_PREFIX] = S(DATA) | S(STREAMING) | S(BODY) | S(DISCARDING) |
                 S(ANSWERED),
  [REQ_BODY] = S(DISCARDING) | S(RUNNING) | S(DONE) | S(ANSWERED),
  [REQ_DATA] = S(DISCARDING) | S(RUNNING) | S(ANSWERED),
  [REQ_STREAMING] = S(PAUSED) | S(DISCARDING) | S(RUNNING) | S(ANSWERED),
  [REQ_PAUSED] = S(STREAMING),
  [REQ_DISCARDING] = S(DISCARDING) | S(ANSWERED),
  [REQ_RUNNING] = S(DONE),
  [REQ_DONE] = S(ANSWERED),
  [REQ_ANSWERED] = 0,
  [REQ_ORPHANED] = 0,
};

void
req_set_state(struct req *r, enum req_state to)
{
  assert(r->state < REQ_NSTATES && to < REQ_NSTATES);
  assert((edges[r->state] & (1u << to)) != 0 ||
         (to == REQ_ORPHANED && r->state != REQ_NEW &&
          r->state != REQ_ORPHANED));
  r->state = to;
}

int
req_reading(const struct req *r)
{
  return ((READING | S(DISCARDING)) & (1u << r->state)) != 0;
}

int
req_parse_length(const char *s, uint64_t *out)
{
  uint64_t v = 0;

  if (s == NULL || *s == '\0')
    return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
      return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return 0;
}

int
req_is_chunked(struct MHD_Connection *conn)
{
  const char *te =
    MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                MHD_HTTP_HEADER_TRANSFER_ENCODING);
  return te != NULL && strcasestr(te, "chunked") != NULL;
}

void
req_free(struct req *r)
{
  assert(!job_busy(&r->job));   /* a pool thread would use freed memory */
  job_release(&r->job);
  api_prefix_free(&r->prefix);
  free(r->body);
  free(r->query);
  free(r);
}

/* api_header_cb over an MHD response. */
static int
add_header(void *arg, const char *name, const char *value)
{
  return MHD_add_response_header(arg, name, value) == MHD_YES ? 0 : -1;
}

/* Every response's headers; a job's 200 adds its protocol's. */
static int
add_headers(struct req *r, struct MHD_Response *resp, int status,
            const char *allow, const struct job *result)
{
  const char *ctype = result != NULL
                      ? api_reply_media_type(&result->reply_info)
                      : r->ctype != NULL ? r->ctype : "application/json";

  if (add_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype) != 0 ||
      (result != NULL &&
       result->call.proto->reply_headers(&result->reply_info, add_header,
                                         resp) != 0) ||
      add_header(resp, "X-Request-Id", r->id) != 0 ||
      (allow != NULL &&
       add_header(resp, MHD_HTTP_HEADER_ALLOW, allow) != 0) ||
      (status == MHD_HTTP_SERVICE_UNAVAILABLE &&
       add_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, HTTP_RETRY_AFTER) != 0) ||
      (status == MHD_HTTP_UNAUTHORIZED &&
       add_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                  HTTP_AUTH_CHALLENGE) != 0) ||
      /* While draining, do not invite more requests on this connection. */
      (r->srv->draining &&
       add_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") != 0))
    return -1;
  return 0;
}

enum MHD_Result
req_respond_as(struct req *r, int status, const char *body, size_t len,
               int must_free, const char *allow, const struct job *result)
{
  struct MHD_Response *resp;
  enum MHD_Result ret;

  resp = MHD_create_response_from_buffer(len, (void *)body,
                                         must_free ? MHD_RESPMEM_MUST_FREE
                                                   : MHD_RESPMEM_PERSISTENT);
  if (resp == NULL) {
    if (must_free)
      free((void *)body);
    LOG_ERROR("request id=%s: cannot create a response", r->id);
    return MHD_NO;   /* closes the connection */
  }
  if (add_headers(r, resp, status, allow, result) != 0) {
    MHD_destroy_response(resp);
    LOG_ERROR("request id=%s: cannot add response headers", r->id);
    return MHD_NO;
  }
  ret = MHD_queue_response(r->conn, (unsigned int)status, resp);
  MHD_destroy_response(resp);
  req_set_state(r, REQ_ANSWERED);
  if (ret == MHD_YES) {
    r->status = status;
    r->out_bytes = len;
  }
  return ret;
}

enum MHD_Result
req_respond_static(struct req *r, int status, const char *body)
{
  return req_respond_as(r, status, body, strlen(body), 0, NULL, NULL);
}

static enum MHD_Result
respond_nomem(struct req *r)
{
  return req_respond_static(r, MHD_HTTP_SERVICE_UNAVAILABLE,
                            r->job.call.proto->nomem_body);
}

enum MHD_Result
req_respond_error(struct req *r, const char *allow, int code,
                  const char *fmt, ...)
{
  struct rd_error err;
  struct api_buf b;
  char *body;
  size_t len;
  va_list ap;

  err.code = code;
  va_start(ap, fmt);
  vsnprintf(err.msg, sizeof err.msg, fmt, ap);
  va_end(ap);

  api_buf_init(&b);
  if (r->job.call.proto->encode_error(&err, &b) != 0) {
    api_buf_free(&b);
    return respond_nomem(r);
  }
  body = api_buf_steal(&b, &len);
  return req_respond_as(r, api_http_status(code), body, len, 1, allow,
                        NULL);
}

enum MHD_Result
req_respond_rd_error(struct req *r, const struct rd_error *err)
{
  return req_respond_error(r, NULL, err->code, "%s", err->msg);
}

enum MHD_Result
req_respond_built(struct req *r, int rc, struct api_buf *b)
{
  char *body;
  size_t len;

  if (rc != 0) {
    api_buf_free(b);
    return respond_nomem(r);
  }
  body = api_buf_steal(b, &len);
  if (body == NULL)
    return respond_nomem(r);
  return req_respond_as(r, MHD_HTTP_OK, body, len, 1, NULL, NULL);
}
