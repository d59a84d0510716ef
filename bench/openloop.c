/* openloop.c - an open-loop HTTP/1.1 load generator for bench/daemon.sh.
 *
 *   bench/openloop --port N --rate R [--duration S | --requests N]
 *                  [--method M] [--path P] [--header 'K: V']... [--body FILE]
 *                  [--connections N] [--max-connections N] [--threads N]
 *                  [--timeout S] [--label TEXT] [--json]
 *
 * Request i is due at t0 + i / R whatever the server does (a fixed arrival
 * schedule, not "send the next one when the last one is answered").  It goes
 * out on a free keep-alive connection to 127.0.0.1:N at or after its due
 * time; when none is free a new connection is opened (up to
 * --max-connections), so a slow server is never shielded by a small pool.
 * Its latency runs from the due time, not the send time, to the last byte of
 * the response, so time spent waiting behind earlier requests is counted
 * (no coordinated omission).  Responses are read by Content-Length; chunked
 * responses are counted as I/O errors.  Percentiles are exact (nearest rank
 * over the sorted latencies of the 2xx responses); non-2xx responses, I/O
 * errors, requests still unanswered --timeout seconds after the last one was
 * due and requests never sent are counted apart.  --threads threads (2, like
 * wrk -t2), each with every Nth request of the schedule, its share of the
 * connections and an epoll loop (epoll_pwait2: it wakes at each due time).
 * It also reports how late its threads woke for a due request at worst: a
 * stall of the generator itself (its CPU taken for 100 ms by the host)
 * delays every request due meanwhile, and shows in the tail although no
 * server caused it.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define MAX_HEADERS 32
#define MAX_REQUESTS 20000000u /* bounds the latency array (160 MB) */
#define MAX_BODY (1024u * 1024u * 1024u)
#define RX_HEADER_CAP 16384 /* response status line and headers */
#define SCRATCH_CAP 65536   /* response body bytes are counted only */

enum conn_state {
  C_CONNECTING, /* non-blocking connect in progress */
  C_IDLE,       /* on the free list */
  C_SENDING,    /* request partly written */
  C_READING,    /* request written, response not complete */
  C_DEAD        /* closed; freed when it leaves the free list */
};

struct conn {
  int fd;
  enum conn_state state;
  struct conn *prev, *next; /* the thread's open connections */
  size_t sent;              /* bytes of the request written */
  uint64_t due_ns;          /* due time of the request in flight */
  char hdr[RX_HEADER_CAP];  /* response head so far */
  size_t hdrlen;
  int have_head;      /* hdr holds the whole head */
  uint64_t body_left; /* response body bytes still to come */
  int status;
  int close_after; /* response said Connection: close */
};

/* Where the threads line up: t0 is set once every pool is connected. */
struct start {
  pthread_barrier_t bar;
  uint64_t t0;
  int failed;
};

/* One thread's share: requests tid, tid + nthreads, tid + 2 nthreads, ...
 * of the schedule, on connections of its own. */
