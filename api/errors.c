/* errors.c - error codes of the api layer: wire names, HTTP statuses, and
 * the message helper shared by the decoders. */
#include <stdarg.h>
#include <stdio.h>

#include "api.h"

const char *api_errname(int code)
{
  const char *name;

  if (code == RD_OK)
    return "OK";
  if (code > API_E__LAST && code <= API_E_BAD_JSON) {
    switch (code) {
#define API__NAME(sym, val, wire, status)                                      \
  case sym: return wire;
      API_ERROR_MAP(API__NAME)
#undef API__NAME
    default: return "INTERNAL";
    }
  }
  name = rd_errname(code);
  return name != NULL ? name : "INTERNAL";
}

int api_http_status(int code)
{
  if (code == RD_OK)
    return 200;
  if (code > API_E__LAST && code <= API_E_BAD_JSON) {
    switch (code) {
#define API__STATUS(sym, val, wire, status)                                    \
  case sym: return status;
      API_ERROR_MAP(API__STATUS)
#undef API__STATUS
    default: return 500;
    }
  }
  switch (code) {
  case RD_E_OVERFLOW:
  case RD_E_UNDEFINED: return 422;
  case RD_E_TOO_LARGE: return 413;
  case RD_E_NOMEM: return 503;
  default:
    /* A code nobody defined is a bug on our side, not the client's. */
    return rd_errname(code) != NULL ? 400 : 500;
  }
}

int api_fail(struct rd_error *err, int code, const char *fmt, ...)
{
  va_list ap;

  if (err != NULL) {
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    /* Truncation may cut a character; messages end up in JSON and logs. */
    api_utf8_sanitize(err->msg);
  }
  return code;
}

void api_utf8_sanitize(char *s)
{
  unsigned char *p = (unsigned char *)s;
  unsigned char lo, hi;
  size_t n, k;
  int ok;

  while (*p != '\0') {
    if (*p < 0x80) {
      p++;
      continue;
    }
    /* Continuation bytes and their ranges after each lead byte (RFC 3629):
     * rejects overlong forms, surrogates and code points above U+10FFFF. */
    lo = 0x80;
    hi = 0xBF;
    if (*p >= 0xC2 && *p <= 0xDF) {
      n = 1;
    } else if (*p >= 0xE0 && *p <= 0xEF) {
      n = 2;
      if (*p == 0xE0)
        lo = 0xA0;
      if (*p == 0xED)
        hi = 0x9F;
    } else if (*p >= 0xF0 && *p <= 0xF4) {
      n = 3;
      if (*p == 0xF0)
        lo = 0x90;
      if (*p == 0xF4)
        hi = 0x8F;
    } else {
      *p++ = '?';
      continue;
    }
    /* Stops at the first bad byte, so never reads past the NUL. */
    ok = p[1] >= lo && p[1] <= hi;
    for (k = 2; ok && k <= n; k++)
      ok = p[k] >= 0x80 && p[k] <= 0xBF;
    if (!ok) {
      *p++ = '?';
      continue;
    }
    p += n + 1;
  }
}
