/* conf.c - the option table and everything derived from it: defaults,
 * environment variables, getopt_long parsing and --help. */
#include "config.h" /* autoconf: PACKAGE_VERSION */

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"

/* ------------------------------------------------------------------ */
/* The table                                                          */
/* ------------------------------------------------------------------ */

enum conf_type {
  CT_LISTEN,     /* HOST:PORT -> listen, host, port */
  CT_UINT,       /* decimal uint64_t in [min, max] */
  CT_LEVEL,      /* log level name -> int */
  CT_PATH,       /* non-empty string, or the default NULL */
  CT_GRPC_LISTEN /* HOST:PORT or "none" -> grpc_listen, grpc_host, grpc_port */
};

struct conf_opt {
  const char *name; /* long option, without "--" */
  const char *env;  /* environment variable */
  enum conf_type type;
  uint64_t min, max; /* CT_UINT bounds, inclusive */
  const char *def;   /* default as text; NULL: see live_default / none */
  const char *(*live_default)(void); /* default computed at run time */
  size_t offset;                     /* field in struct conf */
  const char *metavar;               /* argument name shown in --help */
  const char *help;
};

static const char *default_threads(void);
static const char *default_http_threads(void);

#define F(field) offsetof(struct conf, field)

static const struct conf_opt options[] = {
  { "listen", "REDUCED_LISTEN", CT_LISTEN, 0, 0, "127.0.0.1:8080", NULL,
    F(listen), "HOST:PORT", "address to listen on; port 0 picks a free port" },
  { "threads", "REDUCED_THREADS", CT_UINT, 1, 1024, NULL, default_threads,
    F(threads), "N", "worker pool size (default: CPUs online)" },
  { "http-threads", "REDUCED_HTTP_THREADS", CT_UINT, 1, 64, NULL,
    default_http_threads, F(http_threads), "N",
    "HTTP threads, each with its own event loop and connections "
    "(default: CPUs online, at most 64)" },
  { "max-body", "REDUCED_MAX_BODY", CT_UINT, 1, UINT64_C(1) << 40, "67108864",
    NULL, F(max_body), "BYTES", "largest request body" },
  { "buffer-max", "REDUCED_BUFFER_MAX", CT_UINT, 0, UINT64_C(1) << 40,
    "1048576", NULL, F(buffer_max), "BYTES",
    "binary tensors (raw, .npy) up to this size are read whole; larger ones "
    "are reduced as they stream in (0: always stream)" },
  { "inline-max", "REDUCED_INLINE_MAX", CT_UINT, 0, 1048576, "4096", NULL,
    F(inline_max), "BYTES",
    "JSON bodies up to this size are computed on the I/O thread, without a "
    "pool hand-off (0: every request goes to the pool)" },
  { "max-pending", "REDUCED_MAX_PENDING", CT_UINT, 1, 1000000, "4096", NULL,
    F(max_pending), "N",
    "reduce requests admitted or waiting for admission "
    "at once; more get 503" },
  { "max-inflight-bytes", "REDUCED_MAX_INFLIGHT_BYTES", CT_UINT, 1,
    UINT64_C(1) << 48, "1073741824", NULL, F(max_inflight_bytes), "BYTES",
    "memory admitted requests may hold at once (bodies, stream buffers, "
    "decoded input, outputs); a request that does not fit waits, its body "
    "unread" },
  { "buffer-cache-bytes", "REDUCED_BUFFER_CACHE_BYTES", CT_UINT, 0,
    UINT64_C(1) << 48, "67108864", NULL, F(buffer_cache_bytes), "BYTES",
    "freed buffers of 256 KiB and up (bodies, tensors) kept resident for "
    "the next requests, so that they do not fault in fresh pages; each is "
    "released after 2 s unused (0: none kept)" },
  { "queue-timeout", "REDUCED_QUEUE_TIMEOUT", CT_UINT, 0, 3600, "10", NULL,
    F(queue_timeout), "SECONDS",
    "longest wait for admission; then 503 with "
    "Retry-After" },
  { "max-connections", "REDUCED_MAX_CONNECTIONS", CT_UINT, 1, 1000000, "1024",
    NULL, F(max_connections), "N", "open connections" },
  { "timeout", "REDUCED_TIMEOUT", CT_UINT, 1, 86400, "30", NULL, F(timeout),
    "SECONDS", "idle connection / slow upload timeout" },
  { "grace", "REDUCED_GRACE", CT_UINT, 0, 86400, "10", NULL, F(grace),
    "SECONDS", "how long shutdown waits for in-flight requests" },
  { "log-level", "REDUCED_LOG_LEVEL", CT_LEVEL, 0, 0, "info", NULL,
    F(log_level), "LEVEL", "error, warn, info or debug" },
  { "port-file", "REDUCED_PORT_FILE", CT_PATH, 0, 0, NULL, NULL, F(port_file),
    "FILE", "write the bound port (decimal + newline) once listening" },
  { "max-connections-per-ip", "REDUCED_MAX_CONNECTIONS_PER_IP", CT_UINT, 0,
    1000000, "0", NULL, F(max_conn_per_ip), "N",
    "open connections per client address; 0: no limit" },
  { "api-key-file", "REDUCED_API_KEY_FILE", CT_PATH, 0, 0, NULL, NULL,
    F(api_key_file), "FILE",
    "keys, one a line; every route but /healthz, /readyz needs Bearer auth" },
  { "tls-cert", "REDUCED_TLS_CERT", CT_PATH, 0, 0, NULL, NULL, F(tls_cert),
    "FILE", "PEM certificate (chain): serve HTTPS (with --tls-key)" },
  { "tls-key", "REDUCED_TLS_KEY", CT_PATH, 0, 0, NULL, NULL, F(tls_key), "FILE",
    "PEM private key of --tls-cert" },
  { "grpc-listen", "REDUCED_GRPC_LISTEN", CT_GRPC_LISTEN, 0, 0,
    "127.0.0.1:8081", NULL, F(grpc_listen), "HOST:PORT",
    "gRPC (Open Inference Protocol) address; port 0 picks a free port; "
    "none: no gRPC" },
  { "grpc-port-file", "REDUCED_GRPC_PORT_FILE", CT_PATH, 0, 0, NULL, NULL,
    F(grpc_port_file), "FILE", "write the bound gRPC port once listening" },
};

