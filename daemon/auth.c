/* auth.c - API keys and TLS material (auth.h).  Secrets are wiped before
 * they are freed and never logged. */
#include "config.h" /* autoconf */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "log.h"

/* 1 if `tok` (length `n`) equals one of the keys.  Every key is compared
 * in full whatever matched before, and each comparison runs over the key's
 * length only, so the time depends on the key file, not on how much of a
 * key the client guessed. */
static int key_matches(const struct auth *a, const char *tok, size_t n)
{
  unsigned found = 0;

  for (size_t k = 0; k < a->nkeys; k++) {
    const unsigned char *key = (const unsigned char *)a->keys[k];
    size_t len = a->key_lens[k];
    volatile unsigned diff = (unsigned)(len != n);

    for (size_t i = 0; i < len; i++)
      diff |= key[i] ^ (n > 0 ? (unsigned char)tok[i < n ? i : 0] : 0u);
    found |= (unsigned)(diff == 0);
  }
  return found != 0;
}

int auth_allows(const struct auth *a, const char *url,
                const char *authorization)
{
  const char *h = authorization, *end;

  if (a->nkeys == 0 || strcmp(url, "/healthz") == 0 ||
      strcmp(url, "/readyz") == 0)
    return 1;
  if (h == NULL || strncasecmp(h, "Bearer", 6) != 0 ||
      (h[6] != ' ' && h[6] != '\t'))
    return 0;
  h += 6;
  while (*h == ' ' || *h == '\t')
    h++;
  end = h + strlen(h);
  while (end > h && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  return end > h && key_matches(a, h, (size_t)(end - h));
}

/* Reads `path` (at most AUTH_FILE_MAX bytes) into a NUL-terminated buffer;
 * `what` names the option in the messages, which never quote the content. */
static char *read_small_file(const char *path, const char *what, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf;
  size_t n;

  if (f == NULL) {
    LOG_ERROR("%s %s: %s", what, path, strerror(errno));
    return NULL;
  }
  buf = malloc(AUTH_FILE_MAX + 1);
  if (buf == NULL) {
    fclose(f);
    LOG_ERROR("%s %s: out of memory", what, path);
    return NULL;
  }
  n = fread(buf, 1, AUTH_FILE_MAX + 1, f);
  if (ferror(f) || n > AUTH_FILE_MAX) {
    LOG_ERROR("%s %s: %s", what, path,
              ferror(f) ? "read error" : "larger than 1 MiB");
    fclose(f);
    free(buf);
    return NULL;
  }
  fclose(f);
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* One key a line (auth.h); surrounding blanks and a CR are dropped, and
 * empty lines and lines starting with '#' are skipped.  Keys are never
 * logged. */
int auth_load_keys(struct auth *a, const char *path)
{
  size_t len, n = 0, cap = 0;
  char *text = read_small_file(path, "--api-key-file", &len);
  char *line, *next;

  if (text == NULL)
    return -1;
  if (memchr(text, '\0', len) != NULL) {
    LOG_ERROR("--api-key-file %s: contains a NUL byte", path);
    goto fail;
  }
  for (line = text; line != NULL; line = next) {
    char *end;
    next = strchr(line, '\n');
    if (next != NULL)
      *next++ = '\0';
    while (*line == ' ' || *line == '\t')
      line++;
    end = line + strlen(line);
    while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
      *--end = '\0';
    if (*line == '\0' || *line == '#')
      continue;
    if (strpbrk(line, " \t") != NULL) {
      LOG_ERROR("--api-key-file %s: key %zu contains a blank", path, n + 1);
      goto fail;
    }
    if (n == cap) {
      size_t c2 = cap ? cap * 2 : 8;
      char **k2 = realloc(a->keys, c2 * sizeof *k2);
      size_t *l2;
      if (k2 == NULL)
        goto nomem;
      a->keys = k2;
      l2 = realloc(a->key_lens, c2 * sizeof *l2);
      if (l2 == NULL)
        goto nomem;
      a->key_lens = l2;
      cap = c2;
    }
    a->keys[n] = strdup(line);
    if (a->keys[n] == NULL)
      goto nomem;
    a->key_lens[n] = (size_t)(end - line);
    a->nkeys = ++n;
  }
  explicit_bzero(text, len);
  free(text);
  if (n == 0) {
    LOG_ERROR("--api-key-file %s: no key in the file", path);
    return -1;
  }
  LOG_INFO("API keys: %zu loaded from %s", n, path);
  return 0;
nomem:
  LOG_ERROR("--api-key-file %s: out of memory", path);
fail:
  explicit_bzero(text, len);
  free(text);
  return -1;
}

int auth_load_tls(struct auth *a, const char *cert_path, const char *key_path)
{
  size_t n;

  a->tls_cert = read_small_file(cert_path, "--tls-cert", &n);
  a->tls_key = a->tls_cert ? read_small_file(key_path, "--tls-key", &n) : NULL;
  return a->tls_key != NULL ? 0 : -1;
}

void auth_free(struct auth *a)
{
  for (size_t k = 0; k < a->nkeys; k++) {
    explicit_bzero(a->keys[k], a->key_lens[k]);
    free(a->keys[k]);
  }
  free(a->keys);
  free(a->key_lens);
  a->keys = NULL;
  a->key_lens = NULL;
  a->nkeys = 0;
  if (a->tls_key != NULL) {
    explicit_bzero(a->tls_key, strlen(a->tls_key));
    free(a->tls_key);
    a->tls_key = NULL;
  }
  free(a->tls_cert);
  a->tls_cert = NULL;
}
