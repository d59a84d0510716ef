/* grpc.c - the gRPC front end (grpc.h): the completion-queue thread, the
 * per-call state machine, and the hand-off of ModelInfer to the libuv loop
 * and pool.  Messages are api/oip.h's; nothing here parses protobuf.
 *
 * A call's life (which thread runs each step in brackets):
 *   NEW   [CQ]   grpc_server_request_call completed: count it live, ask for
 *                the next call, start RECV_MESSAGE.
 *   RECV  [CQ]   the message is in: pick the method; answer Health/Check
 *                at once, or queue the call for the loop and wake it
 *                (uv_async_send).
 *         [loop] check the API key; answer a metadata RPC, or admit a
 *                ModelInfer (admit.h; it may wait its turn) and
 *                job_submit(); the job's done callback starts the reply.
 *   DONE  [CQ]   the reply batch (initial metadata, message, status,
 *                RECV_CLOSE_ON_SERVER) completed: count the request in the
 *                metrics, free the call; the last live call of a draining
 *                endpoint wakes the loop to report idle.
 * Every call has one batch outstanding at a time, so its tag (the call)
 * and `stage` say what completed.
 */
#include "config.h" /* autoconf: PACKAGE_VERSION */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>

#include "grpc.h"
#include "job.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "sock.h"

/* Calls requested from gRPC ahead of their arrival (each one re-requests
 * when it arrives, so this many can arrive at once without waiting). */
#define GRPCD_PREQUEST 16

/* Longest authorization metadata value looked at. */
#define GRPCD_AUTH_MAX 4096

#define container_of(ptr, type, member)                                        \
  ((type *)((char *)(ptr)-offsetof(type, member)))

enum rcall_stage {
  RC_NEW = 0, /* waiting for grpc_server_request_call */
  RC_RECV,    /* waiting for the request message */
  RC_QUEUED,  /* handed to the loop thread (ModelInfer) */
  RC_DONE     /* waiting for the reply batch */
};

struct rcall {
  struct grpcd *g;
  /* enum rcall_stage.  Stored with release before a batch starts, loaded
   * with acquire when it completes: the hand-off between the loop thread
   * and the CQ thread goes through gRPC's own (uninstrumented) sync, and
   * this pair makes it visible to ThreadSanitizer too. */
  atomic_int stage;
  grpc_call *call;
  grpc_call_details details;
  grpc_metadata_array md;
  grpc_byte_buffer *recv;
  grpc_slice body; /* the request message, flattened */
  int has_body;
  int method;    /* enum api_oip_method */
  int cancelled; /* RECV_CLOSE_ON_SERVER's verdict */
  int late;      /* arrived while draining: refused */
  grpc_byte_buffer *send;
  grpc_slice status_details;
  int has_details;
  struct timespec t0;
  int http_status; /* the metrics' status (HTTP class) */
  int op;          /* enum rd_op, for the metrics */
  size_t out_bytes;
  struct admit_ticket ticket; /* ModelInfer: the server admission */
  struct job job;             /* ModelInfer */
  struct rcall *next;         /* the loop's queue */
};

/* ------------------------------------------------------------------ */
/* Replies (CQ thread or loop thread: whoever owns the call)          */
/* ------------------------------------------------------------------ */

static void finish(struct rcall *c);

static uint64_t elapsed_ns(const struct timespec *t0)
{
  struct timespec t;

  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000000000u +
         (uint64_t)(t.tv_nsec - t0->tv_nsec);
}

/* The HTTP status the metrics show for a gRPC status (requests of both
 * front ends share the status label). */
static int status_of_code(int code)
{
  switch (code) {
  case API_GRPC_OK: return 200;
  case API_GRPC_INVALID_ARGUMENT: return 400;
  case API_GRPC_UNAUTHENTICATED: return 401;
  case API_GRPC_NOT_FOUND: return 404;
  case API_GRPC_UNIMPLEMENTED: return 404;
  case API_GRPC_RESOURCE_EXHAUSTED: return 503;
  case API_GRPC_UNAVAILABLE: return 503;
  default: return 500;
  }
}

/* Starts the last batch: initial metadata, the message (`payload`, `len`
 * malloc'ed bytes, owned from here; only with OK), the status and
 * RECV_CLOSE_ON_SERVER.  `text` is the status message (NULL: none). */
