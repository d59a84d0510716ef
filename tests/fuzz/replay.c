/* replay.c - a main() for the libFuzzer targets built with the ordinary
 * compiler: runs LLVMFuzzerTestOneInput() once on every file named on the
 * command line (directories: every regular file in them), so the committed
 * corpus - seeds and every crash the fuzzers found - is a `make check`
 * regression test, and runs under ASan/UBSan/TSan in check-asan/check-tsan.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  long n;

  if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0) {
    perror(path);
    if (f != NULL)
      fclose(f);
    return -1;
  }
  /* An exact-size copy, so ASan sees reads past the end of the input. */
  buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    perror(path);
    free(buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 0;
}

int main(int argc, char **argv)
{
  int files = 0, bad = 0;

  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      bad++;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      bad += run_file(argv[i]) != 0;
      files++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    struct dirent *e;
    if (d == NULL) {
      perror(argv[i]);
      bad++;
      continue;
    }
    while ((e = readdir(d)) != NULL) {
      char path[4096];
      if (e->d_name[0] == '.')
        continue;
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        bad += run_file(path) != 0;
        files++;
      }
    }
    closedir(d);
  }
  printf("%s: %d input(s) replayed, %d unreadable\n", argv[0], files, bad);
  return bad == 0 && files > 0 ? 0 : 1;
}
