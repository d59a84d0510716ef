/* test_encoding.c - the content-coding decoder and encoder (api/encoding.c).
 *
 * Compressed inputs are made here with zlib's own deflate (independent of
 * the decoder under test) from known plain bytes; every decoded result is
 * compared byte for byte with those plain bytes.  The decoder is fed split
 * at every point (two pieces), byte by byte with a one-byte window, and
 * with bombs, corrupt, truncated and trailing data.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "api.h"
#include "encoding.h"

/* zlib window bits of each wrapper. */
#define W_GZIP 31
#define W_ZLIB 15
#define W_RAW (-15)

static unsigned char *zcompress(const void *src, size_t n, int wbits,
                                size_t *out_len)
{
  z_stream zs;
  uLong cap;
  unsigned char *out;

  memset(&zs, 0, sizeof zs);
  assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, wbits, 8,
                                Z_DEFAULT_STRATEGY),
                   Z_OK);
  cap = deflateBound(&zs, (uLong)n) + 64;
  out = malloc(cap);
  assert_non_null(out);
  zs.next_in = (unsigned char *)src;
  zs.avail_in = (uInt)n;
  zs.next_out = out;
  zs.avail_out = (uInt)cap;
  assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
  *out_len = cap - zs.avail_out;
  deflateEnd(&zs);
  return out;
}

/* A JSON body of `n` bytes (compressible, not trivially so). */
static char *plain_json(size_t n)
{
  char *p = malloc(n + 1);
  size_t i = 0;
  unsigned k = 0;

  assert_non_null(p);
  if (n < 32) {
    memset(p, '7', n);
    p[n] = '\0';
    return p;
  }
  i += (size_t)snprintf(p, n + 1, "{\"op\":\"ReduceL2\",\"data\":[");
  while (i + 16 < n) {
    i += (size_t)snprintf(p + i, n + 1 - i, "%u.%u,", k * 7919u % 1000u,
                          k % 10u);
    k++;
  }
  while (i + 2 < n)
    p[i++] = ' ';
  p[i++] = ']';
  p[i++] = '}';
  p[i] = '\0';
  return p;
}

struct fed {
  unsigned char *out;
  size_t len, cap;
  int rc;
};

/* Feeds `in` in the pieces given by `cuts` (ascending offsets), through a
 * window of `win` bytes, collecting the output; stops at the first error. */
static void feed(enum api_coding c, uint64_t max_out, const unsigned char *in,
                 size_t n, const size_t *cuts, size_t ncuts, size_t win,
                 struct fed *f, struct rd_error *err)
{
  struct api_inflate z;
  unsigned char *w = malloc(win);
  size_t from = 0;

  assert_non_null(w);
  memset(f, 0, sizeof *f);
  f->cap = 1024;
  f->out = malloc(f->cap);
  assert_non_null(f->out);
  memset(err, 0, sizeof *err);
  assert_int_equal(api_inflate_init(&z, c, max_out), 0);
  for (size_t k = 0; k <= ncuts && f->rc == 0; k++) {
    size_t to = k < ncuts ? cuts[k] : n;
    const unsigned char *p = in + from;
    size_t left = to - from;
    do {
      size_t got = 0;
      f->rc = api_inflate_run(&z, &p, &left, w, win, &got, err);
      assert_true(got <= win);
      if (f->len + got > f->cap) {
        while (f->len + got > f->cap)
          f->cap *= 2;
        f->out = realloc(f->out, f->cap);
        assert_non_null(f->out);
      }
      memcpy(f->out + f->len, w, got);
      f->len += got;
    } while (f->rc == 0 && left > 0);
    /* What zlib still holds, as the daemon's final call asks for it. */
    for (size_t got = 1; f->rc == 0 && got > 0;) {
      got = 0;
      f->rc = api_inflate_run(&z, &p, &left, w, win, &got, err);
      if (f->len + got > f->cap) {
        f->cap = (f->len + got) * 2;
        f->out = realloc(f->out, f->cap);
        assert_non_null(f->out);
      }
      memcpy(f->out + f->len, w, got);
      f->len += got;
    }
    from = to;
  }
  if (f->rc == 0)
    f->rc = api_inflate_finish(&z, err);
  api_inflate_free(&z);
  api_inflate_free(&z); /* twice: safe */
  free(w);
}

