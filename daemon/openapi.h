/* openapi.h - the OpenAPI document (api/openapi.yaml) served at
 * GET /openapi.yaml.  The bytes are compiled in: daemon/embed.awk turns the
 * YAML into daemon/openapi_yaml.c at build time (see daemon/local.mk), so
 * the binary always serves the document it was built with.
 */
#ifndef RD_OPENAPI_H
#define RD_OPENAPI_H

#include <stddef.h>

#define OPENAPI_CONTENT_TYPE "application/yaml"

/* The file's bytes, exactly, plus a terminating NUL not counted in _len. */
extern const char openapi_yaml[];
extern const size_t openapi_yaml_len;

#endif /* RD_OPENAPI_H */
