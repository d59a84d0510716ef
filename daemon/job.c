/* job.c - the reduce computation, run on the libuv worker pool.
 *
 * Small plans: one work item does decode -> plan -> rd_execute -> encode
 * (a buffered binary body skips the decode: it was planned on the loop
 * thread, and only its byte order is fixed here).
 * Large plans (plan.nparts > 1, big input, more than one pool thread):
 * the first work item decodes and plans, its after-callback queues up to
 * max_tasks part workers which take parts from a shared counter, and the
 * last worker to finish combines and encodes.  No pool thread ever waits
 * for another, so a busy pool cannot deadlock.
 *
 * Streams: each full buffer is one feed work (byte swap, rd_stream_feed);
 * feeds of one job never overlap, so the library sees the bytes in order;
 * the close work feeds the rest, finishes and encodes.
 */
#include "config.h" /* autoconf */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "log.h"
#include "mem.h"
#include "tmem.h"

/* Inputs below this are not worth the hand-offs of a parallel run. */
#define JOB_PAR_MIN_BYTES (UINT64_C(1) << 20)
/* An empty input (a zero-length reduced dim) can name a huge output of zeros
 * from a few bytes of request; outputs never exceed the input otherwise. */
#define JOB_MAX_EMPTY_OUTPUT (1u << 20)

#define container_of(ptr, type, member)                                        \
  ((type *)((char *)(ptr)-offsetof(type, member)))

/* Static fallback when even the error body cannot be allocated. */

/* ------------------------------------------------------------------ */
/* Helpers (pool threads)                                             */
/* ------------------------------------------------------------------ */

static void set_reply(struct job *j, int status, struct api_buf *b)
{
  j->status = status;
  j->reply = api_buf_steal(b, &j->reply_len);
}

/* Turns `rc`/`err` into the error reply. */
static void fail(struct job *j, int rc, struct rd_error *err)
{
  struct api_buf b;

  if (err->code == 0) {
    /* The callee returned a code without a message: still name it. */
    err->code = rc;
    snprintf(err->msg, sizeof err->msg, "%s", api_errname(rc));
  }
  api_buf_init(&b);
  if (j->call.proto->encode_error(err, &b) != 0) {
    api_buf_free(&b);
    j->status = 503; /* out of memory: retry later */
    j->reply = NULL;
    return;
  }
  set_reply(j, api_http_status(err->code), &b);
}

/* Encodes j->out (in the order of j->plan) as the protocol answers it
 * (v1: the format Accept picks; v2: as the request's "outputs" say). */
static void encode_result(struct job *j)
{
  struct api_buf b;
  struct rd_error err;
  int rc;

  memset(&err, 0, sizeof err);
  api_buf_init(&b);
  rc = j->call.proto->encode_result(&j->call, &j->lplan, j->req.params.opset,
                                    j->fortran, j->out, &b, &j->reply_info,
                                    &err);
  if (rc != 0) {
    api_buf_free(&b);
    fail(j, rc, &err);
    return;
  }
  set_reply(j, 200, &b);
}

/* An input of no element can name a huge output of zeros from a few bytes
 * of request; outputs never exceed the input otherwise. */
static int check_empty_output(const struct rd_plan *plan, struct rd_error *err)
{
  if (plan->out_count > plan->in_count &&
      plan->out_count > JOB_MAX_EMPTY_OUTPUT)
    return api_fail(err, RD_E_TOO_LARGE,
                    "the input is empty but the output "
                    "would have %" PRIu64 " elements; at most %u are answered "
                    "for an empty input",
                    plan->out_count, (unsigned)JOB_MAX_EMPTY_OUTPUT);
  return 0;
}

/* Frees the computation's memory as soon as the reply exists. */
static void drop_compute_state(struct job *j)
{
  api_request_free(&j->req);
  api_tmem_free(j->out);
  j->out = NULL;
  rd_exec_destroy(j->ex);
  j->ex = NULL;
}

/* ------------------------------------------------------------------ */
/* Stage 2: parts (pool threads, then the loop thread)                */
/* ------------------------------------------------------------------ */

