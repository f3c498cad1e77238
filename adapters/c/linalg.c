/* Matrix products and sums (see linalg.h). */
#include "linalg.h"

/* Column and inner-dimension blocks of matmul_add: a block of B is 128 x 256 doubles (256 KiB). */
enum { COLUMN_BLOCK = 256, INNER_BLOCK = 128 };

void axpy(const Ctx *ctx, size_t m, double a, const double *restrict x, double *restrict y)
{
    /* One loop per dtype, so that each vectorizes. */
    if (ctx->dtype == FLOAT32) {
        for (size_t j = 0; j < m; j++) {
            y[j] = (float)(y[j] + (double)(float)(a * x[j]));
        }
    } else {
        for (size_t j = 0; j < m; j++) {
            y[j] += a * x[j];
        }
    }
}

void matmul_add(const Ctx *ctx, size_t n, size_t k, size_t m, const double *A, const double *B, double *C)
{
    /* Blocks of p are taken in increasing order, so each C[i][j] still adds its terms in p order. */
    for (size_t p0 = 0; p0 < k; p0 += INNER_BLOCK) {
        size_t p1 = p0 + INNER_BLOCK < k ? p0 + INNER_BLOCK : k;
        for (size_t j0 = 0; j0 < m; j0 += COLUMN_BLOCK) {
            size_t width = j0 + COLUMN_BLOCK < m ? COLUMN_BLOCK : m - j0;
            for (size_t i = 0; i < n; i++) {
                for (size_t p = p0; p < p1; p++) {
                    axpy(ctx, width, A[i * k + p], B + p * m + j0, C + i * m + j0);
                }
            }
        }
    }
}

void transpose(size_t rows, size_t cols, const double *A, double *AT)
{
    for (size_t i = 0; i < rows; i++) {
        for (size_t j = 0; j < cols; j++) {
            AT[j * rows + i] = A[i * cols + j];
        }
    }
}

double sum_pairwise(const Ctx *ctx, size_t n, const double *x)
{
    if (n <= 8) {
        double total = 0.0;
        for (size_t i = 0; i < n; i++) {
            total = fl(ctx, total + x[i]);
        }
        return total;
    }
    size_t half = n / 2;
    return fl(ctx, sum_pairwise(ctx, half, x) + sum_pairwise(ctx, n - half, x + half));
}
