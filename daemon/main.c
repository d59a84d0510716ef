/* main.c - reduced: settings, the libuv loop, signals and shutdown.
 *
 * Everything below runs on the main thread, which is the loop thread.
 * Exit status: 0 after a clean shutdown, 1 on a runtime failure or when
 * in-flight work outlives --grace (or on a second signal), 2 for a bad
 * command line or environment, or unusable key/certificate files.
 */
#include "config.h" /* autoconf */

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <uv.h>

#include "conf.h"
#include "server.h"
#include "log.h"
#include "tmem.h"
#ifdef HAVE_GRPC
#include "grpc.h"
#endif

static struct conf conf;
static struct server server;
static uv_signal_t sig_term, sig_int, sig_hup;
static uv_timer_t grace_timer;
static uv_timer_t trim_timer;
static int draining;
static int idle_left; /* front ends still draining (HTTP, gRPC) */
#ifdef HAVE_GRPC
static struct grpcd grpcd;
#endif

/* Loop thread: closes every handle so that uv_run() returns. */
static void close_all(void)
{
#ifdef HAVE_GRPC
  grpcd_close(&grpcd); /* first: its thread counts in the server's metrics */
#endif
  server_close(&server);
  uv_close((uv_handle_t *)&sig_term, NULL);
  uv_close((uv_handle_t *)&sig_int, NULL);
  uv_close((uv_handle_t *)&sig_hup, NULL);
  uv_close((uv_handle_t *)&grace_timer, NULL);
  uv_close((uv_handle_t *)&trim_timer, NULL);
}

/* Loop thread, outside MHD: a draining front end has nothing in flight;
 * stop once both have none. */
static void idle_cb(void *arg)
{
  (void)arg;
  if (--idle_left > 0)
    return;
  LOG_INFO("no request in flight: stopping");
  close_all();
}

/* Loop thread: work outlived --grace.  Pool threads are still computing,
 * so leave without running exit handlers under their feet. */
static void grace_cb(uv_timer_t *t)
{
  (void)t;
  LOG_ERROR("%zu request(s) still in flight after --grace %llu s: exiting",
            server_inflight(&server), (unsigned long long)conf.grace);
  _exit(1);
}

/* Loop thread (uv_signal delivers signals through the loop). */
static void signal_cb(uv_signal_t *h, int signum)
{
  (void)h;
  if (draining) {
    LOG_WARN("second %s while draining: exiting now", strsignal(signum));
    _exit(1);
  }
  draining = 1;
  LOG_INFO("received %s: draining (grace %llu s)", strsignal(signum),
           (unsigned long long)conf.grace);
  /* Arm the deadline first: server_drain() may call idle_cb() at once. */
  uv_timer_start(&grace_timer, grace_cb, conf.grace * 1000, 0);
  idle_left = 1;
#ifdef HAVE_GRPC
  idle_left = 2;
  grpcd_drain(&grpcd, idle_cb, NULL);
#endif
  server_drain(&server, idle_cb, NULL);
}

/* Cached buffers (--buffer-cache-bytes) unused this long are released, so
 * that an idle daemon returns to its idle size within about this plus the
 * timer's period. */
#define TRIM_IDLE_MS 2000
#define TRIM_PERIOD_MS 1000

/* Loop thread, every TRIM_PERIOD_MS. */
static void trim_cb(uv_timer_t *t)
{
  size_t n;

  (void)t;
  if ((n = api_tmem_trim(TRIM_IDLE_MS)) > 0)
    LOG_DEBUG("released %zu bytes of cached buffers", n);
}

/* Loop thread: SIGHUP re-reads the secrets (server_reload). */
static void hup_cb(uv_signal_t *h, int signum)
{
  (void)h;
  LOG_INFO("received %s: re-reading the secrets", strsignal(signum));
  server_reload(&server);
#ifdef HAVE_GRPC
  grpcd_reload(&grpcd);
#endif
}