#undef F

#define NOPTIONS (sizeof options / sizeof options[0])

/* getopt_long values for the options without a table row. */
enum { OPT_HELP = 'h', OPT_VERSION = 'V', OPT_TABLE = 256 };

static const char *default_threads(void)
{
  static char buf[24];
  long n = sysconf(_SC_NPROCESSORS_ONLN);

  if (n < 1)
    n = 1;
  if (n > 1024) /* libuv's own ceiling for UV_THREADPOOL_SIZE */
    n = 1024;
  snprintf(buf, sizeof buf, "%ld", n);
  return buf;
}

static const char *default_http_threads(void)
{
  static char buf[24];
  long n = sysconf(_SC_NPROCESSORS_ONLN);

  if (n < 1)
    n = 1;
  if (n > 64)
    n = 64;
  snprintf(buf, sizeof buf, "%ld", n);
  return buf;
}

static const char *opt_default(const struct conf_opt *o)
{
  return o->live_default ? o->live_default() : o->def;
}

/* ------------------------------------------------------------------ */
/* Value parsers                                                      */
/* ------------------------------------------------------------------ */

/* Strict decimal: digits only (no sign, space or suffix), no overflow. */
static int parse_u64(const char *s, uint64_t *out)
{
  uint64_t v = 0;

  if (*s == '\0')
    return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
      return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return 0;
}

/* "HOST:PORT" or "[V6]:PORT"; HOST non-empty, PORT in [0, 65535]: HOST
 * into `hostbuf` (CONF_HOST_MAX bytes), PORT into *portp. */
