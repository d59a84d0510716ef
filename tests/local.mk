# tests/ - black-box tests against the real daemon (unit tests live with
# their module's local.mk).  Both run.sh scripts start daemon/reduced
# themselves (or use $REDUCED_TEST_URL) and need curl.
EXTRA_DIST += \
	tests/integration/README.md tests/integration/run.sh tests/integration/lib.sh \
	tests/integration/t_reduce.sh tests/integration/t_dtypes.sh \
	tests/integration/t_errors.sh tests/integration/t_http.sh \
	tests/integration/t_cli.sh tests/integration/t_concurrency.sh \
	tests/integration/t_shutdown.sh tests/integration/t_binary.sh \
	tests/integration/t_readme.sh tests/integration/t_v2.sh \
	tests/integration/npytool.py \
	tests/integration/t_metrics.sh tests/integration/promcheck.awk \
	tests/integration/t_openapi.sh tests/integration/openapi-tool.cjs \
	tests/integration/t_security.sh tests/integration/t_limits.sh \
	tests/integration/t_client.sh tests/integration/client_test.py clients/python/reduced_client.py clients/python/README.md \
	tests/conformance/run.sh tests/conformance/onnx-node

# jtool: the JSON helper of the integration scripts (jq is not on CI).
check_PROGRAMS += tests/integration/jtool
tests_integration_jtool_SOURCES = tests/integration/jtool.c
tests_integration_jtool_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_integration_jtool_LDADD = $(JANSSON_LIBS) -lm

# tgen: raw tensors generated on the fly for the streaming tests.
check_PROGRAMS += tests/integration/tgen
tests_integration_tgen_SOURCES = tests/integration/tgen.c
tests_integration_tgen_LDADD = -lm

check_PROGRAMS += tests/conformance/conformance
tests_conformance_conformance_SOURCES = tests/conformance/conformance.c
tests_conformance_conformance_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CURL_CFLAGS)
tests_conformance_conformance_LDADD = $(JANSSON_LIBS) $(CURL_LIBS) -lm
TESTS += tests/integration/run.sh tests/conformance/run.sh
TESTS += tests/integration/t_client.sh