struct gen {
  /* settings */
  int port;
  double rate; /* of the whole schedule */
  int tid, nthreads;
  uint64_t total; /* this thread's requests */
  int init_conns, max_conns;
  double timeout_s;
  const char *label;
  int json;
  /* the request, head and body in one buffer */
  char *req;
  size_t reqlen;
  /* run state */
  int ep;
  int no_pwait2; /* epoll_pwait2 missing: ms timeouts */
  uint64_t t0;
  uint64_t next; /* next request to send */
  uint64_t inflight;
  int nconns, connecting, peak_conns;
  struct conn *open;       /* list of open connections */
  struct conn **free_list; /* stack of idle (or dead) connections */
  int nfree, free_cap;
  /* results */
  uint64_t *lat_ns; /* of 2xx responses */
  uint64_t nlat, ok, non2xx, io_errors, connect_errors;
  uint64_t last_done_ns, max_lag_ns;
  /* The longest this thread woke late for a due request (a stall of the
   * generator itself, e.g. its CPU taken away: every request due meanwhile
   * shows the delay although no server caused it). */
  uint64_t max_oversleep_ns;
  int statuses[8]; /* first distinct non-2xx codes */
  int nstatuses;
  struct start *start;
  int failed;                /* could not connect */
  char scratch[SCRATCH_CAP]; /* response body bytes are counted only */
};

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t due_of(const struct gen *g, uint64_t i)
{
  return g->t0 +
         (uint64_t)((double)(i * (uint64_t)g->nthreads + (uint64_t)g->tid) *
                    1e9 / g->rate);
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* ---- connections ----------------------------------------------------- */

static void push_free(struct gen *g, struct conn *c)
{
  if (g->nfree == g->free_cap) {
    int cap = g->free_cap ? 2 * g->free_cap : 64;
    struct conn **p = realloc(g->free_list, (size_t)cap * sizeof *p);
    if (p == NULL) {
      fprintf(stderr, "openloop: out of memory\n");
      exit(1);
    }
    g->free_list = p;
    g->free_cap = cap;
  }
  g->free_list[g->nfree++] = c;
}

/* The most recently freed live connection (warm in every cache), or NULL. */
static struct conn *pop_free(struct gen *g)
{
  while (g->nfree > 0) {
    struct conn *c = g->free_list[--g->nfree];
    if (c->state != C_DEAD)
      return c;
    free(c);
  }
  return NULL;
}

/* Closes `c`; an idle one stays on the free list until popped. */
static void conn_close(struct gen *g, struct conn *c)
{
  int was_idle = c->state == C_IDLE;
  if (c->state == C_CONNECTING)
    g->connecting--;
  close(c->fd);
  g->nconns--;
  c->state = C_DEAD;
  if (c->prev)
    c->prev->next = c->next;
  else
    g->open = c->next;
  if (c->next)
    c->next->prev = c->prev;
  if (!was_idle)
    free(c);
}

static int conn_open(struct gen *g)
{
  struct sockaddr_in sa;
  int one = 1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)g->port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct conn *c = calloc(1, sizeof *c);
  if (c == NULL) {
    close(fd);
    return -1;
  }
  c->fd = fd;
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
    c->state = C_IDLE;
  } else if (errno == EINPROGRESS) {
    c->state = C_CONNECTING;
    g->connecting++;
  } else {
    close(fd);
    free(c);
    return -1;
  }
  struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                            .data.ptr = c };
  if (epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
    if (c->state == C_CONNECTING)
      g->connecting--;
    close(fd);
    free(c);
    return -1;
  }
  g->nconns++;
  c->next = g->open;
  if (g->open)
    g->open->prev = c;
  g->open = c;
  if (g->nconns > g->peak_conns)
    g->peak_conns = g->nconns;
  if (c->state == C_IDLE)
    push_free(g, c);
  return 0;
}

/* ---- one request ----------------------------------------------------- */

/* Writes what the socket takes; 0 when all is written or it would block. */
static int conn_write(struct gen *g, struct conn *c)
{
  while (c->sent < g->reqlen) {
    ssize_t n = write(c->fd, g->req + c->sent, g->reqlen - c->sent);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return 0;
    if (n <= 0)
      return -1;
    c->sent += (size_t)n;
  }
  c->state = C_READING;
  return 0;
}

static void note_status(struct gen *g, int status)
{
  for (int i = 0; i < g->nstatuses; i++)
    if (g->statuses[i] == status)
      return;
  if (g->nstatuses < (int)(sizeof g->statuses / sizeof g->statuses[0]))
    g->statuses[g->nstatuses++] = status;
}

static void request_failed(struct gen *g, struct conn *c)
{
  g->io_errors++;
  g->inflight--;
  conn_close(g, c);
}

