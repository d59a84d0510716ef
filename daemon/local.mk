# daemon/ - the server: HTTP (libmicrohttpd), worker pool (libuv), config, logs.
# (The settings module is conf.c/conf.h so that it does not shadow autoconf's
# config.h.)
bin_PROGRAMS += daemon/reduced
daemon_reduced_SOURCES = \
	daemon/main.c \
	daemon/conf.h daemon/conf.c \
	daemon/log.h daemon/log.c \
	daemon/server.h daemon/server.c \
	daemon/req.h daemon/req.c \
	daemon/http.h daemon/http.c \
	daemon/post.h daemon/post.c \
	daemon/auth.h daemon/auth.c \
	daemon/job.h daemon/job.c \
	daemon/metrics.h daemon/metrics.c \
	daemon/openapi.h
nodist_daemon_reduced_SOURCES = daemon/openapi_yaml.c
daemon_reduced_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(UV_CFLAGS) $(JANSSON_CFLAGS)
daemon_reduced_CPPFLAGS = $(DAEMON_CPPFLAGS)
daemon_reduced_LDADD = api/libapi.a lib/libreduce.a $(MHD_LIBS) $(UV_LIBS) $(JANSSON_LIBS) $(PTHREAD_LIBS) -lm

# Unit test of the option table (compiles the real conf.c and log.c).
check_PROGRAMS += tests/unit/test_conf
UNIT_TESTS += tests/unit/test_conf
tests_unit_test_conf_SOURCES = tests/unit/test_conf.c daemon/conf.c daemon/log.c
tests_unit_test_conf_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_conf_LDADD = $(CMOCKA_LIBS)

# Unit test of the API keys and TLS files (compiles the real auth.c).
check_PROGRAMS += tests/unit/test_auth
UNIT_TESTS += tests/unit/test_auth
tests_unit_test_auth_SOURCES = tests/unit/test_auth.c daemon/auth.c daemon/log.c
tests_unit_test_auth_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_auth_LDADD = $(CMOCKA_LIBS)

# api/openapi.yaml compiled in as a C string (daemon/openapi.h).  awk rather
# than xxd (not installed everywhere) or `ld -r -b binary` (GNU ld only, and
# symbol names that depend on the path).
daemon/openapi_yaml.c: $(top_srcdir)/api/openapi.yaml $(top_srcdir)/daemon/embed.awk
	$(AM_V_GEN)$(MKDIR_P) daemon && \
	LC_ALL=C $(AWK) -v name=openapi_yaml -f $(top_srcdir)/daemon/embed.awk \
	  $(top_srcdir)/api/openapi.yaml >$@.tmp && mv $@.tmp $@
CLEANFILES += daemon/openapi_yaml.c
EXTRA_DIST += api/openapi.yaml daemon/embed.awk docs/mhd-libuv.md

# Unit test of the metrics text (compiles the real metrics.c).
check_PROGRAMS += tests/unit/test_metrics
UNIT_TESTS += tests/unit/test_metrics
tests_unit_test_metrics_SOURCES = tests/unit/test_metrics.c daemon/metrics.c
tests_unit_test_metrics_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_metrics_LDADD = api/libapi.a lib/libreduce.a $(CMOCKA_LIBS) $(PTHREAD_LIBS) -lm
