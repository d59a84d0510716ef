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

#endif /* RD_SOCK_H */
