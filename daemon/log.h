/* log.h - one-line logs on stderr: "<ISO-8601 UTC time> <level> <message>".
 *
 * LOG(level, fmt, ...) checks the level before its arguments are evaluated,
 * so filtered calls cost one comparison.  Any thread may log: each line is
 * written with a single write(2) on unbuffered stderr, so lines from
 * different threads never interleave.  The level is set once at start-up,
 * before any other thread exists, and only read afterwards.
 */
#ifndef RD_LOG_H
#define RD_LOG_H

enum log_level {
  LOG_LVL_ERROR = 0,
  LOG_LVL_WARN = 1,
  LOG_LVL_INFO = 2,
  LOG_LVL_DEBUG = 3
};

/* The current threshold; lines above it are dropped. */
extern int log_threshold;

#define LOG(level, ...)                                                        \
  do {                                                                         \
    if ((level) <= log_threshold)                                              \
      log_write((level), __VA_ARGS__);                                         \
  } while (0)

#define LOG_ERROR(...) LOG(LOG_LVL_ERROR, __VA_ARGS__)
#define LOG_WARN(...) LOG(LOG_LVL_WARN, __VA_ARGS__)
#define LOG_INFO(...) LOG(LOG_LVL_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) LOG(LOG_LVL_DEBUG, __VA_ARGS__)

/* Makes stderr unbuffered and sets the threshold. */
void log_init(int level);

/* Writes one line unconditionally (use LOG).  A trailing newline in `fmt`
 * is not needed; overlong lines are truncated. */
void log_write(int level, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

/* "error", "warn", "info", "debug"; NULL for an unknown level. */
const char *log_level_name(int level);
/* Parses a level name; 0 and *out set, or -1. */
int log_level_parse(const char *name, int *out);

#endif /* RD_LOG_H */
