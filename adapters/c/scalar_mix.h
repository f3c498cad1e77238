/* §5: ScalarMix, and §6.3: its vector-Jacobian product. */
#ifndef ELMO_SCALAR_MIX_H
#define ELMO_SCALAR_MIX_H

#include <stddef.h>

#include "real.h"

/* n layers of `size` elements each, validated (§8) and in the call's dtype. */
typedef struct {
    size_t n, size;
    const double *s;             /* [n] */
    double gamma;
    const double *const *layers; /* [n] arrays of `size` */
} MixInputs;

/* §5.2: out [size] = γ Σ_k w_k R^k. */
void scalar_mix(const Ctx *ctx, const MixInputs *in, double *out);

/* §6.3: g_s [n], g_gamma [1] and g_layers [n][size] for J = Σ g_out ⊙ scalar_mix(...). */
void scalar_mix_vjp(const Ctx *ctx, const MixInputs *in, const double *g_out, double *g_s, double *g_gamma,
                    double *const *g_layers);

/* The clean steps of §5 (steps.h). */
void mix_weights(const Ctx *ctx, size_t n, const double *s, double *w);
double gamma_factor(double gamma, double *derivative);

#endif