static void start_request(struct gen *g, struct conn *c, uint64_t due,
                          uint64_t now)
{
  c->state = C_SENDING;
  c->sent = 0;
  c->due_ns = due;
  c->hdrlen = 0;
  c->have_head = 0;
  c->body_left = 0;
  c->status = 0;
  c->close_after = 0;
  g->inflight++;
  if (now - due > g->max_lag_ns)
    g->max_lag_ns = now - due;
  if (conn_write(g, c) != 0)
    request_failed(g, c);
}

/* Parses the head in c->hdr[0..end): status, Content-Length, Connection. */
static int parse_head(struct conn *c, size_t end)
{
  char *line = c->hdr;
  int have_len = 0;
  c->hdr[end] = '\0';
  if (strncmp(line, "HTTP/1.", 7) != 0 || line[8] != ' ')
    return -1;
  c->status = atoi(line + 9);
  if (c->status < 100 || c->status > 999)
    return -1;
  for (char *p = strstr(line, "\r\n"); p != NULL && p[2] != '\0';
       p = strstr(p + 2, "\r\n")) {
    char *h = p + 2;
    if (strncasecmp(h, "Content-Length:", 15) == 0) {
      char *e;
      errno = 0;
      unsigned long long v = strtoull(h + 15, &e, 10);
      if (errno != 0 || e == h + 15)
        return -1;
      c->body_left = v;
      have_len = 1;
    } else if (strncasecmp(h, "Transfer-Encoding:", 18) == 0) {
      return -1; /* chunked: not supported */
    } else if (strncasecmp(h, "Connection:", 11) == 0) {
      const char *v = h + 11;
      while (*v == ' ')
        v++;
      if (strncasecmp(v, "close", 5) == 0)
        c->close_after = 1;
    }
  }
  if (!have_len && !(c->status < 200 || c->status == 204 || c->status == 304))
    return -1;
  return 0;
}

static void response_done(struct gen *g, struct conn *c, uint64_t now)
{
  g->inflight--;
  g->last_done_ns = now;
  if (c->status >= 200 && c->status < 300) {
    g->ok++;
    g->lat_ns[g->nlat++] = now - c->due_ns;
  } else {
    g->non2xx++;
    note_status(g, c->status);
  }
  if (c->close_after) {
    conn_close(g, c);
    return;
  }
  c->state = C_IDLE;
  push_free(g, c);
}

/* Reads until the socket is drained; a response needs no more than one
 * request in flight per connection, so bytes past its end are an error. */
static void conn_read(struct gen *g, struct conn *c)
{
  for (;;) {
    char *buf;
    size_t cap;
    if (!c->have_head) {
      buf = c->hdr + c->hdrlen;
      cap = RX_HEADER_CAP - 1 - c->hdrlen;
    } else {
      buf = g->scratch;
      cap = SCRATCH_CAP;
    }
    if (cap == 0) {
      request_failed(g, c); /* head too large */
      return;
    }
    ssize_t n = read(c->fd, buf, cap);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return;
    if (n <= 0) {
      if (c->state == C_IDLE || c->state == C_CONNECTING)
        conn_close(g, c); /* server closed an unused connection */
      else
        request_failed(g, c);
      return;
    }
    if (c->state != C_READING && c->state != C_SENDING) {
      conn_close(g, c); /* bytes nobody asked for */
      return;
    }
    uint64_t extra;
    if (!c->have_head) {
      c->hdrlen += (size_t)n;
      c->hdr[c->hdrlen] = '\0';
      char *end = strstr(c->hdr, "\r\n\r\n");
      if (end == NULL)
        continue;
      size_t headlen = (size_t)(end - c->hdr) + 4;
      if (parse_head(c, headlen - 2) != 0) {
        request_failed(g, c);
        return;
      }
      c->have_head = 1;
      extra = c->hdrlen - headlen;
    } else {
      extra = (uint64_t)n;
    }
    if (extra > c->body_left) {
      request_failed(g, c); /* more than Content-Length */
      return;
    }
    c->body_left -= extra;
    if (c->body_left == 0) {
      /* An answer before the whole request was written (a 413, say)
       * leaves the connection unusable. */
      if (c->state == C_SENDING)
        c->close_after = 1;
      response_done(g, c, now_ns());
      return;
    }
  }
}

