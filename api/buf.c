/* buf.c - growable byte buffer for response bodies. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "reduce.h"

void api_buf_init(struct api_buf *b)
{
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
}

void api_buf_free(struct api_buf *b)
{
  free(b->data);
  api_buf_init(b);
}

int api_buf_reserve(struct api_buf *b, size_t extra)
{
  size_t need, cap;
  char *p;

  /* len + extra + 1 must not wrap. */
  if (extra > SIZE_MAX - 1 - b->len)
    return RD_E_NOMEM;
  need = b->len + extra + 1;
  if (need <= b->cap)
    return 0;
  cap = b->cap < 64 ? 64 : b->cap;
  while (cap < need)
    cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  p = realloc(b->data, cap);
  if (p == NULL)
    return RD_E_NOMEM;
  b->data = p;
  b->cap = cap;
  return 0;
}

int api_buf_append(struct api_buf *b, const void *p, size_t n)
{
  if (api_buf_reserve(b, n) != 0)
    return RD_E_NOMEM;
  if (n > 0)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int api_buf_puts(struct api_buf *b, const char *s)
{
  return api_buf_append(b, s, strlen(s));
}

int api_buf_printf(struct api_buf *b, const char *fmt, ...)
{
  va_list ap;
  int n;

  /* First try in whatever room there is; a second pass only if short. */
  if (api_buf_reserve(b, 0) != 0)
    return RD_E_NOMEM;
  va_start(ap, fmt);
  n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->data[b->len] = '\0';
    return RD_E_INVALID;
  }
  if ((size_t)n >= b->cap - b->len) {
    if (api_buf_reserve(b, (size_t)n) != 0) {
      b->data[b->len] = '\0';
      return RD_E_NOMEM;
    }
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
  return 0;
}

char *api_buf_steal(struct api_buf *b, size_t *len)
{
  char *p = b->data;

  if (p == NULL)
    p = calloc(1, 1); /* callers always get a string to free */
  if (len != NULL)
    *len = p != NULL ? b->len : 0;
  api_buf_init(b);
  return p;
}
