/* sock.h - listening sockets the daemon owns: the HTTP port (--listen) and
 * the gRPC port (--grpc-listen) without TLS, whose connections it accepts
 * itself and hands on.
 *
 * Any thread; nothing here keeps state.
 */
#ifndef RD_SOCK_H
#define RD_SOCK_H

/* Binds HOST:PORT (the first address getaddrinfo gives for HOST; an IPv6
 * socket is IPv6 only, as `[::]` means) and listens, non-blocking and
 * close-on-exec.  Returns the socket and stores the bound port (PORT 0
 * picks a free one) in *bound; -1 after logging why, naming `spec` (the
 * option's text) and `opt` (its name). */
int sock_listen(const char *opt, const char *spec, const char *host,
                unsigned port, unsigned *bound);

/* What an accept() that failed with `err` calls for. */
enum sock_accept_err {
  SOCK_ACCEPT_AGAIN, /* nothing to take now (EAGAIN, EINTR; ECONNABORTED:
                      * the client left first): wait for readable */
  SOCK_ACCEPT_REST,  /* out of descriptors or memory (EMFILE, ENFILE,
                      * ENOBUFS, ENOMEM): the port stays readable, so
                      * stop watching it for SOCK_ACCEPT_WAIT_MS instead
                      * of spinning; clients wait in the backlog */
  SOCK_ACCEPT_OTHER  /* anything else: worth a log line */
};
enum sock_accept_err sock_accept_error(int err);

#define SOCK_ACCEPT_WAIT_MS 100

#endif /* RD_SOCK_H */
