# api/ - wire formats: decode requests, encode results and errors (no HTTP).
noinst_LIBRARIES += api/libapi.a
api_libapi_a_SOURCES = \
	api/api.h api/errors.c \
	api/buf.h api/buf.c \
	api/mem.h api/mem.c \
	api/tmem.h api/tmem.c \
	api/numfmt.h api/numfmt.c \
	api/jsonconv.h api/jsonconv.c \
	api/json.c api/jsonfast.h api/jsonfast.c \
	api/jsonpush.h api/jsonpush.c \
	api/binary.h api/binary.c \
	api/v2.h api/v2.c \
	api/prefix.h api/prefix.c \
	api/proto.h api/proto.c \
	api/encoding.h api/encoding.c
api_libapi_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(ZLIB_CFLAGS)
# api/ sees lib/ and itself (Makefile.am, layering).
api_libapi_a_CPPFLAGS = $(API_CPPFLAGS)

check_PROGRAMS += tests/unit/test_api
UNIT_TESTS += tests/unit/test_api
# runs decoded requests through rd_execute: again on every kernel path
KERNEL_UNIT_TESTS += tests/unit/test_api
tests_unit_test_api_SOURCES = tests/unit/test_api.c
tests_unit_test_api_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_api_LDADD = api/libapi.a lib/libreduce.a $(JANSSON_LIBS) $(CMOCKA_LIBS) -lm

# The fast path of the decoder against jansson's path (differential).
check_PROGRAMS += tests/unit/test_jsonfast
UNIT_TESTS += tests/unit/test_jsonfast
tests_unit_test_jsonfast_SOURCES = tests/unit/test_jsonfast.c
tests_unit_test_jsonfast_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_jsonfast_LDADD = api/libapi.a lib/libreduce.a $(JANSSON_LIBS) $(CMOCKA_LIBS) -lm

# api_mem_ahead(): the frontier, and the pages resident (mincore()).
check_PROGRAMS += tests/unit/test_mem
UNIT_TESTS += tests/unit/test_mem
tests_unit_test_mem_SOURCES = tests/unit/test_mem.c
tests_unit_test_mem_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_mem_LDADD = api/libapi.a $(CMOCKA_LIBS)

# api/tmem.h: realloc across kinds, the cache (reuse of resident pages,
# smallest fit, eviction, trim by age), shrinking (mincore()).
check_PROGRAMS += tests/unit/test_tmem
UNIT_TESTS += tests/unit/test_tmem
tests_unit_test_tmem_SOURCES = tests/unit/test_tmem.c
tests_unit_test_tmem_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_tmem_LDADD = api/libapi.a $(CMOCKA_LIBS)

# The push decoder fed in chunks against api_json_decode() on the whole body.
check_PROGRAMS += tests/unit/test_jsonpush
UNIT_TESTS += tests/unit/test_jsonpush
tests_unit_test_jsonpush_SOURCES = tests/unit/test_jsonpush.c tests/fuzz/jpush_same.h
tests_unit_test_jsonpush_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_jsonpush_LDADD = api/libapi.a lib/libreduce.a $(JANSSON_LIBS) $(CMOCKA_LIBS) -lm

check_PROGRAMS += tests/unit/test_binary
UNIT_TESTS += tests/unit/test_binary
KERNEL_UNIT_TESTS += tests/unit/test_binary
tests_unit_test_binary_SOURCES = tests/unit/test_binary.c
tests_unit_test_binary_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_binary_LDADD = api/libapi.a lib/libreduce.a $(JANSSON_LIBS) $(CMOCKA_LIBS) -lm

check_PROGRAMS += tests/unit/test_v2
UNIT_TESTS += tests/unit/test_v2
tests_unit_test_v2_SOURCES = tests/unit/test_v2.c
tests_unit_test_v2_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_v2_LDADD = api/libapi.a lib/libreduce.a $(JANSSON_LIBS) $(CMOCKA_LIBS) -lm

# The push decoder of binary bodies' prefixes, fed split at every byte.
check_PROGRAMS += tests/unit/test_prefix
UNIT_TESTS += tests/unit/test_prefix
tests_unit_test_prefix_SOURCES = tests/unit/test_prefix.c
tests_unit_test_prefix_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_prefix_LDADD = api/libapi.a lib/libreduce.a $(JANSSON_LIBS) $(CMOCKA_LIBS) -lm

# The /v1 and /v2 rows of the protocol table.
check_PROGRAMS += tests/unit/test_proto
UNIT_TESTS += tests/unit/test_proto
tests_unit_test_proto_SOURCES = tests/unit/test_proto.c
tests_unit_test_proto_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_proto_LDADD = api/libapi.a lib/libreduce.a $(JANSSON_LIBS) $(CMOCKA_LIBS) -lm

# The content-coding decoder and encoder (zlib).
check_PROGRAMS += tests/unit/test_encoding
UNIT_TESTS += tests/unit/test_encoding
tests_unit_test_encoding_SOURCES = tests/unit/test_encoding.c
tests_unit_test_encoding_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(ZLIB_CFLAGS)
tests_unit_test_encoding_LDADD = api/libapi.a lib/libreduce.a $(ZLIB_LIBS) $(CMOCKA_LIBS) -lm

# api_format_elem() against the formatter it replaced (byte for byte).
check_PROGRAMS += tests/unit/test_numfmt
UNIT_TESTS += tests/unit/test_numfmt
tests_unit_test_numfmt_SOURCES = tests/unit/test_numfmt.c tests/unit/numfmt_oracle.c
tests_unit_test_numfmt_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_numfmt_LDADD = api/libapi.a lib/libreduce.a $(CMOCKA_LIBS) -lm