/* Pool thread: runs parts until none is left; the last task out finishes. */
static void part_work_cb(uv_work_t *w)
{
  struct job *j = w->data;
  struct rd_error err;
  int rc = 0;

  for (;;) {
    size_t p = atomic_fetch_add(&j->next_part, 1);
    if (p >= j->plan.nparts)
      break;
    /* Only fails for a bad part index, which the counter rules out. */
    (void)rd_exec_part(j->ex, p, j->req.data);
  }
  /* acq_rel: the finisher must see every other task's part results. */
  if (atomic_fetch_sub_explicit(&j->tasks_left, 1, memory_order_acq_rel) != 1)
    return;
  memset(&err, 0, sizeof err);
  rc = rd_exec_finish(j->ex, j->out, &err);
  if (rc != 0)
    fail(j, rc, &err);
  else
    encode_result(j);
  drop_compute_state(j);
}

/* Loop thread: the last part work released by libuv ends the job. */
static void part_after_cb(uv_work_t *w, int status)
{
  struct job *j = w->data;

  (void)status; /* never cancelled */
  if (--j->tasks_running == 0) {
    free(j->tasks);
    j->tasks = NULL;
    j->busy = 0;
    j->done_cb(j);
  }
}

/* ------------------------------------------------------------------ */
/* Stage 1: decode and plan (pool thread, then the loop thread)       */
/* ------------------------------------------------------------------ */

static void reset_run(struct job *j, uv_loop_t *loop, job_done_cb done_cb);

/* Pool thread: a Fortran-order tensor (the whole body) is rewritten in C
 * order and the logical plan is run over it, so that the terms are summed
 * in the same order as for the same tensor sent in C order (running the
 * reversed-shape plan over the bytes as sent would reorder the sum and
 * change the last bits: issue 13, 18.497377194503848 against
 * ...844).  The output is then in C order too.  0 or -1 (out of memory). */
static int to_c_order(struct job *j, struct rd_error *err)
{
  void *c = api_tmem_alloc(j->req.data_bytes);

  if (c == NULL) {
    api_fail(err, RD_E_NOMEM,
             "out of memory reordering the Fortran-order "
             "tensor; retry later");
    return -1;
  }
  api_fortran_to_c(j->req.data, c, j->lplan.in_rank, j->lplan.in_shape,
                   j->lplan.elem_size);
  api_tmem_free(j->req.data);
  j->req.data = c;
  j->plan = j->lplan;
  j->fortran = 0;
  return 0;
}

/* Pool thread: after a JSON decode that returned `rc`: plans.  0, or 1
 * when the reply (an error) is set. */
static int plan_decoded(struct job *j, int rc, struct rd_error *err)
{
  /* Nonzero once the decoder got as far as a valid "op" (for metrics). */
  j->op = j->req.params.op;
  if (rc != 0) {
    fail(j, rc, err);
    return 1;
  }
  rc = rd_plan_init(&j->plan, &j->req.params, err);
  if (rc == 0)
    rc = check_empty_output(&j->plan, err);
  if (rc != 0) {
    fail(j, rc, err);
    drop_compute_state(j);
    return 1;
  }
  j->lplan = j->plan;
  j->fortran = 0;
  return 0;
}

/* Pool thread: the planned job, run here or (j->ex set) in parts. */
static void run_planned(struct job *j, struct rd_error *err)
{
  int rc;

  j->out = api_tmem_alloc(j->plan.out_bytes);
  if (j->out == NULL) {
    fail(j, RD_E_NOMEM, err);
    drop_compute_state(j);
    return;
  }
  if (j->plan.nparts > 1 && j->max_tasks > 1 &&
      j->plan.in_bytes >= JOB_PAR_MIN_BYTES &&
      rd_exec_create_out(&j->plan, j->out, &j->ex) == 0)
    return; /* the parts stage follows; ex != NULL says so */

  j->ex = NULL;
  rc = rd_execute(&j->plan, j->req.data, j->out, err);
  if (rc != 0)
    fail(j, rc, err);
  else
    encode_result(j);
  drop_compute_state(j);
}

