/* pages.h - the static pages: the playground at / (web/index.html,
 * playground.js, playground.css) and, unless configured with
 * --disable-docs-ui, Swagger UI at /docs (web/docs.*, swagger-ui-dist's
 * bundle, CSS and licence files).  All are compiled in at build time
 * (daemon/embed.awk; see daemon/local.mk), so the binary serves the pages
 * it was built with and needs no files at run time.
 *
 * They are public: no API key is needed to load them (they hold nothing
 * but this code); the API calls the pages make carry the key the user
 * typed.  Every page is sent with Content-Security-Policy (PAGES_CSP), so
 * the browser fetches nothing from any other host.
 *
 * Loop thread only (the caches below are not locked).
 */
#ifndef RD_PAGES_H
#define RD_PAGES_H

#include <stddef.h>

/* Pages may load only from this daemon; Swagger UI's CSS draws its icons
 * from data: URLs. */
#define PAGES_CSP                                                              \
  "default-src 'self'; img-src 'self' data:; "                                 \
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
/* Revalidated on every use (ETag), so a new build is seen at once. */
#define PAGES_CACHE "no-cache"

struct page {
  const char *path;  /* exact URL path */
  const char *ctype; /* Content-Type */
  const char *body;
  const size_t *len;
  char etag[20]; /* "\"" 16 hex "\"", made on first use */
  char *gz;      /* gzip form, made on first use; NULL: none */
  size_t gz_len;
  int gz_tried;
};

/* The page at `url` (exact match, query string not included), or NULL. */
struct page *pages_find(const char *url);

/* NULL, or why `url` is not served although it looks like a page of
 * this daemon (/docs in a build without the docs UI). */
const char *pages_missing_hint(const char *url);

/* Is Swagger UI compiled in? */
int pages_docs_ui(void);

/* The page's ETag (quoted), computed once. */
const char *pages_etag(struct page *p);

/* Does If-None-Match (NULL: absent) match the page's ETag? */
int pages_not_modified(struct page *p, const char *if_none_match);

/* The bytes to send: the gzip form if `gzip` and it is smaller (made once,
 * then kept), else the page itself.  *gzipped says which.  The memory
 * stays valid until pages_free(). */
void pages_body(struct page *p, int gzip, const char **body, size_t *len,
                int *gzipped);

/* Frees the gzip forms (at exit, for leak checkers). */
void pages_free(void);

#endif /* RD_PAGES_H */
