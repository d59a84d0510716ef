/* encoding.c - gzip / deflate request bodies (streaming, bounded) and
 * gzip answers, on zlib.  See encoding.h. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "api.h"
#include "encoding.h"

enum { ST_FRESH, ST_RUN, ST_END, ST_ERR };

/* zlib's window bits: 15 (zlib wrapper), -15 (raw), 31 (gzip wrapper). */
#define WBITS_ZLIB 15
#define WBITS_RAW (-15)
#define WBITS_GZIP (15 + 16)

/* Does s[0..n) equal the lower-case word `w`, ignoring case? */
static int word_is(const char *s, size_t n, const char *w)
{
  return strlen(w) == n && strncasecmp(s, w, n) == 0;
}

static int is_ows(char c)
{
  return c == ' ' || c == '\t';
}

int api_coding_parse(const char *value, enum api_coding *out,
                     struct rd_error *err)
{
  const char *b, *e;

  *out = API_CODING_IDENTITY;
  if (value == NULL)
    return 0;
  b = value;
  while (is_ows(*b))
    b++;
  e = b + strlen(b);
  while (e > b && is_ows(e[-1]))
    e--;
  if (e == b || word_is(b, (size_t)(e - b), "identity"))
    return 0;
  if (word_is(b, (size_t)(e - b), "gzip") ||
      word_is(b, (size_t)(e - b), "x-gzip")) {
    *out = API_CODING_GZIP;
    return 0;
  }
  if (word_is(b, (size_t)(e - b), "deflate")) {
    *out = API_CODING_DEFLATE;
    return 0;
  }
  return api_fail(err, API_E_MEDIA_TYPE,
                  "Content-Encoding '%.64s' is not supported (gzip, "
                  "deflate or identity; one coding)",
                  value);
}

const char *api_coding_name(enum api_coding c)
{
  switch (c) {
  case API_CODING_GZIP: return "gzip";
  case API_CODING_DEFLATE: return "deflate";
  case API_CODING_IDENTITY: break;
  }
  return "identity";
}

int api_inflate_init(struct api_inflate *z, enum api_coding coding,
                     uint64_t max_out)
{
  memset(z, 0, sizeof *z);
  z->coding = coding;
  z->max_out = max_out;
  z->zs = calloc(1, sizeof(z_stream));
  if (z->zs == NULL)
    return RD_E_NOMEM;
  z->state = ST_FRESH;
  return 0;
}

void api_inflate_free(struct api_inflate *z)
{
  if (z->zs != NULL) {
    if (z->state != ST_FRESH)
      inflateEnd(z->zs);
    free(z->zs);
    z->zs = NULL;
  }
}

/* The error state: later calls return `code` again (message in `err`
 * only the first time; the daemon answers once). */
static int fail_stream(struct api_inflate *z, int code)
{
  z->state = ST_ERR;
  z->code = code;
  return code;
}

static int corrupt(struct api_inflate *z, struct rd_error *err, const char *why)
{
  api_fail(err, API_E_BAD_ENCODING,
           "the %s body is corrupt after %llu compressed bytes: %s",
           api_coding_name(z->coding), (unsigned long long)z->in_total,
           why != NULL ? why : "invalid data");
  return fail_stream(z, API_E_BAD_ENCODING);
}

/* Starts zlib once the wrapper is known: gzip always; deflate by its first
 * two bytes (a zlib header is CM 8, a window up to 32 KiB and a check sum
 * making CMF*256+FLG a multiple of 31; anything else is raw deflate). */
static int start(struct api_inflate *z, struct rd_error *err)
{
  int wbits = WBITS_GZIP;

  if (z->coding == API_CODING_DEFLATE) {
    unsigned cmf = z->peek[0], flg = z->peek[1];
    wbits = ((cmf & 0x0f) == 8 && (cmf >> 4) <= 7 &&
             (cmf * 256 + flg) % 31 == 0)
              ? WBITS_ZLIB
              : WBITS_RAW;
  }
  if (inflateInit2((z_stream *)z->zs, wbits) != Z_OK) {
    api_fail(err, RD_E_NOMEM, "out of memory starting the %s decoder",
             api_coding_name(z->coding));
    return fail_stream(z, RD_E_NOMEM);
  }
  z->state = ST_RUN;
  return 0;
}

