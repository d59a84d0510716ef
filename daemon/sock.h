/* sock.h - listening sockets the daemon owns: the HTTP port (--listen) and
 * the gRPC port (--grpc-listen) without TLS, whose connections it accepts
 * itself and hands on.
 *
 * Nothing here keeps state.
 */
#ifndef RD_SOCK_H
#define RD_SOCK_H

#include <uv.h>

/* Any thread.  Binds HOST:PORT (the first address getaddrinfo gives for HOST; an IPv6
 * socket is IPv6 only, as `[::]` means) and listens, non-blocking and
 * close-on-exec.  Returns the socket and stores the bound port (PORT 0
 * picks a free one) in *bound; -1 after logging why, naming `spec` (the
 * option's text) and `opt` (its name). */
int sock_listen(const char *opt, const char *spec, const char *host,
                unsigned port, unsigned *bound);

/* How long a port rests after accept() ran out of descriptors or memory. */
#define SOCK_ACCEPT_WAIT_MS 100

/* Loop thread of the port: accept() on it failed with `err`.  Nothing to
 * take now (EAGAIN, EINTR; ECONNABORTED: the client left first): returns
 * 0.  Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): the
 * port stays readable, so it stops watching it (`poll`) and starts `wait`
 * to call `again` in SOCK_ACCEPT_WAIT_MS instead of spinning (clients
 * wait in the backlog), logs "<who>accept: ...; accepting again in 100
 * ms" and returns 1.  Anything else: logs "<who>accept: ...", returns 0. */
int sock_accept_failed(int err, const char *who, uv_poll_t *poll,
                       uv_timer_t *wait, uv_timer_cb again);

#endif /* RD_SOCK_H */
