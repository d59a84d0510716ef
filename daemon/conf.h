/* conf.h - the daemon's settings: one option table drives the command line
 * (getopt_long), the REDUCED_* environment variables and --help.
 * Precedence: flag > environment variable > built-in default.
 *
 * (Named conf.* rather than config.* so that it does not shadow autoconf's
 * config.h, which every .c file includes first.)
 */
#ifndef RD_CONF_H
#define RD_CONF_H

#include <stdint.h>
#include <stdio.h>

#define CONF_HOST_MAX 256

struct conf {
  const char *listen;          /* as given: "HOST:PORT" */
  char host[CONF_HOST_MAX];    /* HOST part, brackets of "[v6]" removed */
  uint64_t port;               /* 0: pick a free port */
  uint64_t threads;            /* worker pool size (UV_THREADPOOL_SIZE) */
  uint64_t http_threads;       /* HTTP loop threads (server.h shards) */
  uint64_t max_body;           /* largest request body, bytes */
  uint64_t buffer_max;         /* binary bodies above this stream; 0: all */
  uint64_t inline_max;         /* JSON bodies up to this run inline; 0: none */
  uint64_t max_pending;        /* reduce requests admitted + waiting */
  uint64_t max_inflight_bytes; /* memory of admitted requests, bytes */
  uint64_t buffer_cache_bytes; /* api_tmem cache bound, bytes */
  uint64_t queue_timeout;      /* longest wait for admission, seconds */
  uint64_t max_connections;    /* open connections (MHD limit) */
  uint64_t timeout;            /* idle connection timeout, seconds */
  uint64_t grace;              /* shutdown wait for in-flight work, seconds */
  int log_level;               /* enum log_level */
  const char *port_file;       /* NULL: none */
  uint64_t max_conn_per_ip;    /* connections per client address; 0: no limit */
  const char *api_key_file;    /* NULL: no authentication */
  const char *tls_cert;        /* PEM files; both or neither */
  const char *tls_key;
  const char *grpc_listen; /* as given; NULL: no gRPC ("none") */
  char grpc_host[CONF_HOST_MAX];
  uint64_t grpc_port;         /* 0: pick a free port */
  const char *grpc_port_file; /* NULL: none */
};

/* What the caller does after conf_parse(). */
enum conf_result {
  CONF_RUN = 0,       /* settings complete: start the server */
  CONF_EXIT_OK = 1,   /* --help or --version printed: exit 0 */
  CONF_EXIT_USAGE = 2 /* bad flag/value reported on stderr: exit 2 */
};

/* Fills `c` from the built-in defaults, then the REDUCED_* environment
 * variables (an empty variable counts as unset), then argv.  Strings in `c`
 * point into argv/environ or static storage.  Messages name the option and
 * the offending value.  Not thread-safe (uses getopt). */
enum conf_result conf_parse(struct conf *c, int argc, char **argv);

/* Prints the usage text with every option's live default to `f`. */
void conf_usage(FILE *f);

#endif /* RD_CONF_H */
