# tests/fuzz/ - libFuzzer targets for every decoder that sees client bytes.
#   make fuzz [FUZZ_SECONDS=60]   build with clang-14 and fuzz each target
# `make check` replays each target's committed corpus (seeds and the named
# reproducers of past crashes) once, built with the normal compiler.
FUZZ_SECONDS = 60

check_PROGRAMS += tests/fuzz/replay_json tests/fuzz/replay_plan
TESTS += tests/fuzz/replay.sh
tests_fuzz_replay_json_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_json.c \
	tests/fuzz/jpush_same.h
tests_fuzz_replay_json_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_replay_json_LDADD = api/libapi.a lib/libreduce.a $(JANSSON_LIBS) -lm
tests_fuzz_replay_plan_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_plan.c
tests_fuzz_replay_plan_LDADD = lib/libreduce.a -lm

# The binary-format targets: fuzz_npy.c (the .npy header as the daemon
# reads it, round-tripped) and fuzz_query.c (query string, Content-Type,
# Accept) over api/binary.c.
check_PROGRAMS += tests/fuzz/replay_npy tests/fuzz/replay_query
tests_fuzz_replay_npy_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_npy.c
tests_fuzz_replay_npy_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_replay_npy_LDADD = api/libapi.a lib/libreduce.a $(JANSSON_LIBS) -lm
tests_fuzz_replay_query_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_query.c
tests_fuzz_replay_query_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_replay_query_LDADD = api/libapi.a lib/libreduce.a $(JANSSON_LIBS) -lm

# fuzz_prefix.c: api/prefix.c (the .npy and /v2 headers before tensor
# data) fed whole, cut in two and byte by byte: the answers must agree.
check_PROGRAMS += tests/fuzz/replay_prefix
tests_fuzz_replay_prefix_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_prefix.c
tests_fuzz_replay_prefix_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_replay_prefix_LDADD = api/libapi.a lib/libreduce.a $(JANSSON_LIBS) -lm

# fuzz_inflate.c: api/encoding.c (gzip / deflate bodies) fed whole and
# byte by byte through small windows: the answers must agree, and never
# more than the limit + 1 decoded bytes.
check_PROGRAMS += tests/fuzz/replay_inflate
tests_fuzz_replay_inflate_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_inflate.c
tests_fuzz_replay_inflate_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
tests_fuzz_replay_inflate_LDADD = api/libapi.a lib/libreduce.a $(ZLIB_LIBS) -lm

EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/replay.sh tests/fuzz/fuzz_json.dict \
	tests/fuzz/corpus

fuzz:
	top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' \
	FUZZ_WORK='$(abs_top_builddir)/fuzz' FUZZ_SECONDS='$(FUZZ_SECONDS)' \
	  bash '$(abs_top_srcdir)/tests/fuzz/run.sh'

.PHONY: fuzz
