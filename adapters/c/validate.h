/* §8: input validation. Every check fails with a ValueError naming the argument (§1.3); every
 * check passes before anything is computed. The checks also convert what they accept: floating
 * arrays to doubles in the call's dtype (a float argument of the other float dtype is converted,
 * not refused, §8), integer arrays to int64. */
#ifndef ELMO_VALIDATE_H
#define ELMO_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bilm.h"
#include "error.h"
#include "real.h"
#include "scalar_mix.h"
#include "wire.h"

/* V01-V09 for every biLM function: `params` (sets ctx->dtype from embedding), `ids`, `lengths`. */
bool check_bilm_inputs(Ctx *ctx, const WireValue *params, const WireValue *ids, const WireValue *lengths,
                       BiLMParams *p, Batch *batch, Error *err);

/* V11 (§4.3): the loss needs a row with two real tokens; names `ids` when lengths is absent. */
bool check_has_targets(const WireValue *lengths, const Batch *batch, Error *err);

/* V10: L + 1 float arrays [B, T, 2d], converted into g_layers[0 .. L]. */
bool check_g_layers(const Ctx *ctx, const WireValue *g_layers, const BiLMParams *p, const Batch *batch,
                    double **out, Error *err);

/* V12-V14 (sets ctx->dtype from the layers). `shape` receives the first layer, for the result. */
bool check_mix(Ctx *ctx, const WireValue *s, const WireValue *gamma, const WireValue *layers, MixInputs *in,
               const WireArray **shape, Error *err);

/* V15: a float array of the layers' shape. */
bool check_g_out(const Ctx *ctx, const WireValue *g_out, const WireArray *shape, double **out, Error *err);

/* V16 (sets ctx->dtype from the features): a finite 2-D float array [N, D], N, D >= 1. */
bool check_features(Ctx *ctx, const WireValue *features, size_t *N, size_t *D, double **X, Error *err);

/* V19, V21-V23: the settings of fit_linear_probe. */
bool check_fit_settings(const Ctx *ctx, const WireValue *n_classes, const WireValue *steps, const WireValue *lr,
                        const WireValue *l2, size_t *C, uint64_t *steps_out, double *lr_out, double *l2_out,
                        Error *err);

/* V17-V18: a 1-D integer array of length N with values in [0, C). */
bool check_labels(const Ctx *ctx, const WireValue *labels, size_t N, size_t C, int64_t **out, Error *err);

/* V20: at least two distinct classes. */
bool check_two_classes(const int64_t *labels, size_t N, Error *err);

/* V24-V25: W a 2-D float array [D, C] with C >= 1, b a 1-D float array [C]. */
bool check_probe_weights(const Ctx *ctx, const WireValue *W, const WireValue *b, size_t D, size_t *C,
                         double **W_out, double **b_out, Error *err);

/* The clean validation steps (steps.h). */
bool id_checked_at(size_t t, size_t length);
bool gamma_accepted(double gamma);
bool lr_accepted(double lr);

#endif