/* One inflate() over src[0..*n) into out + *olen, bounded by both the room
 * and max_out + 1 decoded bytes in all.  Lowers *n by what it took. */
static int step(struct api_inflate *z, const unsigned char *src, size_t *n,
                unsigned char *out, size_t cap, size_t *olen,
                struct rd_error *err)
{
  z_stream *zs = z->zs;
  uint64_t allowed = z->max_out == UINT64_MAX ? UINT64_MAX
                                              : z->max_out + 1 - z->out_total;
  size_t room = cap - *olen;
  size_t in_before, out_before;
  int rc;

  if (room > allowed)
    room = (size_t)allowed;
  /* zlib counts in uInt. */
  in_before = *n > UINT_MAX ? UINT_MAX : *n;
  out_before = room > UINT_MAX ? UINT_MAX : room;
  zs->next_in = (unsigned char *)src;
  zs->avail_in = (uInt)in_before;
  zs->next_out = out + *olen;
  zs->avail_out = (uInt)out_before;
  rc = inflate(zs, Z_NO_FLUSH);
  *n -= in_before - zs->avail_in;
  z->in_total += in_before - zs->avail_in;
  *olen += out_before - zs->avail_out;
  z->out_total += out_before - zs->avail_out;
  if (z->out_total > z->max_out) {
    api_fail(err, API_E_BODY_TOO_LARGE,
             "the %s body decodes to more than --max-body (%llu bytes)",
             api_coding_name(z->coding), (unsigned long long)z->max_out);
    return fail_stream(z, API_E_BODY_TOO_LARGE);
  }
  switch (rc) {
  case Z_OK:
  case Z_BUF_ERROR: /* no progress possible: needs input or room */ return 0;
  case Z_STREAM_END: z->state = ST_END; return 0;
  case Z_MEM_ERROR:
    api_fail(err, RD_E_NOMEM, "out of memory decoding the %s body",
             api_coding_name(z->coding));
    return fail_stream(z, RD_E_NOMEM);
  case Z_NEED_DICT:
    return corrupt(z, err, "a preset dictionary is not supported");
  default: return corrupt(z, err, zs->msg);
  }
}

int api_inflate_run(struct api_inflate *z, const unsigned char **in,
                    size_t *in_len, unsigned char *out, size_t cap,
                    size_t *out_len, struct rd_error *err)
{
  int rc;

  *out_len = 0;
  if (z->state == ST_ERR) {
    *in_len = 0; /* dropped: the request is answered with the error */
    return z->code;
  }
  if (z->state == ST_FRESH) {
    if (z->coding == API_CODING_DEFLATE) {
      while (z->npeek < 2 && *in_len > 0) {
        z->peek[z->npeek++] = **in;
        (*in)++;
        (*in_len)--;
      }
      if (z->npeek < 2)
        return 0;
    }
    if ((rc = start(z, err)) != 0)
      return rc;
    if (z->npeek > 0) {
      /* The peeked bytes go through zlib first; what a full window
       * leaves of them waits in peek[] for the next call. */
      size_t left = z->npeek;
      while (left > 0 && z->state == ST_RUN && *out_len < cap) {
        size_t before = left;
        if ((rc = step(z, z->peek + (z->npeek - left), &left, out, cap, out_len,
                       err)) != 0)
          return rc;
        if (left == before && *out_len == 0)
          break;
      }
      if (left > 0) {
        /* Keep the rest for the next call (the window was full). */
        memmove(z->peek, z->peek + (z->npeek - left), left);
        z->npeek = left;
        return 0;
      }
      z->npeek = 0;
    }
  } else if (z->npeek > 0 && z->state == ST_RUN) {
    size_t left = z->npeek;
    if ((rc = step(z, z->peek, &left, out, cap, out_len, err)) != 0)
      return rc;
    memmove(z->peek, z->peek + (z->npeek - left), left);
    z->npeek = left;
    if (left > 0)
      return 0;
  }

  /* With no input left zlib may still hold decoded bytes that did not fit
   * the last window: it runs until it makes no progress. */
  while (*out_len < cap) {
    size_t n = *in_len, made = *out_len;
    if (z->state == ST_END) {
      if (*in_len == 0)
        break;
      /* gzip: another member may follow (RFC 1952 2.2); deflate: nothing
       * may. */
      if (z->coding != API_CODING_GZIP)
        return corrupt(z, err, "data after the end of the stream");
      if (inflateReset((z_stream *)z->zs) != Z_OK)
        return corrupt(z, err, "cannot restart for the next gzip member");
      z->state = ST_RUN;
    }
    rc = step(z, *in, &n, out, cap, out_len, err);
    *in += *in_len - n;
    if (rc != 0) {
      *in_len = 0;
      return rc;
    }
    if (n == *in_len && made == *out_len && z->state != ST_END)
      break; /* no progress: needs input or room */
    *in_len = n;
  }
  return 0;
}

