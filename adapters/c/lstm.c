/* §2.2-§2.3: one single-direction LSTM over a batch of sequences, and its backward pass (§6).
 *
 * Rows are independent: each runs its own steps from the zero state, so a row's outputs depend
 * on its own inputs only, and an output never on later steps (§3.2). Per row, the input
 * projections of all its steps are computed at once; only h_{t-1} -> h_t is sequential.
 */
#include "lstm.h"

#include <math.h>
#include <string.h>

#include "linalg.h"

/* σ(x) = 1 / (1 + exp(-x)), the logistic function of §2.2. */
static double sigmoid(const Ctx *ctx, double x)
{
    return fl(ctx, 1.0 / fl(ctx, 1.0 + fl(ctx, exp(-x))));
}

void lstm_prepare(const Ctx *ctx, LSTMWeights *w)
{
    size_t rows = 4 * w->d;
    w->weight_ih_t = arena_doubles(ctx->arena, arena_mul(ctx->arena, rows, w->d_in));
    w->weight_hh_t = arena_doubles(ctx->arena, arena_mul(ctx->arena, rows, w->d));
    transpose(rows, w->d_in, w->weight_ih, w->weight_ih_t);
    transpose(rows, w->d, w->weight_hh, w->weight_hh_t);
}

LSTMRun lstm_run_new(const Ctx *ctx, size_t B, size_t T, size_t d_in, size_t d)
{
    Arena *arena = ctx->arena;
    size_t positions = arena_mul(arena, B, T);
    LSTMRun run = {B, T, d_in, d, NULL, NULL, NULL, NULL, NULL, NULL};
    run.steps = arena_alloc(arena, B, sizeof(size_t));
    run.u = arena_doubles(arena, arena_mul(arena, positions, d_in));
    run.h = arena_doubles(arena, arena_mul(arena, positions, d));
    run.c = arena_doubles(arena, arena_mul(arena, positions, d));
    run.tanh_c = arena_doubles(arena, arena_mul(arena, positions, d));
    run.gates = arena_doubles(arena, arena_mul(arena, positions, arena_mul(arena, 4, d)));
    return run;
}

void lstm_forward(const Ctx *ctx, const LSTMWeights *w, LSTMRun *run)
{
    size_t T = run->T, d = run->d, d4 = 4 * d, d_in = run->d_in;
    double *z_input = arena_doubles(ctx->arena, arena_mul(ctx->arena, T, d4));
    double *z_recurrent = arena_doubles(ctx->arena, d4);
    const double *zeros = arena_doubles(ctx->arena, d);

    for (size_t b = 0; b < run->B; b++) {
        size_t n = run->steps[b];
        const double *u = run->u + b * T * d_in;
        double *h = run->h + b * T * d, *c = run->c + b * T * d, *tanh_c = run->tanh_c + b * T * d;
        double *gates = run->gates + b * T * d4;

        /* weight_ih · u_t + bias_ih + bias_hh for every step t of the row. */
        memset(z_input, 0, n * d4 * sizeof(double));
        matmul_add(ctx, n, d_in, d4, u, w->weight_ih_t, z_input);
        for (size_t t = 0; t < n; t++) {
            for (size_t r = 0; r < d4; r++) {
                double z = z_input[t * d4 + r];
                z_input[t * d4 + r] = fl(ctx, fl(ctx, z + w->bias_ih[r]) + w->bias_hh[r]);
            }
        }

        const double *h_prev = zeros, *c_prev = zeros; /* §2.3: h_{-1} = c_{-1} = 0 */
        for (size_t t = 0; t < n; t++) {
            /* z_t = (weight_ih · u_t + bias_ih + bias_hh) + weight_hh · h_{t-1} */
            memset(z_recurrent, 0, d4 * sizeof(double));
            matmul_add(ctx, 1, d, d4, h_prev, w->weight_hh_t, z_recurrent);
            double *gate = gates + t * d4;
            for (size_t r = 0; r < d4; r++) {
                double z = fl(ctx, z_input[t * d4 + r] + z_recurrent[r]);
                gate[r] = r / d == 2 ? fl(ctx, tanh(z)) : sigmoid(ctx, z); /* i, f, o: σ; g: tanh */
            }
            const double *i = gate, *f = gate + d, *g = gate + 2 * d, *o = gate + 3 * d;
            double *c_t = c + t * d, *h_t = h + t * d, *tanh_c_t = tanh_c + t * d;
            for (size_t j = 0; j < d; j++) {
                c_t[j] = fl(ctx, fl(ctx, f[j] * c_prev[j]) + fl(ctx, i[j] * g[j])); /* c_t = f ⊙ c_{t-1} + i ⊙ g */
                tanh_c_t[j] = fl(ctx, tanh(c_t[j]));
                h_t[j] = fl(ctx, o[j] * tanh_c_t[j]); /* h_t = o ⊙ tanh(c_t) */
            }
            h_prev = h_t;
            c_prev = c_t;
        }
    }
}