static void reply(struct rcall *c, int code, const char *text, char *payload,
                  size_t len)
{
  grpc_op ops[4];
  grpc_call *call;
  size_t n = 0;

  if (c->http_status == 0)
    c->http_status = status_of_code(code);
  memset(ops, 0, sizeof ops);
  ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
  n++;
  if (code == API_GRPC_OK && payload != NULL) {
    grpc_slice s = grpc_slice_new(payload, len, free);
    c->send = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    c->out_bytes = len;
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n].data.send_message.send_message = c->send;
    n++;
  } else {
    free(payload);
  }
  if (text != NULL) {
    c->status_details = grpc_slice_from_copied_string(text);
    c->has_details = 1;
  }
  ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  ops[n].data.send_status_from_server.status = (grpc_status_code)code;
  ops[n].data.send_status_from_server.status_details = c->has_details
                                                         ? &c->status_details
                                                         : NULL;
  n++;
  ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  ops[n].data.recv_close_on_server.cancelled = &c->cancelled;
  n++;
  /* Nothing of `c` is read after the release: the completion may free it. */
  call = c->call;
  atomic_store_explicit(&c->stage, RC_DONE, memory_order_release);
  if (grpc_call_start_batch(call, ops, n, c, NULL) != GRPC_CALL_OK) {
    LOG_WARN("grpc: cannot start the reply batch of %s",
             api_oip_method_name(c->method));
    finish(c);
  }
}