static int parse_addr(const char *s, char *hostbuf, uint64_t *portp)
{
  const char *colon, *host = s;
  size_t hostlen;
  uint64_t port;

  if (s[0] == '[') {
    const char *end = strchr(s, ']');
    if (end == NULL || end[1] != ':')
      return -1;
    host = s + 1;
    hostlen = (size_t)(end - host);
    colon = end + 1;
  } else {
    colon = strrchr(s, ':');
    if (colon == NULL)
      return -1;
    hostlen = (size_t)(colon - s);
    if (memchr(s, ':', hostlen) != NULL) /* bare v6 needs brackets */
      return -1;
  }
  if (hostlen == 0 || hostlen >= CONF_HOST_MAX)
    return -1;
  if (parse_u64(colon + 1, &port) != 0 || port > 65535)
    return -1;
  memcpy(hostbuf, host, hostlen);
  hostbuf[hostlen] = '\0';
  *portp = port;
  return 0;
}

static int parse_listen(struct conf *c, const char *s)
{
  if (parse_addr(s, c->host, &c->port) != 0)
    return -1;
  c->listen = s;
  return 0;
}

/* Stores `val` (from `source`: "--name" or the variable) in `c`; on a bad
 * value prints a message naming the option and the value. */
static int set_option(struct conf *c, const struct conf_opt *o, const char *val,
                      const char *source)
{
  char *field = (char *)c + o->offset;
  uint64_t u;
  int level;

  switch (o->type) {
  case CT_LISTEN:
    if (parse_listen(c, val) == 0)
      return 0;
    fprintf(stderr,
            "reduced: invalid value '%s' for %s: expected HOST:PORT "
            "([IPv6]:PORT) with a port in [0, 65535]\n",
            val, source);
    return -1;
  case CT_GRPC_LISTEN:
    if (strcmp(val, "none") == 0) {
      c->grpc_listen = NULL;
      return 0;
    }
    if (parse_addr(val, c->grpc_host, &c->grpc_port) == 0) {
      c->grpc_listen = val;
      return 0;
    }
    fprintf(stderr,
            "reduced: invalid value '%s' for %s: expected HOST:PORT "
            "([IPv6]:PORT) with a port in [0, 65535], or none\n",
            val, source);
    return -1;
  case CT_UINT:
    if (parse_u64(val, &u) == 0 && u >= o->min && u <= o->max) {
      memcpy(field, &u, sizeof u);
      return 0;
    }
    fprintf(stderr,
            "reduced: invalid value '%s' for %s: expected an integer "
            "in [%llu, %llu]\n",
            val, source, (unsigned long long)o->min,
            (unsigned long long)o->max);
    return -1;
  case CT_LEVEL:
    if (log_level_parse(val, &level) == 0) {
      memcpy(field, &level, sizeof level);
      return 0;
    }
    fprintf(stderr,
            "reduced: invalid value '%s' for %s: expected error, "
            "warn, info or debug\n",
            val, source);
    return -1;
  case CT_PATH:
    if (val != NULL && *val == '\0') {
      fprintf(stderr,
              "reduced: invalid value '' for %s: expected a file "
              "name\n",
              source);
      return -1;
    }
    memcpy(field, &val, sizeof val);
    return 0;
  }
  return -1;
}

/* ------------------------------------------------------------------ */
/* Help                                                               */
/* ------------------------------------------------------------------ */

void conf_usage(FILE *f)
{
  fprintf(f, "Usage: reduced [options]\n"
             "HTTP service computing the ONNX reduction operators (ReduceL2, "
             "ReduceSumSquare,\nReduceSum, ReduceMean, ReduceMax, ReduceMin, "
             "ReduceProd, ReduceL1, ReduceLogSum,\nReduceLogSumExp, ArgMax, "
             "ArgMin; GET /v1/ops lists them).\n\n"
             "Every option can also be set by its environment variable; a flag "
             "beats the\nvariable, the variable beats the default.\n\n");
  for (size_t i = 0; i < NOPTIONS; i++) {
    const struct conf_opt *o = &options[i];
    const char *def = opt_default(o);
    char flag[64];

    snprintf(flag, sizeof flag, "--%s %s", o->name, o->metavar);
    fprintf(f, "  %-26s %s\n", flag, o->help);
    const char *env = getenv(o->env);

    if (env != NULL && *env != '\0')
      fprintf(f, "  %-26s [env %s, now '%s'; default %s]\n", "", o->env, env,
              def ? def : "none");
    else
      fprintf(f, "  %-26s [env %s; default %s]\n", "", o->env,
              def ? def : "none");
  }
  fprintf(f, "  %-26s %s\n", "-h, --help", "print this help and exit");
  fprintf(f, "  %-26s %s\n", "-V, --version", "print the version and exit");
}