int api_inflate_finish(struct api_inflate *z, struct rd_error *err)
{
  if (z->state == ST_ERR)
    return z->code;
  if (z->state == ST_END)
    return 0;
  if (z->in_total == 0 && z->npeek == 0)
    return api_fail(err, API_E_BAD_ENCODING,
                    "the %s body is empty (not even a header)",
                    api_coding_name(z->coding));
  api_fail(err, API_E_BAD_ENCODING,
           "the %s body is truncated: the stream ends after %llu compressed "
           "bytes without its end marker%s",
           api_coding_name(z->coding), (unsigned long long)z->in_total,
           z->coding == API_CODING_GZIP ? " and trailer" : "");
  return fail_stream(z, API_E_BAD_ENCODING);
}

/* ---- Accept-Encoding ------------------------------------------------ */

/* q of one element's parameters "; q=0.5" (RFC 9110 12.4.2); 1000 = 1. */
static int qvalue(const char *p, const char *e)
{
  while (p < e) {
    while (p < e && (is_ows(*p) || *p == ';'))
      p++;
    if (e - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
      int q = 0, scale = 1000;
      p += 2;
      if (p < e && *p == '1')
        return 1000;
      if (p >= e || *p != '0')
        return 0; /* malformed: treated as not acceptable */
      p++;
      if (p < e && *p == '.') {
        for (p++; p < e && *p >= '0' && *p <= '9' && scale > 1; p++) {
          scale /= 10;
          q += (*p - '0') * scale;
        }
      }
      return q;
    }
    while (p < e && *p != ';')
      p++;
  }
  return 1000;
}

int api_accept_gzip(const char *value)
{
  const char *p = value;
  int gzip_q = -1, star_q = -1;

  if (value == NULL)
    return 0;
  while (*p != '\0') {
    const char *b, *e, *w;
    while (is_ows(*p) || *p == ',')
      p++;
    b = p;
    while (*p != '\0' && *p != ',')
      p++;
    e = p;
    for (w = b; w < e && *w != ';' && !is_ows(*w); w++)
      ;
    if (word_is(b, (size_t)(w - b), "gzip") ||
        word_is(b, (size_t)(w - b), "x-gzip"))
      gzip_q = qvalue(w, e);
    else if (word_is(b, (size_t)(w - b), "*"))
      star_q = qvalue(w, e);
  }
  if (gzip_q >= 0)
    return gzip_q > 0;
  return star_q > 0;
}

/* ---- gzip answers --------------------------------------------------- */

int api_gzip(const void *data, size_t n, int level, struct api_buf *out)
{
  z_stream zs;
  uLong bound;
  int rc;

  memset(&zs, 0, sizeof zs);
  if (n > UINT_MAX)
    return RD_E_NOMEM; /* answers are far smaller; one call suffices */
  if (deflateInit2(&zs, level, Z_DEFLATED, WBITS_GZIP, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK)
    return RD_E_NOMEM;
  bound = deflateBound(&zs, (uLong)n);
  if (bound > UINT_MAX || api_buf_reserve(out, (size_t)bound) != 0) {
    deflateEnd(&zs);
    return RD_E_NOMEM;
  }
  zs.next_in = (unsigned char *)data;
  zs.avail_in = (uInt)n;
  zs.next_out = (unsigned char *)out->data + out->len;
  zs.avail_out = (uInt)bound;
  rc = deflate(&zs, Z_FINISH);
  if (rc == Z_STREAM_END)
    out->len += bound - zs.avail_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END)
    return RD_E_NOMEM;
  out->data[out->len] = '\0';
  return 0;
}
