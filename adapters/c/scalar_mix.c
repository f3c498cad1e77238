/* §5: ScalarMix, and §6.3: its vector-Jacobian product. */
#include "scalar_mix.h"

#include <math.h>

#include "linalg.h"
#include "steps.h"

/* §5.1: w = softmax(s) with the maximum subtracted first, so no exp overflows (§5.4). */
void mix_weights(const Ctx *ctx, size_t n, const double *s, double *w)
{
    double largest = s[0];
    for (size_t k = 1; k < n; k++) {
        largest = s[k] > largest ? s[k] : largest;
    }
    for (size_t k = 0; k < n; k++) {
        w[k] = fl(ctx, exp(fl(ctx, s[k] - largest)));
    }
    double total = sum_pairwise(ctx, n, w);
    for (size_t k = 0; k < n; k++) {
        w[k] = fl(ctx, w[k] / total);
    }
}

/* §5.2: the mix is multiplied by γ, whose derivative with respect to γ is 1. */
double gamma_factor(double gamma, double *derivative)
{
    *derivative = 1.0;
    return gamma;
}

void scalar_mix(const Ctx *ctx, const MixInputs *in, double *out)
{
    double *w = arena_doubles(ctx->arena, in->n);
    double derivative;
    ctx->steps->mix_weights(ctx, in->n, in->s, w);
    double factor = ctx->steps->gamma_factor(in->gamma, &derivative);
    for (size_t i = 0; i < in->size; i++) {
        double total = 0.0;
        for (size_t k = 0; k < in->n; k++) {
            total = fl(ctx, total + fl(ctx, w[k] * in->layers[k][i]));
        }
        out[i] = fl(ctx, factor * total);
    }
}

void scalar_mix_vjp(const Ctx *ctx, const MixInputs *in, const double *g_out, double *g_s, double *g_gamma,
                    double *const *g_layers)
{
    Arena *arena = ctx->arena;
    size_t n = in->n;
    double *w = arena_doubles(arena, n);
    double *m = arena_doubles(arena, n);
    double *product = arena_doubles(arena, in->size);
    double derivative;
    ctx->steps->mix_weights(ctx, n, in->s, w);
    double factor = ctx->steps->gamma_factor(in->gamma, &derivative);

    /* m_k = Σ g_out ⊙ R^k and μ = Σ_k w_k m_k */
    double mu = 0.0;
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < in->size; i++) {
            product[i] = fl(ctx, in->layers[k][i] * g_out[i]);
        }
        m[k] = sum_pairwise(ctx, in->size, product);
        mu = fl(ctx, mu + fl(ctx, w[k] * m[k]));
    }
    /* g_γ = μ, g_s_k = γ w_k (m_k - μ), g_layers[k] = γ w_k g_out */
    *g_gamma = fl(ctx, derivative * mu);
    for (size_t k = 0; k < n; k++) {
        double scale = fl(ctx, factor * w[k]);
        g_s[k] = fl(ctx, scale * fl(ctx, m[k] - mu));
        for (size_t i = 0; i < in->size; i++) {
            g_layers[k][i] = fl(ctx, scale * g_out[i]);
        }
    }
}
