/* tmem.c - tensor memory with a cache of warm large buffers (tmem.h).
 *
 * Every buffer starts with a 64-byte header (its kind, mapping length and
 * size) that api_tmem_realloc() and api_tmem_free() read; the caller's
 * bytes follow it.  The cache is a small table of mappings, each with the
 * time it was freed: an allocation takes the smallest that fits (any
 * larger one: its pages past the request are address space, resident only
 * as far as an earlier request wrote them), a free evicts the oldest until
 * the new one fits under the limit.
 */
#include "tmem.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define TMEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TMEM_ASAN 1
#endif
#endif
/* ThreadSanitizer does not follow mremap(): the old range's shadow would
 * keep its accesses for whatever is mapped there next (a false race), so
 * a growing mapping is copied instead. */
#if defined(__SANITIZE_THREAD__)
#define TMEM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TMEM_TSAN 1
#endif
#endif
#ifdef TMEM_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define HDR 64
#define KIND_MALLOC UINT32_C(0x746d656d) /* "tmem" */
#define KIND_MAP UINT32_C(0x746d6170)    /* "tmap" */
/* At most this many cached buffers (a request holds a few at once). */
#define SLOTS 16

struct hdr {
  uint32_t kind;
  size_t len;  /* KIND_MAP: the mapping's length, header included */
  size_t size; /* the caller's bytes */
};

