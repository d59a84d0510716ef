/* encoding.h - HTTP content codings (zlib): the request side decodes a
 * gzip or deflate body as it streams, bounded by a decoded-size limit; the
 * answer side reads Accept-Encoding and gzips a body.  No HTTP server here:
 * the daemon passes header values and bytes.
 *
 * Decoding is a push decoder with a caller-owned output window, so the
 * daemon can hand each decoded piece to whatever takes the plain body
 * (JSON buffer, .npy / /v2 prefix decoder, library stream) and stop when
 * that is full: nothing is allocated per byte, and a decompression bomb
 * ends with API_E_BODY_TOO_LARGE after at most `max_out` + 1 decoded bytes.
 */
#ifndef API_ENCODING_H
#define API_ENCODING_H

#include <stddef.h>
#include <stdint.h>

#include "reduce.h"
#include "buf.h"

enum api_coding {
  API_CODING_IDENTITY = 0, /* no Content-Encoding, or "identity" */
  API_CODING_GZIP,         /* "gzip", "x-gzip" (RFC 1952) */
  API_CODING_DEFLATE       /* "deflate": zlib (RFC 1950); raw RFC 1951
                              * accepted too, as browsers once sent it */
};

/* Parses a Content-Encoding value (NULL: none).  One coding only, case-
 * insensitive, surrounding spaces allowed.  Anything else is
 * API_E_MEDIA_TYPE (415) naming the value, e.g. "br" or "gzip, gzip". */
int api_coding_parse(const char *value, enum api_coding *out,
                     struct rd_error *err);

/* The coding's name as in the header ("gzip", "deflate", "identity"). */
const char *api_coding_name(enum api_coding c);

struct api_inflate {
  void *zs; /* z_stream, allocated by _init */
  enum api_coding coding;
  int state;             /* internal */
  int code;              /* the error, once in the error state */
  uint64_t in_total;     /* compressed bytes taken */
  uint64_t out_total;    /* decoded bytes given out */
  uint64_t max_out;      /* above it: API_E_BODY_TOO_LARGE */
  unsigned char peek[2]; /* deflate: the first bytes, to tell zlib from raw */
  size_t npeek;
};

/* Prepares a decoder for `coding` (not IDENTITY).  0, or RD_E_NOMEM. */
int api_inflate_init(struct api_inflate *z, enum api_coding coding,
                     uint64_t max_out);

/* Decodes from (*in, *in_len) into out[0..cap): advances *in, lowers
 * *in_len by what it took and sets *out_len to the bytes written.  Stops
 * when the input is used up and zlib has nothing more, or `out` is full
 * (call again: with *in_len 0 too, zlib may still hold output).  Returns 0, or an error code with `err` filled:
 * API_E_BAD_ENCODING (corrupt data, or data after the end of a deflate
 * stream; gzip may have several members), API_E_BODY_TOO_LARGE (decoded
 * bytes passed max_out; nothing past max_out + 1 is produced, and
 * UINT64_MAX means no bound), RD_E_NOMEM.  After an error, every call
 * drops its input and returns the same code (`err` untouched). */
int api_inflate_run(struct api_inflate *z, const unsigned char **in,
                    size_t *in_len, unsigned char *out, size_t cap,
                    size_t *out_len, struct rd_error *err);

/* The body is over: 0 if the stream ended properly, else
 * API_E_BAD_ENCODING naming the truncation (or the error seen before). */
int api_inflate_finish(struct api_inflate *z, struct rd_error *err);

/* Frees the decoder (safe on a zeroed or already freed one). */
void api_inflate_free(struct api_inflate *z);

/* Does an Accept-Encoding value accept gzip?  RFC 9110: "gzip" or
 * "x-gzip" with q > 0, or "*" with q > 0 and no "gzip;q=0"; NULL: no. */
int api_accept_gzip(const char *value);

/* Answers of fewer bytes than this are sent as they are. */
#define API_GZIP_MIN 1024

/* Appends the gzip (RFC 1952) form of data[0..n) to `out`.  0, or
 * RD_E_NOMEM.  `level`: zlib's 1..9, or -1 for its default. */
int api_gzip(const void *data, size_t n, int level, struct api_buf *out);

#endif /* API_ENCODING_H */