/* ------------------------------------------------------------------ */
/* Parsing                                                            */
/* ------------------------------------------------------------------ */

enum conf_result conf_parse(struct conf *c, int argc, char **argv)
{
  struct option longopts[NOPTIONS + 3];
  char source[96];
  int ch, want_help = 0;

  memset(c, 0, sizeof *c);

  /* Defaults go through the same setter, so --help cannot drift from them. */
  for (size_t i = 0; i < NOPTIONS; i++) {
    const char *def = opt_default(&options[i]);
    snprintf(source, sizeof source, "the default of --%s", options[i].name);
    if (set_option(c, &options[i], def, source) != 0)
      return CONF_EXIT_USAGE; /* a bug in the table */
  }

  for (size_t i = 0; i < NOPTIONS; i++) {
    const char *val = getenv(options[i].env);
    if (val == NULL || *val == '\0')
      continue;
    if (set_option(c, &options[i], val, options[i].env) != 0)
      return CONF_EXIT_USAGE;
  }

  for (size_t i = 0; i < NOPTIONS; i++) {
    longopts[i].name = options[i].name;
    longopts[i].has_arg = required_argument;
    longopts[i].flag = NULL;
    longopts[i].val = OPT_TABLE + (int)i;
  }
  longopts[NOPTIONS] = (struct option){ "help", no_argument, NULL, OPT_HELP };
  longopts[NOPTIONS + 1] = (struct option){ "version", no_argument, NULL,
                                            OPT_VERSION };
  longopts[NOPTIONS + 2] = (struct option){ NULL, 0, NULL, 0 };

  optind = 0; /* glibc: 0 also resets the state of an earlier scan */
  opterr = 0; /* we print our own messages, naming the option */
  /* Leading ':' : report a missing argument as ':' so we can name it. */
  while ((ch = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1) {
    if (ch == OPT_HELP) {
      want_help = 1;
    } else if (ch == OPT_VERSION) {
      printf("reduced %s\n", PACKAGE_VERSION);
      return CONF_EXIT_OK;
    } else if (ch >= OPT_TABLE && ch < OPT_TABLE + (int)NOPTIONS) {
      const struct conf_opt *o = &options[ch - OPT_TABLE];
      snprintf(source, sizeof source, "--%s", o->name);
      if (set_option(c, o, optarg, source) != 0)
        return CONF_EXIT_USAGE;
    } else if (ch == ':') {
      fprintf(stderr, "reduced: option '%s' needs a value\n", argv[optind - 1]);
      fprintf(stderr, "Try 'reduced --help'.\n");
      return CONF_EXIT_USAGE;
    } else {
      fprintf(stderr, "reduced: unknown option '%s'\n", argv[optind - 1]);
      fprintf(stderr, "Try 'reduced --help'.\n");
      return CONF_EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "reduced: unexpected argument '%s'\n", argv[optind]);
    fprintf(stderr, "Try 'reduced --help'.\n");
    return CONF_EXIT_USAGE;
  }
  if (want_help) {
    conf_usage(stdout);
    return CONF_EXIT_OK;
  }
  if ((c->tls_cert == NULL) != (c->tls_key == NULL)) {
    fprintf(stderr,
            "reduced: --tls-cert and --tls-key go together; only "
            "%s was given\n",
            c->tls_cert != NULL ? "--tls-cert" : "--tls-key");
    return CONF_EXIT_USAGE;
  }
  return CONF_RUN;
}
