/* §4: the biLM loss, and §6.1: its gradient.
 *
 * Only the scored positions (§4.1) have logits computed: the others change nothing. At the
 * benchmark size the logits of one direction are the largest array of a call.
 */
#include "loss.h"

#include <string.h>

#include "kernels.h"
#include "linalg.h"
#include "steps.h"

/* §4.1: the forward LM predicts the next token: fwd_{b,t} for t <= ℓ - 2 is scored on x_{t+1}. */
bool forward_target(const int64_t *row_ids, size_t t, size_t length, size_t *target)
{
    if (t + 2 > length) {
        return false;
    }
    *target = (size_t)row_ids[t + 1];
    return true;
}

/* §4.1: the backward LM predicts the previous token: bwd_{b,t} for 1 <= t <= ℓ - 1 on x_{t-1}. */
bool backward_target(const int64_t *row_ids, size_t t, size_t length, size_t *target)
{
    if (t < 1 || t + 1 > length) {
        return false;
    }
    *target = (size_t)row_ids[t - 1];
    return true;
}

/* The scored positions of one direction, row by row, and their targets. */
typedef struct {
    size_t n;
    size_t *at;      /* [n] b * T + t */
    size_t *target;  /* [n] */
} Scored;

static Scored scored_positions(const Ctx *ctx, const BiLMPass *pass, bool forward)
{
    const Batch *batch = &pass->batch;
    size_t B = batch->B, T = batch->T;
    Scored scored = {0, NULL, NULL};
    scored.at = arena_alloc(ctx->arena, arena_mul(ctx->arena, B, T), sizeof(size_t));
    scored.target = arena_alloc(ctx->arena, B * T, sizeof(size_t));
    for (size_t b = 0; b < B; b++) {
        for (size_t t = 0; t < T; t++) {
            const int64_t *row = batch->ids + b * T;
            size_t target;
            bool is_scored = forward ? ctx->steps->forward_target(row, t, batch->lengths[b], &target)
                                     : ctx->steps->backward_target(row, t, batch->lengths[b], &target);
            if (is_scored) {
                scored.at[scored.n] = b * T + t;
                scored.target[scored.n] = target;
                scored.n++;
            }
        }
    }
    return scored;
}

/* A float32 call's float copies of the output layer's gradients, added to by both directions. */
typedef struct {
    float *weight, *bias;
} OutGrads32;

/* One direction of §4.2 from the top layer R^L [B, T, 2d], whose half at `offset` holds its
 * states: L_dir = (1/n) Σ CE(W_out h + c, target), CE(z, y) = log Σ_v exp(z_v) - z_y computed
 * with the maximum subtracted (kernels.h's output_loss, in the call's dtype). When g_top is not
 * NULL, also the gradient of L_dir / 2 (bilm_loss averages the directions): with respect to the
 * states into g_top, and added to out.weight and out.bias in `grads`; in a float32 call, to their
 * float copies g32 instead (converted back once both directions are in: every value is a float). */
static double direction_loss(const Ctx *ctx, const BiLMPass *pass, const double *top, size_t offset, bool forward,
                             double *g_top, BiLMGrads *grads, const OutGrads32 *g32)
{
    Arena *arena = ctx->arena;
    const BiLMParams *p = pass->params;
    size_t V = p->V, d = p->d;
    Scored scored = scored_positions(ctx, pass, forward);
    size_t n = scored.n, nd = arena_mul(arena, n, d);
    double *states = arena_doubles(arena, nd);
    for (size_t i = 0; i < n; i++) {
        memcpy(states + i * d, top + scored.at[i] * 2 * d + offset, d * sizeof(double));
    }
    bool grad = g_top != NULL;
    double *g_states = grad ? arena_alloc_uninit(arena, nd, sizeof(double)) : NULL;
    double value;
    if (ctx->dtype == FLOAT64) {
        value = output_loss_f64(arena, n, d, V, states, scored.target, p->out_weight, p->out_weight_t, p->out_bias,
                                arena_alloc_uninit(arena, arena_mul(arena, n, V), sizeof(double)), grad, g_states,
                                grad ? grads->out_weight : NULL, grad ? grads->out_bias : NULL);
    } else {
        float *g_states32 = grad ? arena_alloc_uninit(arena, nd, sizeof(float)) : NULL;
        value = output_loss_f32(arena, n, d, V, floats_of(ctx, nd, states), scored.target, p->f32.out_weight,
                                p->f32.out_weight_t, p->f32.out_bias,
                                arena_alloc_uninit(arena, arena_mul(arena, n, V), sizeof(float)), grad, g_states32,
                                grad ? g32->weight : NULL, grad ? g32->bias : NULL);
        if (grad) {
            doubles_from(nd, g_states32, g_states);
        }
    }
    for (size_t i = 0; grad && i < n; i++) {
        memcpy(g_top + scored.at[i] * 2 * d + offset, g_states + i * d, d * sizeof(double));
    }
    return value;
}

/* R^L: f^L and b^L with padded positions 0, as returned by bilm_layers (§3.4). */
static double *top_layer(const Ctx *ctx, const BiLMPass *pass)
{
    size_t positions = arena_mul(ctx->arena, pass->batch.B, pass->batch.T);
    double *top = arena_doubles(ctx->arena, arena_mul(ctx->arena, positions, 2 * pass->params->d));
    bilm_layer(ctx, pass, pass->params->L, top);
    return top;
}

double bilm_loss(const Ctx *ctx, const BiLMPass *pass)
{
    const double *top = top_layer(ctx, pass);
    double l_fwd = direction_loss(ctx, pass, top, 0, true, NULL, NULL, NULL);
    double l_bwd = direction_loss(ctx, pass, top, pass->params->d, false, NULL, NULL, NULL);
    return 0.5 * (l_fwd + l_bwd); /* a Python float (§1.2): the average is taken in float64 */
}

void bilm_loss_grad(const Ctx *ctx, const BiLMPass *pass, BiLMGrads *grads)
{
    const BiLMParams *p = pass->params;
    const double *top = top_layer(ctx, pass);
    size_t positions = arena_mul(ctx->arena, pass->batch.B, pass->batch.T);
    double *g_top = arena_doubles(ctx->arena, arena_mul(ctx->arena, positions, 2 * p->d));
    OutGrads32 g32 = {NULL, NULL};
    size_t Vd = arena_mul(ctx->arena, p->V, p->d);
    if (ctx->dtype == FLOAT32) {
        g32.weight = floats_of(ctx, Vd, grads->out_weight);
        g32.bias = floats_of(ctx, p->V, grads->out_bias);
    }
    direction_loss(ctx, pass, top, 0, true, g_top, grads, &g32);
    direction_loss(ctx, pass, top, p->d, false, g_top, grads, &g32);
    if (ctx->dtype == FLOAT32) {
        doubles_from(Vd, g32.weight, grads->out_weight);
        doubles_from(p->V, g32.bias, grads->out_bias);
    }
    /* Then down both stacks (§6.2) with a gradient on the top layer only. */
    const double **g_layers = arena_alloc(ctx->arena, p->L + 1, sizeof(double *));
    g_layers[p->L] = g_top;
    bilm_backprop(ctx, pass, g_layers, grads);
}
