# daemon/ - the server: HTTP (libmicrohttpd), worker pool (libuv), config, logs.
# (The settings module is conf.c/conf.h so that it does not shadow autoconf's
# config.h.)
bin_PROGRAMS += daemon/reduced
daemon_reduced_SOURCES = \
	daemon/main.c \
	daemon/conf.h daemon/conf.c \
	daemon/log.h daemon/log.c \
	daemon/http.h daemon/http.c \
	daemon/job.h daemon/job.c
daemon_reduced_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(UV_CFLAGS) $(JANSSON_CFLAGS)
daemon_reduced_LDADD = api/libapi.a lib/libreduce.a $(MHD_LIBS) $(UV_LIBS) $(JANSSON_LIBS) $(PTHREAD_LIBS) -lm

# Unit test of the option table (compiles the real conf.c and log.c).
check_PROGRAMS += tests/unit/test_conf
TESTS += tests/unit/test_conf
tests_unit_test_conf_SOURCES = tests/unit/test_conf.c daemon/conf.c daemon/log.c
tests_unit_test_conf_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_conf_LDADD = $(CMOCKA_LIBS)
