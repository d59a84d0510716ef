/* job.h - one POST /v1/reduce computation on the libuv worker pool.
 *
 * The loop thread fills the inputs and calls job_submit(); every CPU step
 * (JSON decode, plan, reduction, JSON encode) then runs on pool threads, and
 * `done_cb` runs on the loop thread once libuv has released every uv_work_t
 * of the job.  Large plans are split: their parts run on several pool
 * threads at once (rd_exec_*), with bit-identical results.
 *
 * The struct is caller-owned (embedded in the HTTP request context) and
 * must stay alive, unmoved, from job_submit() until done_cb has run.
 */
#ifndef RD_JOB_H
#define RD_JOB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "api.h"
#include "metrics.h"
#include "reduce.h"

struct job;
/* Runs on the loop thread when the job is finished. */
typedef void (*job_done_cb)(struct job *j);

struct job {
  /* Inputs: set by the loop thread before job_submit(), then read-only. */
  const char *body;          /* request body (not owned) */
  size_t body_len;
  uint64_t max_elements;     /* bound passed to api_json_decode */
  unsigned max_tasks;        /* pool threads one job may use at once */
  struct metrics *metrics;   /* optional: counted in reduced_requests_queued
                              * until a pool thread takes the job up */

  /* Outputs: valid in done_cb. */
  int status;                /* HTTP status */
  char *reply;               /* malloc'ed JSON body, or NULL if out of memory */
  size_t reply_len;
  int op;                    /* enum rd_op the body named, 0 if not read */

  /* Private. */
  job_done_cb done_cb;
  uv_loop_t *loop;
  uv_work_t work;            /* decode/plan (and the whole job if small) */
  struct api_request req;
  struct rd_plan plan;
  void *out;                 /* plan.out_bytes */
  struct rd_exec *ex;        /* non-NULL: the parts stage follows */
  uv_work_t *tasks;          /* ntasks part workers */
  unsigned ntasks;
  unsigned tasks_running;    /* loop thread only: part works not yet done */
  atomic_size_t next_part;   /* next part index to take */
  atomic_uint tasks_left;    /* the last task to finish encodes */
};

/* Queues the job (loop thread).  0, or a negative libuv error; then
 * done_cb will not run. */
int job_submit(uv_loop_t *loop, struct job *j, job_done_cb done_cb);

/* Frees what the job still owns (the reply unless taken: set j->reply to
 * NULL after taking it).  Loop thread, after done_cb; safe to call twice. */
void job_release(struct job *j);

/* A static error body for status 503 when a job's reply is NULL (out of
 * memory); sets *len. */
const char *job_nomem_body(size_t *len);

#endif /* RD_JOB_H */
