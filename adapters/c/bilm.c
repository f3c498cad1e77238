/* §3: the biLM's layers and logits, and §6.2: the backward pass through both stacks. */
#include "bilm.h"

#include <string.h>

#include "kernels.h"
#include "linalg.h"
#include "steps.h"

void bilm_prepare(const Ctx *ctx, BiLMParams *params)
{
    for (size_t k = 0; k < params->L; k++) {
        lstm_prepare(ctx, &params->fwd[k]);
        lstm_prepare(ctx, &params->bwd[k]);
    }
    size_t Vd = arena_mul(ctx->arena, params->V, params->d);
    if (ctx->dtype == FLOAT32) {
        /* The float copies, and the transpose of those: a float32 call reads no double transpose. */
        params->out_weight_t = NULL;
        params->f32.out_weight = floats_of(ctx, Vd, params->out_weight);
        float *out_weight_t = arena_alloc_uninit(ctx->arena, Vd, sizeof(float));
        transpose_f32(params->V, params->d, params->f32.out_weight, out_weight_t);
        params->f32.out_weight_t = out_weight_t;
        params->f32.out_bias = floats_of(ctx, params->V, params->out_bias);
    } else {
        params->out_weight_t = arena_doubles(ctx->arena, Vd);
        transpose(params->V, params->d, params->out_weight, params->out_weight_t);
        params->f32.out_weight = params->f32.out_weight_t = params->f32.out_bias = NULL;
    }
}

/* --- the clean steps (steps.h) --------------------------------------------------------------- */

/* §3.2: forward layer k + 1 >= 2 reads f^k of the same row, and nothing else. */
void forward_layer_input(const Ctx *ctx, const BiLMPass *pass, size_t k, double *u)
{
    (void)ctx;
    size_t B = pass->batch.B, T = pass->batch.T, d = pass->params->d;
    memcpy(u, pass->f[k - 1], B * T * d * sizeof(double));
}

/* §3.3: a row is reversed inside its own length: step j reads position ℓ - 1 - j. */
size_t backward_order(size_t length, size_t T, size_t *positions)
{
    (void)T;
    for (size_t j = 0; j < length; j++) {
        positions[j] = length - 1 - j;
    }
    return length;
}

/* §3.3: the output of step j is the state of the position it read: stored in source order. */
size_t backward_store(size_t j, const size_t *positions)
{
    return positions[j];
}

/* §3.4: only real positions are returned; padded ones are 0. */
bool backward_state_returned(size_t t, size_t length)
{
    return t < length;
}

/* --- the forward pass ------------------------------------------------------------------------ */

/* §3.1: e_{b,t} = E[x_{b,t}]. Ids are checked at every position (§8, V03); one that a mutant let
 * through is left at 0 rather than read out of bounds. */
static double *embed(const Ctx *ctx, const BiLMParams *p, const Batch *batch)
{
    size_t d = p->d;
    double *e = arena_doubles(ctx->arena, arena_mul(ctx->arena, arena_mul(ctx->arena, batch->B, batch->T), d));
    for (size_t bt = 0; bt < batch->B * batch->T; bt++) {
        int64_t id = batch->ids[bt];
        if (id >= 0 && (uint64_t)id < p->V) {
            memcpy(e + bt * d, p->embedding + (size_t)id * d, d * sizeof(double));
        }
    }
    return e;
}

/* §3.2: forward layer k + 1 over each row's real positions, in order. */
static void run_forward_layer(const Ctx *ctx, BiLMPass *pass, size_t k)
{
    const BiLMParams *p = pass->params;
    size_t B = pass->batch.B, T = pass->batch.T, d = p->d;
    LSTMRun *run = &pass->f_runs[k];
    *run = lstm_run_new(ctx, B, T, d, d);
    for (size_t b = 0; b < B; b++) {
        run->steps[b] = pass->batch.lengths[b];
    }
    if (k == 0) {
        memcpy(run->u, pass->e, B * T * d * sizeof(double)); /* layer 1 reads e */
    } else {
        ctx->steps->forward_layer_input(ctx, pass, k, run->u);
    }
    lstm_forward(ctx, &p->fwd[k], run);
    for (size_t b = 0; b < B; b++) {
        size_t length = pass->batch.lengths[b];
        memcpy(pass->f[k] + b * T * d, run->h + b * T * d, length * d * sizeof(double));
    }
}

