/* http.h - the HTTP routes: every path the daemon serves (routes[] in
 * http.c: the metrics' route labels, and the list that
 * tests/integration/t_openapi.sh checks against api/openapi.yaml), method
 * checks, the answers that need no body (/v1/ops, probes, /metrics,
 * /openapi.yaml, /v2 metadata), and the hand-off of the POST routes to
 * post.h.  Loop thread, inside the access handler.
 */
#ifndef RD_HTTP_H
#define RD_HTTP_H

#include <stddef.h>

#include <microhttpd.h>

#include "req.h"

/* The request's first real call (server.c runs it at the first call of a
 * request with a body, at the final call of one without): routes `url`,
 * checks `method`, answers or starts the POST (post.h). */
enum MHD_Result http_dispatch(struct server *s, struct req *r, const char *url,
                              const char *method);

/* The route table's size and its i-th path or path template (the route
 * index of a request, r->route, is its index here). */
size_t http_route_count(void);
const char *http_route_path(size_t i);

#endif /* RD_HTTP_H */
