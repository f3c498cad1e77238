/* The steps of the computation that a mutant (§13) may replace.
 *
 * The clean code calls these few steps through the call's table (ctx->steps); everything else is
 * fixed. CLEAN_STEPS holds the clean steps, each defined in the file of its section; a mutant
 * (mutants.c) is the clean table with one step replaced. Keeping the steps here, rather than
 * testing a mutant id inside the clean code, keeps the clean code a reading of the spec.
 */
#ifndef ELMO_STEPS_H
#define ELMO_STEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "real.h"

typedef struct BiLMPass BiLMPass;         /* bilm.h */
typedef struct ProbeProblem ProbeProblem; /* probe.h */

struct Steps {
    /* §5.1: w = softmax(s) over n layers. */
    void (*mix_weights)(const Ctx *ctx, size_t n, const double *s, double *w);
    /* §5.2: the factor the mix is multiplied by (γ), and its derivative with respect to γ (§6.3). */
    double (*gamma_factor)(double gamma, double *derivative);

    /* §3.2: the input u [B, T, d] of forward layer k + 1 (k >= 1, 0-based k) at real positions. */
    void (*forward_layer_input)(const Ctx *ctx, const BiLMPass *pass, size_t k, double *u);
    /* §3.3: the positions a row's backward LSTMs read, step by step, into positions[0 .. T);
     * returns the number of steps. */
    size_t (*backward_order)(size_t length, size_t T, size_t *positions);
    /* §3.3: the position where the output of backward step j is stored. */
    size_t (*backward_store)(size_t j, const size_t *positions);
    /* §3.4: whether b^k at position t of a row of this length is returned (else 0 is). */
    bool (*backward_state_returned)(size_t t, size_t length);

    /* §4.1: whether fwd_{b,t} (bwd_{b,t}) is scored, and its target id. */
    bool (*forward_target)(const int64_t *row_ids, size_t t, size_t length, size_t *target);
    bool (*backward_target)(const int64_t *row_ids, size_t t, size_t length, size_t *target);

    /* §7.3: one gradient-descent step on (V, a), in place. */
    void (*gradient_step)(const Ctx *ctx, const ProbeProblem *problem, double *V, double *a);
    /* §7.4: (W, b) for raw features from (V, a). */
    void (*fold_back)(const Ctx *ctx, const ProbeProblem *problem, const double *V, const double *a, double *W,
                      double *b);

    /* §8: which ids are range-checked (V03), and which γ and lr are accepted (V14, V22). */
    bool (*id_checked_at)(size_t t, size_t length);
    bool (*gamma_accepted)(double gamma);
    bool (*lr_accepted)(double lr);
};

extern const Steps CLEAN_STEPS;

#endif