/* §3.3: backward layer k + 1 over each row reversed inside its length. Layer 1 reads e in that
 * order; layer k + 1 >= 2 reads the outputs of layer k in the order they were produced. */
static void run_backward_layer(const Ctx *ctx, BiLMPass *pass, size_t k)
{
    const BiLMParams *p = pass->params;
    size_t B = pass->batch.B, T = pass->batch.T, d = p->d;
    LSTMRun *run = &pass->b_runs[k];
    *run = lstm_run_new(ctx, B, T, d, d);
    for (size_t b = 0; b < B; b++) {
        size_t *order = pass->order + b * T;
        if (k == 0) {
            run->steps[b] = ctx->steps->backward_order(pass->batch.lengths[b], T, order);
        } else {
            run->steps[b] = pass->b_runs[0].steps[b]; /* every layer runs the same steps */
        }
        for (size_t j = 0; j < run->steps[b]; j++) {
            const double *input = k == 0 ? pass->e + (b * T + order[j]) * d : pass->b_runs[k - 1].h + (b * T + j) * d;
            memcpy(run->u + (b * T + j) * d, input, d * sizeof(double));
        }
    }
    lstm_forward(ctx, &p->bwd[k], run);
    for (size_t b = 0; b < B; b++) {
        const size_t *order = pass->order + b * T;
        for (size_t j = 0; j < run->steps[b]; j++) {
            size_t t = ctx->steps->backward_store(j, order);
            memcpy(pass->b[k] + (b * T + t) * d, run->h + (b * T + j) * d, d * sizeof(double));
        }
    }
}

BiLMPass *bilm_run(const Ctx *ctx, const BiLMParams *params, const Batch *batch)
{
    Arena *arena = ctx->arena;
    size_t L = params->L, B = batch->B, T = batch->T;
    size_t states = arena_mul(arena, arena_mul(arena, B, T), params->d);
    BiLMPass *pass = arena_alloc(arena, 1, sizeof(BiLMPass));
    pass->params = params;
    pass->batch = *batch;
    pass->e = embed(ctx, params, batch);
    pass->f = arena_alloc(arena, L, sizeof(double *));
    pass->b = arena_alloc(arena, L, sizeof(double *));
    pass->f_runs = arena_alloc(arena, L, sizeof(LSTMRun));
    pass->b_runs = arena_alloc(arena, L, sizeof(LSTMRun));
    pass->order = arena_alloc(arena, arena_mul(arena, B, T), sizeof(size_t));
    /* Layer by layer, forward then backward, so that a forward layer may read either stack's
     * layer below it (what s03 does wrongly). */
    for (size_t k = 0; k < L; k++) {
        pass->f[k] = arena_doubles(arena, states);
        pass->b[k] = arena_doubles(arena, states);
        run_forward_layer(ctx, pass, k);
        run_backward_layer(ctx, pass, k);
    }
    return pass;
}

/* --- §3.4 layers and §3.5 logits ------------------------------------------------------------- */