struct slot {
  unsigned char *base; /* NULL: free slot */
  size_t len;
  uint64_t freed_ms;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct slot cache[SLOTS];
static size_t cache_bytes, limit;
static uint64_t hits, misses;

static size_t page_size(void)
{
  return (size_t)sysconf(_SC_PAGESIZE);
}

static uint64_t now_ms(void)
{
  struct timespec t;

  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static struct hdr *hdr_of(void *p)
{
  struct hdr *h = (struct hdr *)(void *)((unsigned char *)p - HDR);

  UNPOISON(h, sizeof *h);
  if (h->kind != KIND_MALLOC && h->kind != KIND_MAP)
    abort(); /* not a buffer of this allocator */
  return h;
}

/* Mapping bytes for n caller bytes, or 0 if that overflows. */
static size_t map_len(size_t n)
{
  size_t pg = page_size();

  if (n > SIZE_MAX - HDR - pg)
    return 0;
  return (n + HDR + pg - 1) / pg * pg;
}

/* Takes slot i out of the cache (mutex held). */
static unsigned char *slot_take(size_t i, size_t *len)
{
  unsigned char *b = cache[i].base;

  *len = cache[i].len;
  cache[i].base = NULL;
  cache_bytes -= *len;
  return b;
}

/* The cached mapping of at least `len` bytes that is smallest (mutex
 * held), or NULL. */
static unsigned char *cache_take(size_t len, size_t *got)
{
  size_t best = SLOTS;

  for (size_t i = 0; i < SLOTS; i++)
    if (cache[i].base != NULL && cache[i].len >= len &&
        (best == SLOTS || cache[i].len < cache[best].len))
      best = i;
  return best == SLOTS ? NULL : slot_take(best, got);
}

/* The slot freed longest ago (mutex held), SLOTS if the cache is empty. */
static size_t oldest(void)
{
  size_t o = SLOTS;

  for (size_t i = 0; i < SLOTS; i++)
    if (cache[i].base != NULL &&
        (o == SLOTS || cache[i].freed_ms < cache[o].freed_ms))
      o = i;
  return o;
}

/* Unmaps the n buffers taken out (outside the mutex: unmapping a large
 * buffer takes a while); returns their bytes. */
static size_t unmap_all(unsigned char *const *b, const size_t *len, size_t n)
{
  size_t total = 0;

  for (size_t i = 0; i < n; i++) {
    UNPOISON(b[i], len[i]);
    munmap(b[i], len[i]);
    total += len[i];
  }
  return total;
}

static void *wrap(unsigned char *base, uint32_t kind, size_t len, size_t n)
{
  struct hdr *h = (struct hdr *)(void *)base;

  UNPOISON(base, HDR + n);
  h->kind = kind;
  h->len = len;
  h->size = n;
  POISON(base, HDR); /* the header is ours */
  if (kind == KIND_MAP)
    POISON(base + HDR + n, len - HDR - n);
  return base + HDR;
}

void *api_tmem_alloc(size_t n)
{
  unsigned char *b;
  size_t len, got;

  if (n < API_TMEM_MAP_MIN - HDR) {
    if ((b = malloc(HDR + n)) == NULL)
      return NULL;
    return wrap(b, KIND_MALLOC, 0, n);
  }
  if ((len = map_len(n)) == 0)
    return NULL;
  pthread_mutex_lock(&mu);
  b = cache_take(len, &got);
  if (b != NULL)
    hits++;
  else
    misses++;
  pthread_mutex_unlock(&mu);
  if (b == NULL) {
    b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
             0);
    if (b == MAP_FAILED)
      return NULL;
    got = len;
  }
  return wrap(b, KIND_MAP, got, n);
}

void *api_tmem_realloc(void *p, size_t n)
{
  struct hdr *h;
  unsigned char *base, *nb;
  size_t len, old, keep;
  void *q;

  if (p == NULL)
    return api_tmem_alloc(n);
  h = hdr_of(p);
  base = (unsigned char *)(void *)h;
  old = h->size;
  if (h->kind == KIND_MALLOC && n < API_TMEM_MAP_MIN - HDR) {
    if ((nb = realloc(base, HDR + n)) == NULL) {
      POISON(base, HDR);
      return NULL;
    }
    return wrap(nb, KIND_MALLOC, 0, n);
  }
  if (h->kind == KIND_MAP) {
    if ((len = map_len(n)) == 0) {
      POISON(base, HDR);
      return NULL;
    }
    if (len <= h->len) {
      /* Shrink: the pages past n go, the address space stays. */
      keep = h->len;
      if (len < keep)
        (void)madvise(base + len, keep - len, MADV_DONTNEED);
      return wrap(base, KIND_MAP, keep, n);
    }
#ifndef TMEM_TSAN
    /* Grow: the kernel moves the pages, nothing is copied.  (The old
     * range's shadow is cleared first: it may be mapped again later.) */
    keep = h->len;
    UNPOISON(base, keep);
    nb = mremap(base, keep, len, MREMAP_MAYMOVE);
    if (nb == MAP_FAILED) {
      (void)wrap(base, KIND_MAP, keep, old);
      return NULL;
    }
    return wrap(nb, KIND_MAP, len, n);
#endif
  }
  /* From malloc to a mapping (or, under TSan, to a larger one). */
  POISON(base, HDR);
  if ((q = api_tmem_alloc(n)) == NULL)
    return NULL;
  memcpy(q, p, old < n ? old : n);
  api_tmem_free(p);
  return q;
}

void api_tmem_free(void *p)
{
  struct hdr *h;
  unsigned char *base, *out[SLOTS + 1];
  size_t len, outlen[SLOTS + 1], nout = 0, i, free_slot = SLOTS;

  if (p == NULL)
    return;
  h = hdr_of(p);
  base = (unsigned char *)(void *)h;
  if (h->kind == KIND_MALLOC) {
    h->kind = 0;
    free(base);
    return;
  }
  len = h->len;
  h->kind = 0; /* freeing a cached buffer again aborts in hdr_of() */
  POISON(base, len);
  pthread_mutex_lock(&mu);
  if (len <= limit) {
    /* Room: the oldest go until it fits, and a slot is free. */
    for (;;) {
      for (i = 0; i < SLOTS && free_slot == SLOTS; i++)
        if (cache[i].base == NULL)
          free_slot = i;
      if (free_slot < SLOTS && cache_bytes + len <= limit)
        break;
      i = oldest();
      out[nout] = slot_take(i, &outlen[nout]);
      nout++;
      if (free_slot == SLOTS)
        free_slot = i;
    }
    cache[free_slot].base = base;
    cache[free_slot].len = len;
    cache[free_slot].freed_ms = now_ms();
    cache_bytes += len;
  } else {
    out[nout] = base;
    outlen[nout++] = len;
  }
  pthread_mutex_unlock(&mu);
  (void)unmap_all(out, outlen, nout);
}

/* Unmaps cached buffers: the oldest while the cache is over its limit
 * (over_limit), else those freed at least idle_ms ago (0: all).  Returns
 * the bytes unmapped. */
static size_t evict(int over_limit, uint64_t idle_ms)
{
  unsigned char *out[SLOTS];
  size_t outlen[SLOTS], nout = 0, i;
  uint64_t now;

  pthread_mutex_lock(&mu);
  now = now_ms(); /* under the mutex: no entry is newer */
  if (over_limit) {
    while (cache_bytes > limit) {
      i = oldest();
      out[nout] = slot_take(i, &outlen[nout]);
      nout++;
    }
  } else {
    for (i = 0; i < SLOTS; i++)
      if (cache[i].base != NULL &&
          (idle_ms == 0 || now - cache[i].freed_ms >= idle_ms)) {
        out[nout] = slot_take(i, &outlen[nout]);
        nout++;
      }
  }
  pthread_mutex_unlock(&mu);
  return unmap_all(out, outlen, nout);
}

void api_tmem_cache_limit(size_t bytes)
{
  pthread_mutex_lock(&mu);
  limit = bytes;
  pthread_mutex_unlock(&mu);
  (void)evict(1, 0);
}

size_t api_tmem_trim(uint64_t idle_ms)
{
  return evict(0, idle_ms);
}

void api_tmem_stats(struct api_tmem_stats *st)
{
  pthread_mutex_lock(&mu);
  st->cached_bytes = cache_bytes;
  st->cached = 0;
  for (size_t i = 0; i < SLOTS; i++)
    st->cached += cache[i].base != NULL;
  st->hits = hits;
  st->misses = misses;
  pthread_mutex_unlock(&mu);
}