/* Replies with an error: status from the code, message "CODE: text". */
static void reply_error(struct rcall *c, int code, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

static void reply_error(struct rcall *c, int code, const char *fmt, ...)
{
  char msg[RD_ERRMSG_MAX], text[RD_ERRMSG_MAX + 32];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(text, sizeof text, "%s: %s", api_errname(code), msg);
  c->http_status = api_http_status(code);
  reply(c, api_oip_grpc_code(code), text, NULL, 0);
}

/* Replies with what an api_oip_* encoder appended to `b`, or its error. */
static void reply_buf(struct rcall *c, int rc, struct api_buf *b)
{
  size_t len;
  char *p;

  if (rc != 0) {
    api_buf_free(b);
    reply_error(c, RD_E_NOMEM, "out of memory");
    return;
  }
  p = api_buf_steal(b, &len);
  if (p == NULL) {
    reply_error(c, RD_E_NOMEM, "out of memory");
    return;
  }
  reply(c, API_GRPC_OK, NULL, p, len);
}

/* Replies with an rd_error from a decoder. */
static void reply_rd_error(struct rcall *c, const struct rd_error *err)
{
  c->http_status = api_http_status(err->code);
  reply_error(c, err->code, "%s", err->msg);
}

/* ------------------------------------------------------------------ */
/* The loop thread: admission and jobs                                */
/* ------------------------------------------------------------------ */

/* Loop thread: a ModelInfer job finished.  The job is released before the
 * reply starts: a reply that cannot start frees the call at once. */
static void job_done(struct job *j)
{
  struct rcall *c = container_of(j, struct rcall, job);
  char text[RD_ERRMSG_MAX + 64];
  char *payload = NULL;
  size_t len = 0;
  int status = j->status;

  admit_release(&c->g->http->admit, &c->ticket);
  c->op = j->op;
  c->http_status = status;
  if (status == 200 && j->reply != NULL) {
    payload = j->reply;
    len = j->reply_len;
    j->reply = NULL;
  } else {
    /* The error text (api_oip_encode_error), or none if out of memory. */
    snprintf(text, sizeof text, "%s",
             j->reply != NULL ? j->reply : api_proto_grpc.nomem_body);
  }
  job_release(j);
  if (payload != NULL)
    reply(c, API_GRPC_OK, NULL, payload, len);
  else
    reply(c, api_oip_grpc_code_of_status(status), text, NULL, 0);
}

/* Memory a ModelInfer holds while admitted, for --max-inflight-bytes: the
 * message, its unpacked copy and the decoded tensor (each about the
 * message's size), plus the request's own state. */
#define GRPCD_CALL_BYTES 4096u
#define GRPCD_MSG_FACTOR 3u

/* Loop thread: an admitted ModelInfer goes to the pool as a job. */
static void submit(struct grpcd *g, struct rcall *c)
{
  struct server *s = g->http;
  struct job *j = &c->job;

  memset(j, 0, sizeof *j);
  j->in_fmt = API_FMT_JSON; /* "a buffered body the protocol decodes" */
  j->body = (const char *)GRPC_SLICE_START_PTR(c->body);
  j->body_len = GRPC_SLICE_LENGTH(c->body);
  j->max_elements = 0; /* the message is bounded by --max-body */
  j->max_tasks = (unsigned)g->conf->threads;
  j->metrics = s->metrics;
  j->call.proto = &api_proto_grpc;
  if (job_submit(g->loop, j, job_done) != 0) {
    admit_release(&s->admit, &c->ticket);
    reply_error(c, API_E_INTERNAL, "cannot queue the request");
  }
}

/* Loop thread (admit.c's callback): a waiting ModelInfer was admitted or
 * waited --queue-timeout. */
static void admitted_cb(struct admit_ticket *t, enum admit_outcome how)
{
  struct rcall *c = t->arg;
  struct grpcd *g = c->g;

  if (how == ADMIT_TIMEOUT) {
    reply_error(c, API_E_OVERLOADED,
                "waited %.1f s for admission (--queue-timeout %llu, "
                "--max-inflight-bytes %llu); retry later",
                admit_waited(t), (unsigned long long)g->conf->queue_timeout,
                (unsigned long long)g->conf->max_inflight_bytes);
    return;
  }
  submit(g, c);
}

/* Loop thread: the same gate as an HTTP body (admit.h): not while
 * draining, within --max-pending and --max-inflight-bytes, in arrival
 * order with HTTP's requests. */
static void admit(struct grpcd *g, struct rcall *c)
{
  struct server *s = g->http;
  uint64_t bytes = GRPCD_CALL_BYTES +
                   (uint64_t)GRPCD_MSG_FACTOR * GRPC_SLICE_LENGTH(c->body);

  if (c->late) {
    reply_error(c, API_E_DRAINING, "the server is shutting down");
    return;
  }
  switch (admit_request(&s->admit, &c->ticket, bytes, admitted_cb, c)) {
  case ADMIT_E_TOO_LARGE:
    reply_error(c, API_E_BODY_TOO_LARGE,
                "the request needs %llu bytes of memory, above "
                "--max-inflight-bytes %llu",
                (unsigned long long)bytes,
                (unsigned long long)g->conf->max_inflight_bytes);
    return;
  case ADMIT_E_FULL:
    reply_error(c, API_E_OVERLOADED,
                "%zu requests are already admitted or waiting "
                "(--max-pending %llu); retry later",
                admit_pending(&s->admit),
                (unsigned long long)g->conf->max_pending);
    return;
  case ADMIT_WAIT: return; /* admitted_cb() goes on */
  case ADMIT_NOW: submit(g, c); return;
  }
}

static int authorized(struct rcall *c);
static void answer_here(struct rcall *c, const char *msg, size_t len);

/* Loop thread: calls queued by the CQ thread, and idle reports. */
static void async_cb(uv_async_t *h)
{
  struct grpcd *g = h->data;
  struct rcall *c, *next;

  pthread_mutex_lock(&g->lock);
  c = g->queue;
  g->queue = NULL;
  pthread_mutex_unlock(&g->lock);
  for (; c != NULL; c = next) {
    next = c->next;
    /* The API keys are the loop thread's (SIGHUP reloads them here). */
    if (!authorized(c))
      reply_error(c, API_E_UNAUTHORIZED,
                  "missing or invalid API key: send "
                  "metadata \"authorization: Bearer KEY\"");
    else if (c->method != API_OIP_MODEL_INFER)
      answer_here(c, (const char *)GRPC_SLICE_START_PTR(c->body),
                  GRPC_SLICE_LENGTH(c->body));
    else
      admit(g, c);
  }
  if (atomic_load(&g->draining) && atomic_load(&g->live) == 0 &&
      !g->idle_reported && g->idle_cb != NULL) {
    g->idle_reported = 1;
    g->idle_cb(g->idle_arg);
  }
}

/* ------------------------------------------------------------------ */
/* The CQ thread                                                      */
/* ------------------------------------------------------------------ */

/* Asks gRPC for the next call.  CQ thread (or the loop thread at start). */
static void request_call(struct grpcd *g)
{
  struct rcall *c = calloc(1, sizeof *c);

  if (c == NULL) {
    LOG_ERROR("grpc: out of memory: one call slot fewer");
    return;
  }
  c->g = g;
  atomic_init(&c->stage, RC_NEW);
  grpc_call_details_init(&c->details);
  grpc_metadata_array_init(&c->md);
  if (grpc_server_request_call(g->srv, &c->call, &c->details, &c->md, g->cq,
                               g->cq, c) != GRPC_CALL_OK) {
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->md);
    free(c);
  }
}

/* Frees a call that never arrived (request_call failed at shutdown). */
static void free_unarrived(struct rcall *c)
{
  grpc_call_details_destroy(&c->details);
  grpc_metadata_array_destroy(&c->md);
  free(c);
}