static void check_splits(enum api_coding c, int wbits, size_t plain_n)
{
  char *plain = plain_json(plain_n);
  size_t zn;
  unsigned char *zd = zcompress(plain, plain_n, wbits, &zn);
  struct rd_error err;
  struct fed f;

  for (size_t cut = 0; cut <= zn; cut++) {
    feed(c, plain_n, zd, zn, &cut, 1, 4096, &f, &err);
    if (f.rc != 0)
      fail_msg("split at %zu of %zu: rc %d: %s", cut, zn, f.rc, err.msg);
    assert_int_equal(f.len, plain_n);
    assert_memory_equal(f.out, plain, plain_n);
    free(f.out);
  }
  /* Byte by byte through a one-byte window. */
  {
    size_t *cuts = malloc(zn * sizeof *cuts);
    for (size_t i = 0; i < zn; i++)
      cuts[i] = i;
    feed(c, plain_n, zd, zn, cuts, zn, 1, &f, &err);
    assert_int_equal(f.rc, 0);
    assert_int_equal(f.len, plain_n);
    assert_memory_equal(f.out, plain, plain_n);
    free(f.out);
    free(cuts);
  }
  /* The window just big enough, and odd sizes. */
  for (size_t win = 2; win < 40; win += 7) {
    feed(c, plain_n, zd, zn, NULL, 0, win, &f, &err);
    assert_int_equal(f.rc, 0);
    assert_int_equal(f.len, plain_n);
    assert_memory_equal(f.out, plain, plain_n);
    free(f.out);
  }
  free(zd);
  free(plain);
}

static void test_gzip_every_split(void **state)
{
  (void)state;
  check_splits(API_CODING_GZIP, W_GZIP, 3000);
  check_splits(API_CODING_GZIP, W_GZIP, 1);
}

static void test_deflate_zlib_every_split(void **state)
{
  (void)state;
  check_splits(API_CODING_DEFLATE, W_ZLIB, 3000);
  check_splits(API_CODING_DEFLATE, W_ZLIB, 1);
}

static void test_deflate_raw_every_split(void **state)
{
  (void)state;
  check_splits(API_CODING_DEFLATE, W_RAW, 3000);
  check_splits(API_CODING_DEFLATE, W_RAW, 1);
}

/* Large: 2 MiB through a 64 KiB window, as the daemon feeds it. */
static void test_large_body(void **state)
{
  size_t n = 2u << 20;
  char *plain = plain_json(n);
  size_t zn, cuts[3];
  unsigned char *zd = zcompress(plain, n, W_GZIP, &zn);
  struct rd_error err;
  struct fed f;

  (void)state;
  cuts[0] = 1;
  cuts[1] = zn / 3;
  cuts[2] = zn - 9;
  feed(API_CODING_GZIP, n, zd, zn, cuts, 3, 64 * 1024, &f, &err);
  assert_int_equal(f.rc, 0);
  assert_int_equal(f.len, n);
  assert_memory_equal(f.out, plain, n);
  free(f.out);
  free(zd);
  free(plain);
}

/* Two gzip members decode to their concatenation (RFC 1952 2.2). */
static void test_gzip_members(void **state)
{
  const char *a = "{\"op\":\"ReduceL2\",", *b = "\"data\":[3,4]}";
  size_t an, bn;
  unsigned char *za = zcompress(a, strlen(a), W_GZIP, &an);
  unsigned char *zb = zcompress(b, strlen(b), W_GZIP, &bn);
  unsigned char *both = malloc(an + bn);
  struct rd_error err;
  struct fed f;

  (void)state;
  memcpy(both, za, an);
  memcpy(both + an, zb, bn);
  for (size_t cut = 0; cut <= an + bn; cut++) {
    feed(API_CODING_GZIP, 1000, both, an + bn, &cut, 1, 5, &f, &err);
    assert_int_equal(f.rc, 0);
    assert_int_equal(f.len, strlen(a) + strlen(b));
    assert_memory_equal(f.out, "{\"op\":\"ReduceL2\",\"data\":[3,4]}", f.len);
    free(f.out);
  }
  free(both);
  free(za);
  free(zb);
}