/* Pool thread (or the loop thread, from job_run_inline). */
static void first_work_cb(uv_work_t *w)
{
  struct job *j = container_of(w, struct job, work);
  struct rd_error err;
  int rc;

  if (j->metrics != NULL)
    metrics_queued_add(j->metrics, -1);
  memset(&err, 0, sizeof err);
  if (j->in_fmt == API_FMT_RAW || j->in_fmt == API_FMT_NPY) {
    /* Planned by job_binary_setup(); the data is the whole body. */
    if (j->swap)
      api_swap_bytes(j->req.data, j->req.data_bytes, j->plan.elem_size);
    if (j->fortran && to_c_order(j, &err) != 0) {
      fail(j, RD_E_NOMEM, &err);
      return;
    }
  } else {
    rc = j->call.proto->decode(&j->call, j->body, j->body_len, j->max_elements,
                               &j->req, &err);
    if (plan_decoded(j, rc, &err) != 0)
      return;
  }
  run_planned(j, &err);
}

/* Loop thread: either the job is done or its parts are queued now. */
static void first_after_cb(uv_work_t *w, int status)
{
  struct job *j = container_of(w, struct job, work);
  unsigned n;

  (void)status; /* never cancelled */
  if (j->ex == NULL) {
    j->busy = 0;
    j->done_cb(j);
    return;
  }
  n = j->max_tasks;
  if (n > j->plan.nparts)
    n = (unsigned)j->plan.nparts;
  j->tasks = calloc(n, sizeof *j->tasks);
  if (j->tasks == NULL) {
    /* Cannot fan out: answer 503 rather than compute on the loop thread. */
    struct rd_error err;
    memset(&err, 0, sizeof err);
    fail(j, RD_E_NOMEM, &err);
    drop_compute_state(j);
    j->busy = 0;
    j->done_cb(j);
    return;
  }
  LOG_DEBUG("job: %zu parts of %llu input bytes on %u pool threads",
            j->plan.nparts, (unsigned long long)j->plan.in_bytes, n);
  j->ntasks = n;
  j->tasks_running = n;
  atomic_store(&j->next_part, 0);
  atomic_store(&j->tasks_left, n);
  for (unsigned i = 0; i < n; i++) {
    j->tasks[i].data = j;
    /* uv_queue_work only fails for a NULL callback. */
    if (uv_queue_work(j->loop, &j->tasks[i], part_work_cb, part_after_cb) != 0)
      abort();
  }
}

/* ------------------------------------------------------------------ */
/* Public                                                             */
/* ------------------------------------------------------------------ */

int job_submit(uv_loop_t *loop, struct job *j, job_done_cb done_cb)
{
  int rc;

  reset_run(j, loop, done_cb);
  if (j->metrics != NULL)
    metrics_queued_add(j->metrics, 1);
  rc = uv_queue_work(loop, &j->work, first_work_cb, first_after_cb);
  if (rc != 0 && j->metrics != NULL)
    metrics_queued_add(j->metrics, -1);
  j->busy = rc == 0;
  return rc;
}

void job_run_inline(uv_loop_t *loop, struct job *j)
{
  struct metrics *m = j->metrics;

  reset_run(j, loop, NULL);
  j->max_tasks = 1;  /* never fans out: the reply is ready on return */
  j->metrics = NULL; /* never queued */
  first_work_cb(&j->work);
  j->metrics = m;
}

/* Loop thread: the state every run starts from. */
static void reset_run(struct job *j, uv_loop_t *loop, job_done_cb done_cb)
{
  j->loop = loop;
  j->done_cb = done_cb;
  j->status = 0;
  j->reply = NULL;
  j->reply_len = 0;
  j->reply_info.fmt = API_FMT_JSON;
  j->out = NULL;
  j->ex = NULL;
  j->tasks = NULL;
  j->ntasks = 0;
  j->tasks_running = 0;
  if (j->in_fmt != API_FMT_RAW && j->in_fmt != API_FMT_NPY) {
    memset(&j->req, 0, sizeof j->req);
    j->op = 0;
  }
}

/* ------------------------------------------------------------------ */
/* Binary requests and streams                                        */
/* ------------------------------------------------------------------ */

