/* tgen.c - writes a tensor's elements to stdout as raw little-endian
 * bytes, generated on the fly (the streaming tests send gigabytes that
 * must not be files):
 *
 *   tgen DTYPE COUNT mod17        element k = k % 17
 *   tgen DTYPE COUNT rand SEED    pseudo-random (xorshift64*): for floats
 *                                 finite values of varied magnitude and
 *                                 sign, for integers values in [-2^20, 2^20)
 *                                 (unsigned: [0, 2^20))
 *
 * DTYPE: float32 float64 int32 int64 uint32 uint64.  Exit 2 on bad usage,
 * 1 on a write error.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (1u << 20)

static void put_le(unsigned char *p, uint64_t v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

int main(int argc, char **argv)
{
  static unsigned char buf[CHUNK];
  const char *dt;
  unsigned long long count;
  uint64_t state = 0;
  size_t esize, fill = 0;
  int is_float, is_signed, rnd;
  char *end;

  if (argc < 4)
    goto usage;
  dt = argv[1];
  errno = 0;
  count = strtoull(argv[2], &end, 10);
  if (errno != 0 || *end != '\0')
    goto usage;
  rnd = strcmp(argv[3], "rand") == 0;
  if (rnd) {
    if (argc != 5)
      goto usage;
    state = strtoull(argv[4], NULL, 10) * 2654435761u + 1;
  } else if (strcmp(argv[3], "mod17") != 0 || argc != 4) {
    goto usage;
  }
  is_float = strncmp(dt, "float", 5) == 0;
  is_signed = strncmp(dt, "int", 3) == 0;
  if (strcmp(dt, "float32") == 0 || strcmp(dt, "int32") == 0 ||
      strcmp(dt, "uint32") == 0)
    esize = 4;
  else if (strcmp(dt, "float64") == 0 || strcmp(dt, "int64") == 0 ||
           strcmp(dt, "uint64") == 0)
    esize = 8;
  else
    goto usage;

  for (unsigned long long k = 0; k < count; k++) {
    uint64_t bits;
    double d;
    int64_t iv;

    if (rnd) {
      state ^= state >> 12;
      state ^= state << 25;
      state ^= state >> 27;
      bits = state * UINT64_C(2685821657736338717);
      d = ldexp((double)(bits >> 11) / 9007199254740992.0 - 0.5,
                (int)(bits & 63) - 32);
      iv = (int64_t)(bits >> 43) - (is_signed ? (1 << 20) : 0);
    } else {
      d = (double)(k % 17);
      iv = (int64_t)(k % 17);
    }
    if (is_float && esize == 4) {
      float f = (float)d;
      uint32_t u;
      memcpy(&u, &f, 4);
      bits = u;
    } else if (is_float) {
      memcpy(&bits, &d, 8);
    } else {
      bits = (uint64_t)iv;
    }
    put_le(buf + fill, bits, esize);
    fill += esize;
    if (fill == CHUNK) {
      if (fwrite(buf, 1, fill, stdout) != fill)
        return 1;
      fill = 0;
    }
  }
  if (fwrite(buf, 1, fill, stdout) != fill || fflush(stdout) != 0)
    return 1;
  return 0;

usage:
  fprintf(stderr, "usage: tgen DTYPE COUNT mod17|rand SEED\n");
  return 2;
}
