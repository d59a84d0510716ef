# daemon/ - the server: HTTP (libmicrohttpd), worker pool (libuv), config, logs.
# (The settings module is conf.c/conf.h so that it does not shadow autoconf's
# config.h.)
bin_PROGRAMS += daemon/reduced
daemon_reduced_SOURCES = \
	daemon/main.c \
	daemon/conf.h daemon/conf.c \
	daemon/log.h daemon/log.c \
	daemon/server.h daemon/server.c \
	daemon/sock.h daemon/sock.c \
	daemon/req.h daemon/req.c \
	daemon/admit.h daemon/admit.c \
	daemon/http.h daemon/http.c \
	daemon/post.h daemon/post.c \
	daemon/auth.h daemon/auth.c \
	daemon/job.h daemon/job.c \
	daemon/metrics.h daemon/metrics.c \
	daemon/openapi.h \
	daemon/pages.h daemon/pages.c \
	daemon/zbody.h daemon/zbody.c
nodist_daemon_reduced_SOURCES = daemon/openapi_yaml.c daemon/pages_web.c
daemon_reduced_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(UV_CFLAGS) $(JANSSON_CFLAGS) $(ZLIB_CFLAGS)
daemon_reduced_CPPFLAGS = $(DAEMON_CPPFLAGS)
daemon_reduced_LDADD = api/libapi.a lib/libreduce.a $(MHD_LIBS) $(UV_LIBS) $(JANSSON_LIBS) $(ZLIB_LIBS) $(PTHREAD_LIBS) -lm

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
# counters bumped from several threads at once
THREADED_UNIT_TESTS += tests/unit/test_metrics
tests_unit_test_metrics_SOURCES = tests/unit/test_metrics.c daemon/metrics.c
tests_unit_test_metrics_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_metrics_LDADD = api/libapi.a lib/libreduce.a $(CMOCKA_LIBS) $(PTHREAD_LIBS) -lm

# The static pages (daemon/pages.h), compiled in like api/openapi.yaml:
# embed.awk turns each file into a C string named page_NAME.
#   pages_web.c   the playground at / (web/), always
#   pages_docs.c  /docs: web/docs.* and swagger-ui-dist's bundle, CSS and
#                 licence files from $(SWAGGER_UI_DIR) (the pinned npm
#                 package scripts/bootstrap.sh installs); not with
#                 ./configure --disable-docs-ui
EMBED_PAGE = LC_ALL=C $(AWK) -f $(top_srcdir)/daemon/embed.awk -v
PAGES_WEB = web/index.html web/playground.js web/playground.css
PAGES_DOCS = web/docs.html web/docs.css web/docs-init.js
daemon/pages_web.c: $(PAGES_WEB) $(top_srcdir)/daemon/embed.awk
	$(AM_V_GEN)$(MKDIR_P) daemon && { \
	  $(EMBED_PAGE) name=page_index_html $(top_srcdir)/web/index.html && \
	  $(EMBED_PAGE) name=page_playground_js $(top_srcdir)/web/playground.js && \
	  $(EMBED_PAGE) name=page_playground_css $(top_srcdir)/web/playground.css; \
	} >$@.tmp && mv $@.tmp $@
CLEANFILES += daemon/pages_web.c
EXTRA_DIST += $(PAGES_WEB) $(PAGES_DOCS) docs/pages.md
if DOCS_UI
nodist_daemon_reduced_SOURCES += daemon/pages_docs.c
SWAGGER_UI_FILES = swagger-ui-bundle.js swagger-ui.css LICENSE NOTICE \
	swagger-ui-bundle.js.LICENSE.txt
daemon/pages_docs.c: $(PAGES_DOCS) $(top_srcdir)/daemon/embed.awk
	@for f in $(SWAGGER_UI_FILES); do \
	  test -f '$(SWAGGER_UI_DIR)'/$$f || { \
	    echo "daemon/pages_docs.c: $(SWAGGER_UI_DIR)/$$f is missing: run scripts/bootstrap.sh (step: npm tools: swagger-ui-dist), or ./configure --disable-docs-ui" >&2; \
	    exit 1; }; \
	done
	$(AM_V_GEN)$(MKDIR_P) daemon && d='$(SWAGGER_UI_DIR)' && { \
	  $(EMBED_PAGE) name=page_docs_html $(top_srcdir)/web/docs.html && \
	  $(EMBED_PAGE) name=page_docs_css $(top_srcdir)/web/docs.css && \
	  $(EMBED_PAGE) name=page_docs_init_js $(top_srcdir)/web/docs-init.js && \
	  $(EMBED_PAGE) name=page_swagger_bundle_js "$$d/swagger-ui-bundle.js" && \
	  $(EMBED_PAGE) name=page_swagger_css "$$d/swagger-ui.css" && \
	  $(EMBED_PAGE) name=page_swagger_license "$$d/LICENSE" && \
	  $(EMBED_PAGE) name=page_swagger_notice "$$d/NOTICE" && \
	  $(EMBED_PAGE) name=page_swagger_bundle_license "$$d/swagger-ui-bundle.js.LICENSE.txt"; \
	} >$@.tmp && mv $@.tmp $@
endif
CLEANFILES += daemon/pages_docs.c
# Unit test of the admission queue (compiles the real admit.c, metrics.c).
check_PROGRAMS += tests/unit/test_admit
UNIT_TESTS += tests/unit/test_admit
tests_unit_test_admit_SOURCES = tests/unit/test_admit.c daemon/admit.c daemon/metrics.c daemon/log.c
tests_unit_test_admit_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(UV_CFLAGS)
tests_unit_test_admit_LDADD = api/libapi.a lib/libreduce.a $(CMOCKA_LIBS) $(UV_LIBS) $(PTHREAD_LIBS) -lm
