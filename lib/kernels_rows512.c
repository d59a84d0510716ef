/* kernels_rows512.c - AVX-512 rd__rows_out() of short rows (placeholder:
 * no vector form yet, the AVX2 one is used). */
#include "kernels_impl.h"

int rd__rows512_out(int dtype, int term, void *out, const unsigned char *x,
                    size_t n, size_t nrows, int fin)
{
  (void)dtype;
  (void)term;
  (void)out;
  (void)x;
  (void)n;
  (void)nrows;
  (void)fin;
  return -1;
}
