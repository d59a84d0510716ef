/* tmem.h - tensor memory: the buffers of request bodies, decoded tensors,
 * stream buffers and outputs, with the large ones kept warm for reuse.
 *
 * Why: a large buffer is an anonymous mapping, and every page of a fresh
 * mapping costs a fault (and in a VM a shadow-page fill) the first time it
 * is written: a 1M-element float32 JSON request wrote 1,000 fresh pages
 * for its tensor and spent about a quarter of its CPU on them.  A freed
 * large buffer is therefore not unmapped but cached, its pages resident,
 * and the next request of its size takes it as it is.  The cache is
 * bounded (api_tmem_cache_limit(), in mapping bytes, resident or not) and
 * emptied of buffers no request took for a while (api_tmem_trim()), so an
 * idle daemon returns to its idle size.
 *
 * A buffer has the usual malloc contract (contents uninitialised, never
 * NULL for size 0) and belongs to this allocator: it must be resized with
 * api_tmem_realloc() and freed with api_tmem_free(), never with realloc()
 * or free() (the mismatch aborts in glibc and is reported by ASan).
 * Buffers below API_TMEM_MAP_MIN bytes come from malloc; larger ones are
 * page-aligned mappings (64-byte aligned data).  Under AddressSanitizer a
 * cached buffer is poisoned (a use after free is reported) and the bytes
 * past the size of a live one too.
 *
 * Thread-safe: any thread may allocate or free (the cache has a mutex).
 * Prefix api_tmem_.
 */
#ifndef API_TMEM_H
#define API_TMEM_H

#include <stddef.h>
#include <stdint.h>

/* Buffers of this size and up are mappings, and cached when freed. */
#define API_TMEM_MAP_MIN (256u * 1024)

/* A buffer of n bytes, or NULL (out of memory, or n too large). */
void *api_tmem_alloc(size_t n);
/* Resizes p (NULL: as api_tmem_alloc) to n bytes, keeping the first
 * min(old, n) bytes; NULL on failure with p untouched.  A mapping that
 * shrinks keeps its address space (a later request of the old size can
 * reuse it) but gives back the pages past n. */
void *api_tmem_realloc(void *p, size_t n);
/* Frees (NULL is allowed): a mapping goes to the cache when it fits in
 * the limit, evicting the buffers unused longest, else is unmapped. */
void api_tmem_free(void *p);

/* The cache's bound in mapping bytes (0: large buffers are unmapped when
 * freed, the default).  Lowering it evicts at once. */
void api_tmem_cache_limit(size_t bytes);
/* Unmaps the cached buffers freed more than `idle_ms` milliseconds ago
 * (0: all of them).  Returns the bytes unmapped. */
size_t api_tmem_trim(uint64_t idle_ms);

struct api_tmem_stats {
  size_t cached_bytes; /* mapping bytes in the cache now */
  size_t cached;       /* buffers in the cache now */
  uint64_t hits;       /* large allocations served from the cache */
  uint64_t misses;     /* large allocations that mapped fresh pages */
};
void api_tmem_stats(struct api_tmem_stats *st);

#endif /* API_TMEM_H */
