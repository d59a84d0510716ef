/* mem.h - pages made resident just ahead of a buffer's sequential writes.
 *
 * Why: the first write to each 4 KiB page of a fresh buffer is a page
 * fault, and in a VM a fault costs microseconds: a 1 MiB raw body took
 * 256 of them, a 1M-element float32 JSON tensor 1,000.  One
 * madvise(MADV_POPULATE_WRITE) makes many pages resident at once, without
 * a fault each.  Kept ahead of the bytes written by as much as has been
 * written (at least a page, at most API_MEM_STEP), so what is resident is
 * what the writes need plus at most that much: a small body gets a page,
 * a large one a step at a time.
 *
 * Thread-safe (no state but a process-wide "this kernel lacks it" flag).
 * Prefix api_mem_.
 */
#ifndef API_MEM_H
#define API_MEM_H

#include <stddef.h>

/* How far ahead of the writes pages are made resident. */
#define API_MEM_STEP (64u * 1024)

/* Buffers smaller than this are left to fault as they are written: they
 * come from malloc's heap, whose pages are mostly resident already, and a
 * madvise costs a system call each time where the faults it could save
 * are a few at most (a small JSON request paid one per request). */
#define API_MEM_MIN (16u * 1024)

/* About to write base[at, at + n) of a buffer of `cap` bytes whose first
 * *ready bytes have resident pages: when e = at + n passes *ready, makes
 * the pages up to e + min(max(e, page), API_MEM_STEP) (at most cap)
 * resident and moves *ready there; a buffer of fewer than API_MEM_MIN
 * bytes is never advised (*ready moves to `cap` at once).  Never fails:
 * a kernel without the advice (before Linux 5.14: then it is never asked
 * again) or a refusal (ENOMEM) leaves the faults to happen as before.  A
 * buffer that moved (realloc) must set *ready back to the bytes it had
 * written. */
void api_mem_ahead(void *base, size_t cap, size_t *ready, size_t at, size_t n);

#endif /* API_MEM_H */