void lstm_backward(const Ctx *ctx, const LSTMWeights *w, const LSTMRun *run, const double *g_h, double *g_u,
                   const LSTMGrads *grads)
{
    Arena *arena = ctx->arena;
    size_t T = run->T, d = run->d, d4 = 4 * d, d_in = run->d_in;
    double *g_z = arena_doubles(arena, arena_mul(arena, T, d4));     /* ∂J/∂z_t of one row */
    double *g_z_t = arena_doubles(arena, arena_mul(arena, T, d4));   /* its transpose [4d, n] */
    double *h_prev = arena_doubles(arena, arena_mul(arena, T, d));   /* h_{t-1} of one row */
    double *g_h_next = arena_doubles(arena, d);                      /* ∂J/∂h_t through step t + 1 */
    double *g_c_next = arena_doubles(arena, d);                      /* ∂J/∂c_t through step t + 1 */
    const double *zeros = arena_doubles(arena, d);

    for (size_t b = 0; b < run->B; b++) {
        size_t n = run->steps[b];
        const double *c = run->c + b * T * d, *tanh_c = run->tanh_c + b * T * d;
        const double *gates = run->gates + b * T * d4, *g_h_row = g_h + b * T * d;
        memset(g_h_next, 0, d * sizeof(double));
        memset(g_c_next, 0, d * sizeof(double));

        for (size_t t = n; t-- > 0;) {
            const double *gate = gates + t * d4;
            const double *i = gate, *f = gate + d, *g = gate + 2 * d, *o = gate + 3 * d;
            const double *c_prev = t > 0 ? c + (t - 1) * d : zeros;
            const double *tanh_c_t = tanh_c + t * d;
            double *g_z_row = g_z + t * d4;
            for (size_t j = 0; j < d; j++) {
                /* h_t reaches the objective directly and through step t + 1; c_t through h_t and c_{t+1}. */
                double g_ht = fl(ctx, g_h_row[t * d + j] + g_h_next[j]);
                double dh_dc = fl(ctx, o[j] * fl(ctx, 1.0 - fl(ctx, tanh_c_t[j] * tanh_c_t[j])));
                double g_ct = fl(ctx, fl(ctx, g_ht * dh_dc) + g_c_next[j]);
                /* σ' = σ(1 - σ), tanh' = 1 - tanh²: i, f and g act through c_t, o through h_t. */
                double local_i = fl(ctx, fl(ctx, g[j] * i[j]) * fl(ctx, 1.0 - i[j]));
                double local_f = fl(ctx, fl(ctx, c_prev[j] * f[j]) * fl(ctx, 1.0 - f[j]));
                double local_g = fl(ctx, i[j] * fl(ctx, 1.0 - fl(ctx, g[j] * g[j])));
                double local_o = fl(ctx, fl(ctx, tanh_c_t[j] * o[j]) * fl(ctx, 1.0 - o[j]));
                g_z_row[j] = fl(ctx, g_ct * local_i);
                g_z_row[d + j] = fl(ctx, g_ct * local_f);
                g_z_row[2 * d + j] = fl(ctx, g_ct * local_g);
                g_z_row[3 * d + j] = fl(ctx, g_ht * local_o);
                g_c_next[j] = fl(ctx, g_ct * f[j]);
            }
            /* ∂J/∂h_{t-1} = ∂J/∂z_t · weight_hh */
            memset(g_h_next, 0, d * sizeof(double));
            matmul_add(ctx, 1, d4, d, g_z_row, w->weight_hh, g_h_next);
        }

        /* The weights' gradients: Σ_t ∂J/∂z_t ⊗ u_t, Σ_t ∂J/∂z_t ⊗ h_{t-1}, Σ_t ∂J/∂z_t. */
        const double *u = run->u + b * T * d_in;
        memset(h_prev, 0, d * sizeof(double));
        if (n > 1) {
            memcpy(h_prev + d, run->h + b * T * d, (n - 1) * d * sizeof(double));
        }
        transpose(n, d4, g_z, g_z_t);
        matmul_add(ctx, d4, n, d_in, g_z_t, u, grads->weight_ih);
        matmul_add(ctx, d4, n, d, g_z_t, h_prev, grads->weight_hh);
        for (size_t t = 0; t < n; t++) {
            for (size_t r = 0; r < d4; r++) {
                grads->bias_ih[r] = fl(ctx, grads->bias_ih[r] + g_z[t * d4 + r]);
            }
        }
        /* ∂J/∂u_t = ∂J/∂z_t · weight_ih */
        double *g_u_row = g_u + b * T * d_in;
        memset(g_u_row, 0, T * d_in * sizeof(double));
        matmul_add(ctx, n, d4, d_in, g_z, w->weight_ih, g_u_row);
    }
    memcpy(grads->bias_hh, grads->bias_ih, d4 * sizeof(double)); /* the two biases enter z alike */
}
