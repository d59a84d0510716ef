/* zbody.c - compressed POST bodies, decoded in the upload calls (zbody.h). */
#include <stdlib.h>
#include <string.h>

#include "req.h"
#include "zbody.h"

int zbody_open(struct req *r, enum api_coding coding, uint64_t max_out)
{
  struct zbody *zb = malloc(sizeof *zb);

  if (zb == NULL)
    return RD_E_NOMEM;
  if (api_inflate_init(&zb->z, coding, max_out) != 0) {
    free(zb);
    return RD_E_NOMEM;
  }
  zb->off = zb->len = 0;
  r->zbody = zb;
  return 0;
}

void zbody_free(struct zbody *zb)
{
  if (zb != NULL) {
    api_inflate_free(&zb->z);
    free(zb);
  }
}

/* Offers the pending decoded bytes to the sink.  1 if it paused. */
static int drain(struct server *s, struct req *r, zbody_sink *sink)
{
  struct zbody *zb = r->zbody;

  while (zb->off < zb->len) {
    size_t m = zb->len - zb->off;
    if (r->state == REQ_DISCARDING) {
      /* Counted, not decoded further (see zbody_upload). */
      r->in_bytes += m;
      break;
    }
    sink(s, r, (const char *)zb->out + zb->off, &m);
    zb->off = zb->len - m;
    if (r->state == REQ_PAUSED)
      return 1;
  }
  zb->off = zb->len = 0;
  return 0;
}

void zbody_upload(struct server *s, struct req *r, const char *data, size_t *n,
                  zbody_sink *sink,
                  void (*fail)(struct req *r, const struct rd_error *err))
{
  struct zbody *zb = r->zbody;
  const unsigned char *in = (const unsigned char *)data;
  size_t left = *n;
  struct rd_error err;

  memset(&err, 0, sizeof err);
  for (;;) {
    if (drain(s, r, sink)) {
      *n = left; /* MHD offers these again after the resume */
      return;
    }
    if (left == 0 || r->state == REQ_DISCARDING)
      break; /* a discarded body is not decoded: a bomb costs nothing more */
    if (api_inflate_run(&zb->z, &in, &left, zb->out, sizeof zb->out, &zb->len,
                        &err) != 0) {
      fail(r, &err);
      break;
    }
    if (zb->len == 0 && left > 0)
      break; /* cannot happen with a 64 KiB window; no spinning anyway */
  }
  *n = 0;
}

int zbody_finish(struct server *s, struct req *r, zbody_sink *sink,
                 void (*fail)(struct req *r, const struct rd_error *err))
{
  static const unsigned char nothing[1];
  const unsigned char *in = nothing;
  struct rd_error err;
  size_t none = 0;

  for (;;) {
    if (drain(s, r, sink))
      return 1;
    if (r->state == REQ_DISCARDING)
      return 0;
    /* zlib may still hold decoded bytes for a full window: run it dry. */
    if (api_inflate_run(&r->zbody->z, &in, &none, r->zbody->out,
                        sizeof r->zbody->out, &r->zbody->len, &err) != 0) {
      fail(r, &err);
      return 0;
    }
    if (r->zbody->len == 0)
      break;
  }
  memset(&err, 0, sizeof err);
  if (api_inflate_finish(&r->zbody->z, &err) != 0)
    fail(r, &err);
  return 0;
}
