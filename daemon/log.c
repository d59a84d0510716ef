/* log.c - timestamped, level-filtered lines on stderr. */
#include "config.h" /* autoconf */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

int log_threshold = LOG_LVL_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_init(int level)
{
  setvbuf(stderr, NULL, _IONBF, 0);
  log_threshold = level;
}

const char *log_level_name(int level)
{
  if (level < LOG_LVL_ERROR || level > LOG_LVL_DEBUG)
    return NULL;
  return level_names[level];
}

int log_level_parse(const char *name, int *out)
{
  for (int i = LOG_LVL_ERROR; i <= LOG_LVL_DEBUG; i++) {
    if (strcmp(name, level_names[i]) == 0) {
      *out = i;
      return 0;
    }
  }
  return -1;
}

void log_write(int level, const char *fmt, ...)
{
  char line[2048];
  struct timespec ts;
  struct tm tm;
  size_t n;
  int m;
  va_list ap;
  const char *name = log_level_name(level);

  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
  m = snprintf(line + n, sizeof line - n, ".%03ldZ %s ", ts.tv_nsec / 1000000L,
               name ? name : "?");
  if (m > 0)
    n += (size_t)m;

  va_start(ap, fmt);
  m = vsnprintf(line + n, sizeof line - n, fmt, ap);
  va_end(ap);
  /* Keep room for the newline even when the message was truncated. */
  if (m < 0)
    m = 0;
  n += (size_t)m;
  if (n > sizeof line - 2)
    n = sizeof line - 2;
  while (n > 0 && line[n - 1] == '\n')
    n--;
  line[n++] = '\n';

  /* One write per line: concurrent lines do not interleave. */
  const char *p = line;
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, p, n);
    if (w <= 0)
      break;
    p += w;
    n -= (size_t)w;
  }
}
