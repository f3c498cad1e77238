/* A failed call's answer (§15.6): an error kind and a one-line message. */
#ifndef ELMO_ERROR_H
#define ELMO_ERROR_H

#include <stdbool.h>
#include <stddef.h>

#if defined(__GNUC__)
#define PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define PRINTF_LIKE(fmt, args)
#endif

typedef struct {
    const char *kind;   /* "ValueError" (§1.3), "ProtocolError", "UnknownMutant", ... */
    char message[1024]; /* valid UTF-8, also when cut short */
} Error;

/* Fill `err` and return false, so that a check can end with `return value_error(err, ...)`. */
bool fail_with(Error *err, const char *kind, const char *fmt, ...) PRINTF_LIKE(3, 4);
bool value_error(Error *err, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* `text` (`len` bytes, not NUL-terminated) for a message: ASCII, with other bytes as \xNN, and
 * cut after `limit` bytes. Writes at most `size` bytes including the NUL. */
void quote_text(char *out, size_t size, const char *text, size_t len, size_t limit);

#endif
