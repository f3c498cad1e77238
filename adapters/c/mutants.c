/* §13: the catalog mutants of spec/mutants.json, and three extra ones.
 *
 * Each mutant is the clean table of steps (steps.c) with the step where its defect sits replaced
 * by a broken one, defined here; the clean code has no mutant switches. The catalog mutants keep
 * the catalog's titles. The extra mutants ("x-...") each stop rejecting one kind of bad input of
 * §8, so that the validation tests have something to kill; on valid inputs they compute exactly
 * as the clean program.
 */
#include "mutants.h"

#include <string.h>

#include "bilm.h"
#include "probe.h"

/* s01 (§5.1): the raw s are the weights, no softmax. */
static void raw_weights(const Ctx *ctx, size_t n, const double *s, double *w)
{
    (void)ctx;
    memcpy(w, s, n * sizeof(double));
}
static void s01(Steps *steps) { steps->mix_weights = raw_weights; }

/* s02 (§5.2): γ is never applied, so the mix does not depend on it. */
static double gamma_ignored(double gamma, double *derivative)
{
    (void)gamma;
    *derivative = 0.0;
    return 1.0;
}
static void s02(Steps *steps) { steps->gamma_factor = gamma_ignored; }

/* s03 (§3.2): forward layer k + 1 >= 2 reads f^k + b^k instead of f^k. */
static void forward_reads_both(const Ctx *ctx, const BiLMPass *pass, size_t k, double *u)
{
    size_t T = pass->batch.T, d = pass->params->d;
    for (size_t b = 0; b < pass->batch.B; b++) {
        for (size_t at = b * T * d; at < (b * T + pass->batch.lengths[b]) * d; at++) {
            u[at] = fl(ctx, pass->f[k - 1][at] + pass->b[k - 1][at]);
        }
    }
}
static void s03(Steps *steps) { steps->forward_layer_input = forward_reads_both; }

/* s04 (§3.3): the whole padded row is flipped along time, so a short row reads its padding
 * first; the outputs are flipped back the same way. */
static size_t flip_padded_row(size_t length, size_t T, size_t *positions)
{
    (void)length;
    for (size_t j = 0; j < T; j++) {
        positions[j] = T - 1 - j;
    }
    return T;
}
static void s04(Steps *steps) { steps->backward_order = flip_padded_row; }

/* s05 (§3.3): the backward outputs stay in the order they were produced. */
static size_t store_as_produced(size_t j, const size_t *positions)
{
    (void)positions;
    return j;
}
static void s05(Steps *steps) { steps->backward_store = store_as_produced; }

/* s06 (§3.4): the backward LSTMs run without lengths: after the reversed row they run on through
 * the padding, and those outputs are kept. Two steps carry this one defect: the order (on
 * through the padding) and the selection of b^k (padded positions kept). */
static size_t reverse_then_padding(size_t length, size_t T, size_t *positions)
{
    for (size_t j = 0; j < T; j++) {
        positions[j] = j < length ? length - 1 - j : j;
    }
    return T;
}
static bool every_state_returned(size_t t, size_t length)
{
    (void)t;
    (void)length;
    return true;
}
static void s06(Steps *steps)
{
    steps->backward_order = reverse_then_padding;
    steps->backward_state_returned = every_state_returned;
}

/* s07 (§4.1): the forward direction is scored on the current token x_t. */
static bool forward_scores_current(const int64_t *row_ids, size_t t, size_t length, size_t *target)
{
    if (t + 2 > length) {
        return false;
    }
    *target = (size_t)row_ids[t];
    return true;
}
static void s07(Steps *steps) { steps->forward_target = forward_scores_current; }

/* s08 (§4.1): the backward direction is scored on the current token x_t. */
static bool backward_scores_current(const int64_t *row_ids, size_t t, size_t length, size_t *target)
{
    if (t < 1 || t + 1 > length) {
        return false;
    }
    *target = (size_t)row_ids[t];
    return true;
}
static void s08(Steps *steps) { steps->backward_target = backward_scores_current; }

