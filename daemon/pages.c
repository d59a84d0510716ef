/* pages.c - the static pages' table, ETags and gzip forms (pages.h). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encoding.h"
#include "pages.h"

/* Generated: daemon/pages_web.c (web/), daemon/pages_docs.c (web/docs.*
 * and swagger-ui-dist's files; only with the docs UI). */
#define PAGE_FILE(name)                                                        \
  extern const char name[];                                                    \
  extern const size_t name##_len;
PAGE_FILE(page_index_html)
PAGE_FILE(page_playground_js)
PAGE_FILE(page_playground_css)
#ifdef RD_DOCS_UI
PAGE_FILE(page_docs_html)
PAGE_FILE(page_docs_css)
PAGE_FILE(page_docs_init_js)
PAGE_FILE(page_swagger_bundle_js)
PAGE_FILE(page_swagger_css)
PAGE_FILE(page_swagger_license)
PAGE_FILE(page_swagger_notice)
PAGE_FILE(page_swagger_bundle_license)
#endif
#undef PAGE_FILE

#define HTML "text/html; charset=utf-8"
#define JS "text/javascript; charset=utf-8"
#define CSS "text/css; charset=utf-8"
#define TEXT "text/plain; charset=utf-8"
#define PAGE(path, ctype, name)                                                \
  {                                                                            \
    path, ctype, name, &name##_len, "", NULL, 0, 0                             \
  }

static struct page pages[] = {
  PAGE("/", HTML, page_index_html),
  PAGE("/playground.js", JS, page_playground_js),
  PAGE("/playground.css", CSS, page_playground_css),
#ifdef RD_DOCS_UI
  PAGE("/docs", HTML, page_docs_html),
  PAGE("/docs/", HTML, page_docs_html),
  PAGE("/docs/docs.css", CSS, page_docs_css),
  PAGE("/docs/init.js", JS, page_docs_init_js),
  PAGE("/docs/swagger-ui-bundle.js", JS, page_swagger_bundle_js),
  PAGE("/docs/swagger-ui.css", CSS, page_swagger_css),
  PAGE("/docs/LICENSE", TEXT, page_swagger_license),
  PAGE("/docs/NOTICE", TEXT, page_swagger_notice),
  PAGE("/docs/swagger-ui-bundle.js.LICENSE.txt", TEXT,
       page_swagger_bundle_license),
#endif
};

#define NPAGES (sizeof pages / sizeof pages[0])

struct page *pages_find(const char *url)
{
  for (size_t i = 0; i < NPAGES; i++)
    if (strcmp(url, pages[i].path) == 0)
      return &pages[i];
  return NULL;
}

int pages_docs_ui(void)
{
#ifdef RD_DOCS_UI
  return 1;
#else
  return 0;
#endif
}

const char *pages_missing_hint(const char *url)
{
  if (!pages_docs_ui() &&
      (strcmp(url, "/docs") == 0 || strncmp(url, "/docs/", 6) == 0))
    return "this build has no API docs UI (configured with "
           "--disable-docs-ui); the API is described at /openapi.yaml";
  return NULL;
}

const char *pages_etag(struct page *p)
{
  if (p->etag[0] == '\0') {
    /* FNV-1a 64 of the bytes: changes with every build that changes them. */
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < *p->len; i++) {
      h ^= (unsigned char)p->body[i];
      h *= UINT64_C(0x100000001b3);
    }
    snprintf(p->etag, sizeof p->etag, "\"%016llx\"", (unsigned long long)h);
  }
  return p->etag;
}

int pages_not_modified(struct page *p, const char *inm)
{
  const char *tag = pages_etag(p), *s = inm;
  size_t n = strlen(tag);

  if (inm == NULL)
    return 0;
  /* A list of entity tags, or "*"; weak tags (W/"...") match too (RFC
   * 9110 13.1.2: If-None-Match compares weakly). */
  while (*s != '\0') {
    while (*s == ' ' || *s == '\t' || *s == ',')
      s++;
    if (*s == '*')
      return 1;
    if (strncmp(s, "W/", 2) == 0)
      s += 2;
    if (strncmp(s, tag, n) == 0 &&
        (s[n] == '\0' || s[n] == ',' || s[n] == ' ' || s[n] == '\t'))
      return 1;
    while (*s != '\0' && *s != ',')
      s++;
  }
  return 0;
}

void pages_body(struct page *p, int gzip, const char **body, size_t *len,
                int *gzipped)
{
  if (gzip && !p->gz_tried && *p->len >= API_GZIP_MIN) {
    struct api_buf b;
    p->gz_tried = 1;
    api_buf_init(&b);
    if (api_gzip(p->body, *p->len, 9, &b) == 0 && b.len < *p->len)
      p->gz = api_buf_steal(&b, &p->gz_len);
    else
      api_buf_free(&b);
  }
  if (gzip && p->gz != NULL) {
    *body = p->gz;
    *len = p->gz_len;
    *gzipped = 1;
    return;
  }
  *body = p->body;
  *len = *p->len;
  *gzipped = 0;
}

void pages_free(void)
{
  for (size_t i = 0; i < NPAGES; i++) {
    free(pages[i].gz);
    pages[i].gz = NULL;
    pages[i].gz_tried = 0;
  }
}
