/* sink.c - the upload baseline of `make bench`: an HTTP server that only
 * reads each request body into memory and answers 200.  bench/daemon.sh
 * compares the daemon's end-to-end time for a large binary request with
 * the time to upload the same body here.
 *
 *   bench/sink PORTFILE     listens on 127.0.0.1:0, writes the port, runs
 *                           until SIGTERM/SIGINT
 */
#include "config.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <microhttpd.h>

#include "mem.h"

struct upload {
  char *buf;
  size_t len, cap;
  size_t ready; /* bytes of buf with resident pages (api/mem.h) */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
  (void)sig;
  stop = 1;
}

/* MHD's thread: keeps every body byte, as a server that buffers would, with
 * its pages made resident ahead of the bytes as the daemon does (a page
 * fault per 4 KiB page costs more in a VM than the upload itself). */
static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
                               const char *url, const char *method,
                               const char *version, const char *data,
                               size_t *size, void **ctx)
{
  struct upload *u = *ctx;
  (void)cls, (void)url, (void)method, (void)version;

  if (u == NULL) {
    const char *cl = MHD_lookup_connection_value(
      conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if ((u = calloc(1, sizeof *u)) == NULL)
      return MHD_NO;
    u->cap = cl ? strtoull(cl, NULL, 10) : 0;
    if (u->cap > 0 && (u->buf = malloc(u->cap)) == NULL) {
      free(u);
      return MHD_NO;
    }
    *ctx = u;
    return MHD_YES;
  }
  if (*size > 0) {
    if (u->len + *size > u->cap) {
      size_t cap = (u->len + *size) * 2;
      char *p = realloc(u->buf, cap);
      if (p == NULL)
        return MHD_NO;
      u->buf = p;
      u->cap = cap;
      u->ready = u->len; /* it may have moved */
    }
    api_mem_ahead(u->buf, u->cap, &u->ready, u->len, *size);
    memcpy(u->buf + u->len, data, *size);
    u->len += *size;
    *size = 0;
    return MHD_YES;
  }
  static const char ok[] = "ok\n";
  struct MHD_Response *r = MHD_create_response_from_buffer(
    sizeof ok - 1, (void *)ok, MHD_RESPMEM_PERSISTENT);
  enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **ctx,
                      enum MHD_RequestTerminationCode toe)
{
  struct upload *u = *ctx;
  (void)cls, (void)conn, (void)toe;
  if (u != NULL) {
    free(u->buf);
    free(u);
    *ctx = NULL;
  }
}

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: sink PORTFILE\n");
    return 2;
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(0x7f000001);
  /* Same connection buffer as the daemon, so both read in equal chunks. */
  struct MHD_Daemon *d = MHD_start_daemon(
    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, handler,
    NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
    (size_t)(32 * 1024), MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
    MHD_OPTION_END);
  if (d == NULL) {
    fprintf(stderr, "sink: cannot start\n");
    return 1;
  }
  const union MHD_DaemonInfo *info =
    MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  FILE *f = fopen(argv[1], "w");
  if (f == NULL || info == NULL) {
    fprintf(stderr, "sink: cannot write %s\n", argv[1]);
    MHD_stop_daemon(d);
    return 1;
  }
  fprintf(f, "%u\n", (unsigned)info->port);
  fclose(f);
  while (!stop)
    pause();
  MHD_stop_daemon(d);
  return 0;
}
