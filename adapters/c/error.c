/* A failed call's answer (§15.6). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* snprintf may cut a message inside a multi-byte UTF-8 character: drop the incomplete tail, since
 * the harness decodes messages as UTF-8 (§15.3). */
static void trim_incomplete_utf8(char *text)
{
    size_t len = strlen(text);
    size_t start = len;
    while (start > 0 && ((unsigned char)text[start - 1] & 0xC0) == 0x80) {
        start--; /* continuation bytes */
    }
    if (start == 0) {
        return;
    }
    unsigned char lead = (unsigned char)text[start - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (len - (start - 1) < need) {
        text[start - 1] = '\0';
    }
}

static bool vfail(Error *err, const char *kind, const char *fmt, va_list args)
{
    err->kind = kind;
    vsnprintf(err->message, sizeof err->message, fmt, args);
    trim_incomplete_utf8(err->message);
    return false;
}

bool fail_with(Error *err, const char *kind, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vfail(err, kind, fmt, args);
    va_end(args);
    return false;
}

bool value_error(Error *err, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vfail(err, "ValueError", fmt, args);
    va_end(args);
    return false;
}

void quote_text(char *out, size_t size, const char *text, size_t len, size_t limit)
{
    size_t at = 0;
    if (size == 0) {
        return;
    }
    for (size_t i = 0; i < len && i < limit; i++) {
        unsigned char byte = (unsigned char)text[i];
        char piece[8];
        if (byte >= 0x20 && byte < 0x7F && byte != '\\') {
            piece[0] = (char)byte;
            piece[1] = '\0';
        } else {
            snprintf(piece, sizeof piece, "\\x%02x", byte);
        }
        size_t n = strlen(piece);
        if (at + n + 1 > size) {
            break;
        }
        memcpy(out + at, piece, n);
        at += n;
    }
    if (len > limit && at + 4 <= size) {
        memcpy(out + at, "...", 3);
        at += 3;
    }
    out[at] = '\0';
}
