/* http.c - the HTTP routes: the route table, methods and the GET answers
 * (http.h); POST routes go on in post.c.  Loop thread, inside the access
 * handler. */
#include "config.h" /* autoconf: PACKAGE_VERSION */

#include <pthread.h>
#include <string.h>

#include "metrics.h"
#include "encoding.h"
#include "openapi.h"
#include "pages.h"
#include "post.h"
#include "http.h"

enum route_kind {
  RT_REDUCE,
  RT_OPS,
  RT_HEALTHZ,
  RT_READYZ,
  RT_METRICS,
  RT_OPENAPI,
  RT_V2
};

/* Every route the daemon serves, as its path or (/v2) path template. */
struct route {
  const char *path;
  enum route_kind kind;
  const char *allow; /* the Allow header of a 405 */
  int v2kind;        /* RT_V2: enum api_v2_kind */
  int v2versioned;   /* RT_V2: has /versions/{version} */
};

static const struct route routes[] = {
  { "/v1/reduce", RT_REDUCE, "POST", 0, 0 },
  { "/v1/ops", RT_OPS, "GET, HEAD", 0, 0 },
  { "/healthz", RT_HEALTHZ, "GET, HEAD", 0, 0 },
  { "/readyz", RT_READYZ, "GET, HEAD", 0, 0 },
  { "/metrics", RT_METRICS, "GET, HEAD", 0, 0 },
  { "/openapi.yaml", RT_OPENAPI, "GET, HEAD", 0, 0 },
  /* Matched by api_v2_route_parse(), then found here by kind. */
  { "/v2", RT_V2, "GET, HEAD", API_V2_SERVER_META, 0 },
  { "/v2/health/live", RT_V2, "GET, HEAD", API_V2_LIVE, 0 },
  { "/v2/health/ready", RT_V2, "GET, HEAD", API_V2_READY, 0 },
  { "/v2/models/{model}", RT_V2, "GET, HEAD", API_V2_MODEL_META, 0 },
  { "/v2/models/{model}/versions/{version}", RT_V2, "GET, HEAD",
    API_V2_MODEL_META, 1 },
  { "/v2/models/{model}/ready", RT_V2, "GET, HEAD", API_V2_MODEL_READY, 0 },
  { "/v2/models/{model}/versions/{version}/ready", RT_V2, "GET, HEAD",
    API_V2_MODEL_READY, 1 },
  { "/v2/models/{model}/infer", RT_V2, "POST", API_V2_INFER, 0 },
  { "/v2/models/{model}/versions/{version}/infer", RT_V2, "POST", API_V2_INFER,
    1 },
};

#define NROUTES (sizeof routes / sizeof routes[0])

size_t http_route_count(void)
{
  return NROUTES;
}

const char *http_route_path(size_t i)
{
  return i < NROUTES ? routes[i].path : NULL;
}

static enum MHD_Result refuse_method(struct req *r, const char *allow)
{
  return req_respond_error(r, allow, API_E_METHOD,
                           "method %s is not allowed for %s (allowed: %s)",
                           r->method, r->path, allow);
}

/* MHD sends no body for HEAD, so HEAD is GET here. */
static int is_get(const char *method)
{
  return strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
         strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
}

/* pages.c fills a page's ETag and gzip form at its first use: one HTTP
 * thread at a time (the page is read-only afterwards). */
static pthread_mutex_t pages_lock = PTHREAD_MUTEX_INITIALIZER;

/* A static page (pages.h), not in routes[]: pages are not API routes
 * (api/openapi.yaml does not list them; their metrics route is "none").
 * 304 when If-None-Match has its ETag; gzip when accepted. */
static enum MHD_Result page_answer(struct req *r, const char *url,
                                   const char *method)
{
  struct page *p = pages_find(url);
  const char *hint = pages_missing_hint(url), *body;
  size_t len;
  int gz, nm;

  if (p == NULL)
    return req_respond_error(r, NULL, API_E_NOT_FOUND,
                             "no such path: "
                             "%.200s%s%s",
                             r->path, hint ? "; " : "", hint ? hint : "");
  if (!is_get(method))
    return refuse_method(r, "GET, HEAD");
  r->page = p;
  r->ctype = p->ctype;
  pthread_mutex_lock(&pages_lock);
  nm = pages_not_modified(
    p, MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                   MHD_HTTP_HEADER_IF_NONE_MATCH));
  if (!nm)
    pages_body(p,
               api_accept_gzip(
                 MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                             MHD_HTTP_HEADER_ACCEPT_ENCODING)),
               &body, &len, &gz);
  pthread_mutex_unlock(&pages_lock);
  if (nm)
    return req_respond_as(r, MHD_HTTP_NOT_MODIFIED, "", 0, 0, NULL, NULL);
  r->encoded = gz;
  return req_respond_as(r, MHD_HTTP_OK, body, len, 0, NULL, NULL);
}