void bilm_layer(const Ctx *ctx, const BiLMPass *pass, size_t k, double *out)
{
    size_t B = pass->batch.B, T = pass->batch.T, d = pass->params->d;
    for (size_t b = 0; b < B; b++) {
        size_t length = pass->batch.lengths[b];
        for (size_t t = 0; t < T; t++) {
            const double *first = k == 0 ? pass->e : pass->f[k - 1];
            const double *second = k == 0 ? pass->e : pass->b[k - 1];
            bool first_returned = t < length;
            bool second_returned = k == 0 ? t < length : ctx->steps->backward_state_returned(t, length);
            double *slot = out + (b * T + t) * 2 * d;
            /* Selected, not multiplied (§3.4): a padded position is 0 whatever was computed there. */
            for (size_t j = 0; j < d; j++) {
                slot[j] = first_returned ? first[(b * T + t) * d + j] : 0.0;
                slot[d + j] = second_returned ? second[(b * T + t) * d + j] : 0.0;
            }
        }
    }
}

void bilm_output_layer(const Ctx *ctx, const BiLMParams *params, size_t n, const double *states, double *logits)
{
    size_t V = params->V;
    size_t nV = arena_mul(ctx->arena, n, V);
    if (ctx->dtype == FLOAT32) { /* matmul_add's float product, with the float transpose */
        float *logits32 = arena_alloc_uninit(ctx->arena, nV, sizeof(float));
        matmul_f32(n, params->d, V, floats_of(ctx, arena_mul(ctx->arena, n, params->d), states), params->d, 1,
                   params->f32.out_weight_t, logits32);
        doubles_from(nV, logits32, logits);
    } else {
        memset(logits, 0, nV * sizeof(double));
        matmul_add(ctx, n, params->d, V, states, params->out_weight_t, logits);
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t v = 0; v < V; v++) {
            logits[i * V + v] = fl(ctx, logits[i * V + v] + params->out_bias[v]);
        }
    }
}

/* --- §6.2 the backward pass ------------------------------------------------------------------ */

BiLMGrads bilm_grads_new(const Ctx *ctx, const BiLMParams *p)
{
    Arena *arena = ctx->arena;
    size_t d = p->d, d4 = 4 * d;
    BiLMGrads g;
    g.embedding = arena_doubles(arena, arena_mul(arena, p->V, d));
    g.fwd = arena_alloc(arena, p->L, sizeof(LSTMGrads));
    g.bwd = arena_alloc(arena, p->L, sizeof(LSTMGrads));
    for (size_t k = 0; k < 2 * p->L; k++) {
        LSTMGrads *lstm = k < p->L ? &g.fwd[k] : &g.bwd[k - p->L];
        lstm->weight_ih = arena_doubles(arena, arena_mul(arena, d4, d));
        lstm->weight_hh = arena_doubles(arena, arena_mul(arena, d4, d));
        lstm->bias_ih = arena_doubles(arena, d4);
        lstm->bias_hh = arena_doubles(arena, d4);
    }
    g.out_weight = arena_doubles(arena, arena_mul(arena, p->V, d));
    g.out_bias = arena_doubles(arena, p->V);
    return g;
}

/* g_layers[k][b, t, offset + j], or 0 when g_layers[k] is NULL. */
static double g_at(const double *const *g_layers, size_t k, size_t bt, size_t d, size_t offset, size_t j)
{
    return g_layers[k] == NULL ? 0.0 : g_layers[k][bt * 2 * d + offset + j];
}