/* A bomb: 64 MiB of zeros (about 64 KiB compressed) against a 1 MiB
 * limit: the error comes with at most limit + 1 bytes decoded. */
static void test_bomb(void **state)
{
  size_t n = 64u << 20, zn;
  char *zeros = calloc(1, n);
  unsigned char *zd;
  struct rd_error err;
  struct fed f;
  enum api_coding cs[] = { API_CODING_GZIP, API_CODING_DEFLATE };
  int ws[] = { W_GZIP, W_ZLIB };

  (void)state;
  assert_non_null(zeros);
  for (int i = 0; i < 2; i++) {
    zd = zcompress(zeros, n, ws[i], &zn);
    assert_true(zn < n / 500);
    feed(cs[i], 1u << 20, zd, zn, NULL, 0, 64 * 1024, &f, &err);
    assert_int_equal(f.rc, API_E_BODY_TOO_LARGE);
    assert_int_equal(api_http_status(f.rc), 413);
    assert_true(f.len <= (1u << 20) + 1);
    assert_true(f.len > (1u << 20) - 64 * 1024);
    assert_non_null(strstr(err.msg, "--max-body (1048576 bytes)"));
    free(f.out);
    free(zd);
  }
  free(zeros);
}

/* Decoding to exactly the limit is fine; one byte more is not. */
static void test_limit_edge(void **state)
{
  char *plain = plain_json(5000);
  size_t zn;
  unsigned char *zd = zcompress(plain, 5000, W_GZIP, &zn);
  struct rd_error err;
  struct fed f;

  (void)state;
  feed(API_CODING_GZIP, 5000, zd, zn, NULL, 0, 333, &f, &err);
  assert_int_equal(f.rc, 0);
  assert_int_equal(f.len, 5000);
  free(f.out);
  feed(API_CODING_GZIP, 4999, zd, zn, NULL, 0, 333, &f, &err);
  assert_int_equal(f.rc, API_E_BODY_TOO_LARGE);
  assert_true(f.len <= 5000);
  free(f.out);
  free(zd);
  free(plain);
}

/* Every truncation is BAD_ENCODING (at the end of the body at the latest),
 * never a short body taken as whole. */
static void test_truncated(void **state)
{
  char *plain = plain_json(2000);
  enum api_coding cs[] = { API_CODING_GZIP, API_CODING_DEFLATE,
                           API_CODING_DEFLATE };
  int ws[] = { W_GZIP, W_ZLIB, W_RAW };
  struct rd_error err;
  struct fed f;

  (void)state;
  for (int i = 0; i < 3; i++) {
    size_t zn;
    unsigned char *zd = zcompress(plain, 2000, ws[i], &zn);
    for (size_t len = 0; len < zn; len++) {
      feed(cs[i], 2000, zd, len, NULL, 0, 4096, &f, &err);
      if (f.rc != API_E_BAD_ENCODING)
        fail_msg("wrapper %d cut to %zu of %zu: rc %d", ws[i], len, zn, f.rc);
      assert_int_equal(api_http_status(f.rc), 400);
      assert_string_equal(api_errname(f.rc), "BAD_ENCODING");
      assert_true(strstr(err.msg, "truncated") != NULL ||
                  strstr(err.msg, "empty") != NULL ||
                  strstr(err.msg, "corrupt") != NULL);
      free(f.out);
    }
    free(zd);
  }
  feed(API_CODING_GZIP, 100, (const unsigned char *)"", 0, NULL, 0, 16, &f,
       &err);
  assert_int_equal(f.rc, API_E_BAD_ENCODING);
  assert_string_equal(err.msg, "the gzip body is empty (not even a header)");
  free(f.out);
  free(plain);
}

/* Not gzip at all, a flipped byte (the CRC / Adler-32 catches what the
 * Huffman decoder does not), trailing bytes after a deflate stream. */
