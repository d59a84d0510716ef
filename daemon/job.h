/* job.h - one reduction request (POST /v1/reduce, /v2 infer) computed on
 * the libuv worker pool.
 *
 * The loop thread fills the inputs and calls job_submit(); every CPU step
 * (JSON decode, plan, reduction, encoding) then runs on pool threads, and
 * `done_cb` runs on the loop thread once libuv has released every uv_work_t
 * of the job.  Large plans are split: their parts run on several pool
 * threads at once (rd_exec_*), with bit-identical results.
 *
 * Binary bodies (raw, .npy) are planned on the loop thread first
 * (job_binary_setup(), before the body is read), then either buffered
 * whole and submitted like JSON, or streamed: job_stream_open(), then
 * job_stream_write() as bytes arrive (two bounded buffers, fed to the
 * library in order by one pool job at a time; a full pair is
 * backpressure), then job_stream_close() which finishes and encodes.
 * Large, chunked or compressed /v1 JSON bodies stream the same way into
 * the push decoder (job_json_stream_open(), api/jsonpush.h): the feeds
 * decode as the body arrives, the close finishes the decode and runs the
 * job as job_submit() does.
 *
 * The struct is caller-owned (embedded in the HTTP request context),
 * zeroed before first use, and must stay alive, unmoved, while
 * job_busy() or until done_cb has run.
 */
#ifndef RD_JOB_H
#define RD_JOB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "api.h"
#include "jsonpush.h"
#include "metrics.h"
#include "binary.h"
#include "proto.h"
#include "reduce.h"
#include "v2.h"

struct job;
/* Runs on the loop thread when the job is finished. */
typedef void (*job_done_cb)(struct job *j);

struct job {
  /* Inputs: set by the loop thread before job_submit(), then read-only. */
  int in_fmt;       /* API_FMT_JSON (0 counts as JSON), RAW, NPY */
  const char *body; /* JSON request body (not owned) */
  size_t body_len;
  uint64_t max_elements;   /* bound passed to api_json_decode */
  unsigned max_tasks;      /* pool threads one job may use at once */
  struct metrics *metrics; /* optional: counted in reduced_requests_queued
                              * until a pool thread takes the job up */
  struct api_call call;    /* the protocol (/v1, /v2: proto.h) decodes
                              * and encodes; its Accept or v2 state */

  /* Outputs: valid in done_cb. */
  int status;  /* HTTP status */
  char *reply; /* malloc'ed body, or NULL if out of memory */
  size_t reply_len;
  int op;                      /* enum rd_op the body named, 0 if not read */
  struct api_reply reply_info; /* a 200's format and headers; errors
                                  * are JSON */

  /* Private. */
  job_done_cb done_cb;
  uv_loop_t *loop;
  uv_work_t work;         /* decode/plan (and the whole job if small) */
  struct api_request req; /* binary: params, and data when buffered */
  struct rd_plan plan;    /* the plan run over the bytes as sent */
  struct rd_plan lplan;   /* what the client asked (Fortran: != plan) */
  int fortran;            /* output needs Fortran -> C reordering */
  int swap;               /* input elements are byte-swapped */
  /* Streaming (binary bodies above --buffer-max; JSON with jp). */
  struct rd_stream *st;
  struct api_jpush *jp;   /* a JSON body's push decoder (pool: the feeds) */
  unsigned char *sbuf[2]; /* the filling buffer and the one being fed */
  size_t slen[2];
  size_t sready[2]; /* bytes of each with resident pages (api/mem.h) */
  size_t sbufsize;  /* a multiple of every element size */
  int scur;         /* buffer the loop thread fills */
  int sfeed;        /* buffer the running feed reads */
  int srunning;     /* loop thread: a feed work is queued */
  int src;          /* first feed error (pool, then loop) */
  struct rd_error serr;
  uv_work_t feed_work;
  job_done_cb wake_cb;
  int busy;           /* loop thread: a job_submit/close work runs */
  void *out;          /* plan.out_bytes */
  struct rd_exec *ex; /* non-NULL: the parts stage follows */
  uv_work_t *tasks;   /* ntasks part workers */
  unsigned ntasks;
  unsigned tasks_running;  /* loop thread only: part works not yet done */
  atomic_size_t next_part; /* next part index to take */
  atomic_uint tasks_left;  /* the last task to finish encodes */
};

/* Queues the job (loop thread).  0, or a negative libuv error; then
 * done_cb will not run. */
int job_submit(uv_loop_t *loop, struct job *j, job_done_cb done_cb);

/* Runs a small JSON job to completion on the calling (loop) thread, with no
 * pool hand-off: a thread switch costs more than decoding, reducing and
 * encoding a few KiB (the daemon bounds the body with --inline-max, so the
 * loop thread never does more than that much CPU work per request).  The
 * reply is ready on return; done_cb is not called. */
void job_run_inline(uv_loop_t *loop, struct job *j);

/* Loop thread, before the body: validates a binary request into the job:
 * `req` (params from the query string, or .npy dtype/shape added; copied),
 * `fortran` and `swap` as the body says.  Plans (api_binary_plan) and
 * refuses a huge output of an empty input (413).  0 or an error. */
int job_binary_setup(struct job *j, const struct api_request *req, int fortran,
                     int swap, struct rd_error *err);

/* Loop thread: starts streaming a set-up binary job: allocates the library
 * stream, the output and two buffers of `bufsize` bytes (rounded down to a
 * multiple of 8, at least 8).  `wake_cb` runs on the loop thread after each
 * feed.  0 or RD_E_NOMEM (nothing to undo but job_release()). */
int job_stream_open(struct job *j, uv_loop_t *loop, size_t bufsize,
                    job_done_cb wake_cb);

/* Loop thread: starts streaming a /v1 JSON body into a push decoder
 * (`len_hint`: its length, 0 if unknown) through two buffers of
 * `bufsize` bytes, as job_stream_open().  0 or RD_E_NOMEM. */
int job_json_stream_open(struct job *j, uint64_t len_hint, size_t bufsize,
                         uv_loop_t *loop, job_done_cb wake_cb);

/* Loop thread: takes up to `n` bytes of the body (after any .npy header)
 * and returns how many it took; fewer than `n` means both buffers are full
 * or being fed: wait for wake_cb, then offer the rest again. */
size_t job_stream_write(struct job *j, const void *p, size_t n);

/* 1 while a pool work of the job is queued or running (the job must not be
 * released nor the context freed then). */
int job_busy(const struct job *j);

/* Loop thread, once the whole body is written and !job_busy(): feeds what
 * is left, finishes and encodes on the pool (a JSON stream: finishes the
 * decode with j->max_elements, then runs as job_submit(), parts and
 * all); `done_cb` runs as for job_submit.  0 or a negative libuv
 * error. */
int job_stream_close(struct job *j, job_done_cb done_cb);

/* Frees what the job still owns (the reply unless taken: set j->reply to
 * NULL after taking it; buffers and the stream of an abandoned upload).
 * Loop thread, never while job_busy(); safe to call twice. */
void job_release(struct job *j);

#endif /* RD_JOB_H */