int job_binary_setup(struct job *j, const struct api_request *req, int fortran,
                     int swap, struct rd_error *err)
{
  int rc;

  /* api_request points into itself: copy, then re-point. */
  j->req = *req;
  j->req.params.shape = j->req.shape;
  j->req.params.axes = j->req.axes;
  j->req.data = NULL;
  j->req.data_bytes = 0;
  j->swap = swap;
  j->op = j->req.params.op;
  rc = api_binary_plan(&j->req.params, fortran, &j->lplan, &j->plan, err);
  if (rc == 0)
    rc = check_empty_output(&j->lplan, err);
  j->fortran = fortran && j->lplan.in_rank > 1;
  return rc;
}

int job_busy(const struct job *j)
{
  return j->busy || j->srunning;
}

/* Pool thread: one full buffer into the library. */
static void feed_work_cb(uv_work_t *w)
{
  struct job *j = container_of(w, struct job, feed_work);
  unsigned char *p = j->sbuf[j->sfeed];
  size_t n = j->slen[j->sfeed];

  if (j->src != 0)
    return; /* an earlier feed failed: the close work reports it */
  if (j->jp != NULL) {
    j->src = api_jpush_feed(j->jp, (char *)p, n);
    return;
  }
  if (j->swap)
    api_swap_bytes(p, n, j->plan.elem_size);
  j->src = rd_stream_feed(j->st, p, n, &j->serr);
}

static void queue_feed(struct job *j);

/* Loop thread: a buffer is free again; start the next full one. */
static void feed_after_cb(uv_work_t *w, int status)
{
  struct job *j = container_of(w, struct job, feed_work);

  (void)status; /* never cancelled */
  j->srunning = 0;
  j->slen[j->sfeed] = 0;
  if (j->slen[j->scur] == j->sbufsize)
    queue_feed(j);
  j->wake_cb(j);
}

/* Loop thread: feeds the current (full) buffer; fills the other next. */
static void queue_feed(struct job *j)
{
  j->sfeed = j->scur;
  j->scur ^= 1;
  j->srunning = 1;
  /* uv_queue_work only fails for a NULL callback. */
  if (uv_queue_work(j->loop, &j->feed_work, feed_work_cb, feed_after_cb) != 0)
    abort();
}

int job_stream_open(struct job *j, uv_loop_t *loop, size_t bufsize,
                    job_done_cb wake_cb)
{
  bufsize = bufsize < 8 ? 8 : bufsize / 8 * 8;
  j->loop = loop;
  j->wake_cb = wake_cb;
  j->sbufsize = bufsize;
  j->scur = 0;
  j->slen[0] = j->slen[1] = 0;
  j->sready[0] = j->sready[1] = 0;
  j->src = 0;
  if (rd_stream_create(&j->plan, &j->st) != 0)
    return RD_E_NOMEM;
  j->sbuf[0] = api_tmem_alloc(bufsize);
  j->sbuf[1] = api_tmem_alloc(bufsize);
  j->out = api_tmem_alloc((size_t)j->plan.out_bytes);
  if (j->sbuf[0] == NULL || j->sbuf[1] == NULL || j->out == NULL)
    return RD_E_NOMEM;
  return 0;
}

int job_json_stream_open(struct job *j, uint64_t len_hint, size_t bufsize,
                         uv_loop_t *loop, job_done_cb wake_cb)
{
  j->loop = loop;
  j->wake_cb = wake_cb;
  j->sbufsize = bufsize;
  j->scur = 0;
  j->slen[0] = j->slen[1] = 0;
  j->sready[0] = j->sready[1] = 0;
  j->src = 0;
  if (api_jpush_create(len_hint <= SIZE_MAX ? (size_t)len_hint : 0, &j->jp))
    return RD_E_NOMEM;
  j->sbuf[0] = api_tmem_alloc(bufsize);
  j->sbuf[1] = api_tmem_alloc(bufsize);
  if (j->sbuf[0] == NULL || j->sbuf[1] == NULL)
    return RD_E_NOMEM;
  return 0;
}

