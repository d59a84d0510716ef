/* mem.c - pages made resident ahead of sequential writes (mem.h). */
#include "mem.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Set once this kernel has answered EINVAL (any thread may see it late:
 * the worst is one more refused call). */
static atomic_int mem_unsupported;

void api_mem_ahead(void *base, size_t cap, size_t *ready, size_t at, size_t n)
{
  uintptr_t page, a, b;
  size_t to, ahead;

  if (at + n <= *ready || at >= cap)
    return;
  if (cap < API_MEM_MIN) {
    *ready = cap;
    return;
  }
  page = (uintptr_t)sysconf(_SC_PAGESIZE);
  to = at + n < cap ? at + n : cap;
  /* As far ahead as has been written, from a page up to a step: a small
   * body is not given a step of pages it will never use. */
  ahead = to < page ? page : to > API_MEM_STEP ? API_MEM_STEP : to;
  to = cap - to > ahead ? to + ahead : cap;
  if (!atomic_load_explicit(&mem_unsupported, memory_order_relaxed)) {
    a = ((uintptr_t)base + (at > *ready ? at : *ready)) & ~(page - 1);
    b = ((uintptr_t)base + to + page - 1) & ~(page - 1);
    /* Whole pages that hold bytes of the buffer: every one is mapped. */
    if (madvise((void *)a, b - a, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
      atomic_store_explicit(&mem_unsupported, 1, memory_order_relaxed);
  }
  *ready = to;
}
