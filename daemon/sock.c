/* sock.c - listening sockets (sock.h). */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "sock.h"

int sock_listen(const char *opt, const char *spec, const char *host,
                unsigned port, unsigned *bound)
{
  struct addrinfo hints, *ai = NULL;
  struct sockaddr_storage sa;
  socklen_t salen = sizeof sa;
  char portstr[8];
  int fd, one = 1, rc;

  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  snprintf(portstr, sizeof portstr, "%u", port);
  rc = getaddrinfo(host, portstr, &hints, &ai);
  if (rc != 0) {
    LOG_ERROR("%s %s: %s", opt, spec, gai_strerror(rc));
    return -1;
  }
  fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6)
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  }
  if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
      listen(fd, SOMAXCONN) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) {
    LOG_ERROR("%s: cannot listen on %s (address in use or not available?): %s",
              opt, spec, strerror(errno));
    if (fd >= 0)
      close(fd);
    freeaddrinfo(ai);
    return -1;
  }
  freeaddrinfo(ai);
  *bound = ntohs(sa.ss_family == AF_INET6
                   ? ((struct sockaddr_in6 *)&sa)->sin6_port
                   : ((struct sockaddr_in *)&sa)->sin_port);
  return fd;
}

int sock_accept_failed(int err, const char *who, uv_poll_t *poll,
                       uv_timer_t *wait, uv_timer_cb again)
{
  switch (err) {
  case EAGAIN:
#if EWOULDBLOCK != EAGAIN
  case EWOULDBLOCK:
#endif
  case EINTR:
  case ECONNABORTED: return 0;
  case EMFILE:
  case ENFILE:
  case ENOBUFS:
  case ENOMEM:
    LOG_WARN("%saccept: %s; accepting again in %d ms", who, strerror(err),
             SOCK_ACCEPT_WAIT_MS);
    uv_poll_stop(poll);
    uv_timer_start(wait, again, SOCK_ACCEPT_WAIT_MS, 0);
    return 1;
  default: LOG_WARN("%saccept: %s", who, strerror(err)); return 0;
  }
}
