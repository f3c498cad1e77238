/* §1.2: the floating dtype a call computes in, and rounding to it.
 *
 * Values are held in doubles throughout. A float32 call rounds the result of every arithmetic
 * operation to float with fl(): for + - * / and sqrt of float operands, the exact result rounded
 * to double and then to float is the float32 result (double has more than 2 * 24 + 2 bits), so
 * this is float32 arithmetic, not float64 arithmetic rounded at the end. Elementary functions
 * (exp, log, tanh) are computed in double and rounded once, which is what a correctly rounded
 * float32 library would return.
 */
#ifndef ELMO_REAL_H
#define ELMO_REAL_H

#include "arena.h"

typedef enum { FLOAT64, FLOAT32 } FloatType;

typedef struct Steps Steps; /* steps.h: the overridable steps, clean or a mutant's (§13) */

/* Everything a computation needs to know about its call. */
typedef struct {
    FloatType dtype;     /* the dtype computed in (§1.2) */
    const Steps *steps;  /* the clean steps, or a mutant's */
    Arena *arena;        /* the call's memory */
} Ctx;

/* x rounded to the call's dtype. */
static inline double fl(const Ctx *ctx, double x)
{
    return ctx->dtype == FLOAT32 ? (double)(float)x : x;
}

#endif
