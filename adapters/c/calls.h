/* §11: the protocol functions, as calls of the wire protocol (§15.5): each checks its arguments
 * (§8), computes, and encodes its result with the structure of spec/protocol.json's `returns`. */
#ifndef ELMO_CALLS_H
#define ELMO_CALLS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "real.h"
#include "wire.h"

enum { MAX_ARGUMENTS = 6 };

typedef struct {
    const char *name;
    const char *arguments[MAX_ARGUMENTS]; /* in protocol.json's order; NULL after the last */
    /* Writes the result value into `out`; or returns false with `err` set, having computed nothing. */
    bool (*call)(Ctx *ctx, const WireValue *const *args, WireBuf *out, Error *err);
} ProtocolFunction;

/* The function named `name` (`len` bytes), or NULL. */
const ProtocolFunction *find_function(const char *name, size_t len);

#endif