/* Room for --max-connections sockets plus a few descriptors of our own. */
static void raise_fd_limit(uint64_t max_connections)
{
  struct rlimit rl;
  rlim_t want = (rlim_t)max_connections + 64;

  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
    return;
  rl.rlim_cur = (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
                  ? rl.rlim_max
                  : want;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
    LOG_WARN("open file limit %llu is below --max-connections %llu + 64",
             (unsigned long long)rl.rlim_cur,
             (unsigned long long)max_connections);
}

int main(int argc, char **argv)
{
  uv_loop_t *loop;
  char threads[24];
  int status = 0, rc;

  switch (conf_parse(&conf, argc, argv)) {
  case CONF_RUN: break;
  case CONF_EXIT_OK: return 0;
  case CONF_EXIT_USAGE: return 2;
  }
  log_init(conf.log_level);
  signal(SIGPIPE, SIG_IGN);
  /* The HTTP threads other than this one allocate from their own malloc
   * arenas, whose free top glibc gives back only above the trim threshold
   * (malloc_trim() does not trim it); glibc raises that threshold up to 64
   * MiB as large blocks are freed, so a shard that served large bodies
   * would keep tens of MiB.  A fixed threshold (which also fixes the mmap
   * threshold at its default, 128 KiB) lets the daemon's size return to
   * idle after large bodies on every thread (tests/integration/t_hostile). */
  mallopt(M_TRIM_THRESHOLD, 1 << 20);
  /* Large buffers are not given back at once but kept for the next
   * requests (api/tmem.h), up to this bound and for TRIM_IDLE_MS. */
  api_tmem_cache_limit(conf.buffer_cache_bytes > SIZE_MAX
                         ? SIZE_MAX
                         : (size_t)conf.buffer_cache_bytes);

  /* libuv reads this once, at the first uv_queue_work. */
  snprintf(threads, sizeof threads, "%llu", (unsigned long long)conf.threads);
  if (setenv("UV_THREADPOOL_SIZE", threads, 1) != 0) {
    LOG_ERROR("cannot set UV_THREADPOOL_SIZE");
    return 1;
  }
  raise_fd_limit(conf.max_connections);

  loop = uv_default_loop();
  uv_signal_init(loop, &sig_term);
  uv_signal_init(loop, &sig_int);
  uv_timer_init(loop, &grace_timer);
  uv_timer_init(loop, &trim_timer);
  uv_timer_start(&trim_timer, trim_cb, TRIM_PERIOD_MS, TRIM_PERIOD_MS);
  uv_unref((uv_handle_t *)&trim_timer); /* never what keeps the loop */
  uv_signal_start(&sig_term, signal_cb, SIGTERM);
  uv_signal_start(&sig_int, signal_cb, SIGINT);
  uv_signal_init(loop, &sig_hup);
  uv_signal_start(&sig_hup, hup_cb, SIGHUP);

  LOG_DEBUG("threads=%llu max-body=%llu max-pending=%llu "
            "max-connections=%llu timeout=%llu grace=%llu",
            (unsigned long long)conf.threads, (unsigned long long)conf.max_body,
            (unsigned long long)conf.max_pending,
            (unsigned long long)conf.max_connections,
            (unsigned long long)conf.timeout, (unsigned long long)conf.grace);

  rc = server_start(&server, loop, &conf);
  if (rc != 0) {
    status = rc == SERVER_E_CONFIG ? 2 : 1;
    close_all();
  }
#ifdef HAVE_GRPC
  else if (grpcd_start(&grpcd, loop, &conf, &server) != 0) {
    status = 1;
    close_all();
  }
#else
  else if (conf.grpc_listen != NULL)
    LOG_INFO("gRPC: not built (configured --without-grpc)");
#endif
  /* After gRPC registered its metrics routes: the other HTTP threads
   * count requests from their start. */
  if (status == 0 && server_start_shards(&server) != 0) {
    status = 1;
    close_all();
  }

  uv_run(loop, UV_RUN_DEFAULT);
  /* Every handle is closed by now; finish their close callbacks. */
  while (uv_loop_close(loop) == UV_EBUSY)
    uv_run(loop, UV_RUN_ONCE);
  if (status == 0)
    LOG_INFO("stopped");
  return status;
}
