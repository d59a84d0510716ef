/* auth.h - API keys (--api-key-file) and TLS material (--tls-cert,
 * --tls-key): loaded once at start, checked per request, wiped at close.
 * No MHD here: the check takes the Authorization header's value, so the
 * module is unit-tested alone (tests/unit/test_auth.c), like conf.c.
 * Loop thread only (start, requests, close).
 */
#ifndef RD_AUTH_H
#define RD_AUTH_H

#include <stddef.h>

/* Largest --api-key-file, --tls-cert or --tls-key read into memory. */
#define AUTH_FILE_MAX (1024 * 1024)

struct auth {
  char **keys; /* --api-key-file; nkeys == 0: no auth */
  size_t *key_lens;
  size_t nkeys;
  char *tls_cert; /* PEM text of --tls-cert / --tls-key */
  char *tls_key;
};

/* Loads the keys of `path`: one key a line; surrounding blanks and a CR
 * are dropped, empty lines and lines starting with '#' are skipped.  0, or
 * -1 after logging why (unreadable, over 1 MiB, a NUL byte, a key with a
 * blank, no key at all, out of memory).  Keys are never logged. */
int auth_load_keys(struct auth *a, const char *path);

/* Reads the PEM text of `cert_path` and `key_path` (at most AUTH_FILE_MAX
 * bytes each).  0, or -1 after logging why (never quoting the content). */
int auth_load_tls(struct auth *a, const char *cert_path, const char *key_path);

/* 1 if a request for `url` may go on: no keys loaded, a probe route
 * (/healthz, /readyz), or `authorization` (the header's value, NULL when
 * absent) is "Bearer <key>" with a loaded key.  The comparison's time
 * depends on the key file, not on how much of a key was guessed. */
int auth_allows(const struct auth *a, const char *url,
                const char *authorization);

/* Wipes and frees everything; the struct may be loaded again. */
void auth_free(struct auth *a);

#endif /* RD_AUTH_H */
