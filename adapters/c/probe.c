/* §7: the linear probe. */
#include "probe.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "linalg.h"
#include "steps.h"

/* §7.1: μ_j and σ_j of each column (divisor N). A column whose values are all equal (tested by
 * exact equality, never by a computed σ of 0) is constant: μ_j is its value and σ_j = 1. Sums
 * over rows are taken row by row, as NumPy reduces along axis 0. */
static void standardize(const Ctx *ctx, size_t N, size_t D, const double *X, double *mu, double *sigma)
{
    for (size_t j = 0; j < D; j++) {
        bool constant = true;
        for (size_t n = 1; n < N; n++) {
            constant = constant && X[n * D + j] == X[j];
        }
        if (constant) {
            mu[j] = X[j];
            sigma[j] = 1.0;
            continue;
        }
        double total = 0.0;
        for (size_t n = 0; n < N; n++) {
            total = fl(ctx, total + X[n * D + j]);
        }
        double mean = fl(ctx, total / (double)N);
        double squares = 0.0;
        for (size_t n = 0; n < N; n++) {
            double deviation = fl(ctx, X[n * D + j] - mean);
            squares = fl(ctx, squares + fl(ctx, deviation * deviation));
        }
        mu[j] = mean;
        sigma[j] = fl(ctx, sqrt(fl(ctx, squares / (double)N)));
    }
}

/* Each row of z [N, C] replaced by its softmax, with the row's maximum subtracted first. */
static void softmax_rows(const Ctx *ctx, size_t N, size_t C, double *z)
{
    for (size_t n = 0; n < N; n++) {
        double *row = z + n * C;
        double largest = row[0];
        for (size_t c = 1; c < C; c++) {
            largest = row[c] > largest ? row[c] : largest;
        }
        for (size_t c = 0; c < C; c++) {
            row[c] = fl(ctx, exp(fl(ctx, row[c] - largest)));
        }
        double total = sum_pairwise(ctx, C, row);
        for (size_t c = 0; c < C; c++) {
            row[c] = fl(ctx, row[c] / total);
        }
    }
}

/* §7.3: one full-batch step on F(V, a) of §7.2; both updates use the gradient at the same (V, a):
 * G = (P - Y) / N, V <- V - lr (Zᵀ G + l2 V), a <- a - lr Σ_n G_n. */
void gradient_step(const Ctx *ctx, const ProbeProblem *pr, double *V, double *a)
{
    Arena *arena = ctx->arena;
    size_t N = pr->N, D = pr->D, C = pr->C;
    double *G = arena_doubles(arena, arena_mul(arena, N, C));
    double *Zt_G = arena_doubles(arena, arena_mul(arena, D, C));
    double *G_sum = arena_doubles(arena, C);

    matmul_add(ctx, N, D, C, pr->Z, V, G); /* Z V + a */
    for (size_t n = 0; n < N; n++) {
        for (size_t c = 0; c < C; c++) {
            G[n * C + c] = fl(ctx, G[n * C + c] + a[c]);
        }
    }
    softmax_rows(ctx, N, C, G); /* P */
    for (size_t at = 0; at < N * C; at++) {
        G[at] = fl(ctx, fl(ctx, G[at] - pr->Y[at]) / (double)N);
    }
    matmul_add(ctx, D, N, C, pr->Z_t, G, Zt_G);
    for (size_t n = 0; n < N; n++) {
        for (size_t c = 0; c < C; c++) {
            G_sum[c] = fl(ctx, G_sum[c] + G[n * C + c]);
        }
    }
    for (size_t at = 0; at < D * C; at++) {
        V[at] = fl(ctx, V[at] - fl(ctx, pr->lr * fl(ctx, Zt_G[at] + fl(ctx, pr->l2 * V[at]))));
    }
    for (size_t c = 0; c < C; c++) {
        a[c] = fl(ctx, a[c] - fl(ctx, pr->lr * G_sum[c]));
    }
}

/* §7.4: weights for raw features, X W + b = Z V + a: W = V / σ (row j by σ_j), b = a - μ · W. */
void fold_back(const Ctx *ctx, const ProbeProblem *pr, const double *V, const double *a, double *W, double *b)
{
    size_t D = pr->D, C = pr->C;
    for (size_t j = 0; j < D; j++) {
        for (size_t c = 0; c < C; c++) {
            W[j * C + c] = fl(ctx, V[j * C + c] / pr->sigma[j]);
        }
    }
    double *mu_W = arena_doubles(ctx->arena, C);
    matmul_add(ctx, 1, D, C, pr->mu, W, mu_W);
    for (size_t c = 0; c < C; c++) {
        b[c] = fl(ctx, a[c] - mu_W[c]);
    }
}

void fit_linear_probe(const Ctx *ctx, size_t N, size_t D, size_t C, const double *X, const int64_t *labels,
                      double l2, uint64_t steps, double lr, double *W, double *b)
{
    Arena *arena = ctx->arena;
    double *mu = arena_doubles(arena, D), *sigma = arena_doubles(arena, D);
    double *Z = arena_doubles(arena, arena_mul(arena, N, D)), *Z_t = arena_doubles(arena, N * D);
    double *Y = arena_doubles(arena, arena_mul(arena, N, C));
    double *V = arena_doubles(arena, arena_mul(arena, D, C)); /* §7.3: V = 0, a = 0 */
    double *a = arena_doubles(arena, C);

    standardize(ctx, N, D, X, mu, sigma);
    for (size_t n = 0; n < N; n++) {
        for (size_t j = 0; j < D; j++) {
            Z[n * D + j] = fl(ctx, fl(ctx, X[n * D + j] - mu[j]) / sigma[j]);
        }
        Y[n * C + (size_t)labels[n]] = 1.0;
    }
    transpose(N, D, Z, Z_t);
    ProbeProblem problem = {N, D, C, Z, Z_t, Y, mu, sigma, fl(ctx, l2), fl(ctx, lr)};
    for (uint64_t step = 0; step < steps; step++) {
        ctx->steps->gradient_step(ctx, &problem, V, a);
    }
    ctx->steps->fold_back(ctx, &problem, V, a, W, b);
}

double probe_accuracy(const Ctx *ctx, size_t N, size_t D, size_t C, const double *W, const double *b,
                      const double *X, const int64_t *labels)
{
    double *logits = arena_doubles(ctx->arena, arena_mul(ctx->arena, N, C));
    matmul_add(ctx, N, D, C, X, W, logits);
    size_t right = 0;
    for (size_t n = 0; n < N; n++) {
        const double *row = logits + n * C;
        size_t best = 0;
        double best_value = fl(ctx, row[0] + b[0]);
        for (size_t c = 1; c < C && !isnan(best_value); c++) {
            double value = fl(ctx, row[c] + b[c]);
            if (value > best_value || isnan(value)) { /* strictly larger: ties keep the lowest index */
                best = c;
                best_value = value;
            }
        }
        right += (int64_t)best == labels[n];
    }
    return (double)right / (double)N;
}

