/* Matrix products and sums (see linalg.h). */
#include "linalg.h"

#include <stdint.h>
#include <stdlib.h>

#include "kernels.h"

void matmul_add(const Ctx *ctx, size_t n, size_t k, size_t m, const double *A, const double *B, double *C)
{
    if (ctx->dtype == FLOAT64) {
        matmul_add_f64(n, k, m, A, k, 1, B, C);
        return;
    }
    /* Float copies of the three, freed on return: a caller may call this in a loop (the probe's
     * steps), and the arena would keep every copy to the end of the request. */
    Arena *arena = ctx->arena;
    size_t nk = arena_mul(arena, n, k), km = arena_mul(arena, k, m), nm = arena_mul(arena, n, m);
    if (nk > SIZE_MAX - km || nk + km > SIZE_MAX - nm) {
        arena_fail(arena, "an array size overflows");
    }
    float *room = malloc(arena_mul(arena, nk + km + nm, sizeof(float)) + 1);
    if (room == NULL) {
        arena_fail(arena, "out of memory");
    }
    float *A32 = room, *B32 = room + nk, *C32 = room + nk + km;
    for (size_t i = 0; i < nk; i++) {
        A32[i] = (float)A[i];
    }
    for (size_t i = 0; i < km; i++) {
        B32[i] = (float)B[i];
    }
    for (size_t i = 0; i < nm; i++) {
        C32[i] = (float)C[i];
    }
    matmul_add_f32(n, k, m, A32, k, 1, B32, C32);
    doubles_from(nm, C32, C);
    free(room);
}

float *floats_of(const Ctx *ctx, size_t n, const double *x)
{
    float *out = arena_alloc_uninit(ctx->arena, n, sizeof(float)); /* every element written below */
    for (size_t i = 0; i < n; i++) {
        out[i] = (float)x[i];
    }
    return out;
}

void doubles_from(size_t n, const float *x, double *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = x[i];
    }
}

void transpose(size_t rows, size_t cols, const double *A, double *AT)
{
    transpose_f64(rows, cols, A, AT);
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
