/* §2.2-§2.3: one single-direction LSTM over a batch of sequences, and its backward pass (§6).
 *
 * Rows are independent: each runs its own steps from the zero state, so a row's outputs depend
 * on its own inputs only, and an output never on later steps (§3.2). Per row, the input
 * projections of all its steps are computed at once; only h_{t-1} -> h_t is sequential, and it is
 * taken for every row at once (each row's values computed as if alone).
 *
 * The computation is kernels.h's lstm_forward and lstm_backward, in the call's dtype: a float32
 * call converts the arrays to floats and the results back.
 */
#include "lstm.h"

#include <string.h>

#include "kernels.h"
#include "linalg.h"

void lstm_prepare(const Ctx *ctx, LSTMWeights *w)
{
    size_t rows = 4 * w->d;
    size_t ih = arena_mul(ctx->arena, rows, w->d_in), hh = arena_mul(ctx->arena, rows, w->d);
    if (ctx->dtype == FLOAT32) {
        /* The float copies, and the transposes of those: a float32 call reads no double transposes. */
        w->weight_ih_t = w->weight_hh_t = NULL;
        w->f32.weight_ih = floats_of(ctx, ih, w->weight_ih);
        w->f32.weight_hh = floats_of(ctx, hh, w->weight_hh);
        w->f32.bias_ih = floats_of(ctx, rows, w->bias_ih);
        w->f32.bias_hh = floats_of(ctx, rows, w->bias_hh);
        float *weight_ih_t = arena_alloc_uninit(ctx->arena, ih, sizeof(float));
        float *weight_hh_t = arena_alloc_uninit(ctx->arena, hh, sizeof(float));
        transpose_f32(rows, w->d_in, w->f32.weight_ih, weight_ih_t);
        transpose_f32(rows, w->d, w->f32.weight_hh, weight_hh_t);
        w->f32.weight_ih_t = weight_ih_t;
        w->f32.weight_hh_t = weight_hh_t;
    } else {
        w->weight_ih_t = arena_doubles(ctx->arena, ih);
        w->weight_hh_t = arena_doubles(ctx->arena, hh);
        transpose(rows, w->d_in, w->weight_ih, w->weight_ih_t);
        transpose(rows, w->d, w->weight_hh, w->weight_hh_t);
        w->f32.weight_ih = w->f32.weight_hh = w->f32.bias_ih = w->f32.bias_hh = NULL;
        w->f32.weight_ih_t = w->f32.weight_hh_t = NULL;
    }
}

LSTMRun lstm_run_new(const Ctx *ctx, size_t B, size_t T, size_t d_in, size_t d)
{
    Arena *arena = ctx->arena;
    size_t positions = arena_mul(arena, B, T);
    LSTMRun run = {B, T, d_in, d, NULL, NULL, NULL, NULL, NULL, NULL, {NULL, NULL, NULL, NULL, NULL}};
    run.steps = arena_alloc(arena, B, sizeof(size_t));
    run.u = arena_doubles(arena, arena_mul(arena, positions, d_in));
    if (ctx->dtype == FLOAT32) { /* every element written by lstm_forward, from the float h */
        run.h = arena_alloc_uninit(arena, arena_mul(arena, positions, d), sizeof(double));
    } else {
        run.h = arena_doubles(arena, arena_mul(arena, positions, d));
    }
    if (ctx->dtype == FLOAT64) { /* a float32 run keeps these as floats only (run.f32) */
        run.c = arena_doubles(arena, arena_mul(arena, positions, d));
        run.tanh_c = arena_doubles(arena, arena_mul(arena, positions, d));
        run.gates = arena_doubles(arena, arena_mul(arena, positions, arena_mul(arena, 4, d)));
    }
    return run;
}

/* A float array [B, T, width] of a run, zero where the kernel leaves it alone (past each row's
 * steps), as the run's double arrays are; the rest is written by lstm_forward. */
static float *float_states(const Ctx *ctx, const LSTMRun *run, size_t width)
{
    size_t T = run->T;
    float *x = arena_alloc_uninit(ctx->arena, arena_mul(ctx->arena, arena_mul(ctx->arena, run->B, T), width),
                                  sizeof(float));
    for (size_t b = 0; b < run->B; b++) {
        size_t steps = run->steps[b] < T ? run->steps[b] : T;
        memset(x + (b * T + steps) * width, 0, (T - steps) * width * sizeof(float));
    }
    return x;
}

void lstm_forward(const Ctx *ctx, const LSTMWeights *w, LSTMRun *run)
{
    Arena *arena = ctx->arena;
    size_t B = run->B, T = run->T, d_in = run->d_in, d = run->d;
    if (ctx->dtype == FLOAT64) {
        lstm_forward_f64(arena, B, T, d_in, d, run->steps, run->u, w->weight_ih_t, w->weight_hh_t, w->bias_ih,
                         w->bias_hh, run->h, run->c, run->tanh_c, run->gates);
        return;
    }
    size_t states = arena_mul(arena, arena_mul(arena, B, T), d);
    run->f32.u = floats_of(ctx, arena_mul(arena, B * T, d_in), run->u);
    run->f32.h = float_states(ctx, run, d);
    run->f32.c = float_states(ctx, run, d);
    run->f32.tanh_c = float_states(ctx, run, d);
    run->f32.gates = float_states(ctx, run, 4 * d);
    lstm_forward_f32(arena, B, T, d_in, d, run->steps, run->f32.u, w->f32.weight_ih_t, w->f32.weight_hh_t,
                     w->f32.bias_ih, w->f32.bias_hh, run->f32.h, run->f32.c, run->f32.tanh_c, run->f32.gates);
    doubles_from(states, run->f32.h, run->h);
}

void lstm_backward(const Ctx *ctx, const LSTMWeights *w, const LSTMRun *run, const double *g_h, double *g_u,
                   const LSTMGrads *grads)
{
    Arena *arena = ctx->arena;
    size_t B = run->B, T = run->T, d_in = run->d_in, d = run->d, d4 = 4 * d;
    if (ctx->dtype == FLOAT64) {
        lstm_backward_f64(arena, B, T, d_in, d, run->steps, run->u, run->h, run->c, run->tanh_c, run->gates,
                          w->weight_ih, w->weight_hh, g_h, g_u, grads->weight_ih, grads->weight_hh, grads->bias_ih);
    } else {
        size_t states = arena_mul(arena, arena_mul(arena, B, T), d), inputs = arena_mul(arena, B * T, d_in);
        float *g_u32 = arena_alloc_uninit(arena, inputs, sizeof(float)); /* written whole by the kernel */
        float *g_weight_ih = arena_alloc(arena, d4 * d_in, sizeof(float));
        float *g_weight_hh = arena_alloc(arena, d4 * d, sizeof(float));
        float *g_bias = arena_alloc(arena, d4, sizeof(float));
        lstm_backward_f32(arena, B, T, d_in, d, run->steps, run->f32.u, run->f32.h, run->f32.c, run->f32.tanh_c,
                          run->f32.gates, w->f32.weight_ih, w->f32.weight_hh, floats_of(ctx, states, g_h), g_u32,
                          g_weight_ih, g_weight_hh, g_bias);
        doubles_from(inputs, g_u32, g_u);
        doubles_from(d4 * d_in, g_weight_ih, grads->weight_ih);
        doubles_from(d4 * d, g_weight_hh, grads->weight_hh);
        doubles_from(d4, g_bias, grads->bias_ih);
    }
    memcpy(grads->bias_hh, grads->bias_ih, d4 * sizeof(double)); /* the two biases enter z alike */
}
