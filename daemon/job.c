/* job.c - the reduce computation, run on the libuv worker pool.
 *
 * Small plans: one work item does decode -> plan -> rd_execute -> encode.
 * Large plans (plan.nparts > 1, big input, more than one pool thread):
 * the first work item decodes and plans, its after-callback queues up to
 * max_tasks part workers which take parts from a shared counter, and the
 * last worker to finish combines and encodes.  No pool thread ever waits
 * for another, so a busy pool cannot deadlock.
 */
#include "config.h"   /* autoconf */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "log.h"

/* Inputs below this are not worth the hand-offs of a parallel run. */
#define JOB_PAR_MIN_BYTES (UINT64_C(1) << 20)
/* An empty input (a zero-length reduced dim) can name a huge output of zeros
 * from a few bytes of request; outputs never exceed the input otherwise. */
#define JOB_MAX_EMPTY_OUTPUT (1u << 20)

#define container_of(ptr, type, member) \
  ((type *)((char *)(ptr) - offsetof(type, member)))

/* Static fallback when even the error body cannot be allocated. */
static const char nomem_body[] =
  "{\"error\":{\"code\":\"OUT_OF_MEMORY\",\"message\":\"out of memory\"}}";

/* ------------------------------------------------------------------ */
/* Helpers (pool threads)                                             */
/* ------------------------------------------------------------------ */

static void
set_reply(struct job *j, int status, struct api_buf *b)
{
  j->status = status;
  j->reply = api_buf_steal(b, &j->reply_len);
}

/* Turns `rc`/`err` into the error reply. */
static void
fail(struct job *j, int rc, struct rd_error *err)
{
  struct api_buf b;

  if (err->code == 0) {
    /* The callee returned a code without a message: still name it. */
    err->code = rc;
    snprintf(err->msg, sizeof err->msg, "%s", api_errname(rc));
  }
  api_buf_init(&b);
  if (api_json_encode_error(err, &b) != 0) {
    api_buf_free(&b);
    j->status = 503;   /* out of memory: retry later */
    j->reply = NULL;
    return;
  }
  set_reply(j, api_http_status(err->code), &b);
}

static void
encode_result(struct job *j)
{
  struct api_buf b;
  struct rd_error err;
  int rc;

  api_buf_init(&b);
  rc = api_json_encode_result(&j->plan, j->req.params.opset, j->out, &b);
  if (rc != 0) {
    api_buf_free(&b);
    memset(&err, 0, sizeof err);
    fail(j, rc, &err);
    return;
  }
  set_reply(j, 200, &b);
}

/* Frees the computation's memory as soon as the reply exists. */
static void
drop_compute_state(struct job *j)
{
  api_request_free(&j->req);
  free(j->out);
  j->out = NULL;
  rd_exec_destroy(j->ex);
  j->ex = NULL;
}

/* ------------------------------------------------------------------ */
/* Stage 2: parts (pool threads, then the loop thread)                */
/* ------------------------------------------------------------------ */

/* Pool thread: runs parts until none is left; the last task out finishes. */
static void
part_work_cb(uv_work_t *w)
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
static void
part_after_cb(uv_work_t *w, int status)
{
  struct job *j = w->data;

  (void)status;   /* never cancelled */
  if (--j->tasks_running == 0) {
    free(j->tasks);
    j->tasks = NULL;
    j->done_cb(j);
  }
}

/* ------------------------------------------------------------------ */
/* Stage 1: decode and plan (pool thread, then the loop thread)       */
/* ------------------------------------------------------------------ */

/* Pool thread. */
static void
first_work_cb(uv_work_t *w)
{
  struct job *j = container_of(w, struct job, work);
  struct rd_error err;
  int rc;

  if (j->metrics != NULL)
    metrics_queued_add(j->metrics, -1);
  memset(&err, 0, sizeof err);
  rc = api_json_decode(j->body, j->body_len, j->max_elements, &j->req, &err);
  /* Nonzero once the decoder got as far as a valid "op" (for metrics). */
  j->op = j->req.params.op;
  if (rc != 0) {
    fail(j, rc, &err);
    return;
  }
  rc = rd_plan_init(&j->plan, &j->req.params, &err);
  if (rc == 0 && j->plan.out_count > j->plan.in_count &&
      j->plan.out_count > JOB_MAX_EMPTY_OUTPUT)
    rc = api_fail(&err, RD_E_TOO_LARGE, "the input is empty but the output "
                  "would have %" PRIu64 " elements; at most %u are answered "
                  "for an empty input", j->plan.out_count,
                  (unsigned)JOB_MAX_EMPTY_OUTPUT);
  if (rc != 0) {
    fail(j, rc, &err);
    drop_compute_state(j);
    return;
  }
  j->out = malloc(j->plan.out_bytes > 0 ? j->plan.out_bytes : 1);
  if (j->out == NULL) {
    fail(j, RD_E_NOMEM, &err);
    drop_compute_state(j);
    return;
  }
  if (j->plan.nparts > 1 && j->max_tasks > 1 &&
      j->plan.in_bytes >= JOB_PAR_MIN_BYTES &&
      rd_exec_create(&j->plan, &j->ex) == 0)
    return;   /* the parts stage follows; ex != NULL says so */

  j->ex = NULL;
  rc = rd_execute(&j->plan, j->req.data, j->out, &err);
  if (rc != 0)
    fail(j, rc, &err);
  else
    encode_result(j);
  drop_compute_state(j);
}

/* Loop thread: either the job is done or its parts are queued now. */
static void
first_after_cb(uv_work_t *w, int status)
{
  struct job *j = container_of(w, struct job, work);
  unsigned n;

  (void)status;   /* never cancelled */
  if (j->ex == NULL) {
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

int
job_submit(uv_loop_t *loop, struct job *j, job_done_cb done_cb)
{
  int rc;

  j->loop = loop;
  j->done_cb = done_cb;
  j->status = 0;
  j->reply = NULL;
  j->reply_len = 0;
  j->out = NULL;
  j->ex = NULL;
  j->tasks = NULL;
  j->ntasks = 0;
  j->tasks_running = 0;
  j->op = 0;
  memset(&j->req, 0, sizeof j->req);
  if (j->metrics != NULL)
    metrics_queued_add(j->metrics, 1);
  rc = uv_queue_work(loop, &j->work, first_work_cb, first_after_cb);
  if (rc != 0 && j->metrics != NULL)
    metrics_queued_add(j->metrics, -1);
  return rc;
}

void
job_release(struct job *j)
{
  free(j->reply);
  j->reply = NULL;
  j->reply_len = 0;
}

/* The fallback body for a job whose reply could not be allocated. */
const char *
job_nomem_body(size_t *len)
{
  *len = sizeof nomem_body - 1;
  return nomem_body;
}
