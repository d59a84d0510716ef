# api/oip.mk - the Open Inference Protocol's gRPC messages (api/oip.c) and
# their protobuf-c code, generated at build time from api/proto/*.proto.
EXTRA_DIST += api/proto/inference.proto api/proto/health.proto \
	tests/integration/grpc-node.cjs \
	tests/integration/grpc-py.py tests/integration/grpc-tsan.supp
if HAVE_GRPC
OIP_PB = api/proto/inference.pb-c.c api/proto/inference.pb-c.h \
	api/proto/health.pb-c.c api/proto/health.pb-c.h
CLEANFILES += $(OIP_PB)

# One rule writes both pairs (protoc-c has no per-file output names).
api/proto/inference.pb-c.c: $(top_srcdir)/api/proto/inference.proto $(top_srcdir)/api/proto/health.proto
	$(AM_V_GEN)$(MKDIR_P) api/proto && \
	$(PROTOC_C) --c_out=api/proto -I$(top_srcdir)/api/proto \
	  $(top_srcdir)/api/proto/inference.proto \
	  $(top_srcdir)/api/proto/health.proto
api/proto/inference.pb-c.h api/proto/health.pb-c.c api/proto/health.pb-c.h: api/proto/inference.pb-c.c
	@test -f $@ || { rm -f $<; $(MAKE) $(AM_MAKEFLAGS) $<; }

noinst_LIBRARIES += api/liboip.a
api_liboip_a_SOURCES = api/oip.h api/oip.c
nodist_api_liboip_a_SOURCES = $(OIP_PB)
# api/ sees lib/ and itself (Makefile.am, layering); the generated code is
# named from the build root ("api/proto/...", the default -I.).
api_liboip_a_CPPFLAGS = $(API_CPPFLAGS)
api_liboip_a_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS)
# Generated headers, before anything that includes them compiles.
api/liboip_a-oip.$(OBJEXT): api/proto/inference.pb-c.h api/proto/health.pb-c.h
tests/unit/tests_unit_test_oip-test_oip.$(OBJEXT): api/proto/inference.pb-c.h
OIP_LIBS = api/liboip.a api/libapi.a lib/libreduce.a $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) -lm

check_PROGRAMS += tests/unit/test_oip
UNIT_TESTS += tests/unit/test_oip
tests_unit_test_oip_SOURCES = tests/unit/test_oip.c
tests_unit_test_oip_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_unit_test_oip_LDADD = $(OIP_LIBS) $(CMOCKA_LIBS)

# fuzz_oip.c: the ModelInfer decoder and the metadata/health requests;
# `make check` replays its corpus (tests/fuzz/replay.sh), `make fuzz` fuzzes.
check_PROGRAMS += tests/fuzz/replay_oip
tests_fuzz_replay_oip_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_oip.c
tests_fuzz_replay_oip_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_fuzz_replay_oip_LDADD = $(OIP_LIBS)
tests/fuzz/tests_fuzz_replay_oip-fuzz_oip.$(OBJEXT): api/proto/inference.pb-c.h
endif
