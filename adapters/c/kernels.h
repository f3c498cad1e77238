/* The numeric kernels, in each floating dtype's own arithmetic (§1.2).
 *
 * One source, two types: kernels_real.h is written once in terms of a type `real`, and kernels.c
 * compiles it twice, with real = double (the names end in _f64) and real = float (_f32). A float32
 * call thus computes in float arithmetic, with float's exp, log and tanh (<tgmath.h>), rather than
 * rounding double results (real.h's fl()), which keeps its loops as fast as the float64 ones.
 *
 * The callers (linalg.c, lstm.c, loss.c) keep their arrays in doubles, like the rest of the
 * program: a float64 call passes them as they are, a float32 call converts them to floats and the
 * results back, exactly (every value of a float32 call is a float).
 *
 * The kernels that need room take it from the call's arena, once per call, never per step.
 *
 * Every element of a product adds its terms in index order, whatever the sizes and however the
 * work is blocked: results are bitwise reproducible (§1.4) and a row's values depend on that
 * row's inputs only (§3.2, §3.3).
 */
#ifndef ELMO_KERNELS_H
#define ELMO_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "arena.h"

/* The kernels of one type `real`, named by KERNEL(name):
 *
 * matmul_add: C [n, m] += A · B for B [k, m] row-major, A's element (i, p) at A[i * a_row + p *
 *   a_col] (a_row = k, a_col = 1 for a row-major A [n, k]; a_row = 1, a_col = n for the transpose
 *   of a row-major [k, n]). C[i][j] adds A(i, p) B[p][j] for p = 0, 1, ..., k - 1 in that order.
 *
 * matmul: the same product into C, C = A · B: C's former contents are not read (each element summed
 *   from +0, exactly as matmul_add into a zeroed C).
 *
 * transpose: AT [cols, rows] = the transpose of row-major A [rows, cols].
 *
 * sum_pairwise: x[0] + ... + x[n-1] (n >= 0), by pairwise summation (as NumPy sums a row).
 *
 * lstm_forward: §2.2 over B rows of [B, T, ...] arrays (lstm.h's LSTMRun): row b runs steps[b]
 *   steps from the zero state (§2.3); fills h, c, tanh_c and gates, and leaves them untouched past
 *   a row's steps. weight_ih_t [d_in, 4d] and weight_hh_t [d, 4d] are the weights' transposes.
 *
 * lstm_backward: backpropagation through time (§6) of such a run, from g_h [B, T, d]: writes g_u
 *   [B, T, d_in] (0 past each row's steps) and weight_ih, weight_hh and bias of `grads`, which
 *   must be zero on entry (the two biases' gradients are equal: both enter z alike).
 *
 * output_loss: one direction of §4.2 for n scored states [n, d] and their targets: the mean
 *   cross-entropy of W_out h + c, its terms computed with the maximum subtracted. With `grad`, also
 *   the gradient of half of it (bilm_loss averages two directions): into g_states [n, d], and added
 *   to g_weight [V, d] and g_bias [V]. logits [n, V] is room for the logits (its contents unread).
 */
#define DECLARE_KERNELS(real, KERNEL)                                                                                 \
    void KERNEL(matmul_add)(size_t n, size_t k, size_t m, const real *A, size_t a_row, size_t a_col, const real *B,   \
                            real *C);                                                                                 \
    void KERNEL(matmul)(size_t n, size_t k, size_t m, const real *A, size_t a_row, size_t a_col, const real *B,       \
                        real *C);                                                                                     \
    void KERNEL(transpose)(size_t rows, size_t cols, const real *A, real *AT);                                        \
    real KERNEL(sum_pairwise)(size_t n, const real *x);                                                               \
    void KERNEL(lstm_forward)(Arena *arena, size_t B, size_t T, size_t d_in, size_t d, const size_t *steps, const real *u,          \
                              const real *weight_ih_t, const real *weight_hh_t, const real *bias_ih,                  \
                              const real *bias_hh, real *h, real *c, real *tanh_c, real *gates);                      \
    void KERNEL(lstm_backward)(Arena *arena, size_t B, size_t T, size_t d_in, size_t d, const size_t *steps, const real *u,         \
                               const real *h, const real *c, const real *tanh_c, const real *gates,                   \
                               const real *weight_ih, const real *weight_hh, const real *g_h, real *g_u,              \
                               real *g_weight_ih, real *g_weight_hh, real *g_bias);                                   \
    real KERNEL(output_loss)(Arena *arena, size_t n, size_t d, size_t V, const real *states, const size_t *target,                  \
                             const real *out_weight, const real *out_weight_t, const real *out_bias, real *logits,    \
                             bool grad, real *g_states, real *g_weight, real *g_bias);

#define KERNEL_F64(name) name##_f64
#define KERNEL_F32(name) name##_f32

DECLARE_KERNELS(double, KERNEL_F64)
DECLARE_KERNELS(float, KERNEL_F32)

#endif
