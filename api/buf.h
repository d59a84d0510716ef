/* buf.h - a growable byte buffer for building response bodies.
 * Not thread-safe; one owner at a time.  Growth is checked for overflow. */
#ifndef API_BUF_H
#define API_BUF_H

#include <stddef.h>

struct api_buf {
  char *data; /* malloc'ed; NUL-terminated after every append */
  size_t len; /* bytes used, excluding the terminating NUL */
  size_t cap; /* bytes allocated */
};

/* Empty buffer; allocates nothing. */
void api_buf_init(struct api_buf *b);
/* Frees the memory and empties the buffer. */
void api_buf_free(struct api_buf *b);
/* Ensures room for `extra` more bytes (plus the NUL). 0 or RD_E_NOMEM. */
int api_buf_reserve(struct api_buf *b, size_t extra);
/* Appends bytes / a C string / printf output. 0 or RD_E_NOMEM (printf:
 * RD_E_INVALID if the format itself fails).  On error the contents are
 * unchanged. */
int api_buf_append(struct api_buf *b, const void *p, size_t n);
int api_buf_puts(struct api_buf *b, const char *s);
int api_buf_printf(struct api_buf *b, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
/* Hands the memory to the caller (free() it) and empties the buffer; an
 * empty buffer yields a fresh "" (NULL only if that allocation fails). */
char *api_buf_steal(struct api_buf *b, size_t *len);

#endif /* API_BUF_H */