static void conn_event(struct gen *g, struct conn *c, uint32_t events)
{
  if (c->state == C_CONNECTING) {
    int err = 0;
    socklen_t len = sizeof err;
    if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
      return;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      g->connect_errors++;
      conn_close(g, c);
      return;
    }
    g->connecting--;
    c->state = C_IDLE;
    push_free(g, c);
  }
  if (c->state == C_SENDING && (events & EPOLLOUT) && conn_write(g, c) != 0) {
    request_failed(g, c);
    return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP))
    conn_read(g, c);
}

/* ---- the schedule ---------------------------------------------------- */

/* Waits for events until `until` (ns precision where the kernel has
 * epoll_pwait2, else rounded up to the next millisecond). */
static int wait_events(struct gen *g, struct epoll_event *evs, int max,
                       uint64_t until)
{
  uint64_t now = now_ns(), d = until > now ? until - now : 0;
  if (!g->no_pwait2) {
    struct timespec ts = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
    int n = epoll_pwait2(g->ep, evs, max, &ts, NULL);
    if (n >= 0 || errno != ENOSYS)
      return n;
    g->no_pwait2 = 1;
  }
  return epoll_wait(g->ep, evs, max, (int)((d + 999999u) / 1000000u));
}

static int run(struct gen *g)
{
  struct epoll_event evs[256];

  if ((g->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
    perror("openloop: epoll_create1");
    g->failed = 1; /* still meets the others at the barrier */
  }
  /* Open the initial pool and wait (up to 5 s) until it is connected;
   * then wait for the other threads and main's t0. */
  for (int i = 0; i < g->init_conns && !g->failed; i++)
    if (conn_open(g) != 0)
      g->failed = 1;
  uint64_t give_up = now_ns() + 5000000000u;
  while (!g->failed && g->connecting > 0 && now_ns() < give_up) {
    int n = epoll_wait(g->ep, evs, 256, 100);
    for (int i = 0; i < n; i++)
      conn_event(g, evs[i].data.ptr, evs[i].events);
  }
  if (g->nconns == 0 || g->connecting > 0)
    g->failed = 1;
  pthread_barrier_wait(&g->start->bar);
  pthread_barrier_wait(&g->start->bar);
  if (g->start->failed)
    return -1;
  g->t0 = g->start->t0;
  uint64_t sched_end = due_of(g, g->total);
  uint64_t drain_end = sched_end + (uint64_t)(g->timeout_s * 1e9);
  for (;;) {
    uint64_t now = now_ns();
    while (g->next < g->total) {
      uint64_t due = due_of(g, g->next);
      if (due > now)
        break;
      struct conn *c = pop_free(g);
      if (c == NULL) {
        /* Every connection is busy: one more for each request kept
         * waiting, beyond those already connecting. */
        double k = (double)(now - g->t0) * g->rate / 1e9 - g->tid;
        uint64_t due_count = k < 0 ? 0 : (uint64_t)(k / g->nthreads) + 1;
        if (due_count > g->total)
          due_count = g->total;
        uint64_t waiting = due_count > g->next ? due_count - g->next : 1;
        while ((uint64_t)g->connecting < waiting && g->nconns < g->max_conns)
          if (conn_open(g) != 0) {
            g->connect_errors++;
            break;
          }
        c = pop_free(g); /* a connect on loopback may finish at once */
        if (c == NULL)
          break;
      }
      start_request(g, c, due, now);
      g->next++;
    }
    if (g->next >= g->total && g->inflight == 0)
      break;
    if (now >= drain_end)
      break;
    if (g->nconns == 0 && g->connecting == 0 && g->connect_errors > 0) {
      fprintf(stderr, "openloop: lost every connection to 127.0.0.1:%d\n",
              g->port);
      break;
    }
    /* Wake at the next due time; with requests already waiting, on an
     * event (a response frees a connection, a connect completes).  The
     * drain deadline is the backstop. */
    uint64_t until = drain_end;
    if (g->next < g->total && due_of(g, g->next) > now &&
        due_of(g, g->next) < until)
      until = due_of(g, g->next);
    int n = wait_events(g, evs, 256, until);
    if (until < drain_end) {
      uint64_t woke = now_ns();
      if (woke > until && woke - until > g->max_oversleep_ns)
        g->max_oversleep_ns = woke - until;
    }
    if (n < 0 && errno != EINTR) {
      perror("openloop: epoll_wait");
      return -1;
    }
    for (int i = 0; i < n; i++)
      conn_event(g, evs[i].data.ptr, evs[i].events);
  }
  return 0;
}

static void *thread_main(void *arg)
{
  struct gen *g = arg;
  if (run(g) != 0)
    g->failed = 1;
  while (g->open)
    conn_close(g, g->open); /* idle ones stay on the free list */
  while (pop_free(g))
    ;
  free(g->free_list);
  if (g->ep >= 0)
    close(g->ep);
  return NULL;
}

/* ---- report ---------------------------------------------------------- */

/* Sums the threads' results into m (settings from gens[0]); the latency
 * slices, which lie in one array in thread order, are moved together. */
static void merge(struct gen *m, struct gen *gens, int nthreads)
{
  uint64_t *lat = gens[0].lat_ns;
  m->port = gens[0].port;
  m->rate = gens[0].rate;
  m->label = gens[0].label;
  m->json = gens[0].json;
  m->t0 = gens[0].t0;
  m->nthreads = nthreads;
  m->lat_ns = lat;
  for (int k = 0; k < nthreads; k++) {
    struct gen *g = &gens[k];
    memmove(lat + m->nlat, g->lat_ns, g->nlat * sizeof *lat);
    m->nlat += g->nlat;
    m->total += g->total;
    m->next += g->next;
    m->inflight += g->inflight;
    m->ok += g->ok;
    m->non2xx += g->non2xx;
    m->io_errors += g->io_errors;
    m->connect_errors += g->connect_errors;
    m->peak_conns += g->peak_conns;
    if (g->last_done_ns > m->last_done_ns)
      m->last_done_ns = g->last_done_ns;
    if (g->max_lag_ns > m->max_lag_ns)
      m->max_lag_ns = g->max_lag_ns;
    if (g->max_oversleep_ns > m->max_oversleep_ns)
      m->max_oversleep_ns = g->max_oversleep_ns;
    for (int i = 0; i < g->nstatuses; i++)
      note_status(m, g->statuses[i]);
  }
}

static double pct_ms(const uint64_t *v, uint64_t n, double q)
{
  if (n == 0)
    return 0;
  uint64_t rank = (uint64_t)ceil(q * (double)n); /* nearest rank */
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return (double)v[rank - 1] / 1e6;
}

static void json_string(const char *s)
{
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      printf("\\u%04x", (unsigned)(unsigned char)*s);
    else
      putchar(*s);
  }
  putchar('"');
}

