/* test_binary.c - unit tests of api/binary.c: query parameters, the .npy
 * header parser (including hostile headers) and writer, Accept
 * negotiation, Fortran-order plans, byte swapping and the result encoders.
 *
 * Expected values are worked out by hand (the .npy layout from the format
 * description: magic, version, little-endian header length, dict, spaces,
 * newline), never copied from the program's output. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "binary.h"

/* ================================================================== */
/* Helpers                                                            */
/* ================================================================== */

static int query(const char *qs, int fmt, struct api_request *req,
                 struct rd_error *err)
{
  return api_query_parse(qs, fmt, req, err);
}

static void assert_msg_has(const struct rd_error *err, const char *part)
{
  if (strstr(err->msg, part) == NULL)
    fail_msg("message \"%s\" lacks \"%s\"", err->msg, part);
}

/* A .npy file prefix: version major.0, header length field, then `dict`
 * padded with spaces to `pad_to` (0: no padding) and '\n'. */
static size_t make_npy(unsigned char *out, int major, const char *dict,
                       size_t pad_to)
{
  size_t prefix = major == 1 ? 10 : 12, n = strlen(dict), hlen, total;

  total = prefix + n + 1;
  if (pad_to != 0)
    total = (total + pad_to - 1) / pad_to * pad_to;
  hlen = total - prefix;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (unsigned char)major;
  out[7] = 0;
  out[8] = (unsigned char)(hlen & 0xff);
  out[9] = (unsigned char)((hlen >> 8) & 0xff);
  if (major != 1) {
    out[10] = (unsigned char)((hlen >> 16) & 0xff);
    out[11] = (unsigned char)((hlen >> 24) & 0xff);
  }
  memcpy(out + prefix, dict, n);
  memset(out + prefix + n, ' ', total - prefix - n - 1);
  out[total - 1] = '\n';
  return total;
}

static int npy_dict(const char *dict, struct api_npy *npy, struct rd_error *err)
{
  unsigned char buf[4096];
  size_t n = make_npy(buf, 1, dict, 64);
  return api_npy_parse(buf, n, npy, err);
}

/* ================================================================== */
/* Formats                                                            */
/* ================================================================== */

static void test_content_type(void **state)
{
  (void)state;
  assert_int_equal(api_format_of_content_type("application/json"),
                   API_FMT_JSON);
  assert_int_equal(api_format_of_content_type(
                     " Application/JSON ; charset=utf-8"),
                   API_FMT_JSON);
  assert_int_equal(api_format_of_content_type("application/octet-stream"),
                   API_FMT_RAW);
  assert_int_equal(api_format_of_content_type("APPLICATION/X-NPY"),
                   API_FMT_NPY);
  assert_int_equal(api_format_of_content_type("application/x-npyz"),
                   API_FMT_NONE);
  assert_int_equal(api_format_of_content_type("application/octet"),
                   API_FMT_NONE);
  assert_int_equal(api_format_of_content_type(""), API_FMT_NONE);
  assert_int_equal(api_format_of_content_type(NULL), API_FMT_NONE);
  assert_string_equal(api_format_media_type(API_FMT_NPY), "application/x-npy");
  assert_null(api_format_media_type(API_FMT_NONE));
}

/* ================================================================== */
/* Query string                                                       */
/* ================================================================== */

static void test_query_raw_full(void **state)
{
  struct api_request req;
  struct rd_error err;

  (void)state;
  assert_int_equal(query("op=ReduceSumSquare&opset=13&axes=0,-1&keepdims=0"
                         "&noop_with_empty_axes=false&overflow=saturate"
                         "&dtype=int32&shape=3,2,4",
                         API_FMT_RAW, &req, &err),
                   0);
  assert_int_equal(req.params.op, RD_OP_SUM_SQUARE);
  assert_int_equal(req.params.opset, 13);
  assert_int_equal(req.params.naxes, 2);
  assert_int_equal(req.axes[0], 0);
  assert_int_equal(req.axes[1], -1);
  assert_int_equal(req.params.keepdims, 0);
  assert_int_equal(req.params.noop_with_empty_axes, 0);
  assert_int_equal(req.params.overflow, RD_OVERFLOW_SATURATE);
  assert_int_equal(req.params.dtype, RD_INT32);
  assert_int_equal(req.params.rank, 3);
  assert_int_equal(req.shape[0], 3);
  assert_int_equal(req.shape[1], 2);
  assert_int_equal(req.shape[2], 4);
  assert_ptr_equal(req.params.shape, req.shape);
  assert_ptr_equal(req.params.axes, req.axes);
}

