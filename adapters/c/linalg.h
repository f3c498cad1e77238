/* Matrix products and sums, in the call's dtype (real.h), in a fixed order, and the conversions
 * between the program's doubles and the float kernels (kernels.h).
 *
 * Every element of a product adds its terms in index order, whatever the sizes: a result never
 * depends on how the work is blocked, so states are bitwise reproducible (§1.4) and each row's
 * values depend on that row's inputs only (§3.2, §3.3).
 */
#ifndef ELMO_LINALG_H
#define ELMO_LINALG_H

#include <stddef.h>

#include "real.h"

/* C += A · B for row-major A [n, k], B [k, m], C [n, m], in the call's dtype: C[i][j] adds
 * A[i][p] B[p][j] for p = 0, 1, ..., k - 1 in that order (kernels.h's matmul_add). */
void matmul_add(const Ctx *ctx, size_t n, size_t k, size_t m, const double *A, const double *B, double *C);

/* The n values of x as floats, in the call's arena: exact for the values of a float32 call. */
float *floats_of(const Ctx *ctx, size_t n, const double *x);

/* out[i] = x[i] for i < n. */
void doubles_from(size_t n, const float *x, double *out);

/* AT [cols, rows] = the transpose of A [rows, cols]. */
void transpose(size_t rows, size_t cols, const double *A, double *AT);

/* x[0] + x[1] + ... + x[n-1] (n >= 0), by pairwise summation (as NumPy sums a contiguous row). */
double sum_pairwise(const Ctx *ctx, size_t n, const double *x);

#endif
