/* fuzz_inflate.c - libFuzzer target: api/encoding.c, the gzip / deflate
 * body decoder as the daemon feeds it.  Input byte 0 chooses the coding
 * (bit 0), the decoded-size limit (bits 1-3: 2^(6 + 2k) bytes) and the
 * output window (bits 4-7: 1..4096 bytes); the rest is the body.  The body
 * is decoded whole through a 64 KiB window and byte by byte through the
 * chosen window: results (error codes; the messages may name other
 * offsets) and decoded bytes must be identical, no
 * more than limit + 1 bytes may come out, and errors must be BAD_ENCODING,
 * BODY_TOO_LARGE (only past the limit) or NOMEM, with a message.  The
 * input itself, gzipped by api_gzip(), must decode back to itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "encoding.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct answer {
  int rc;
  char msg[RD_ERRMSG_MAX];
  unsigned char *out;
  size_t len;
};

static void decode(enum api_coding c, uint64_t max, const uint8_t *body,
                   size_t n, size_t step, size_t win, struct answer *a)
{
  struct api_inflate z;
  struct rd_error err;
  unsigned char *w = malloc(win);
  size_t from = 0;

  memset(a, 0, sizeof *a);
  memset(&err, 0, sizeof err);
  a->out = malloc((size_t)max + 2);
  if (w == NULL || a->out == NULL || api_inflate_init(&z, c, max) != 0)
    abort();
  for (;;) {
    const unsigned char *p = body + from;
    size_t piece = n - from < step ? n - from : step, left = piece, got;
    /* Every call, even with no input left: zlib may hold output. */
    do {
      got = 0;
      a->rc = api_inflate_run(&z, &p, &left, w, win, &got, &err);
      if (got > win || a->len + got > max + 1)
        abort(); /* past the window or past limit + 1 */
      memcpy(a->out + a->len, w, got);
      a->len += got;
    } while (a->rc == 0 && (left > 0 || got > 0));
    from += piece;
    if (a->rc != 0 || from >= n)
      break;
  }
  if (a->rc == 0)
    a->rc = api_inflate_finish(&z, &err);
  if (a->rc != 0) {
    if (a->rc != API_E_BAD_ENCODING && a->rc != API_E_BODY_TOO_LARGE &&
        a->rc != RD_E_NOMEM)
      abort();
    if (a->rc == API_E_BODY_TOO_LARGE && a->len <= max)
      abort(); /* the limit is "more than max" */
    if (err.msg[0] == '\0')
      abort();
    memcpy(a->msg, err.msg, sizeof a->msg);
  }
  api_inflate_free(&z);
  free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  enum api_coding c;
  uint64_t max;
  size_t win;
  struct answer whole, bytes;
  struct api_buf gz;

  if (size < 1)
    return 0;
  c = (data[0] & 1) ? API_CODING_DEFLATE : API_CODING_GZIP;
  max = (uint64_t)1 << (6 + 2 * ((data[0] >> 1) & 7));
  win = ((size_t)(data[0] >> 4) << 8) + 1;
  data++;
  size--;

  decode(c, max, data, size, size > 0 ? size : 1, 64 * 1024, &whole);
  decode(c, max, data, size, 1, win, &bytes);
  if (whole.rc != bytes.rc)
    abort();
  /* Decoded bytes agree up to the error (an error may stop at another
   * window boundary, so the shorter must be a prefix of the longer). */
  if (memcmp(whole.out, bytes.out,
             whole.len < bytes.len ? whole.len : bytes.len) != 0)
    abort();
  if (whole.rc == 0 && (whole.len != bytes.len))
    abort();
  free(whole.out);
  free(bytes.out);

  /* Round trip through the answer encoder. */
  api_buf_init(&gz);
  if (api_gzip(data, size, -1, &gz) == 0) {
    decode(API_CODING_GZIP, size, (const uint8_t *)gz.data, gz.len,
           gz.len > 0 ? gz.len : 1, 4096, &whole);
    if (whole.rc != 0 || whole.len != size ||
        (size > 0 && memcmp(whole.out, data, size) != 0))
      abort();
    free(whole.out);
  }
  api_buf_free(&gz);
  return 0;
}