/* The readiness probes of both APIs. */
static enum MHD_Result ready_answer(struct server *s, struct req *r)
{
  if (s->draining)
    return req_respond_error(r, NULL, API_E_DRAINING,
                             "the server is shutting down");
  return req_respond_static(r, MHD_HTTP_OK, r->job.call.proto->ready_body);
}

/* GET /metrics: the exposition text (metrics.h). */
static enum MHD_Result metrics_answer(struct server *s, struct req *r)
{
  struct api_buf b;
  char *body;
  size_t len;

  api_buf_init(&b);
  if (metrics_render(s->metrics, &b) != 0) {
    api_buf_free(&b);
    return req_respond_error(r, NULL, API_E_OVERLOADED,
                             "out of memory while rendering the metrics; "
                             "retry later");
  }
  body = api_buf_steal(&b, &len);
  r->ctype = METRICS_CONTENT_TYPE;
  return req_respond_as(r, MHD_HTTP_OK, body, len, 1, NULL, NULL);
}

/* ------------------------------------------------------------------ */
/* /v2: the Open Inference Protocol                                   */
/* ------------------------------------------------------------------ */

/* The routes[] entry of a parsed /v2 path (its template). */
static const struct route *v2_route_find(const struct api_v2_route *v)
{
  for (size_t i = 0; i < NROUTES; i++)
    if (routes[i].kind == RT_V2 && routes[i].v2kind == v->kind &&
        routes[i].v2versioned == (v->version != 0))
      return &routes[i];
  return NULL;
}

/* Every /v2 path: route, method, then answer or start an infer. */
static enum MHD_Result v2_dispatch(struct server *s, struct req *r,
                                   const char *url, const char *method)
{
  const struct route *rt;
  struct rd_error err;
  struct api_buf b;

  r->job.call.proto = &api_proto_v2; /* errors in its form from here */
  memset(&err, 0, sizeof err);
  if (api_v2_route_parse(url, &r->v2rt, &err) != 0) {
    memset(&r->v2rt, 0, sizeof r->v2rt);  /* op label 0 too */
    return req_respond_rd_error(r, &err); /* route label "none" */
  }
  rt = v2_route_find(&r->v2rt);
  if (rt == NULL) /* routes[] lacks a kind api_v2_route_parse() knows */
    return req_respond_error(r, NULL, API_E_NOT_FOUND, "no such path: %.200s",
                             r->path);
  r->route = (unsigned)(rt - routes);
  if (r->v2rt.kind == API_V2_INFER ? strcmp(method, MHD_HTTP_METHOD_POST) != 0
                                   : !is_get(method))
    return refuse_method(r, rt->allow);
  api_buf_init(&b);
  switch (r->v2rt.kind) {
  case API_V2_SERVER_META:
    return req_respond_built(r, api_v2_encode_server_meta(PACKAGE_VERSION, &b),
                             &b);
  case API_V2_LIVE:
    return req_respond_static(r, MHD_HTTP_OK, api_proto_v2.live_body);
  case API_V2_READY: return ready_answer(s, r);
  case API_V2_MODEL_READY:
    if (s->draining)
      return ready_answer(s, r);
    return req_respond_built(r, api_v2_encode_model_ready(r->v2rt.op, &b), &b);
  case API_V2_MODEL_META:
    return req_respond_built(
      r, api_v2_encode_model_meta(r->v2rt.op, r->v2rt.version, &b), &b);
  default: return post_begin_v2(s, r);
  }
}

/* ------------------------------------------------------------------ */
/* Dispatch                                                           */
/* ------------------------------------------------------------------ */

enum MHD_Result http_dispatch(struct server *s, struct req *r, const char *url,
                              const char *method)
{
  const struct route *rt = NULL;

  if (strncmp(url, "/v2", 3) == 0 && (url[3] == '\0' || url[3] == '/'))
    return v2_dispatch(s, r, url, method);
  for (size_t i = 0; i < NROUTES; i++) {
    if (routes[i].kind != RT_V2 && strcmp(url, routes[i].path) == 0) {
      rt = &routes[i];
      break;
    }
  }
  if (rt == NULL)
    return page_answer(r, url, method);
  r->route = (unsigned)(rt - routes);

  if (rt->kind == RT_REDUCE) {
    if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
      return refuse_method(r, rt->allow);
    return post_begin_v1(s, r);
  }
  if (!is_get(method))
    return refuse_method(r, rt->allow);
  switch (rt->kind) {
  case RT_OPS:
    return req_respond_as(r, MHD_HTTP_OK, s->ops_body, s->ops_len, 0, NULL,
                          NULL);
  case RT_HEALTHZ:
    return req_respond_static(r, MHD_HTTP_OK, api_proto_v1.live_body);
  case RT_READYZ: return ready_answer(s, r);
  case RT_METRICS: return metrics_answer(s, r);
  case RT_OPENAPI:
    r->ctype = OPENAPI_CONTENT_TYPE;
    return req_respond_as(r, MHD_HTTP_OK, openapi_yaml, openapi_yaml_len, 0,
                          NULL, NULL);
  case RT_REDUCE:
  case RT_V2: break;
  }
  return MHD_NO;
}
