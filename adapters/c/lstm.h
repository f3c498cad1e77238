/* §2.2-§2.3: one single-direction LSTM over a batch of sequences, and its backward pass (§6). */
#ifndef ELMO_LSTM_H
#define ELMO_LSTM_H

#include <stddef.h>

#include "real.h"

/* One LSTM's parameters (§2.1); gates are stacked i, f, g, o (§2.2). */
typedef struct {
    size_t d_in, d;
    const double *weight_ih;  /* [4d, d_in] */
    const double *weight_hh;  /* [4d, d] */
    const double *bias_ih;    /* [4d] */
    const double *bias_hh;    /* [4d] */
    double *weight_ih_t;      /* [d_in, 4d], the transposes, for products that stream rows (NULL in float32: see f32) */
    double *weight_hh_t;      /* [d, 4d] */
    struct {                  /* a float32 call's float copies of the six, for the kernels; NULL in float64 */
        const float *weight_ih, *weight_hh, *bias_ih, *bias_hh, *weight_ih_t, *weight_hh_t;
    } f32;
} LSTMWeights;

/* Gradients of the same four arrays. */
typedef struct {
    double *weight_ih, *weight_hh, *bias_ih, *bias_hh;
} LSTMGrads;

/* One LSTM run over B sequences: row b runs steps[b] <= T steps from the zero state (§2.3).
 * Arrays are [B, T, ...] in the LSTM's own time order; entries past a row's steps stay 0. */
typedef struct {
    size_t B, T, d_in, d;
    size_t *steps;   /* [B] */
    double *u;       /* [B, T, d_in] inputs, filled by the caller */
    double *h;       /* [B, T, d] outputs h_t */
    double *c;       /* [B, T, d] cell states c_t (these three NULL in a float32 run: see f32) */
    double *tanh_c;  /* [B, T, d] tanh(c_t) */
    double *gates;   /* [B, T, 4d] i_t, f_t, g_t, o_t after their nonlinearities */
    struct {         /* a float32 run's arrays as the kernel left them, for the backward pass; NULL in
                      * float64. Of the doubles, a float32 run fills only h. */
        float *u, *h, *c, *tanh_c, *gates;
    } f32;
} LSTMRun;

/* The transposes of w's weights, in the call's arena; in a float32 call the float copies and their
 * transposes instead. */
void lstm_prepare(const Ctx *ctx, LSTMWeights *w);

/* A run with room for B rows of T steps, every array zero (but a float32 run's h, written whole by
 * lstm_forward). */
LSTMRun lstm_run_new(const Ctx *ctx, size_t B, size_t T, size_t d_in, size_t d);

/* §2.2 over every row of run->u: fills h, c, tanh_c and gates. */
void lstm_forward(const Ctx *ctx, const LSTMWeights *w, LSTMRun *run);

/* Backpropagation through time. g_h [B, T, d]: the gradient of the objective with respect to each
 * output h_t. Writes g_u [B, T, d_in] (the gradient with respect to each input) and the weights'
 * gradients into `grads`, which must be zero on entry. */
void lstm_backward(const Ctx *ctx, const LSTMWeights *w, const LSTMRun *run, const double *g_h, double *g_u,
                   const LSTMGrads *grads);

#endif