static void report(struct gen *g)
{
  uint64_t unsent = g->total - g->next;
  uint64_t timeouts = g->inflight;
  uint64_t errors = g->non2xx + g->io_errors + timeouts + unsent;
  uint64_t end = g->last_done_ns > g->t0 ? g->last_done_ns : g->t0 + 1;
  double sched_s = (double)g->total / g->rate;
  double span_s = (double)(end - g->t0) / 1e9;
  if (span_s < sched_s)
    span_s = sched_s;
  double achieved = (double)(g->ok + g->non2xx) / span_s;
  qsort(g->lat_ns, g->nlat, sizeof *g->lat_ns, cmp_u64);
  double p50 = pct_ms(g->lat_ns, g->nlat, 0.50),
         p99 = pct_ms(g->lat_ns, g->nlat, 0.99);
  double p999 = pct_ms(g->lat_ns, g->nlat, 0.999);
  double max = g->nlat ? (double)g->lat_ns[g->nlat - 1] / 1e6 : 0;
  char codes[64] = "";
  int n = 0;
  for (int i = 0; i < g->nstatuses; i++)
    n += snprintf(codes + n, sizeof codes - (size_t)n, "%s%d", i ? "," : "",
                  g->statuses[i]);

  if (g->json) {
    printf("{\"label\":");
    json_string(g->label);
    printf(
      ",\"rate\":%.1f,\"duration_s\":%.3f,\"requests\":%llu,\"ok\":%llu,"
      "\"errors\":%llu,\"non2xx\":%llu,\"non2xx_codes\":[%s],\"io_errors\":%llu,"
      "\"timeouts\":%llu,\"unsent\":%llu,\"connect_errors\":%llu,"
      "\"achieved_rps\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f,"
      "\"max_ms\":%.3f,\"threads\":%d,\"connections\":%d,\"max_send_lag_ms\":%.3f,"
      "\"max_generator_oversleep_ms\":%.3f}\n",
      g->rate, sched_s, (unsigned long long)g->total, (unsigned long long)g->ok,
      (unsigned long long)errors, (unsigned long long)g->non2xx, codes,
      (unsigned long long)g->io_errors, (unsigned long long)timeouts,
      (unsigned long long)unsent, (unsigned long long)g->connect_errors,
      achieved, p50, p99, p999, max, g->nthreads, g->peak_conns,
      (double)g->max_lag_ns / 1e6, (double)g->max_oversleep_ns / 1e6);
  } else {
    printf("%s: %.0f/s for %.1f s: %llu requests, %llu ok, %llu errors",
           g->label, g->rate, sched_s, (unsigned long long)g->total,
           (unsigned long long)g->ok, (unsigned long long)errors);
    if (errors)
      printf(" (non-2xx %llu%s%s%s, io %llu, timeout %llu, unsent %llu)",
             (unsigned long long)g->non2xx, n ? " [" : "", codes, n ? "]" : "",
             (unsigned long long)g->io_errors, (unsigned long long)timeouts,
             (unsigned long long)unsent);
    printf(
      "; achieved %.0f/s; latency p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, "
      "max %.3f ms; %d connections; the generator woke up to %.3f ms late\n",
      achieved, p50, p99, p999, max, g->peak_conns,
      (double)g->max_oversleep_ns / 1e6);
  }
  fflush(stdout);
}