/* The last batch completed (or could not start): count, free. */
static void finish(struct rcall *c)
{
  struct grpcd *g = c->g;
  struct metrics_obs obs;

  memset(&obs, 0, sizeof obs);
  obs.route = c->method > 0 ? g->routes[c->method] : METRICS_ROUTE_NONE;
  obs.op = c->op;
  obs.format = c->method == API_OIP_MODEL_INFER ? METRICS_FMT_BINARY
                                                : METRICS_FMT_NONE;
  obs.status = c->http_status;
  obs.duration_ns = elapsed_ns(&c->t0);
  obs.in_bytes = c->has_body ? GRPC_SLICE_LENGTH(c->body) : 0;
  obs.out_bytes = c->out_bytes;
  if (g->http->metrics != NULL) {
    metrics_observe(g->http->metrics, &obs);
    metrics_inflight_add(g->http->metrics, -1);
  }
  LOG_DEBUG("grpc: %s -> %d%s", api_oip_method_name(c->method), c->http_status,
            c->cancelled ? " (cancelled)" : "");
  if (c->send != NULL)
    grpc_byte_buffer_destroy(c->send);
  if (c->recv != NULL)
    grpc_byte_buffer_destroy(c->recv);
  if (c->has_body)
    grpc_slice_unref(c->body);
  if (c->has_details)
    grpc_slice_unref(c->status_details);
  grpc_call_details_destroy(&c->details);
  grpc_metadata_array_destroy(&c->md);
  grpc_call_unref(c->call);
  free(c);
  /* The last call of a draining endpoint: tell the loop (the async handle
   * outlives this thread: grpcd_close() joins it first). */
  if (atomic_fetch_sub(&g->live, 1) == 1 && atomic_load(&g->draining))
    uv_async_send(&g->async);
}

/* 1 if the call may go on: no keys, or "authorization: Bearer KEY". */
static int authorized(struct rcall *c)
{
  const struct auth *a = &c->g->http->auth;
  char value[GRPCD_AUTH_MAX + 1];
  const char *v = NULL;

  if (a->nkeys == 0)
    return 1;
  for (size_t i = 0; i < c->md.count; i++) {
    const grpc_metadata *m = &c->md.metadata[i];
    size_t kl = GRPC_SLICE_LENGTH(m->key), vl = GRPC_SLICE_LENGTH(m->value);
    if (kl == 13 &&
        memcmp(GRPC_SLICE_START_PTR(m->key), "authorization", 13) == 0 &&
        vl <= GRPCD_AUTH_MAX) {
      memcpy(value, GRPC_SLICE_START_PTR(m->value), vl);
      value[vl] = '\0';
      v = value;
      break;
    }
  }
  /* auth_allows() exempts only the HTTP probe routes; this is none. */
  return auth_allows(a, "grpc", v);
}

/* CQ thread: answers a cheap RPC from its message. */
static void answer_here(struct rcall *c, const char *msg, size_t len)
{
  struct grpcd *g = c->g;
  int draining = atomic_load(&g->draining), op, version, rc;
  struct rd_error err;
  struct api_buf b;

  memset(&err, 0, sizeof err);
  api_buf_init(&b);
  switch (c->method) {
  case API_OIP_SERVER_LIVE:
    reply_buf(c, api_oip_encode_flag(1, &b), &b);
    return;
  case API_OIP_SERVER_READY:
    reply_buf(c, api_oip_encode_flag(!draining, &b), &b);
    return;
  case API_OIP_SERVER_METADATA:
    reply_buf(c, api_oip_encode_server_meta(PACKAGE_VERSION, &b), &b);
    return;
  case API_OIP_MODEL_READY:
  case API_OIP_MODEL_METADATA:
    rc = api_oip_decode_model_ref(c->method, msg, len, &op, &version, &err);
    if (rc != 0) {
      reply_rd_error(c, &err);
      return;
    }
    c->op = op;
    rc = c->method == API_OIP_MODEL_READY
           ? api_oip_encode_flag(1, &b)
           : api_oip_encode_model_meta(op, version, &b);
    reply_buf(c, rc, &b);
    return;
  case API_OIP_HEALTH_CHECK:
    rc = api_oip_decode_health(msg, len, &err);
    if (rc != 0) {
      reply_rd_error(c, &err);
      return;
    }
    reply_buf(c,
              api_oip_encode_health(draining ? API_OIP_NOT_SERVING
                                             : API_OIP_SERVING,
                                    &b),
              &b);
    return;
  default:
    reply_error(c, API_E_INTERNAL, "no handler for %s",
                api_oip_method_name(c->method));
    return;
  }
}