static void test_query_defaults_and_empty_lists(void **state)
{
  struct api_request req;
  struct rd_error err;

  (void)state;
  assert_int_equal(query("op=ReduceL2&dtype=float&shape=", API_FMT_RAW, &req,
                         &err),
                   0);
  assert_int_equal(req.params.opset, 18);
  assert_int_equal(req.params.keepdims, 1);
  assert_true(req.params.noop_with_empty_axes == RD_UNSET);
  assert_int_equal(req.params.overflow, RD_OVERFLOW_ERROR);
  assert_int_equal(req.params.dtype, RD_FLOAT32);
  assert_int_equal(req.params.rank, 0);
  assert_int_equal(req.params.naxes, 0);

  /* axes= is an explicit empty list; keepdims=true; percent-decoding. */
  assert_int_equal(
    query("op=Reduce%4C2&axes=&keepdims=true&noop_with_empty_axes=1",
          API_FMT_NPY, &req, &err),
    0);
  assert_int_equal(req.params.op, RD_OP_L2);
  assert_int_equal(req.params.naxes, 0);
  assert_int_equal(req.params.keepdims, 1);
  assert_int_equal(req.params.noop_with_empty_axes, 1);
  /* %2C is a comma; empty segments between '&' are skipped. */
  assert_int_equal(query("&&op=ReduceL2&axes=1%2C2&", API_FMT_NPY, &req, &err),
                   0);
  assert_int_equal(req.params.naxes, 2);
  assert_int_equal(req.axes[1], 2);
}

