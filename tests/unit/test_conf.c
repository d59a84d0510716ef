/* test_conf.c - the daemon's option table: defaults, REDUCED_* variables,
 * flags, precedence, bounds and the --listen syntax.  Expected values are
 * the ones docs/http-api.md states. */
#include "config.h" /* autoconf */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"
#include "log.h"

static const char *const env_names[] = {
  "REDUCED_LISTEN",      "REDUCED_THREADS",         "REDUCED_MAX_BODY",
  "REDUCED_MAX_PENDING", "REDUCED_MAX_CONNECTIONS", "REDUCED_TIMEOUT",
  "REDUCED_GRACE",       "REDUCED_LOG_LEVEL",       "REDUCED_PORT_FILE",
};

static int clear_env(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof env_names / sizeof env_names[0]; i++)
    unsetenv(env_names[i]);
  return 0;
}

/* Parses a NULL-terminated flag list (program name added). */
static enum conf_result parse(struct conf *c, ...)
{
  static char *argv[32];
  int argc = 0;
  va_list ap;
  char *a;

  argv[argc++] = (char *)"reduced";
  va_start(ap, c);
  while ((a = va_arg(ap, char *)) != NULL && argc < 31)
    argv[argc++] = a;
  va_end(ap);
  argv[argc] = NULL;
  return conf_parse(c, argc, argv);
}

static void test_defaults(void **state)
{
  struct conf c;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);

  (void)state;
  assert_int_equal(parse(&c, NULL), CONF_RUN);
  assert_string_equal(c.listen, "127.0.0.1:8080");
  assert_string_equal(c.host, "127.0.0.1");
  assert_int_equal(c.port, 8080);
  assert_int_equal(c.threads, cpus < 1 ? 1 : cpus);
  assert_int_equal(c.max_body, 67108864);
  assert_int_equal(c.max_pending, 4096);
  assert_int_equal(c.max_inflight_bytes, UINT64_C(1073741824));
  assert_int_equal(c.queue_timeout, 10);
  assert_int_equal(c.max_connections, 1024);
  assert_int_equal(c.timeout, 30);
  assert_int_equal(c.grace, 10);
  assert_int_equal(c.log_level, LOG_LVL_INFO);
  assert_null(c.port_file);
}

static void test_flags(void **state)
{
  struct conf c;

  (void)state;
  assert_int_equal(parse(&c, "--listen", "0.0.0.0:0", "--threads", "3",
                         "--max-body=100", "--max-pending", "5",
                         "--max-connections", "7", "--timeout", "9", "--grace",
                         "0", "--log-level", "debug", "--port-file", "/tmp/p",
                         NULL),
                   CONF_RUN);
  assert_string_equal(c.host, "0.0.0.0");
  assert_int_equal(c.port, 0);
  assert_int_equal(c.threads, 3);
  assert_int_equal(c.max_body, 100);
  assert_int_equal(c.max_pending, 5);
  assert_int_equal(c.max_connections, 7);
  assert_int_equal(c.timeout, 9);
  assert_int_equal(c.grace, 0);
  assert_int_equal(c.log_level, LOG_LVL_DEBUG);
  assert_string_equal(c.port_file, "/tmp/p");
}

static void test_env_and_precedence(void **state)
{
  struct conf c;

  (void)state;
  setenv("REDUCED_MAX_BODY", "1234", 1);
  setenv("REDUCED_LOG_LEVEL", "warn", 1);
  setenv("REDUCED_LISTEN", "[::1]:9", 1);
  setenv("REDUCED_PORT_FILE", "", 1); /* empty: unset */
  assert_int_equal(parse(&c, "--log-level", "error", NULL), CONF_RUN);
  assert_int_equal(c.max_body, 1234);           /* env beats default */
  assert_int_equal(c.log_level, LOG_LVL_ERROR); /* flag beats env */
  assert_string_equal(c.host, "::1");
  assert_int_equal(c.port, 9);
  assert_null(c.port_file);
}

static void test_bad_env_is_usage_error(void **state)
{
  struct conf c;

  (void)state;
  setenv("REDUCED_THREADS", "0", 1);
  assert_int_equal(parse(&c, NULL), CONF_EXIT_USAGE);
}

static void test_bounds(void **state)
{
  struct conf c;

  (void)state;
  assert_int_equal(parse(&c, "--threads", "1024", NULL), CONF_RUN);
  assert_int_equal(parse(&c, "--threads", "1025", NULL), CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "--threads", "0", NULL), CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "--max-body", "1099511627776", NULL), CONF_RUN);
  assert_int_equal(c.max_body, UINT64_C(1099511627776));
  assert_int_equal(parse(&c, "--max-body", "1099511627777", NULL),
                   CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "--max-body", "18446744073709551616", NULL),
                   CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "--max-pending", "0", NULL), CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "--timeout", "0", NULL), CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "--grace", "86401", NULL), CONF_EXIT_USAGE);
}

static void test_strict_numbers(void **state)
{
  static const char *const bad[] = { "",   "-1",   "+1",  " 1", "1 ",
                                     "1k", "0x10", "1.0", "abc" };
  struct conf c;

  (void)state;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(parse(&c, "--max-pending", bad[i], NULL), CONF_EXIT_USAGE);
}

static void test_listen_syntax(void **state)
{
  static const char *const bad[] = { "nohost",  ":80",        "host:",
                                     "host:x",  "host:65536", "::1:80",
                                     "[::1]80", "[::1",       "[]:80" };
  struct conf c;

  (void)state;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(parse(&c, "--listen", bad[i], NULL), CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "--listen", "localhost:65535", NULL), CONF_RUN);
  assert_string_equal(c.host, "localhost");
  assert_int_equal(c.port, 65535);
}

static void test_other_errors(void **state)
{
  struct conf c;

  (void)state;
  assert_int_equal(parse(&c, "--bogus", NULL), CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "stray", NULL), CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "--timeout", NULL), CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "--log-level", "loud", NULL), CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "--port-file", "", NULL), CONF_EXIT_USAGE);
  assert_int_equal(parse(&c, "--version", NULL), CONF_EXIT_OK);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup(test_defaults, clear_env),
    cmocka_unit_test_setup(test_flags, clear_env),
    cmocka_unit_test_setup(test_env_and_precedence, clear_env),
    cmocka_unit_test_setup(test_bad_env_is_usage_error, clear_env),
    cmocka_unit_test_setup(test_bounds, clear_env),
    cmocka_unit_test_setup(test_strict_numbers, clear_env),
    cmocka_unit_test_setup(test_listen_syntax, clear_env),
    cmocka_unit_test_setup(test_other_errors, clear_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