/* CQ thread: the request message is in. */
static void on_message(struct rcall *c, int ok)
{
  struct grpcd *g = c->g;
  grpc_byte_buffer_reader reader;
  const char *path = (const char *)GRPC_SLICE_START_PTR(c->details.method);
  size_t path_len = GRPC_SLICE_LENGTH(c->details.method);

  c->method = api_oip_method(path, path_len);
  if (!ok || c->recv == NULL) {
    /* Cancelled, or half-closed without a message (not a unary call). */
    reply_error(c, API_E_BAD_JSON, "no request message");
    return;
  }
  if (!grpc_byte_buffer_reader_init(&reader, c->recv)) {
    reply_error(c, API_E_INTERNAL, "cannot read the request message");
    return;
  }
  c->body = grpc_byte_buffer_reader_readall(&reader);
  c->has_body = 1;
  grpc_byte_buffer_reader_destroy(&reader);
  grpc_byte_buffer_destroy(c->recv);
  c->recv = NULL;

  if (c->method == API_OIP_UNKNOWN) {
    char shown[128];
    size_t n = path_len < sizeof shown - 1 ? path_len : sizeof shown - 1;
    for (size_t i = 0; i < n; i++)
      shown[i] = path[i] >= 0x20 && path[i] < 0x7f ? path[i] : '?';
    shown[n] = '\0';
    c->http_status = 404;
    reply(c, API_GRPC_UNIMPLEMENTED, "unknown method", NULL, 0);
    LOG_DEBUG("grpc: unknown method %s", shown);
    return;
  }
  /* Health needs no key and no loop: answered here.  Every other RPC goes
   * to the loop thread, which owns the API keys and the admission. */
  if (c->method == API_OIP_HEALTH_CHECK) {
    answer_here(c, (const char *)GRPC_SLICE_START_PTR(c->body),
                GRPC_SLICE_LENGTH(c->body));
    return;
  }
  /* A call that arrived before draining began is in flight: it goes on,
   * like an HTTP upload admitted at its headers. */
  if (c->late && c->method == API_OIP_MODEL_INFER) {
    reply_error(c, API_E_DRAINING, "the server is shutting down");
    return;
  }
  pthread_mutex_lock(&g->lock);
  if (g->closing) {
    pthread_mutex_unlock(&g->lock);
    reply_error(c, API_E_DRAINING, "the server is shutting down");
    return;
  }
  atomic_store_explicit(&c->stage, RC_QUEUED, memory_order_relaxed);
  c->next = g->queue;
  g->queue = c;
  pthread_mutex_unlock(&g->lock);
  uv_async_send(&g->async);
}

/* CQ thread: a call arrived. */
static void on_new(struct rcall *c, int ok)
{
  struct grpcd *g = c->g;
  grpc_call *call;
  grpc_op op;

  if (!ok) { /* the server is shutting down */
    free_unarrived(c);
    return;
  }
  atomic_fetch_add(&g->live, 1);
  c->late = atomic_load(&g->draining);
  if (g->http->metrics != NULL)
    metrics_inflight_add(g->http->metrics, 1);
  clock_gettime(CLOCK_MONOTONIC, &c->t0);
  request_call(g);
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_RECV_MESSAGE;
  op.data.recv_message.recv_message = &c->recv;
  call = c->call;
  atomic_store_explicit(&c->stage, RC_RECV, memory_order_release);
  if (grpc_call_start_batch(call, &op, 1, c, NULL) != GRPC_CALL_OK)
    reply_error(c, API_E_INTERNAL, "cannot read the request");
}