static void test_corrupt(void **state)
{
  const char *json = "{\"op\":\"ReduceL2\",\"data\":[3,4]}";
  char *plain = plain_json(3000);
  size_t zn;
  unsigned char *zd;
  struct rd_error err;
  struct fed f;
  unsigned char *more;

  (void)state;
  feed(API_CODING_GZIP, 1000, (const unsigned char *)json, strlen(json), NULL,
       0, 64, &f, &err);
  assert_int_equal(f.rc, API_E_BAD_ENCODING);
  assert_string_equal(err.msg, "the gzip body is corrupt after 2 compressed "
                               "bytes: incorrect header check");
  free(f.out);
  /* Plain JSON sent as deflate reads as raw deflate and fails there. */
  feed(API_CODING_DEFLATE, 1000, (const unsigned char *)json, strlen(json),
       NULL, 0, 64, &f, &err);
  assert_int_equal(f.rc, API_E_BAD_ENCODING);
  assert_non_null(strstr(err.msg, "the deflate body is corrupt after "));
  free(f.out);

  zd = zcompress(plain, 3000, W_GZIP, &zn);
  for (size_t at = 10; at < zn; at += 37) {
    zd[at] ^= 0x55;
    feed(API_CODING_GZIP, 100000, zd, zn, NULL, 0, 4096, &f, &err);
    zd[at] ^= 0x55;
    if (f.rc == 0)
      fail_msg("flip at %zu of %zu decoded without an error", at, zn);
    /* A flip may also make the stream decode to more, or end early. */
    assert_true(f.rc == API_E_BAD_ENCODING);
    free(f.out);
  }
  free(zd);

  zd = zcompress(plain, 3000, W_ZLIB, &zn);
  more = malloc(zn + 3);
  memcpy(more, zd, zn);
  memcpy(more + zn, "xyz", 3);
  feed(API_CODING_DEFLATE, 100000, more, zn + 3, NULL, 0, 4096, &f, &err);
  assert_int_equal(f.rc, API_E_BAD_ENCODING);
  assert_non_null(strstr(err.msg, "data after the end of the stream"));
  free(f.out);
  /* ...and a later call keeps the error, dropping its input. */
  {
    struct api_inflate z;
    const unsigned char *p = more;
    size_t left = zn + 3, got;
    unsigned char w[8192];
    assert_int_equal(api_inflate_init(&z, API_CODING_DEFLATE, 100000), 0);
    assert_int_equal(api_inflate_run(&z, &p, &left, w, sizeof w, &got, &err),
                     API_E_BAD_ENCODING);
    p = more;
    left = 10;
    assert_int_equal(api_inflate_run(&z, &p, &left, w, sizeof w, &got, &err),
                     API_E_BAD_ENCODING);
    assert_int_equal(left, 0);
    assert_int_equal(got, 0);
    assert_int_equal(api_inflate_finish(&z, &err), API_E_BAD_ENCODING);
    api_inflate_free(&z);
  }
  free(more);
  free(zd);
  free(plain);
}

static void test_coding_parse(void **state)
{
  enum api_coding c;
  struct rd_error err;

  (void)state;
  assert_int_equal(api_coding_parse(NULL, &c, &err), 0);
  assert_int_equal(c, API_CODING_IDENTITY);
  assert_int_equal(api_coding_parse("identity", &c, &err), 0);
  assert_int_equal(c, API_CODING_IDENTITY);
  assert_int_equal(api_coding_parse("", &c, &err), 0);
  assert_int_equal(c, API_CODING_IDENTITY);
  assert_int_equal(api_coding_parse("gzip", &c, &err), 0);
  assert_int_equal(c, API_CODING_GZIP);
  assert_int_equal(api_coding_parse(" GZip ", &c, &err), 0);
  assert_int_equal(c, API_CODING_GZIP);
  assert_int_equal(api_coding_parse("x-gzip", &c, &err), 0);
  assert_int_equal(c, API_CODING_GZIP);
  assert_int_equal(api_coding_parse("Deflate", &c, &err), 0);
  assert_int_equal(c, API_CODING_DEFLATE);
  assert_string_equal(api_coding_name(API_CODING_DEFLATE), "deflate");

  memset(&err, 0, sizeof err);
  assert_int_equal(api_coding_parse("br", &c, &err), API_E_MEDIA_TYPE);
  assert_int_equal(api_http_status(API_E_MEDIA_TYPE), 415);
  assert_string_equal(err.msg, "Content-Encoding 'br' is not supported "
                               "(gzip, deflate or identity; one coding)");
  assert_int_equal(api_coding_parse("gzip, gzip", &c, &err), API_E_MEDIA_TYPE);
  assert_non_null(strstr(err.msg, "'gzip, gzip'"));
  assert_int_equal(api_coding_parse("zstd", &c, &err), API_E_MEDIA_TYPE);
  assert_non_null(strstr(err.msg, "'zstd'"));
}

