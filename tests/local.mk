# tests/ - black-box tests against the real daemon (unit tests live with
# their module's local.mk).
EXTRA_DIST += tests/integration tests/conformance
check_PROGRAMS += tests/conformance/conformance
tests_conformance_conformance_SOURCES = tests/conformance/conformance.c
tests_conformance_conformance_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CURL_CFLAGS)
tests_conformance_conformance_LDADD = $(JANSSON_LIBS) $(CURL_LIBS) -lm
TESTS += tests/integration/run.sh tests/conformance/run.sh