void bilm_backprop(const Ctx *ctx, const BiLMPass *pass, const double *const *g_layers, BiLMGrads *grads)
{
    Arena *arena = ctx->arena;
    const BiLMParams *p = pass->params;
    size_t B = pass->batch.B, T = pass->batch.T, d = p->d, L = p->L;
    const size_t *lengths = pass->batch.lengths;
    size_t states = arena_mul(arena, arena_mul(arena, B, T), d);
    double *g_e = arena_doubles(arena, states);  /* ∂J/∂e, source order */
    /* These three are zeroed below where they need to be, or written whole by lstm_backward. */
    double *g_h = arena_alloc_uninit(arena, states, sizeof(double)); /* ∂J/∂h of the LSTM being backpropagated */
    double *g_u = arena_alloc_uninit(arena, states, sizeof(double)); /* ∂J/∂u of the LSTM above, in its order */
    double *g_u_next = arena_alloc_uninit(arena, states, sizeof(double));

    /* R^0 = [e ; e]: both halves reach e, at real positions only. */
    for (size_t b = 0; b < B; b++) {
        for (size_t t = 0; t < lengths[b]; t++) {
            size_t bt = b * T + t;
            for (size_t j = 0; j < d; j++) {
                g_e[bt * d + j] = fl(ctx, g_at(g_layers, 0, bt, d, 0, j) + g_at(g_layers, 0, bt, d, d, j));
            }
        }
    }

    /* The forward stack, from the top layer down: layer k's outputs reach R^k and layer k + 1. */
    memset(g_u, 0, states * sizeof(double));
    for (size_t k = L; k-- > 0;) {
        memset(g_h, 0, states * sizeof(double));
        for (size_t b = 0; b < B; b++) {
            for (size_t t = 0; t < lengths[b]; t++) {
                size_t bt = b * T + t;
                for (size_t j = 0; j < d; j++) {
                    g_h[bt * d + j] = fl(ctx, g_at(g_layers, k + 1, bt, d, 0, j) + g_u[bt * d + j]);
                }
            }
        }
        lstm_backward(ctx, &p->fwd[k], &pass->f_runs[k], g_h, g_u_next, &grads->fwd[k]);
        double *swap = g_u;
        g_u = g_u_next;
        g_u_next = swap;
    }
    for (size_t b = 0; b < B; b++) {
        for (size_t t = 0; t < lengths[b]; t++) {
            for (size_t j = 0; j < d; j++) {
                size_t at = (b * T + t) * d + j;
                g_e[at] = fl(ctx, g_e[at] + g_u[at]);
            }
        }
    }

    /* The backward stack, in its own order: step j's output is b^k at position store(j). */
    memset(g_u, 0, states * sizeof(double));
    for (size_t k = L; k-- > 0;) {
        const LSTMRun *run = &pass->b_runs[k];
        memset(g_h, 0, states * sizeof(double));
        for (size_t b = 0; b < B; b++) {
            const size_t *order = pass->order + b * T;
            for (size_t j = 0; j < run->steps[b]; j++) {
                size_t t = ctx->steps->backward_store(j, order);
                bool returned = ctx->steps->backward_state_returned(t, lengths[b]);
                for (size_t i = 0; i < d; i++) {
                    double g = returned ? g_at(g_layers, k + 1, b * T + t, d, d, i) : 0.0;
                    g_h[(b * T + j) * d + i] = fl(ctx, g + g_u[(b * T + j) * d + i]);
                }
            }
        }
        lstm_backward(ctx, &p->bwd[k], run, g_h, g_u_next, &grads->bwd[k]);
        double *swap = g_u;
        g_u = g_u_next;
        g_u_next = swap;
    }
    /* Backward layer 1 read e at order[j]; only real positions' embeddings are trained. */
    for (size_t b = 0; b < B; b++) {
        const size_t *order = pass->order + b * T;
        for (size_t j = 0; j < pass->b_runs[0].steps[b]; j++) {
            if (order[j] < lengths[b]) {
                for (size_t i = 0; i < d; i++) {
                    size_t at = (b * T + order[j]) * d + i;
                    g_e[at] = fl(ctx, g_e[at] + g_u[(b * T + j) * d + i]);
                }
            }
        }
    }

    /* E[x_{b,t}] was read at every real position: scatter-add, row by row. */
    for (size_t b = 0; b < B; b++) {
        for (size_t t = 0; t < lengths[b]; t++) {
            size_t id = (size_t)pass->batch.ids[b * T + t];
            for (size_t j = 0; j < d; j++) {
                size_t at = id * d + j;
                grads->embedding[at] = fl(ctx, grads->embedding[at] + g_e[(b * T + t) * d + j]);
            }
        }
    }
}