/* The completion-queue thread: every completion of the server's queue. */
static void *cq_main(void *arg)
{
  struct grpcd *g = arg;

  for (;;) {
    grpc_event ev = grpc_completion_queue_next(
      g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    struct rcall *c;

    if (ev.type == GRPC_QUEUE_SHUTDOWN)
      break;
    if (ev.type != GRPC_OP_COMPLETE)
      continue;
    if (ev.tag == &g->shutdown_tag) {
      /* Every call is over: no completion can follow but the shutdown. */
      grpc_completion_queue_shutdown(g->cq);
      continue;
    }
    c = ev.tag;
    switch (atomic_load_explicit(&c->stage, memory_order_acquire)) {
    case RC_NEW: on_new(c, ev.success); break;
    case RC_RECV: on_message(c, ev.success); break;
    case RC_DONE: finish(c); break;
    default:
      LOG_ERROR("grpc: completion of a call in stage %d",
                atomic_load(&c->stage));
      break;
    }
  }
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Start, drain, close (loop thread)                                  */
/* ------------------------------------------------------------------ */

static int write_port_file(const char *path, int port)
{
  char tmp[4096];
  FILE *f;
  int n;

  n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof tmp) {
    LOG_ERROR("--grpc-port-file %s: name too long", path);
    return -1;
  }
  f = fopen(tmp, "w");
  if (f == NULL) {
    LOG_ERROR("--grpc-port-file %s: %s", tmp, strerror(errno));
    return -1;
  }
  if (fprintf(f, "%d\n", port) < 0 || fflush(f) != 0 || fclose(f) != 0 ||
      rename(tmp, path) != 0) {
    LOG_ERROR("--grpc-port-file %s: %s", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* gRPC core's threads, at each TLS handshake: the certificate and key
 * now in force (NEW once per reload, else UNCHANGED). */
static grpc_ssl_certificate_config_reload_status
fetch_tls(void *arg, grpc_ssl_server_certificate_config **config)
{
  struct grpcd *g = arg;
  grpc_ssl_certificate_config_reload_status rc =
    GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;

  pthread_mutex_lock(&g->lock);
  if (g->tls_served != g->tls_gen) {
    grpc_ssl_pem_key_cert_pair pair = { g->tls_key, g->tls_cert };
    /* gRPC 1.51's fetcher path insists on root certificates although no
     * client certificate is asked for (DONT_REQUEST): give it ours. */
    *config = grpc_ssl_server_certificate_config_create(g->tls_cert, &pair, 1);
    rc = *config != NULL ? GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW
                         : GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
    if (*config != NULL)
      g->tls_served = g->tls_gen;
  }
  pthread_mutex_unlock(&g->lock);
  return rc;
}

/* Wipes and frees a copy of PEM text. */
static void free_secret(char *p)
{
  if (p != NULL) {
    explicit_bzero(p, strlen(p));
    free(p);
  }
}

void grpcd_reload(struct grpcd *g)
{
  const struct auth *a = &g->http->auth;
  char *cert, *key;

  if (!g->tls || a->tls_cert == NULL || a->tls_key == NULL ||
      (strcmp(a->tls_cert, g->tls_cert) == 0 &&
       strcmp(a->tls_key, g->tls_key) == 0))
    return;
  cert = strdup(a->tls_cert);
  key = strdup(a->tls_key);
  if (cert == NULL || key == NULL) {
    LOG_ERROR("grpc: out of memory for the reloaded TLS material: the "
              "old certificate stays");
    free_secret(cert);
    free_secret(key);
    return;
  }
  pthread_mutex_lock(&g->lock);
  free_secret(g->tls_cert);
  free_secret(g->tls_key);
  g->tls_cert = cert;
  g->tls_key = key;
  g->tls_gen++;
  pthread_mutex_unlock(&g->lock);
  LOG_INFO("gRPC: the reloaded TLS certificate serves new connections");
}

/* gRPC core's own log lines (any of its threads) in the daemon's log:
 * errors as warnings (the daemon logs its own verdict), the rest as
 * debug. */
static void grpc_log(gpr_log_func_args *a)
{
  if (a->severity == GPR_LOG_SEVERITY_ERROR)
    LOG_WARN("grpc core: %s", a->message);
  else
    LOG_DEBUG("grpc core: %s (%s:%d)", a->message, a->file, a->line);
}

/* Loop thread: the metrics routes of the RPCs and the handle the
 * completion-queue thread wakes the loop with. */
static int start_loop_side(struct grpcd *g, uv_loop_t *loop,
                           struct server *http)
{
  for (int m = 1; m < API_OIP_NMETHODS; m++) {
    int idx = metrics_route_add(http->metrics, api_oip_method_route(m));
    if (idx < 0) {
      LOG_ERROR("grpc: more routes than METRICS_MAX_ROUTES");
      return -1;
    }
    g->routes[m] = (unsigned)idx;
  }
  if (uv_async_init(loop, &g->async, async_cb) != 0) {
    LOG_ERROR("grpc: cannot create the loop wake-up handle");
    return -1;
  }
  g->async.data = g;
  g->handles = 1;
  return 0;
}

/* The gRPC server with the limits of the HTTP side, and its queue. */
static void create_server(struct grpcd *g, const struct conf *c)
{
  grpc_arg args[4];
  grpc_channel_args chargs;

  /* --max-body bounds a request message as it bounds an HTTP body; the
   * answers (reductions) are never larger than their input, or bounded. */
  args[0].type = GRPC_ARG_INTEGER;
  args[0].key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
  args[0].value.integer = c->max_body > INT_MAX ? INT_MAX : (int)c->max_body;
  args[1].type = GRPC_ARG_INTEGER;
  args[1].key = GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
  args[1].value.integer = -1;
  /* A port another process holds must fail, as for HTTP. */
  args[2].type = GRPC_ARG_INTEGER;
  args[2].key = GRPC_ARG_ALLOW_REUSEPORT;
  args[2].value.integer = 0;
  /* --timeout: a connection with no call for that long is closed (GOAWAY),
   * as HTTP closes an idle connection. */
  args[3].type = GRPC_ARG_INTEGER;
  args[3].key = GRPC_ARG_MAX_CONNECTION_IDLE_MS;
  args[3].value.integer = c->timeout > INT_MAX / 1000 ? INT_MAX
                                                      : (int)c->timeout * 1000;
  chargs.num_args = 4;
  chargs.args = args;
  g->cq = grpc_completion_queue_create_for_next(NULL);
  g->srv = grpc_server_create(&chargs, NULL);
  grpc_server_register_completion_queue(g->srv, g->cq, NULL);
}

/* TLS credentials with the HTTP side's certificate; NULL when out of
 * memory. */
static grpc_server_credentials *make_credentials(struct grpcd *g,
                                                 struct server *http)
{
  /* The certificate comes from fetch_tls() at every handshake, so a
   * SIGHUP reload (grpcd_reload) reaches new connections. */
  g->tls = 1;
  g->tls_gen = 1;
  g->tls_cert = strdup(http->auth.tls_cert);
  g->tls_key = strdup(http->auth.tls_key);
  if (g->tls_cert == NULL || g->tls_key == NULL) {
    LOG_ERROR("grpc: out of memory for the TLS material");
    return NULL;
  }
  return grpc_ssl_server_credentials_create_with_options(
    grpc_ssl_server_credentials_create_options_using_config_fetcher(
      GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, fetch_tls, g));
}

/* "gRPC listening on HOST:PORT" and --grpc-port-file, once bound. */
static int announce(struct grpcd *g, const struct conf *c)
{
  int v6 = strchr(c->grpc_host, ':') != NULL;

  LOG_INFO("gRPC listening on %s%s%s:%d%s", v6 ? "[" : "", c->grpc_host,
           v6 ? "]" : "", g->port, g->tls ? " (TLS)" : "");
  if (c->grpc_port_file != NULL &&
      write_port_file(c->grpc_port_file, g->port) != 0)
    return -1;
  return 0;
}

/* Loop thread: gRPC core and the server (its listening port, if any,
 * already added), its pre-requested calls and the completion-queue
 * thread.  0 or -1 after logging why. */
static int core_run(struct grpcd *g)
{
  grpc_server_start(g->srv);
  g->started = 1;
  for (int i = 0; i < GRPCD_PREQUEST; i++)
    request_call(g);
  if (pthread_create(&g->thread, NULL, cq_main, g) != 0) {
    LOG_ERROR("grpc: cannot start the completion-queue thread");
    return -1;
  }
  g->thread_started = 1;
  return 0;
}

/* Loop thread: gRPC core, and the server with its completion queue. */
static void core_init(struct grpcd *g)
{
  gpr_set_log_function(grpc_log);
  grpc_init();
  g->inited = 1;
  create_server(g, g->conf);
}

/* TLS: gRPC core binds --grpc-listen itself and starts now. */
static int listen_core(struct grpcd *g, const struct conf *c)
{
  grpc_server_credentials *creds;
  char addr[CONF_HOST_MAX + 16];
  int v6 = strchr(c->grpc_host, ':') != NULL;

  core_init(g);
  if ((creds = make_credentials(g, g->http)) == NULL)
    return -1;
  snprintf(addr, sizeof addr, v6 ? "[%s]:%llu" : "%s:%llu", c->grpc_host,
           (unsigned long long)c->grpc_port);
  g->port = grpc_server_add_http2_port(g->srv, addr, creds);
  grpc_server_credentials_release(creds);
  if (g->port <= 0) {
    LOG_ERROR("grpc: cannot listen on %s (address in use or not local?)", addr);
    return -1;
  }
  if (core_run(g) != 0)
    return -1;
  return announce(g, c);
}

/* Loop thread: the first connection on the daemon's own port starts gRPC
 * core (no listening port of its own: connections come from accept_cb). */
static int core_start_lazily(struct grpcd *g)
{
  LOG_DEBUG("grpc: the first connection starts gRPC core");
  core_init(g);
  g->fd_creds = grpc_insecure_server_credentials_create();
  if (g->fd_creds == NULL) {
    LOG_ERROR("grpc: out of memory for the server credentials");
    return -1;
  }
  return core_run(g);
}

/* Loop thread: the daemon's own gRPC port stops accepting (close). */
static void listen_close(struct grpcd *g)
{
  if (g->lfd >= 0) {
    uv_close((uv_handle_t *)&g->lpoll, NULL);
    uv_close((uv_handle_t *)&g->lwait, NULL);
    close(g->lfd);
    g->lfd = -1;
  }
}

static void accept_cb(uv_poll_t *h, int status, int events);

/* Loop thread: SOCK_ACCEPT_WAIT_MS after EMFILE and the like. */
static void accept_again_cb(uv_timer_t *t)
{
  struct grpcd *g = container_of(t, struct grpcd, lwait);

  if (g->lfd >= 0)
    uv_poll_start(&g->lpoll, UV_READABLE, accept_cb);
}

/* Loop thread: connections on the daemon's own gRPC port, each handed to
 * gRPC core (started at the first).  Out of descriptors or memory, the
 * port rests SOCK_ACCEPT_WAIT_MS instead of spinning: clients wait in
 * the backlog meanwhile. */
static void accept_cb(uv_poll_t *h, int status, int events)
{
  struct grpcd *g = container_of(h, struct grpcd, lpoll);
  int one = 1;

  (void)status;
  (void)events;
  for (int i = 0; i < 64 && g->lfd >= 0; i++) {
    int fd = accept4(g->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

    if (fd < 0) {
      (void)sock_accept_failed(errno, "grpc: ", &g->lpoll, &g->lwait,
                               accept_again_cb);
      return;
    }
    if (!g->started && core_start_lazily(g) != 0) {
      LOG_ERROR("grpc: gRPC core did not start: the gRPC port closes");
      close(fd);
      listen_close(g);
      return;
    }
    /* What gRPC core's own listener sets on an accepted socket. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    grpc_server_add_channel_from_fd(g->srv, fd, g->fd_creds);
  }
}

/* No TLS: the daemon binds --grpc-listen and accepts (accept_cb). */
static int listen_own(struct grpcd *g, const struct conf *c)
{
  unsigned port;
  int fd = sock_listen("--grpc-listen", c->grpc_listen, c->grpc_host,
                       (unsigned)c->grpc_port, &port);

  if (fd < 0)
    return -1;
  g->lfd = fd;
  g->port = (int)port;
  uv_poll_init(g->loop, &g->lpoll, fd);
  uv_timer_init(g->loop, &g->lwait);
  if (uv_poll_start(&g->lpoll, UV_READABLE, accept_cb) != 0) {
    LOG_ERROR("grpc: cannot watch the gRPC port");
    return -1;
  }
  return announce(g, c);
}

int grpcd_start(struct grpcd *g, uv_loop_t *loop, const struct conf *c,
                struct server *http)
{
  memset(g, 0, sizeof *g);
  g->conf = c;
  g->loop = loop;
  g->http = http;
  g->lfd = -1;
  pthread_mutex_init(&g->lock, NULL);
  atomic_init(&g->draining, 0);
  atomic_init(&g->live, 0);
  if (c->grpc_listen == NULL)
    return 0;
  if (start_loop_side(g, loop, http) != 0)
    return -1;
  if (http->auth.tls_cert != NULL)
    return listen_core(g, c);
  return listen_own(g, c);
}

void grpcd_drain(struct grpcd *g, grpcd_idle_cb idle_cb, void *arg)
{
  if (g->closed || atomic_load(&g->draining))
    return;
  g->idle_cb = idle_cb;
  g->idle_arg = arg;
  atomic_store(&g->draining, 1);
  if (g->srv == NULL || atomic_load(&g->live) == 0) {
    g->idle_reported = 1;
    idle_cb(arg);
    return;
  }
  LOG_INFO("gRPC draining: %zu call(s) in flight", atomic_load(&g->live));
}

void grpcd_close(struct grpcd *g)
{
  struct rcall *c, *next;

  if (g->closed)
    return;
  g->closed = 1;
  if (g->conf != NULL) /* grpcd_start() ran: lfd is a socket or -1 */
    listen_close(g);
  if (g->started) {
    pthread_mutex_lock(&g->lock);
    g->closing = 1;
    c = g->queue;
    g->queue = NULL;
    pthread_mutex_unlock(&g->lock);
    for (; c != NULL; c = next) {
      next = c->next;
      reply_error(c, API_E_DRAINING, "the server is shutting down");
    }
    grpc_server_shutdown_and_notify(g->srv, g->cq, &g->shutdown_tag);
    grpc_server_cancel_all_calls(g->srv);
    /* The CQ thread ends after the shutdown event and the queue's own
     * shutdown; without one, run its loop here. */
    if (g->thread_started)
      pthread_join(g->thread, NULL);
    else
      cq_main(g);
    g->thread_started = 0;
  } else if (g->cq != NULL) {
    grpc_completion_queue_shutdown(g->cq);
    for (;;) {
      grpc_event ev = grpc_completion_queue_next(
        g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
      if (ev.type == GRPC_QUEUE_SHUTDOWN)
        break;
    }
  }
  if (g->srv != NULL) {
    grpc_server_destroy(g->srv);
    g->srv = NULL;
  }
  if (g->cq != NULL) {
    grpc_completion_queue_destroy(g->cq);
    g->cq = NULL;
  }
  if (g->handles) {
    uv_close((uv_handle_t *)&g->async, NULL);
    g->handles = 0;
  }
  if (g->fd_creds != NULL) {
    grpc_server_credentials_release(g->fd_creds);
    g->fd_creds = NULL;
  }
  if (g->inited) {
    grpc_shutdown();
    g->inited = 0;
  }
  free_secret(g->tls_cert);
  free_secret(g->tls_key);
  g->tls_cert = g->tls_key = NULL;
  if (g->conf != NULL) /* grpcd_start() initialised the lock */
    pthread_mutex_destroy(&g->lock);
}