static void test_query_errors(void **state)
{
  struct api_request req;
  struct rd_error err;

  (void)state;
  assert_int_equal(query("op=ReduceL2&axes=0,x&dtype=float32&shape=2",
                         API_FMT_RAW, &req, &err),
                   API_E_INVALID_FIELD);
  assert_msg_has(&err, "query parameter axes = \"0,x\"");
  assert_msg_has(&err, "\"x\" is not an integer");

  assert_int_equal(query("op=ReduceL2&bogus=1", API_FMT_NPY, &req, &err),
                   API_E_UNKNOWN_FIELD);
  assert_msg_has(&err, "\"bogus\"");
  assert_int_equal(query("op=ReduceL2&dtype=float32", API_FMT_NPY, &req, &err),
                   API_E_UNKNOWN_FIELD);
  assert_msg_has(&err, "dtype");
  assert_int_equal(query("op=ReduceL2&shape=2", API_FMT_NPY, &req, &err),
                   API_E_UNKNOWN_FIELD);

  assert_int_equal(query("op=ReduceL2&axes=0&axes=1", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);
  assert_msg_has(&err, "more than once");

  assert_int_equal(query("axes=0", API_FMT_NPY, &req, &err),
                   API_E_MISSING_FIELD);
  assert_msg_has(&err, "op");
  assert_int_equal(query("", API_FMT_NPY, &req, &err), API_E_MISSING_FIELD);
  assert_int_equal(query(NULL, API_FMT_NPY, &req, &err), API_E_MISSING_FIELD);
  assert_int_equal(query("op=ReduceL2&shape=2", API_FMT_RAW, &req, &err),
                   API_E_MISSING_FIELD);
  assert_msg_has(&err, "dtype");
  assert_int_equal(query("op=ReduceL2&dtype=int64", API_FMT_RAW, &req, &err),
                   API_E_MISSING_FIELD);
  assert_msg_has(&err, "shape");

  assert_int_equal(query("op=ReduceMaximum", API_FMT_NPY, &req, &err), RD_E_OP);
  assert_msg_has(&err, "query parameter op = \"ReduceMaximum\"");
  assert_msg_has(&err, "ReduceLogSumExp, ArgMax, ArgMin");
  assert_int_equal(query("op=ReduceL2&overflow=clip", API_FMT_NPY, &req, &err),
                   RD_E_POLICY);
  assert_int_equal(query("op=ReduceL2&dtype=int4&shape=1", API_FMT_RAW, &req,
                         &err),
                   RD_E_DTYPE);
  assert_msg_has(&err, "int8, uint8, int16, uint16");

  assert_int_equal(query("op=ReduceL2&opset=1.5", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);
  assert_int_equal(query("op=ReduceL2&opset=", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);
  assert_int_equal(query("op=ReduceL2&opset=+18", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD); /* '+' is a space */
  assert_int_equal(query("op=ReduceL2&opset=99999999999999999999", API_FMT_NPY,
                         &req, &err),
                   API_E_INVALID_FIELD);
  assert_msg_has(&err, "range");
  assert_int_equal(query("op=ReduceL2&keepdims=yes", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);
  assert_msg_has(&err, "true/false");
  assert_int_equal(query("op=ReduceL2&noop_with_empty_axes="
                         "-9223372036854775808",
                         API_FMT_NPY, &req, &err),
                   RD_E_NOOP);
  assert_int_equal(query("op=ReduceL2&axes=0,,1", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);
  assert_int_equal(query("op=ReduceL2&axes=0,", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);
  assert_int_equal(query("op=Reduce%zzL2", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);
  assert_msg_has(&err, "percent");
  assert_int_equal(query("op=ReduceL2%00", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);
  assert_int_equal(query("op=ReduceL2%4", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);

  /* 33 entries: one more than any rank allows. */
  {
    char qs[256] = "op=ReduceL2&dtype=float32&shape=";
    for (int i = 0; i < 33; i++)
      strcat(qs, i ? ",1" : "1");
    assert_int_equal(query(qs, API_FMT_RAW, &req, &err), RD_E_RANK);
    memcpy(qs, "op=ReduceL2&dtype=float32&axes=", 31);
    assert_int_equal(query(qs, API_FMT_RAW, &req, &err), API_E_INVALID_FIELD);
  }
}

/* ================================================================== */
/* .npy header                                                        */
/* ================================================================== */

static void test_npy_parse_valid(void **state)
{
  unsigned char buf[512];
  struct api_npy npy;
  struct rd_error err;
  size_t n;

  (void)state;
  n = make_npy(buf, 1,
               "{'descr': '<f4', 'fortran_order': False, "
               "'shape': (3, 2), }",
               64);
  /* 10 + 59 + '\n' = 70 bytes, padded to 128 */
  assert_int_equal(n, 128);
  assert_int_equal(api_npy_parse(buf, n, &npy, &err), 0);
  assert_int_equal(npy.dtype, RD_FLOAT32);
  assert_int_equal(npy.swap, 0); /* little-endian host */
  assert_int_equal(npy.fortran, 0);
  assert_int_equal(npy.rank, 2);
  assert_int_equal(npy.shape[0], 3);
  assert_int_equal(npy.shape[1], 2);
  assert_int_equal(npy.header_len, 128);
  assert_int_equal(npy.major, 1);

  /* Needs more: before the length, and before the end of the header. */
  assert_int_equal(api_npy_parse(buf, 5, &npy, &err), API_NPY_PREFIX);
  assert_int_equal(api_npy_parse(buf, 12, &npy, &err), 128);
  assert_int_equal(api_npy_parse(buf, 127, &npy, &err), 128);

  /* Version 2.0 and 3.0: 4-byte length; other key order, double quotes,
   * no trailing comma, no padding; big-endian; Fortran; rank 0 and 1. */
  n = make_npy(buf, 2,
               "{\"shape\": (), \"fortran_order\": True, "
               "\"descr\": \">f8\"}",
               0);
  assert_int_equal(api_npy_parse(buf, n, &npy, &err), 0);
  assert_int_equal(npy.dtype, RD_FLOAT64);
  assert_int_equal(npy.swap, 1);
  assert_int_equal(npy.fortran, 1);
  assert_int_equal(npy.rank, 0);
  assert_int_equal(npy.header_len, n);
  n = make_npy(buf, 3, "{'descr':'|i8','fortran_order':False,'shape':(7,)}",
               64);
  assert_int_equal(api_npy_parse(buf, n, &npy, &err), 0);
  assert_int_equal(npy.dtype, RD_INT64);
  assert_int_equal(npy.swap, 0);
  assert_int_equal(npy.rank, 1);
  assert_int_equal(npy.shape[0], 7);

  static const struct {
    const char *d;
    int dt;
    int swap;
  } types[] = {
    { "<f2", RD_FLOAT16, 0 },
    { ">f2", RD_FLOAT16, 1 },
    { "<i4", RD_INT32, 0 },
    { ">i4", RD_INT32, 1 },
    { "<u4", RD_UINT32, 0 },
    { ">u8", RD_UINT64, 1 },
    { "=f4", RD_FLOAT32, 0 },
    { "|u4", RD_UINT32, 0 },
    /* the one-byte types numpy writes with '|', and the two-byte ones */
    { "|b1", RD_BOOL, 0 },
    { "|i1", RD_INT8, 0 },
    { "|u1", RD_UINT8, 0 },
    { "<i1", RD_INT8, 0 },
    { "<i2", RD_INT16, 0 },
    { ">i2", RD_INT16, 1 },
    { "<u2", RD_UINT16, 0 },
    { ">u2", RD_UINT16, 1 },
  };
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    char dict[128];
    snprintf(dict, sizeof dict,
             "{'descr': '%s', 'fortran_order': False, "
             "'shape': (0, 4, 1), }",
             types[i].d);
    assert_int_equal(npy_dict(dict, &npy, &err), 0);
    assert_int_equal(npy.dtype, types[i].dt);
    assert_int_equal(npy.swap, types[i].swap);
    assert_int_equal(npy.rank, 3);
    assert_int_equal(npy.shape[0], 0);
  }
}

static void test_npy_parse_hostile(void **state)
{
  unsigned char buf[4096];
  struct api_npy npy;
  struct rd_error err;
  size_t n;

  (void)state;
  /* A pickle, and other files. */
  memcpy(buf, "\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00", 11);
  assert_int_equal(api_npy_parse(buf, 11, &npy, &err), API_E_BAD_NPY);
  assert_msg_has(&err, "not a .npy file");
  /* Versions. */
  n = make_npy(buf, 1,
               "{'descr': '<f4', 'fortran_order': False, "
               "'shape': (1,), }",
               64);
  buf[6] = 4;
  assert_int_equal(api_npy_parse(buf, n, &npy, &err), API_E_BAD_NPY);
  assert_msg_has(&err, "4.0");
  buf[6] = 1;
  buf[7] = 1;
  assert_int_equal(api_npy_parse(buf, n, &npy, &err), API_E_BAD_NPY);
  /* A huge header length (v2: 4 bytes) is refused before it is read. */
  n = make_npy(buf, 2, "{}", 0);
  buf[8] = buf[9] = buf[10] = 0xff;
  buf[11] = 0x7f;
  assert_int_equal(api_npy_parse(buf, 12, &npy, &err), API_E_BAD_NPY);
  assert_msg_has(&err, "limit");
  /* No newline at the declared end. */
  n = make_npy(buf, 1,
               "{'descr': '<f4', 'fortran_order': False, "
               "'shape': (1,), }",
               64);
  buf[n - 1] = ' ';
  assert_int_equal(api_npy_parse(buf, n, &npy, &err), API_E_BAD_NPY);

  static const struct {
    const char *dict;
    int code;
    const char *why;
  } bad[] = {
    { "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", RD_E_DTYPE,
      "object" },
    { "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, "
      "'shape': (2,), }",
      RD_E_DTYPE, "structured" },
    { "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", RD_E_DTYPE,
      "<c8" },
    { "{'descr': '|b2', 'fortran_order': False, 'shape': (2,), }", RD_E_DTYPE,
      "|b2" },
    { "{'descr': '<i3', 'fortran_order': False, 'shape': (2,), }", RD_E_DTYPE,
      "|b1" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
      API_E_BAD_NPY, "unknown key" },
    { "{'descr': '<f4', 'shape': (2,), }", API_E_BAD_NPY, "fortran_order" },
    { "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
      "'shape': (2,)}",
      API_E_BAD_NPY, "repeated" },
    { "{'descr': '<f4', 'fortran_order': Trueish, 'shape': (2,)}",
      API_E_BAD_NPY, "True or False" },
    { "{'descr': '<f4', 'fortran_order': 1, 'shape': (2,)}", API_E_BAD_NPY,
      "True or False" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", API_E_BAD_NPY,
      "trailing comma" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", API_E_BAD_NPY,
      "non-negative" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", API_E_BAD_NPY,
      "tuple" },
    { "{'descr': '<f4', 'fortran_order': False, "
      "'shape': (99999999999999999999,)}",
      RD_E_DIM, "too large" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': "
      "(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)}",
      RD_E_RANK, "32" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x",
      API_E_BAD_NPY, "after" },
    { "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,)}",
      API_E_BAD_NPY, "descr" },
    { "{'descr': __import__('os').system('true'), 'fortran_order': False, "
      "'shape': (2,)}",
      API_E_BAD_NPY, "descr" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", API_E_BAD_NPY,
      "expected" },
    { "", API_E_BAD_NPY, "'{'" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\t\x01",
      API_E_BAD_NPY, "control" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
      "'\xc3\xa9': 1}",
      API_E_BAD_NPY, "non-ASCII" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&err, 0, sizeof err);
    if (npy_dict(bad[i].dict, &npy, &err) != bad[i].code)
      fail_msg("case %zu: code %d (%s), expected %d", i, err.code, err.msg,
               bad[i].code);
    assert_msg_has(&err, bad[i].why);
  }
}

static void test_npy_write(void **state)
{
  static const int64_t shape[2] = { 3, 2 };
  static const int64_t one[1] = { 5 };
  const char *want = "{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (3, 2), }";
  struct api_buf b;
  struct api_npy npy;
  struct rd_error err;

  (void)state;
  api_buf_init(&b);
  assert_int_equal(api_npy_write_header(RD_FLOAT32, 2, shape, &b, &err), 0);
  /* 10 + 59 + '\n' = 70: padded to 128, so the length field is 118. */
  assert_int_equal(b.len, 128);
  assert_memory_equal(b.data, "\x93NUMPY\x01\x00\x76\x00", 10);
  assert_memory_equal(b.data + 10, want, strlen(want));
  for (size_t i = 10 + strlen(want); i < 127; i++)
    assert_int_equal(b.data[i], ' ');
  assert_int_equal(b.data[127], '\n');
  assert_int_equal(api_npy_parse(b.data, b.len, &npy, &err), 0);
  assert_int_equal(npy.rank, 2);
  api_buf_free(&b);

  assert_int_equal(api_npy_write_header(RD_UINT64, 1, one, &b, &err), 0);
  assert_non_null(strstr(b.data + 10, "'descr': '<u8'"));
  assert_non_null(strstr(b.data + 10, "'shape': (5,)"));
  api_buf_free(&b);
  assert_int_equal(api_npy_write_header(RD_INT32, 0, NULL, &b, &err), 0);
  assert_non_null(strstr(b.data + 10, "'shape': ()"));
  assert_int_equal(b.len % 64, 0);
  api_buf_free(&b);

  assert_int_equal(api_npy_write_header(RD_BFLOAT16, 1, one, &b, &err),
                   API_E_NOT_ACCEPTABLE);
  assert_msg_has(&err, "bfloat16");
  assert_int_equal(b.len, 0);
  api_buf_free(&b);
}

/* ================================================================== */
/* Accept                                                             */
/* ================================================================== */

static int pick(const char *accept, int req_fmt, int dtype,
                struct rd_error *err)
{
  struct api_accept acc;
  int fmt = -1, rc;

  rc = api_accept_parse(accept, req_fmt, &acc, err);
  if (rc != 0)
    return rc;
  rc = api_accept_pick(&acc, dtype, &fmt, err);
  return rc != 0 ? rc : fmt;
}

static void test_accept(void **state)
{
  struct rd_error err;

  (void)state;
  assert_int_equal(pick(NULL, API_FMT_RAW, RD_FLOAT32, &err), API_FMT_RAW);
  assert_int_equal(pick("  ", API_FMT_NPY, RD_FLOAT32, &err), API_FMT_NPY);
  assert_int_equal(pick("*/*", API_FMT_JSON, RD_FLOAT32, &err), API_FMT_JSON);
  assert_int_equal(pick("application/*", API_FMT_NPY, RD_FLOAT32, &err),
                   API_FMT_NPY);
  assert_int_equal(pick("application/json", API_FMT_RAW, RD_FLOAT32, &err),
                   API_FMT_JSON);
  assert_int_equal(pick("Application/X-NPY", API_FMT_JSON, RD_FLOAT32, &err),
                   API_FMT_NPY);
  assert_int_equal(pick("application/octet-stream;q=0.5, application/json;"
                        "q=0.9",
                        API_FMT_NPY, RD_FLOAT32, &err),
                   API_FMT_JSON);
  /* An explicit type beats the wildcard at the same q. */
  assert_int_equal(pick("*/*, application/x-npy", API_FMT_JSON, RD_FLOAT32,
                        &err),
                   API_FMT_JSON); /* own format first */
  assert_int_equal(pick("text/html, application/x-npy, application/json",
                        API_FMT_RAW, RD_FLOAT32, &err),
                   API_FMT_JSON);
  assert_int_equal(pick("*/*;q=0.1, application/x-npy", API_FMT_JSON,
                        RD_FLOAT32, &err),
                   API_FMT_NPY);
  /* q=0 excludes; the most specific range decides. */
  assert_int_equal(pick("*/*, application/json;q=0", API_FMT_JSON, RD_FLOAT32,
                        &err),
                   API_FMT_RAW);
  assert_int_equal(pick("application/*;q=0.2, application/x-npy;q=1.000",
                        API_FMT_RAW, RD_FLOAT32, &err),
                   API_FMT_NPY);
  /* A malformed q accepts nothing. */
  assert_int_equal(pick("application/json;q=2, application/x-npy;q=0.3",
                        API_FMT_JSON, RD_FLOAT32, &err),
                   API_FMT_NPY);
  assert_int_equal(pick("application/json;q=0.0001", API_FMT_JSON, RD_FLOAT32,
                        &err),
                   API_E_NOT_ACCEPTABLE);
  /* Nothing we offer. */
  assert_int_equal(pick("text/html", API_FMT_JSON, RD_FLOAT32, &err),
                   API_E_NOT_ACCEPTABLE);
  assert_msg_has(&err, "text/html");
  assert_int_equal(pick("image/*, foo", API_FMT_RAW, RD_FLOAT32, &err),
                   API_E_NOT_ACCEPTABLE);
  /* bfloat16 has no .npy descr: refused, or another acceptable format. */
  assert_int_equal(pick("application/x-npy", API_FMT_JSON, RD_BFLOAT16, &err),
                   API_E_NOT_ACCEPTABLE);
  assert_msg_has(&err, "bfloat16");
  assert_msg_has(&err, "application/octet-stream");
  assert_int_equal(pick(NULL, API_FMT_NPY, RD_BFLOAT16, &err), API_FMT_JSON);
  assert_int_equal(pick("application/x-npy, application/octet-stream;q=0.1",
                        API_FMT_JSON, RD_BFLOAT16, &err),
                   API_FMT_RAW);
}

/* ================================================================== */
/* Layout, plans, encoders                                            */
/* ================================================================== */

static void test_swap_and_transpose(void **state)
{
  unsigned char b[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
  /* Fortran layout of [[0,1,2],[3,4,5]]: column by column. */
  static const int32_t f[6] = { 0, 3, 1, 4, 2, 5 };
  static const int64_t shape2[2] = { 2, 3 };
  /* [2,3,2]: element (i,j,k) = 100i + 10j + k, Fortran offset i+2j+6k. */
  static const int64_t shape3[3] = { 2, 3, 2 };
  int32_t f3[12], c3[12], c[6];

  (void)state;
  api_swap_bytes(b, 8, 4);
  assert_memory_equal(b, "\x04\x03\x02\x01\x08\x07\x06\x05", 8);
  api_swap_bytes(b, 8, 8);
  assert_memory_equal(b, "\x05\x06\x07\x08\x01\x02\x03\x04", 8);
  api_swap_bytes(b, 8, 1);
  assert_memory_equal(b, "\x05\x06\x07\x08\x01\x02\x03\x04", 8);

  api_fortran_to_c(f, c, 2, shape2, sizeof f[0]);
  for (int i = 0; i < 6; i++)
    assert_int_equal(c[i], i);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 2; k++)
        f3[i + 2 * j + 6 * k] = 100 * i + 10 * j + k;
  api_fortran_to_c(f3, c3, 3, shape3, sizeof f3[0]);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 2; k++)
        assert_int_equal(c3[6 * i + 2 * j + k], 100 * i + 10 * j + k);
}

/* A Fortran-order [2,3,4] tensor reduced over axis -2 (keepdims 0) gives
 * the [2,4] result of the same logical tensor in C order. */
static void test_fortran_plan(void **state)
{
  static const int64_t shape[3] = { 2, 3, 4 };
  static const int64_t axes[1] = { -2 };
  struct rd_params p;
  struct rd_plan lp, pp;
  struct rd_error err;
  int32_t cdata[24], fdata[24], out[8], outc[8];

  (void)state;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) {
        int32_t v = 1 + i + 2 * j + 3 * k;
        cdata[12 * i + 4 * j + k] = v;
        fdata[i + 2 * j + 6 * k] = v;
      }
  rd_params_init(&p);
  p.op = RD_OP_SUM_SQUARE;
  p.dtype = RD_INT32;
  p.rank = 3;
  p.shape = shape;
  p.axes = axes;
  p.naxes = 1;
  p.keepdims = 0;
  assert_int_equal(api_binary_plan(&p, 1, &lp, &pp, &err), 0);
  assert_int_equal(lp.out_rank, 2);
  assert_int_equal(lp.out_shape[0], 2);
  assert_int_equal(lp.out_shape[1], 4);
  assert_int_equal(pp.in_shape[0], 4); /* reversed */
  assert_int_equal(pp.in_shape[2], 2);
  assert_int_equal(pp.out_shape[0], 4);
  assert_int_equal(rd_execute(&pp, fdata, out, &err), 0);
  api_fortran_to_c(out, outc, lp.out_rank, lp.out_shape, 4);
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 4; k++) {
      int32_t want = 0;
      for (int j = 0; j < 3; j++) {
        int32_t v = cdata[12 * i + 4 * j + k];
        want += v * v;
      }
      assert_int_equal(outc[4 * i + k], want);
    }
  /* Errors name the axes as written. */
  {
    static const int64_t bad[1] = { 3 };
    p.axes = bad;
    assert_int_equal(api_binary_plan(&p, 1, &lp, &pp, &err), RD_E_AXIS_RANGE);
    assert_msg_has(&err, "3");
  }
}

static void test_encode(void **state)
{
  static const int64_t shape[2] = { 2, 2 };
  static const int64_t axes[1] = { 1 };
  struct rd_params p;
  struct rd_plan plan;
  struct rd_error err;
  struct api_buf b;
  struct api_npy npy;
  char hdr[API_SHAPE_HDR_MAX];
  /* 1.5f = 0x3fc00000, -2.0f = 0xc0000000 */
  static const float out[2] = { 1.5f, -2.0f };

  (void)state;
  rd_params_init(&p);
  p.op = RD_OP_L2;
  p.dtype = RD_FLOAT32;
  p.rank = 2;
  p.shape = shape;
  p.axes = axes;
  p.naxes = 1;
  assert_int_equal(rd_plan_init(&plan, &p, &err), 0);
  api_shape_header(&plan, hdr);
  assert_string_equal(hdr, "[2,1]");

  api_buf_init(&b);
  assert_int_equal(api_encode_result(API_FMT_RAW, &plan, 18, out, &b, &err), 0);
  assert_int_equal(b.len, 8);
  assert_memory_equal(b.data, "\x00\x00\xc0\x3f\x00\x00\x00\xc0", 8);
  api_buf_free(&b);

  assert_int_equal(api_encode_result(API_FMT_NPY, &plan, 18, out, &b, &err), 0);
  assert_int_equal(b.len, 128 + 8);
  assert_int_equal(api_npy_parse(b.data, b.len, &npy, &err), 0);
  assert_int_equal(npy.header_len, 128);
  assert_int_equal(npy.rank, 2);
  assert_int_equal(npy.shape[1], 1);
  assert_memory_equal(b.data + 128, "\x00\x00\xc0\x3f\x00\x00\x00\xc0", 8);
  api_buf_free(&b);

  assert_int_equal(api_encode_result(API_FMT_JSON, &plan, 18, out, &b, &err),
                   0);
  assert_string_equal(b.data,
                      "{\"op\":\"ReduceL2\",\"opset\":18,\"op_version\""
                      ":18,\"output\":{\"dtype\":\"float32\",\"shape\":[2,1],"
                      "\"data\":[1.5,-2]}}");
  api_buf_free(&b);

  p.keepdims = 0;
  p.naxes = 0;
  assert_int_equal(rd_plan_init(&plan, &p, &err), 0);
  api_shape_header(&plan, hdr);
  assert_string_equal(hdr, "[]");
}

/* The query parameters of ArgMax/ArgMin and the fields an op does not
 * take (issue 11). */
static void test_query_arg(void **state)
{
  struct api_request req;
  struct rd_error err;

  (void)state;
  assert_int_equal(query("op=ArgMax&axis=-2&select_last_index=1&keepdims=0"
                         "&dtype=int16&shape=2,3",
                         API_FMT_RAW, &req, &err),
                   0);
  assert_int_equal(req.params.op, RD_OP_ARGMAX);
  assert_int_equal(req.params.axis, -2);
  assert_int_equal(req.params.select_last_index, 1);
  assert_int_equal(req.params.dtype, RD_INT16);
  assert_int_equal(req.params.keepdims, 0);
  assert_int_equal(req.params.naxes, 0);
  assert_int_equal(query("op=ArgMin&select_last_index=true", API_FMT_NPY, &req,
                         &err),
                   0);
  assert_int_equal(req.params.select_last_index, 1);
  assert_true(req.params.axis == RD_UNSET);
  assert_int_equal(query("op=ReduceMax&dtype=bool&shape=4", API_FMT_RAW, &req,
                         &err),
                   0);
  assert_int_equal(req.params.dtype, RD_BOOL);
  assert_true(req.params.axis == RD_UNSET);
  assert_true(req.params.select_last_index == RD_UNSET);
  for (const char *const *d = (const char *const[]){ "int8", "uint8", "int16",
                                                     "uint16", "bool", NULL };
       *d != NULL; d++) {
    char qs[64];
    snprintf(qs, sizeof qs, "op=ArgMax&dtype=%s&shape=1", *d);
    assert_int_equal(query(qs, API_FMT_RAW, &req, &err), 0);
    assert_string_equal(rd_dtype_name(req.params.dtype), *d);
  }
  /* bad values */
  assert_int_equal(query("op=ArgMax&axis=x", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);
  assert_msg_has(&err, "query parameter axis = \"x\": must be an integer");
  assert_int_equal(query("op=ArgMax&axis=true", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);
  assert_int_equal(query("op=ArgMax&select_last_index=yes", API_FMT_NPY, &req,
                         &err),
                   API_E_INVALID_FIELD);
  assert_msg_has(&err, "or true/false");
  assert_int_equal(query("op=ArgMax&axis=-9223372036854775808", API_FMT_NPY,
                         &req, &err),
                   RD_E_AXIS_RANGE);
  assert_int_equal(query("op=ArgMax&select_last_index=-9223372036854775808",
                         API_FMT_NPY, &req, &err),
                   RD_E_SELECT_LAST);
  assert_int_equal(query("op=ArgMax&axis=0&axis=1", API_FMT_NPY, &req, &err),
                   API_E_INVALID_FIELD);
  assert_msg_has(&err, "more than once");
  /* not taken by the op: named, whatever the order of the parameters */
  assert_int_equal(query("op=ReduceSum&axis=0", API_FMT_NPY, &req, &err),
                   RD_E_ATTRIBUTE);
  assert_msg_has(&err, "query parameter axis is not an attribute of "
                       "ReduceSum");
  assert_int_equal(query("axis=0&op=ReduceL1", API_FMT_NPY, &req, &err),
                   RD_E_ATTRIBUTE);
  assert_msg_has(&err, "ReduceL1");
  assert_int_equal(query("op=ReduceMean&select_last_index=0", API_FMT_NPY, &req,
                         &err),
                   RD_E_ATTRIBUTE);
  assert_msg_has(&err, "select_last_index");
  assert_int_equal(query("axes=1&op=ArgMax", API_FMT_NPY, &req, &err),
                   RD_E_ATTRIBUTE);
  assert_msg_has(&err, "query parameter axes is not an attribute of ArgMax");
  assert_int_equal(query("op=ArgMin&axes=", API_FMT_NPY, &req, &err),
                   RD_E_ATTRIBUTE);
  assert_int_equal(query("op=ArgMin&noop_with_empty_axes=0", API_FMT_NPY, &req,
                         &err),
                   RD_E_ATTRIBUTE);
  assert_msg_has(&err, "noop_with_empty_axes");
  /* the unknown-parameter message lists the new names */
  assert_int_equal(query("op=ArgMax&axiz=0", API_FMT_NPY, &req, &err),
                   API_E_UNKNOWN_FIELD);
  assert_msg_has(&err, "axis");
  assert_msg_has(&err, "select_last_index");
}

static void test_npy_new_descrs(void **state)
{
  static const struct {
    int dt;
    const char *d;
  } le[] = {
    { RD_BOOL, "|b1" },  { RD_INT8, "|i1" },   { RD_UINT8, "|u1" },
    { RD_INT16, "<i2" }, { RD_UINT16, "<u2" }, { RD_INT64, "<i8" },
  };
  static const int64_t shape[1] = { 3 };
  struct api_buf b;
  struct api_npy npy;
  struct rd_error err;

  (void)state;
  for (size_t i = 0; i < sizeof le / sizeof le[0]; i++) {
    assert_string_equal(api_npy_descr(le[i].dt), le[i].d);
    /* what is written reads back */
    api_buf_init(&b);
    assert_int_equal(api_npy_write_header(le[i].dt, 1, shape, &b, &err), 0);
    /* 10 bytes before the dict; the dict and '\n' take it past 64 */
    assert_int_equal(b.len, 128);
    assert_non_null(memmem(b.data, b.len, le[i].d, 3));
    assert_int_equal(api_npy_parse(b.data, b.len, &npy, &err), 0);
    assert_int_equal(npy.dtype, le[i].dt);
    assert_int_equal(npy.rank, 1);
    assert_int_equal(npy.shape[0], 3);
    api_buf_free(&b);
  }
  assert_null(api_npy_descr(RD_BFLOAT16));
}

/* ArgMax of a Fortran-order .npy: the axis is mapped like the axes. */
static void test_fortran_plan_arg(void **state)
{
  static const int64_t shape[2] = { 2, 3 };
  /* C order [[1,-2,3],[4,5,-6]]; Fortran order stores columns first */
  static const float fdata[6] = { 1, 4, -2, 5, 3, -6 };
  struct rd_params p;
  struct rd_plan lp, pp;
  struct rd_error err;
  int64_t out[3];

  (void)state;
  rd_params_init(&p);
  p.op = RD_OP_ARGMAX;
  p.dtype = RD_FLOAT32;
  p.rank = 2;
  p.shape = shape;
  p.axis = 1;
  p.keepdims = 0;
  assert_int_equal(api_binary_plan(&p, 1, &lp, &pp, &err), 0);
  assert_int_equal(lp.axis, 1);
  assert_int_equal(pp.axis, 0); /* rank - 1 - 1 */
  assert_int_equal(lp.out_dtype, RD_INT64);
  assert_int_equal(lp.out_rank, 1);
  assert_int_equal(lp.out_shape[0], 2);
  assert_int_equal(rd_execute(&pp, fdata, out, &err), 0);
  /* row maxima: 3 at 2, 5 at 1 */
  assert_int_equal(out[0], 2);
  assert_int_equal(out[1], 1);
  /* the default axis 0 maps to the physical axis 1 */
  p.axis = RD_UNSET;
  assert_int_equal(api_binary_plan(&p, 1, &lp, &pp, &err), 0);
  assert_int_equal(lp.axis, 0);
  assert_int_equal(pp.axis, 1);
  assert_int_equal(rd_execute(&pp, fdata, out, &err), 0);
  /* column maxima: 4 at 1, 5 at 1, 3 at 0 */
  assert_int_equal(out[0], 1);
  assert_int_equal(out[1], 1);
  assert_int_equal(out[2], 0);
  /* errors name the axis as written */
  p.axis = 2;
  assert_int_equal(api_binary_plan(&p, 1, &lp, &pp, &err), RD_E_AXIS_RANGE);
  assert_msg_has(&err, "2");
}

/* Raw and .npy answers of an int64 (ArgMax) and a bool output. */
static void test_encode_out_dtype(void **state)
{
  struct rd_plan plan;
  struct rd_error err;
  struct api_buf b;
  struct api_npy npy;
  const int64_t idx[2] = { 1, 258 };
  const uint8_t flags[3] = { 1, 0, 1 };

  (void)state;
  memset(&plan, 0, sizeof plan);
  plan.op = RD_OP_ARGMAX;
  plan.version = 13;
  plan.dtype = RD_INT8;
  plan.elem_size = 1;
  plan.out_dtype = RD_INT64;
  plan.out_elem_size = 8;
  plan.out_rank = 1;
  plan.out_shape[0] = 2;
  plan.out_count = 2;
  plan.out_bytes = 16;
  api_buf_init(&b);
  assert_int_equal(api_encode_result(API_FMT_RAW, &plan, 18, idx, &b, &err), 0);
  assert_int_equal(b.len, 16);
  assert_memory_equal(b.data, "\x01\0\0\0\0\0\0\0\x02\x01\0\0\0\0\0\0", 16);
  api_buf_free(&b);
  assert_int_equal(api_encode_result(API_FMT_NPY, &plan, 18, idx, &b, &err), 0);
  assert_int_equal(api_npy_parse(b.data, b.len, &npy, &err), 0);
  assert_int_equal(npy.dtype, RD_INT64);
  assert_int_equal(b.len, npy.header_len + 16);
  api_buf_free(&b);
  assert_int_equal(api_encode_result(API_FMT_JSON, &plan, 18, idx, &b, &err),
                   0);
  assert_string_equal(b.data,
                      "{\"op\":\"ArgMax\",\"opset\":18,\"op_version\":"
                      "13,\"output\":{\"dtype\":\"int64\",\"shape\":[2],"
                      "\"data\":[1,258]}}");
  api_buf_free(&b);

  plan.op = RD_OP_MAX;
  plan.version = 20;
  plan.dtype = plan.out_dtype = RD_BOOL;
  plan.out_elem_size = 1;
  plan.out_shape[0] = 3;
  plan.out_count = 3;
  plan.out_bytes = 3;
  assert_int_equal(api_encode_result(API_FMT_NPY, &plan, 20, flags, &b, &err),
                   0);
  assert_int_equal(api_npy_parse(b.data, b.len, &npy, &err), 0);
  assert_int_equal(npy.dtype, RD_BOOL);
  assert_non_null(memmem(b.data, npy.header_len, "'|b1'", 5));
  assert_memory_equal(b.data + npy.header_len, "\x01\x00\x01", 3);
  api_buf_free(&b);
  assert_int_equal(api_encode_result(API_FMT_JSON, &plan, 20, flags, &b, &err),
                   0);
  assert_non_null(strstr(b.data, "\"dtype\":\"bool\",\"shape\":[3],"
                                 "\"data\":[true,false,true]}}"));
  api_buf_free(&b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_content_type),
    cmocka_unit_test(test_query_raw_full),
    cmocka_unit_test(test_query_defaults_and_empty_lists),
    cmocka_unit_test(test_query_errors),
    cmocka_unit_test(test_npy_parse_valid),
    cmocka_unit_test(test_npy_parse_hostile),
    cmocka_unit_test(test_npy_write),
    cmocka_unit_test(test_accept),
    cmocka_unit_test(test_swap_and_transpose),
    cmocka_unit_test(test_fortran_plan),
    cmocka_unit_test(test_encode),
    cmocka_unit_test(test_query_arg),
    cmocka_unit_test(test_npy_new_descrs),
    cmocka_unit_test(test_fortran_plan_arg),
    cmocka_unit_test(test_encode_out_dtype),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