/* ---- main ------------------------------------------------------------ */

static void usage(FILE *f)
{
  fprintf(
    f,
    "usage: openloop --port N --rate R [options]\n"
    "  --port N             server port on 127.0.0.1 (loopback only)\n"
    "  --rate R             requests per second, on a fixed schedule\n"
    "  --duration S         schedule length in seconds (default 10, <= 3600)\n"
    "  --requests N         schedule length in requests (instead of --duration)\n"
    "  --method M           default GET, or POST with --body\n"
    "  --path P             request target (default /)\n"
    "  --header 'K: V'      extra request header (repeatable, up to %d)\n"
    "  --body FILE          request body (Content-Length is added)\n"
    "  --connections N      keep-alive connections opened first (default 32)\n"
    "  --max-connections N  more are opened while requests wait (default 128)\n"
    "  --threads N          sending threads, each with its share of the schedule\n"
    "                       and of the connections (default 2)\n"
    "  --timeout S          wait after the last due time for answers (default 10)\n"
    "  --label TEXT         names the run in the output (default openloop)\n"
    "  --json               one JSON object instead of a line of text\n",
    MAX_HEADERS);
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
  char *e;
  errno = 0;
  double v = strtod(s, &e);
  if (errno != 0 || e == s || *e != '\0' || !(v >= lo && v <= hi))
    return -1;
  *out = v;
  return 0;
}