size_t job_stream_write(struct job *j, const void *p, size_t n)
{
  const unsigned char *src = p;
  size_t taken = 0;

  while (taken < n) {
    size_t room, c;
    if (j->slen[j->scur] == j->sbufsize) {
      if (j->srunning)
        break; /* both buffers busy: backpressure */
      queue_feed(j);
    }
    room = j->sbufsize - j->slen[j->scur];
    c = n - taken < room ? n - taken : room;
    api_mem_ahead(j->sbuf[j->scur], j->sbufsize, &j->sready[j->scur],
                  j->slen[j->scur], c);
    memcpy(j->sbuf[j->scur] + j->slen[j->scur], src + taken, c);
    j->slen[j->scur] += c;
    taken += c;
  }
  /* Start on a full buffer at once rather than at the next write. */
  if (j->slen[j->scur] == j->sbufsize && !j->srunning)
    queue_feed(j);
  return taken;
}

/* Frees the stream's memory (not the reply). */
static void drop_stream_state(struct job *j)
{
  rd_stream_destroy(j->st);
  j->st = NULL;
  api_jpush_destroy(j->jp);
  j->jp = NULL;
  api_tmem_free(j->sbuf[0]);
  api_tmem_free(j->sbuf[1]);
  j->sbuf[0] = j->sbuf[1] = NULL;
  api_tmem_free(j->out);
  j->out = NULL;
}

/* Pool thread: the rest of the body, finish, encode. */
static void close_work_cb(uv_work_t *w)
{
  struct job *j = container_of(w, struct job, work);
  unsigned char *p = j->sbuf[j->scur];
  size_t n = j->slen[j->scur];
  struct rd_error err;
  int rc = j->src;

  memset(&err, 0, sizeof err);
  if (rc == 0 && n > 0) {
    if (j->swap)
      api_swap_bytes(p, n, j->plan.elem_size);
    rc = rd_stream_feed(j->st, p, n, &j->serr);
  }
  if (rc != 0) {
    fail(j, rc, &j->serr);
  } else if ((rc = rd_stream_finish(j->st, j->out, &err)) != 0) {
    fail(j, rc, &err);
  } else {
    encode_result(j);
  }
  drop_stream_state(j);
}

/* Pool thread: a JSON stream's rest, the end of the decode, then the job
 * as first_work_cb() runs it (first_after_cb() follows). */
static void json_close_work_cb(uv_work_t *w)
{
  struct job *j = container_of(w, struct job, work);
  unsigned char *p = j->sbuf[j->scur];
  size_t n = j->slen[j->scur];
  struct rd_error err;
  int rc = j->src;

  memset(&err, 0, sizeof err);
  if (rc == 0 && n > 0)
    rc = api_jpush_feed(j->jp, (char *)p, n);
  if (rc == 0)
    rc = api_jpush_finish(j->jp, j->max_elements, &j->req, &err);
  else
    api_fail(&err, rc, "out of memory decoding the body; retry later");
  /* The text and the buffers are no longer needed (the data is in req). */
  drop_stream_state(j);
  if (plan_decoded(j, rc, &err) != 0)
    return;
  run_planned(j, &err);
}

/* Loop thread. */
static void close_after_cb(uv_work_t *w, int status)
{
  struct job *j = container_of(w, struct job, work);

  (void)status; /* never cancelled */
  j->busy = 0;
  j->done_cb(j);
}

int job_stream_close(struct job *j, job_done_cb done_cb)
{
  int rc;

  j->done_cb = done_cb;
  j->status = 0;
  j->reply = NULL;
  j->reply_len = 0;
  j->reply_info.fmt = API_FMT_JSON;
  if (j->jp != NULL) {
    j->out = NULL;
    j->ex = NULL;
    j->tasks = NULL;
    j->ntasks = 0;
    j->tasks_running = 0;
    rc = uv_queue_work(j->loop, &j->work, json_close_work_cb, first_after_cb);
  } else {
    rc = uv_queue_work(j->loop, &j->work, close_work_cb, close_after_cb);
  }
  j->busy = rc == 0;
  return rc;
}

void job_release(struct job *j)
{
  free(j->reply);
  j->reply = NULL;
  j->reply_len = 0;
  drop_stream_state(j);
  api_request_free(&j->req);
}
