/* test_auth.c - API keys and TLS files (daemon/auth.c): the key file's
 * syntax, the Bearer check, the probe routes, and the refusals of bad
 * files.  Expected values follow docs/http-api.md (--api-key-file). */
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

#include "auth.h"
#include "log.h"

/* Writes `len` bytes to a new temporary file; returns its path (static). */
static const char *file_with(const void *text, size_t len)
{
  static char path[64];
  int fd;

  snprintf(path, sizeof path, "/tmp/test_auth.XXXXXX");
  fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, len), (ssize_t)len);
  close(fd);
  return path;
}

static int load(struct auth *a, const char *text)
{
  const char *path = file_with(text, strlen(text));
  int rc = auth_load_keys(a, path);

  unlink(path);
  return rc;
}

static void test_key_file_syntax(void **state)
{
  struct auth a;

  (void)state;
  memset(&a, 0, sizeof a);
  assert_int_equal(load(&a, "# keys of the test\n"
                            "  alpha-1\t\r\n"
                            "\n"
                            "beta.2\n"
                            "   # indented comment\n"
                            "gamma"),
                   0);
  assert_int_equal(a.nkeys, 3);
  assert_string_equal(a.keys[0], "alpha-1");
  assert_int_equal(a.key_lens[0], 7);
  assert_string_equal(a.keys[1], "beta.2");
  assert_string_equal(a.keys[2], "gamma"); /* no final newline */
  auth_free(&a);
  assert_int_equal(a.nkeys, 0);
  assert_null(a.keys);
  auth_free(&a); /* safe twice */
}

static void test_bad_key_files(void **state)
{
  static const char nul[] = "alpha\0beta\n";
  struct auth a;
  const char *path;

  (void)state;
  memset(&a, 0, sizeof a);
  assert_int_equal(load(&a, "\n# only comments\n   \n"), -1);
  auth_free(&a);
  assert_int_equal(load(&a, "alpha beta\n"), -1); /* a blank inside */
  auth_free(&a);
  path = file_with(nul, sizeof nul - 1);
  assert_int_equal(auth_load_keys(&a, path), -1);
  unlink(path);
  auth_free(&a);
  assert_int_equal(auth_load_keys(&a, "/nonexistent/keys"), -1);
  auth_free(&a);
}

static void test_too_large_file(void **state)
{
  char *big = malloc(AUTH_FILE_MAX + 2);
  const char *path;
  struct auth a;

  (void)state;
  assert_non_null(big);
  memset(big, 'k', AUTH_FILE_MAX + 1);
  big[AUTH_FILE_MAX + 1] = '\0';
  memset(&a, 0, sizeof a);
  path = file_with(big, AUTH_FILE_MAX + 1);
  assert_int_equal(auth_load_keys(&a, path), -1);
  assert_int_equal(auth_load_tls(&a, path, path), -1);
  unlink(path);
  /* Exactly the limit is accepted. */
  path = file_with(big, AUTH_FILE_MAX);
  assert_int_equal(auth_load_keys(&a, path), 0);
  assert_int_equal(a.nkeys, 1);
  assert_int_equal(a.key_lens[0], AUTH_FILE_MAX);
  unlink(path);
  auth_free(&a);
  free(big);
}

static void test_bearer_check(void **state)
{
  struct auth a;

  (void)state;
  memset(&a, 0, sizeof a);
  assert_int_equal(load(&a, "s3cret\nother-key\n"), 0);
  assert_int_equal(auth_allows(&a, "/v1/reduce", "Bearer s3cret"), 1);
  assert_int_equal(auth_allows(&a, "/v1/reduce", "bearer \t other-key  "), 1);
  assert_int_equal(auth_allows(&a, "/v1/reduce", "Bearer\ts3cret"), 1);
  assert_int_equal(auth_allows(&a, "/v1/reduce", NULL), 0);
  assert_int_equal(auth_allows(&a, "/v1/reduce", "Bearer"), 0);
  assert_int_equal(auth_allows(&a, "/v1/reduce", "Bearer "), 0);
  assert_int_equal(auth_allows(&a, "/v1/reduce", "Bearers3cret"), 0);
  assert_int_equal(auth_allows(&a, "/v1/reduce", "Basic s3cret"), 0);
  assert_int_equal(auth_allows(&a, "/v1/reduce", "Bearer s3cre"), 0);
  assert_int_equal(auth_allows(&a, "/v1/reduce", "Bearer s3cret2"), 0);
  assert_int_equal(auth_allows(&a, "/v1/reduce", "Bearer S3CRET"), 0);
  assert_int_equal(auth_allows(&a, "/metrics", "Bearer wrong"), 0);
  /* The probes never need a key. */
  assert_int_equal(auth_allows(&a, "/healthz", NULL), 1);
  assert_int_equal(auth_allows(&a, "/readyz", "Bearer wrong"), 1);
  assert_int_equal(auth_allows(&a, "/healthz/", NULL), 0);
  auth_free(&a);
  /* No keys: everything is allowed. */
  assert_int_equal(auth_allows(&a, "/v1/reduce", NULL), 1);
}

static void test_tls_files(void **state)
{
  static const char cert[] = "-----BEGIN CERTIFICATE-----\nMIIB\n"
                             "-----END CERTIFICATE-----\n";
  static const char key[] = "-----BEGIN PRIVATE KEY-----\nMIIE\n"
                            "-----END PRIVATE KEY-----\n";
  char cpath[64], kpath[64];
  struct auth a;

  (void)state;
  memset(&a, 0, sizeof a);
  snprintf(cpath, sizeof cpath, "%s", file_with(cert, sizeof cert - 1));
  snprintf(kpath, sizeof kpath, "%s", file_with(key, sizeof key - 1));
  assert_int_equal(auth_load_tls(&a, cpath, kpath), 0);
  assert_string_equal(a.tls_cert, cert);
  assert_string_equal(a.tls_key, key);
  auth_free(&a);
  assert_null(a.tls_cert);
  assert_null(a.tls_key);
  assert_int_equal(auth_load_tls(&a, cpath, "/nonexistent/key"), -1);
  auth_free(&a);
  unlink(cpath);
  unlink(kpath);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_key_file_syntax),
    cmocka_unit_test(test_bad_key_files),
    cmocka_unit_test(test_too_large_file),
    cmocka_unit_test(test_bearer_check),
    cmocka_unit_test(test_tls_files),
  };
  log_init(LOG_LVL_ERROR - 1); /* silence: refusals log by design */
  return cmocka_run_group_tests(tests, NULL, NULL);
}
