/* §3: the biLM's layers and logits, and §6.2: the backward pass through both stacks. */
#ifndef ELMO_BILM_H
#define ELMO_BILM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lstm.h"
#include "real.h"

/* A biLM's parameters (§2.1), converted to the call's dtype. */
typedef struct {
    size_t V, d, L;
    const double *embedding;   /* E [V, d] */
    LSTMWeights *fwd, *bwd;    /* [L] each: fwd.k.*, bwd.k.* */
    const double *out_weight;  /* W_out [V, d] */
    const double *out_bias;    /* c [V] */
    double *out_weight_t;      /* W_outᵀ [d, V] (NULL in float32: see f32) */
    struct {                   /* a float32 call's float copies of the three, for the kernels; NULL in float64 */
        const float *out_weight, *out_weight_t, *out_bias;
    } f32;
} BiLMParams;

/* Gradients of every canonical entry (§6.1, §6.2), shaped as the parameters. */
typedef struct {
    double *embedding;
    LSTMGrads *fwd, *bwd;
    double *out_weight, *out_bias;
} BiLMGrads;

/* The token ids and the real length of each row (§1.1), validated (§8). */
typedef struct {
    size_t B, T;
    const int64_t *ids;      /* [B, T] */
    const size_t *lengths;   /* [B], each in [1, T] */
} Batch;

/* The states of one forward pass (§3), kept for the backward pass (§6). */
typedef struct BiLMPass BiLMPass;
struct BiLMPass {
    const BiLMParams *params;
    Batch batch;
    double *e;           /* [B, T, d]: e_{b,t} = E[x_{b,t}] */
    double **f, **b;     /* [L] arrays [B, T, d]: f^k and b^k in source order, 0 where none is stored */
    LSTMRun *f_runs;     /* [L] the forward LSTMs, in source order */
    LSTMRun *b_runs;     /* [L] the backward LSTMs, in their own (reversed) order */
    size_t *order;       /* [B, T]: per row, the positions the backward LSTMs read, step by step */
};

/* Transposes and other derived arrays of the parameters, and a float32 call's float copies. */
void bilm_prepare(const Ctx *ctx, BiLMParams *params);

/* §3.1-§3.3 on validated inputs. */
BiLMPass *bilm_run(const Ctx *ctx, const BiLMParams *params, const Batch *batch);

/* §3.4: R^k [B, T, 2d] for k = 0 .. L, exactly 0 at padded positions. */
void bilm_layer(const Ctx *ctx, const BiLMPass *pass, size_t k, double *out);

/* §3.5: W_out · h + c for n states [n, d] -> logits [n, V]. */
void bilm_output_layer(const Ctx *ctx, const BiLMParams *params, size_t n, const double *states, double *logits);

/* Zero gradients for every canonical entry. */
BiLMGrads bilm_grads_new(const Ctx *ctx, const BiLMParams *params);

/* §6.2: the gradients of Σ_k <g_layers[k], R^k> with respect to the embedding and every LSTM,
 * written into `grads` (zero on entry); g_layers[k] [B, T, 2d] may be NULL for a zero gradient. Gradients at padded
 * positions are dropped: those R^k are constants (§3.4). */
void bilm_backprop(const Ctx *ctx, const BiLMPass *pass, const double *const *g_layers, BiLMGrads *grads);

/* The clean steps of §3 (steps.h). */
void forward_layer_input(const Ctx *ctx, const BiLMPass *pass, size_t k, double *u);
size_t backward_order(size_t length, size_t T, size_t *positions);
size_t backward_store(size_t j, const size_t *positions);
bool backward_state_returned(size_t t, size_t length);

#endif