/* s09 (§7.4): the weights for standardized features are returned, not folded back. */
static void not_folded(const Ctx *ctx, const ProbeProblem *problem, const double *V, const double *a, double *W,
                       double *b)
{
    (void)ctx;
    memcpy(W, V, problem->D * problem->C * sizeof(double));
    memcpy(b, a, problem->C * sizeof(double));
}
static void s09(Steps *steps) { steps->fold_back = not_folded; }

/* s10 (§7.3): gradient ascent: the step adds the gradient instead of subtracting it. */
static void ascent_step(const Ctx *ctx, const ProbeProblem *problem, double *V, double *a)
{
    ProbeProblem ascending = *problem;
    ascending.lr = -problem->lr;
    gradient_step(ctx, &ascending, V, a);
}
static void s10(Steps *steps) { steps->gradient_step = ascent_step; }

/* x-padded-ids-unchecked (§8 V03): ids are range-checked at real positions only. */
static bool real_ids_checked(size_t t, size_t length) { return t < length; }
static void padded_ids_unchecked(Steps *steps) { steps->id_checked_at = real_ids_checked; }

/* x-gamma-finite-unchecked (§8 V14): a NaN or infinite γ is accepted. */
static bool any_gamma(double gamma)
{
    (void)gamma;
    return true;
}
static void gamma_finite_unchecked(Steps *steps) { steps->gamma_accepted = any_gamma; }

/* x-lr-unchecked (§8 V22): any lr is accepted, 0, negative and NaN included. */
static bool any_lr(double lr)
{
    (void)lr;
    return true;
}
static void lr_unchecked(Steps *steps) { steps->lr_accepted = any_lr; }

static const Mutant MUTANTS[] = {
    {"s01", "ScalarMix uses the raw s as weights, no softmax", s01},
    {"s02", "gamma is never applied", s02},
    {"s03", "forward layer k >= 2 reads f^(k-1) + b^(k-1) instead of f^(k-1)", s03},
    {"s04",
     "the backward stack flips the whole padded array along time (and flips its outputs back) instead of "
     "reversing each row inside its length, so short rows read their padding first",
     s04},
    {"s05", "the backward outputs are left in reversed order (not reversed back to source order)", s05},
    {"s06",
     "the backward LSTMs run without lengths: the reversal inside each length is right, but each backward LSTM "
     "keeps running through the padding after its reversed row and those outputs are kept, so padded positions "
     "of b^k are not 0",
     s06},
    {"s07", "the forward direction is scored on the current token x_t instead of x_{t+1}", s07},
    {"s08", "the backward direction is scored on the current token x_t instead of x_{t-1}", s08},
    {"s09", "the probe returns the weights for standardized features (no folding back)", s09},
    {"s10", "the probe does gradient ascent (adds the gradient instead of subtracting it)", s10},
    {"x-padded-ids-unchecked", "V03 checks ids at real positions only: an out-of-range id in the padding is accepted",
     padded_ids_unchecked},
    {"x-gamma-finite-unchecked", "V14 does not check that gamma is finite: a NaN or infinite gamma is accepted",
     gamma_finite_unchecked},
    {"x-lr-unchecked", "V22 is not checked: a learning rate of 0, below 0 or NaN is accepted", lr_unchecked},
};

size_t mutant_count(void) { return sizeof MUTANTS / sizeof MUTANTS[0]; }

const Mutant *mutant_at(size_t i) { return &MUTANTS[i]; }

const Mutant *find_mutant(const char *id, size_t len)
{
    for (size_t i = 0; i < mutant_count(); i++) {
        if (strlen(MUTANTS[i].id) == len && memcmp(MUTANTS[i].id, id, len) == 0) {
            return &MUTANTS[i];
        }
    }
    return NULL;
}