static char *read_file(const char *path, size_t *len)
{
  struct stat st;
  FILE *f = fopen(path, "rb");
  if (f == NULL || fstat(fileno(f), &st) != 0 || st.st_size > (off_t)MAX_BODY) {
    if (f)
      fclose(f);
    return NULL;
  }
  char *buf = malloc((size_t)st.st_size + 1);
  if (buf == NULL ||
      fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  *len = (size_t)st.st_size;
  return buf;
}

int main(int argc, char **argv)
{
  struct gen g;
  const char *method = NULL, *path = "/", *body_file = NULL;
  const char *headers[MAX_HEADERS];
  int nheaders = 0;
  double port = 0, rate = 0, duration = 10, requests = 0, conns = 32,
         maxconns = 128;
  double timeout = 10, threads = 2;

  memset(&g, 0, sizeof g);
  g.label = "openloop";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (!strcmp(a, "--json")) {
      g.json = 1;
      continue;
    }
    if (!strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (v == NULL) {
      usage(stderr);
      return 2;
    }
    i++;
    if (!strcmp(a, "--port"))
      bad = parse_num(v, 1, 65535, &port);
    else if (!strcmp(a, "--rate"))
      bad = parse_num(v, 0.001, 1e7, &rate);
    else if (!strcmp(a, "--duration"))
      bad = parse_num(v, 0.001, 3600, &duration);
    else if (!strcmp(a, "--requests"))
      bad = parse_num(v, 1, MAX_REQUESTS, &requests);
    else if (!strcmp(a, "--connections"))
      bad = parse_num(v, 1, 100000, &conns);
    else if (!strcmp(a, "--max-connections"))
      bad = parse_num(v, 1, 100000, &maxconns);
    else if (!strcmp(a, "--threads"))
      bad = parse_num(v, 1, 64, &threads);
    else if (!strcmp(a, "--timeout"))
      bad = parse_num(v, 0, 3600, &timeout);
    else if (!strcmp(a, "--method"))
      method = v;
    else if (!strcmp(a, "--path"))
      path = v;
    else if (!strcmp(a, "--body"))
      body_file = v;
    else if (!strcmp(a, "--label"))
      g.label = v;
    else if (!strcmp(a, "--header") && nheaders < MAX_HEADERS)
      headers[nheaders++] = v;
    else {
      usage(stderr);
      return 2;
    }
    if (bad) {
      fprintf(stderr, "openloop: %s: bad value '%s'\n", a, v);
      return 2;
    }
  }
  if (port == 0 || rate == 0) {
    fprintf(stderr, "openloop: --port and --rate are required\n");
    usage(stderr);
    return 2;
  }
  double total = requests > 0 ? requests : rate * duration;
  if (total < 1 || total > MAX_REQUESTS) {
    fprintf(stderr, "openloop: the schedule has %.0f requests (1 to %u)\n",
            total, MAX_REQUESTS);
    return 2;
  }
  g.port = (int)port;
  g.rate = rate;
  g.total = (uint64_t)(total + 0.5);
  g.init_conns = (int)conns;
  g.max_conns = (int)maxconns < g.init_conns ? g.init_conns : (int)maxconns;
  g.timeout_s = timeout;

  char *body = NULL;
  size_t bodylen = 0;
  if (body_file && (body = read_file(body_file, &bodylen)) == NULL) {
    fprintf(stderr, "openloop: --body %s: cannot read (or over %u bytes)\n",
            body_file, MAX_BODY);
    return 2;
  }
  if (method == NULL)
    method = body_file ? "POST" : "GET";
  size_t headlen = strlen(method) + strlen(path) + 128;
  for (int i = 0; i < nheaders; i++) {
    if (strpbrk(headers[i], "\r\n") || !strchr(headers[i], ':')) {
      fprintf(stderr,
              "openloop: --header '%s': want 'Name: value' on one line\n",
              headers[i]);
      return 2;
    }
    headlen += strlen(headers[i]) + 2;
  }
  if (strpbrk(method, " \r\n") || strpbrk(path, " \r\n")) {
    fprintf(stderr,
            "openloop: --method/--path may not hold spaces or line breaks\n");
    return 2;
  }
  g.req = malloc(headlen + bodylen);
  g.lat_ns = malloc(g.total * sizeof *g.lat_ns);
  if (g.req == NULL || g.lat_ns == NULL) {
    fprintf(stderr, "openloop: out of memory\n");
    return 1;
  }
  int n = snprintf(g.req, headlen, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n",
                   method, path, g.port);
  for (int i = 0; i < nheaders; i++)
    n += snprintf(g.req + n, headlen - (size_t)n, "%s\r\n", headers[i]);
  if (body_file)
    n += snprintf(g.req + n, headlen - (size_t)n, "Content-Length: %zu\r\n",
                  bodylen);
  n += snprintf(g.req + n, headlen - (size_t)n, "\r\n");
  if (bodylen)
    memcpy(g.req + n, body, bodylen);
  g.reqlen = (size_t)n + bodylen;
  free(body);

  /* Each thread takes every nthreads-th request and its share of the
   * connections; main sets t0 once all are connected. */
  int nthreads = (int)threads;
  if ((uint64_t)nthreads > g.total)
    nthreads = (int)g.total;
  struct gen *gens = calloc((size_t)nthreads, sizeof *gens);
  struct gen *m = calloc(1, sizeof *m);
  pthread_t tids[64];
  struct start start;
  if (gens == NULL || m == NULL) {
    fprintf(stderr, "openloop: out of memory\n");
    return 1;
  }
  memset(&start, 0, sizeof start);
  pthread_barrier_init(&start.bar, NULL, (unsigned)nthreads + 1);
  signal(SIGPIPE, SIG_IGN);
  uint64_t offset = 0;
  for (int k = 0; k < nthreads; k++) {
    struct gen *t = &gens[k];
    memcpy(t, &g, sizeof g);
    t->tid = k;
    t->nthreads = nthreads;
    t->total = (g.total - (uint64_t)k + (uint64_t)nthreads - 1) /
               (uint64_t)nthreads;
    t->init_conns = (g.init_conns + nthreads - 1) / nthreads;
    t->max_conns = (g.max_conns + nthreads - 1) / nthreads;
    t->lat_ns = g.lat_ns + offset;
    t->start = &start;
    offset += t->total;
    if (pthread_create(&tids[k], NULL, thread_main, t) != 0) {
      fprintf(stderr, "openloop: cannot start a thread\n");
      return 1;
    }
  }
  pthread_barrier_wait(&start.bar); /* every pool connected, or failed */
  for (int k = 0; k < nthreads; k++)
    start.failed |= gens[k].failed;
  start.t0 = now_ns() + 1000000u;
  pthread_barrier_wait(&start.bar);
  for (int k = 0; k < nthreads; k++)
    pthread_join(tids[k], NULL);
  pthread_barrier_destroy(&start.bar);
  int failed = 0;
  for (int k = 0; k < nthreads; k++)
    failed |= gens[k].failed;
  if (start.failed)
    fprintf(stderr, "openloop: cannot connect to 127.0.0.1:%d\n", g.port);
  else if (!failed) {
    merge(m, gens, nthreads);
    report(m);
  }
  free(m);
  free(gens);
  free(g.lat_ns);
  free(g.req);
  return failed ? 1 : 0;
}