static void test_accept_gzip(void **state)
{
  (void)state;
  assert_false(api_accept_gzip(NULL));
  assert_false(api_accept_gzip(""));
  assert_true(api_accept_gzip("gzip"));
  assert_true(api_accept_gzip("deflate, gzip"));
  assert_true(api_accept_gzip("gzip, deflate, br"));
  assert_true(api_accept_gzip("br;q=1.0, gzip;q=0.8, *;q=0.1"));
  assert_true(api_accept_gzip("GZIP; q=0.001"));
  assert_true(api_accept_gzip("x-gzip"));
  assert_true(api_accept_gzip("*"));
  assert_false(api_accept_gzip("gzip;q=0"));
  assert_false(api_accept_gzip("gzip;q=0.000"));
  assert_false(api_accept_gzip("*;q=0.5, gzip;q=0"));
  assert_false(api_accept_gzip("deflate"));
  assert_false(api_accept_gzip("identity, br"));
  assert_false(api_accept_gzip("gzipx"));
  assert_false(api_accept_gzip("*;q=0"));
  assert_true(api_accept_gzip("identity;q=0, gzip"));
}

/* api_gzip's answer is a gzip stream zlib (and our decoder) read back. */
static void test_gzip_answer(void **state)
{
  char *plain = plain_json(10000);
  struct api_buf b;
  z_stream zs;
  unsigned char *back = malloc(10001);
  struct rd_error err;
  struct fed f;

  (void)state;
  api_buf_init(&b);
  assert_int_equal(api_buf_puts(&b, "prefix:"), 0);
  assert_int_equal(api_gzip(plain, 10000, -1, &b), 0);
  assert_memory_equal(b.data, "prefix:", 7);
  assert_int_equal((unsigned char)b.data[7], 0x1f);
  assert_int_equal((unsigned char)b.data[8], 0x8b);
  assert_true(b.len - 7 < 10000 / 2);
  memset(&zs, 0, sizeof zs);
  assert_int_equal(inflateInit2(&zs, W_GZIP), Z_OK);
  zs.next_in = (unsigned char *)b.data + 7;
  zs.avail_in = (uInt)(b.len - 7);
  zs.next_out = back;
  zs.avail_out = 10001;
  assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
  assert_int_equal(zs.total_out, 10000);
  assert_memory_equal(back, plain, 10000);
  inflateEnd(&zs);
  feed(API_CODING_GZIP, 10000, (unsigned char *)b.data + 7, b.len - 7, NULL, 0,
       999, &f, &err);
  assert_int_equal(f.rc, 0);
  assert_int_equal(f.len, 10000);
  assert_memory_equal(f.out, plain, 10000);
  free(f.out);
  api_buf_free(&b);
  free(back);
  free(plain);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_gzip_every_split),
    cmocka_unit_test(test_deflate_zlib_every_split),
    cmocka_unit_test(test_deflate_raw_every_split),
    cmocka_unit_test(test_large_body),
    cmocka_unit_test(test_gzip_members),
    cmocka_unit_test(test_bomb),
    cmocka_unit_test(test_limit_edge),
    cmocka_unit_test(test_truncated),
    cmocka_unit_test(test_corrupt),
    cmocka_unit_test(test_coding_parse),
    cmocka_unit_test(test_accept_gzip),
    cmocka_unit_test(test_gzip_answer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
