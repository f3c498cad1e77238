/* The kernels of kernels.h, written once for a type `real`: kernels.c includes this file twice,
 * with `real` and KERNEL() defined for double and for float. No include guard, on purpose.
 *
 * Every constant is a `real`, so that a float kernel never computes in double; exp, log and tanh
 * come from <tgmath.h> and so are the float functions for a float argument.
 */

/* --- matrix products -------------------------------------------------------------------------- */

/* A block of C is PRODUCT_ROWS rows of 2 vectors; a vector is 64 bytes (16 floats or 8 doubles). */
#define LANES (64 / sizeof(real))
#define COLUMNS (2 * LANES)
#define PANEL (PRODUCT_PANEL_VECTORS * LANES)

#ifndef VECTORS
/* C [rows, columns] += A · B over k terms: each row of C adds the rows of B scaled, in p order. */
static void KERNEL(product_plain)(size_t rows, size_t columns, size_t k, const real *A, size_t a_row, size_t a_col,
                                  const real *B, size_t m, real *C)
{
    for (size_t r = 0; r < rows; r++) {
        real *restrict c = C + r * m;
        for (size_t p = 0; p < k; p++) {
            real a = A[r * a_row + p * a_col];
            const real *restrict b = B + p * m;
            for (size_t j = 0; j < columns; j++) {
                c[j] += a * b[j];
            }
        }
    }
}
#else
typedef real KERNEL(vec) __attribute__((vector_size(64)));

/* Blocks of A and B copied so that the block kernel reads them in order: A's rows by PRODUCT_ROWS,
 * [k][PRODUCT_ROWS] each (where A is not read in place, below); B's columns by COLUMNS, [k][COLUMNS]
 * each; zeros past the edges. The program is single-threaded. */
static real KERNEL(packed_a)[PRODUCT_STRIPE * PRODUCT_DEPTH];
static real KERNEL(packed_b)[PRODUCT_DEPTH * PANEL];

/* C [rows, columns] += a · b over k terms (with `add`; C = a · b without, C's former contents
 * unread), rows <= PRODUCT_ROWS and columns <= COLUMNS, for PRODUCT_ROWS rows of A read in place (the
 * element (r, p) at a[r * a_row + p * a_col]; rows past `rows` are read but not kept) and a block of
 * B packed by pack_panel; the block of C stays in registers while the terms are added in p order,
 * so each element is summed exactly as in a plain loop (without `add`, from +0, as into a zeroed C). */
WIDE_VECTORS static void KERNEL(product_block)(size_t rows, size_t columns, size_t k, const real *a, size_t a_row,
                                               size_t a_col, const real *b, real *C, size_t m, bool add)
{
    real edge[PRODUCT_ROWS][COLUMNS];
    real *c = C;
    size_t c_row = m;
    if (rows < PRODUCT_ROWS || columns < COLUMNS) { /* an edge: through a full block */
        memset(edge, 0, sizeof edge);
        for (size_t r = 0; add && r < rows; r++) {
            memcpy(edge[r], C + r * m, columns * sizeof(real));
        }
        c = &edge[0][0];
        c_row = COLUMNS;
    }
    KERNEL(vec) acc[PRODUCT_ROWS][2];
    for (size_t r = 0; r < PRODUCT_ROWS; r++) {
        if (add) {
            memcpy(&acc[r][0], c + r * c_row, sizeof acc[r][0]);
            memcpy(&acc[r][1], c + r * c_row + LANES, sizeof acc[r][1]);
        } else {
            acc[r][0] = acc[r][1] = (KERNEL(vec)){0};
        }
    }
    for (size_t p = 0; p < k; p++) {
        KERNEL(vec) b0, b1;
        memcpy(&b0, b + p * COLUMNS, sizeof b0);
        memcpy(&b1, b + p * COLUMNS + LANES, sizeof b1);
        for (size_t r = 0; r < PRODUCT_ROWS; r++) {
            real a_rp = a[r * a_row + p * a_col];
            acc[r][0] += a_rp * b0;
            acc[r][1] += a_rp * b1;
        }
    }
    for (size_t r = 0; r < PRODUCT_ROWS; r++) {
        memcpy(c + r * c_row, &acc[r][0], sizeof acc[r][0]);
        memcpy(c + r * c_row + LANES, &acc[r][1], sizeof acc[r][1]);
    }
    if (c == &edge[0][0]) {
        for (size_t r = 0; r < rows; r++) {
            memcpy(C + r * m, edge[r], columns * sizeof(real));
        }
    }
}
#endif

#ifdef VECTORS
/* Columns [j1, j1 + width) of rows [p0, p0 + depth) of B [., m], as the block kernel reads them:
 * blocks of COLUMNS columns, [depth][COLUMNS] each, one after the other; zeros past the edge. */
static void KERNEL(pack_panel)(size_t depth, size_t width, const real *B, size_t m, real *packed)
{
    for (size_t j0 = 0; j0 < width; j0 += COLUMNS) {
        size_t columns = width - j0 < COLUMNS ? width - j0 : COLUMNS;
        real *block = packed + j0 * depth;
        const real *b = B + j0;
        if (columns == COLUMNS) { /* copies of a constant size, which the compiler inlines */
            for (size_t p = 0; p < depth; p++) {
                memcpy(block + p * COLUMNS, b + p * m, COLUMNS * sizeof(real));
            }
            continue;
        }
        for (size_t p = 0; p < depth; p++) {
            memcpy(block + p * COLUMNS, b + p * m, columns * sizeof(real));
            memset(block + p * COLUMNS + columns, 0, (COLUMNS - columns) * sizeof(real));
        }
    }
}

/* PRODUCT_STRIPE rows of A (height of them, the rest zeros) copied as the block kernel reads them. */
static void KERNEL(pack_stripe)(size_t height, size_t depth, const real *A, size_t a_row, size_t a_col, real *packed)
{
    size_t padded = (height + PRODUCT_ROWS - 1) / PRODUCT_ROWS * PRODUCT_ROWS;
    memset(packed + height / PRODUCT_ROWS * PRODUCT_ROWS * depth, 0,
           (padded - height / PRODUCT_ROWS * PRODUCT_ROWS) * depth * sizeof(real));
    for (size_t i0 = 0; i0 < height; i0 += PRODUCT_ROWS) {
        real *block = packed + i0 * depth;
        size_t rows = height - i0 < PRODUCT_ROWS ? height - i0 : PRODUCT_ROWS;
        const real *a = A + i0 * a_row;
        if (a_row == 1 && rows == PRODUCT_ROWS) { /* a transposed A: its rows are columns here */
            for (size_t p = 0; p < depth; p++) {
                memcpy(block + p * PRODUCT_ROWS, a + p * a_col, PRODUCT_ROWS * sizeof(real));
            }
        } else {
            for (size_t p = 0; p < depth; p++) {
                for (size_t r = 0; r < rows; r++) {
                    block[p * PRODUCT_ROWS + r] = a[r * a_row + p * a_col];
                }
            }
        }
    }
}

/* C [n, width] (rows of m) += A · (a panel of B packed by pack_panel) over `depth` terms (= without
 * `add`): A by stripes of PRODUCT_STRIPE rows, each met by every block of the panel while it is in
 * cache. A row-major A (a_col = 1) is read in place, PRODUCT_ROWS rows at a time, each in order;
 * any other A, and a last stripe whose rows do not fill every block, is copied by pack_stripe. */
static void KERNEL(product_panel)(size_t n, size_t depth, size_t width, const real *A, size_t a_row, size_t a_col,
                                  const real *packed_b, real *C, size_t m, bool add)
{
    for (size_t i1 = 0; i1 < n; i1 += PRODUCT_STRIPE) {
        size_t height = n - i1 < PRODUCT_STRIPE ? n - i1 : PRODUCT_STRIPE;
        bool in_place = a_col == 1 && height % PRODUCT_ROWS == 0;
        if (!in_place) {
            KERNEL(pack_stripe)(height, depth, A + i1 * a_row, a_row, a_col, KERNEL(packed_a));
        }
        for (size_t j0 = 0; j0 < width; j0 += COLUMNS) {
            size_t columns = width - j0 < COLUMNS ? width - j0 : COLUMNS;
            for (size_t i0 = 0; i0 < height; i0 += PRODUCT_ROWS) {
                size_t rows = height - i0 < PRODUCT_ROWS ? height - i0 : PRODUCT_ROWS;
                const real *b = packed_b + j0 * depth;
                real *c = C + (i1 + i0) * m + j0;
                if (in_place) {
                    KERNEL(product_block)(rows, columns, depth, A + (i1 + i0) * a_row, a_row, 1, b, c, m, add);
                } else {
                    KERNEL(product_block)(rows, columns, depth, KERNEL(packed_a) + i0 * depth, 1, PRODUCT_ROWS, b, c,
                                          m, add);
                }
            }
        }
    }
}
#endif

/* C [n, m] = 0, for a product of no terms that does not add. */
static void KERNEL(zero_product)(size_t n, size_t m, real *C)
{
    memset(C, 0, n * m * sizeof(real));
}

/* C [n, m] += A · B with `add`, C = A · B without (C's former contents unread): matmul_add and matmul. */
static void KERNEL(product)(size_t n, size_t k, size_t m, const real *A, size_t a_row, size_t a_col, const real *B,
                            real *C, bool add)
{
#ifndef VECTORS
    if (!add) {
        KERNEL(zero_product)(n, m, C);
    }
    KERNEL(product_plain)(n, m, k, A, a_row, a_col, B, m, C);
#else
    if (k == 0 && !add) {
        KERNEL(zero_product)(n, m, C);
    }
    /* Terms in blocks of PRODUCT_DEPTH, taken in increasing order (the first sets C unless adding);
     * in each, B by panels of PANEL columns, each copied once and met by every stripe of A. */
    for (size_t p0 = 0; p0 < k; p0 += PRODUCT_DEPTH) {
        size_t depth = k - p0 < PRODUCT_DEPTH ? k - p0 : PRODUCT_DEPTH;
        for (size_t j1 = 0; j1 < m; j1 += PANEL) {
            size_t width = m - j1 < PANEL ? m - j1 : PANEL;
            KERNEL(pack_panel)(depth, width, B + p0 * m + j1, m, KERNEL(packed_b));
            KERNEL(product_panel)(n, depth, width, A + p0 * a_col, a_row, a_col, KERNEL(packed_b), C + j1, m,
                                  add || p0 > 0);
        }
    }
#endif
}

void KERNEL(matmul_add)(size_t n, size_t k, size_t m, const real *A, size_t a_row, size_t a_col, const real *B,
                        real *C)
{
    KERNEL(product)(n, k, m, A, a_row, a_col, B, C, true);
}

void KERNEL(matmul)(size_t n, size_t k, size_t m, const real *A, size_t a_row, size_t a_col, const real *B, real *C)
{
    KERNEL(product)(n, k, m, A, a_row, a_col, B, C, false);
}

/* AT [cols, rows] = A [rows, cols] transposed, in tiles of 16 x 16 so that both sides are read
 * and written a cache line at a time, each of AT's rows written in order. Exact: values are only
 * moved. */
void KERNEL(transpose)(size_t rows, size_t cols, const real *A, real *AT)
{
    enum { TILE = 16 };
    for (size_t j0 = 0; j0 < cols; j0 += TILE) {
        size_t j1 = j0 + TILE < cols ? j0 + TILE : cols;
        for (size_t i0 = 0; i0 < rows; i0 += TILE) {
            size_t i1 = i0 + TILE < rows ? i0 + TILE : rows;
            for (size_t j = j0; j < j1; j++) {
                for (size_t i = i0; i < i1; i++) {
                    AT[j * rows + i] = A[i * cols + j];
                }
            }
        }
    }
}

/* B [k, m] packed once for many products by the same B (the LSTM's weights, at every step): every
 * panel of matmul_add, one after the other, [k rounded up to COLUMNS... ] in the arena; B itself
 * where the products are plain loops. */
static const real *KERNEL(pack_b)(Arena *arena, size_t k, size_t m, const real *B)
{
#ifndef VECTORS
    (void)arena;
    (void)k;
    (void)m;
    return B;
#else
    size_t padded = (m + COLUMNS - 1) / COLUMNS * COLUMNS;
    real *packed = arena_alloc(arena, arena_mul(arena, k, padded), sizeof(real));
    for (size_t p0 = 0; p0 < k; p0 += PRODUCT_DEPTH) {
        size_t depth = k - p0 < PRODUCT_DEPTH ? k - p0 : PRODUCT_DEPTH;
        for (size_t j1 = 0; j1 < m; j1 += PANEL) {
            size_t width = m - j1 < PANEL ? m - j1 : PANEL;
            KERNEL(pack_panel)(depth, width, B + p0 * m + j1, m, packed + p0 * padded + j1 * depth);
        }
    }
    return packed;
#endif
}

/* product (C += A · B with `add`, C = A · B without) with B packed by pack_b: the same sums, in the
 * same order. */
static void KERNEL(product_packed)(size_t n, size_t k, size_t m, const real *A, size_t a_row, size_t a_col,
                                   const real *packed, real *C, bool add)
{
#ifndef VECTORS
    if (!add) {
        KERNEL(zero_product)(n, m, C);
    }
    KERNEL(product_plain)(n, m, k, A, a_row, a_col, packed, m, C);
#else
    if (k == 0 && !add) {
        KERNEL(zero_product)(n, m, C);
    }
    size_t padded = (m + COLUMNS - 1) / COLUMNS * COLUMNS;
    for (size_t p0 = 0; p0 < k; p0 += PRODUCT_DEPTH) {
        size_t depth = k - p0 < PRODUCT_DEPTH ? k - p0 : PRODUCT_DEPTH;
        for (size_t j1 = 0; j1 < m; j1 += PANEL) {
            size_t width = m - j1 < PANEL ? m - j1 : PANEL;
            KERNEL(product_panel)(n, depth, width, A + p0 * a_col, a_row, a_col, packed + p0 * padded + j1 * depth,
                                  C + j1, m, add || p0 > 0);
        }
    }
#endif
}

#undef PANEL
#undef COLUMNS
#undef LANES

/* Pairwise summation: n <= 8 terms added in order from +0, more split into halves (n / 2 and the
 * rest) summed alike. The three levels above the leaves are written out (sum_to_16, sum_to_32,
 * sum_to_64: the same sums in the same order as the recursion), so that a row of thousands of
 * logits (§4.2) takes a call per 64 terms rather than one per leaf. */
static inline real KERNEL(sum_leaf)(size_t n, const real *x)
{
    real total = 0;
    for (size_t i = 0; i < n; i++) {
        total += x[i];
    }
    return total;
}

static inline real KERNEL(sum_to_16)(size_t n, const real *x)
{
    if (n <= 8) {
        return KERNEL(sum_leaf)(n, x);
    }
    size_t half = n / 2;
    return KERNEL(sum_leaf)(half, x) + KERNEL(sum_leaf)(n - half, x + half);
}

static inline real KERNEL(sum_to_32)(size_t n, const real *x)
{
    if (n <= 16) {
        return KERNEL(sum_to_16)(n, x);
    }
    size_t half = n / 2;
    return KERNEL(sum_to_16)(half, x) + KERNEL(sum_to_16)(n - half, x + half);
}

static inline real KERNEL(sum_to_64)(size_t n, const real *x)
{
    if (n <= 32) {
        return KERNEL(sum_to_32)(n, x);
    }
    size_t half = n / 2;
    return KERNEL(sum_to_32)(half, x) + KERNEL(sum_to_32)(n - half, x + half);
}

real KERNEL(sum_pairwise)(size_t n, const real *x)
{
    if (n <= 64) {
        return KERNEL(sum_to_64)(n, x);
    }
    size_t half = n / 2;
    return KERNEL(sum_pairwise)(half, x) + KERNEL(sum_pairwise)(n - half, x + half);
}

/* --- exp ------------------------------------------------------------------------------------- */

/* exp(x) for x <= 0 (a logit less its row's maximum; -|x| in σ), in a form the compiler can vectorize, as
 * NumPy's exp is: x = n ln 2 + r with n an integer and |r| <= ln 2 / 2 (ln 2 in two parts, so that
 * r is exact), exp(r) by its Taylor series to EXP_DEGREE (a truncation error below half a unit in
 * the last place), times 2^n made from its bits. Within two units in the last place of exp(x). A
 * NaN stays NaN; below EXP_LOWEST, where 2^n would not be a normal number, the result is 0, which
 * is less than the smallest normal number away from exp(x). */
static inline real KERNEL(exp_nonpositive)(real x)
{
    static const real inverse_factorial[] = {
        1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320, 1.0 / 362880,
        1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0, 1.0 / 87178291200.0,
    };
    const real shifter = (real)1.5 * (real)((EXP_BITS)1 << EXP_MANTISSA_BITS); /* adding it rounds to an integer */
    real clamped = x < (real)EXP_LOWEST ? (real)EXP_LOWEST : x;
    real shifted = clamped * (real)1.44269504088896340736 + shifter; /* x / ln 2, rounded, in the low bits */
    real n = shifted - shifter;
    real r = (clamped - n * (real)EXP_LN2_HI) - n * (real)EXP_LN2_LO;
    real p = inverse_factorial[EXP_DEGREE];
    UNROLLED
    for (int k = EXP_DEGREE - 1; k >= 0; k--) {
        p = p * r + inverse_factorial[k];
    }
    EXP_BITS n_bits, shifter_bits, scale_bits;
    memcpy(&n_bits, &shifted, sizeof n_bits);
    memcpy(&shifter_bits, &shifter, sizeof shifter_bits);
    scale_bits = (n_bits - shifter_bits + EXP_BIAS) << EXP_MANTISSA_BITS; /* 2^n */
    real scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    real result = p * scale;
    return x < (real)EXP_LOWEST ? 0 : result;
}

/* --- §2.2-§2.3 one LSTM, and its backward pass (§6) ------------------------------------------- */

/* σ(x) = 1 / (1 + exp(-x)), the logistic function of §2.2, through e = exp(-|x|) <= 1, so that
 * it vectorizes: 1 / (1 + e) for x >= 0, and the same function written e / (1 + e) below. */
static inline real KERNEL(sigmoid)(real x)
{
    real e = KERNEL(exp_nonpositive)(-fabs(x));
    real up = (real)1 / ((real)1 + e), down = e / ((real)1 + e);
    return x >= 0 ? up : down;
}

#ifdef TANH_VECTORIZED
/* tanh(x) in a form the compiler can vectorize (the float kernels: libm's tanhf takes one value at
 * a time), with t = tanh(|x|) and x's sign: below 1/2 the Taylor series of tanh to degree 17 (its
 * truncation error below 1e-9 of t), above it (1 - e) / (1 + e) with e = exp(-2|x|) <= e^-1, so
 * that 1 - e loses no digits. Within a few units in the last place of tanh; NaN stays NaN. */
static inline real KERNEL(tanh_real)(real x)
{
    static const real series[] = {
        1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925, 21844.0 / 6081075,
        -929569.0 / 638512875, 6404582.0 / 10854718875.0,
    };
    real a = fabs(x), s = a * a;
    real p = series[8];
    UNROLLED
    for (int k = 7; k >= 0; k--) {
        p = p * s + series[k];
    }
    real e = KERNEL(exp_nonpositive)((real)-2 * a);
    real small = a * p, large = ((real)1 - e) / ((real)1 + e);
    return copysign(a < (real)0.5 ? small : large, x);
}
#else
/* libm's tanh (the float64 kernels). */
static inline real KERNEL(tanh_real)(real x)
{
    return tanh(x);
}
#endif

/* The rows of a run that have a step t (t < steps[b]), in row order; returns how many. */
static size_t KERNEL(rows_at)(size_t B, const size_t *steps, size_t t, size_t *rows)
{
    size_t n = 0;
    for (size_t b = 0; b < B; b++) {
        if (t < steps[b]) {
            rows[n++] = b;
        }
    }
    return n;
}

WIDE_VECTORS void KERNEL(lstm_forward)(Arena *arena, size_t B, size_t T, size_t d_in, size_t d, const size_t *steps, const real *u,
                          const real *weight_ih_t, const real *weight_hh_t, const real *bias_ih, const real *bias_hh,
                          real *h, real *c, real *tanh_c, real *gates)
{
    size_t d4 = 4 * d;
    /* The weights as the products read them, once for every row and step. */
    const real *packed_ih = KERNEL(pack_b)(arena, d_in, d4, weight_ih_t);
    const real *packed_hh = KERNEL(pack_b)(arena, d, d4, weight_hh_t);
    /* Per row, z_t's input part weight_ih · u_t + bias_ih + bias_hh for all its steps at once, in
     * the room of the gates. */
    for (size_t b = 0; b < B; b++) {
        real *z_input = gates + b * T * d4;
        KERNEL(product_packed)(steps[b], d_in, d4, u + b * T * d_in, d_in, 1, packed_ih, z_input, false);
        for (size_t tr = 0; tr < steps[b] * d4; tr++) {
            z_input[tr] = (z_input[tr] + bias_ih[tr % d4]) + bias_hh[tr % d4];
        }
    }

    /* Only h_{t-1} -> h_t is sequential: step t of every row that has one, at once. */
    size_t *rows = arena_alloc(arena, B, sizeof(size_t));
    real *h_prev = arena_alloc(arena, arena_mul(arena, B, d), sizeof(real));        /* h_{t-1} of those rows */
    real *z_recurrent = arena_alloc(arena, arena_mul(arena, B, d4), sizeof(real));  /* weight_hh · h_{t-1} */
    const real *zeros = arena_alloc(arena, d, sizeof(real));                        /* §2.3: h_{-1} = c_{-1} = 0 */
    for (size_t t = 0; t < T; t++) {
        size_t n = KERNEL(rows_at)(B, steps, t, rows);
        if (n == 0) {
            break;
        }
        for (size_t a = 0; a < n; a++) {
            const real *from = t > 0 ? h + (rows[a] * T + t - 1) * d : zeros;
            memcpy(h_prev + a * d, from, d * sizeof(real));
        }
        KERNEL(product_packed)(n, d, d4, h_prev, d, 1, packed_hh, z_recurrent, false);
        for (size_t a = 0; a < n; a++) {
            size_t bt = rows[a] * T + t;
            /* z_t = (weight_ih · u_t + bias_ih + bias_hh) + weight_hh · h_{t-1} */
            real *gate = gates + bt * d4;
            for (size_t r = 0; r < d4; r++) {
                gate[r] += z_recurrent[a * d4 + r];
            }
            for (size_t r = 0; r < 2 * d; r++) { /* i, f: σ */
                gate[r] = KERNEL(sigmoid)(gate[r]);
            }
            for (size_t r = 2 * d; r < 3 * d; r++) { /* g: tanh */
                gate[r] = KERNEL(tanh_real)(gate[r]);
            }
            for (size_t r = 3 * d; r < d4; r++) { /* o: σ */
                gate[r] = KERNEL(sigmoid)(gate[r]);
            }
            const real *i = gate, *f = gate + d, *g = gate + 2 * d, *o = gate + 3 * d;
            const real *c_prev = t > 0 ? c + (bt - 1) * d : zeros;
            real *c_t = c + bt * d, *h_t = h + bt * d, *tanh_c_t = tanh_c + bt * d;
            for (size_t j = 0; j < d; j++) {
                c_t[j] = f[j] * c_prev[j] + i[j] * g[j]; /* c_t = f ⊙ c_{t-1} + i ⊙ g */
                tanh_c_t[j] = KERNEL(tanh_real)(c_t[j]);
                h_t[j] = o[j] * tanh_c_t[j]; /* h_t = o ⊙ tanh(c_t) */
            }
        }
    }
}

void KERNEL(lstm_backward)(Arena *arena, size_t B, size_t T, size_t d_in, size_t d, const size_t *steps, const real *u,
                           const real *h, const real *c, const real *tanh_c, const real *gates, const real *weight_ih,
                           const real *weight_hh, const real *g_h, real *g_u, real *g_weight_ih, real *g_weight_hh,
                           real *g_bias)
{
    size_t d4 = 4 * d, positions = arena_mul(arena, B, T);
    /* ∂J/∂z_t [B, T, 4d], written and read at each row's steps only */
    real *g_z = arena_alloc_uninit(arena, arena_mul(arena, positions, d4), sizeof(real));
    real *g_h_next = arena_alloc(arena, arena_mul(arena, B, d), sizeof(real));       /* ∂J/∂h_t through step t + 1 */
    real *g_c_next = arena_alloc(arena, arena_mul(arena, B, d), sizeof(real));       /* ∂J/∂c_t through step t + 1 */
    real *g_z_step = arena_alloc(arena, arena_mul(arena, B, d4), sizeof(real));      /* ∂J/∂z_t of the rows at t */
    real *g_h_step = arena_alloc(arena, arena_mul(arena, B, d), sizeof(real));       /* ∂J/∂h_{t-1} of those rows */
    size_t *rows = arena_alloc(arena, B, sizeof(size_t));
    const real *zeros = arena_alloc(arena, d, sizeof(real));
    /* The weights as the products read them, once for every row and step. */
    const real *packed_hh = KERNEL(pack_b)(arena, d4, d, weight_hh);
    const real *packed_ih = KERNEL(pack_b)(arena, d4, d_in, weight_ih);

    /* Backwards through time, step t of every row that has one at once: a row's carried gradients
     * are 0 until its last step. */
    for (size_t t = T; t-- > 0;) {
        size_t n = KERNEL(rows_at)(B, steps, t, rows);
        for (size_t a = 0; a < n; a++) {
            size_t b = rows[a], bt = b * T + t;
            const real *gate = gates + bt * d4;
            const real *i = gate, *f = gate + d, *g = gate + 2 * d, *o = gate + 3 * d;
            const real *c_prev = t > 0 ? c + (bt - 1) * d : zeros;
            const real *tanh_c_t = tanh_c + bt * d;
            real *g_z_t = g_z + bt * d4, *g_h_b = g_h_next + b * d, *g_c_b = g_c_next + b * d;
            for (size_t j = 0; j < d; j++) {
                /* h_t reaches the objective directly and through step t + 1; c_t through h_t and c_{t+1}. */
                real g_ht = g_h[bt * d + j] + g_h_b[j];
                real dh_dc = o[j] * ((real)1 - tanh_c_t[j] * tanh_c_t[j]);
                real g_ct = g_ht * dh_dc + g_c_b[j];
                /* σ' = σ(1 - σ), tanh' = 1 - tanh²: i, f and g act through c_t, o through h_t. */
                real local_i = g[j] * i[j] * ((real)1 - i[j]);
                real local_f = c_prev[j] * f[j] * ((real)1 - f[j]);
                real local_g = i[j] * ((real)1 - g[j] * g[j]);
                real local_o = tanh_c_t[j] * o[j] * ((real)1 - o[j]);
                g_z_t[j] = g_ct * local_i;
                g_z_t[d + j] = g_ct * local_f;
                g_z_t[2 * d + j] = g_ct * local_g;
                g_z_t[3 * d + j] = g_ht * local_o;
                g_c_b[j] = g_ct * f[j];
            }
            memcpy(g_z_step + a * d4, g_z_t, d4 * sizeof(real));
        }
        /* ∂J/∂h_{t-1} = ∂J/∂z_t · weight_hh */
        KERNEL(product_packed)(n, d4, d, g_z_step, d4, 1, packed_hh, g_h_step, false);
        for (size_t a = 0; a < n; a++) {
            memcpy(g_h_next + rows[a] * d, g_h_step + a * d, d * sizeof(real));
        }
    }

    /* Per row, the weights' gradients: Σ_t ∂J/∂z_t ⊗ u_t, Σ_t ∂J/∂z_t ⊗ h_{t-1}, Σ_t ∂J/∂z_t; and
     * ∂J/∂u_t = ∂J/∂z_t · weight_ih. */
    real *h_prev = arena_alloc(arena, arena_mul(arena, T, d), sizeof(real)); /* h_{t-1} of one row */
    for (size_t b = 0; b < B; b++) {
        size_t n = steps[b];
        const real *g_z_b = g_z + b * T * d4;
        memset(h_prev, 0, d * sizeof(real));
        if (n > 1) {
            memcpy(h_prev + d, h + b * T * d, (n - 1) * d * sizeof(real));
        }
        /* ∂J/∂z_bᵀ [4d, n] is read in place: its element (r, t) is g_z_b[t * 4d + r]. */
        KERNEL(matmul_add)(d4, n, d_in, g_z_b, 1, d4, u + b * T * d_in, g_weight_ih);
        KERNEL(matmul_add)(d4, n, d, g_z_b, 1, d4, h_prev, g_weight_hh);
        for (size_t tr = 0; tr < n * d4; tr++) {
            g_bias[tr % d4] += g_z_b[tr];
        }
        real *g_u_b = g_u + b * T * d_in;
        KERNEL(product_packed)(n, d4, d_in, g_z_b, d4, 1, packed_ih, g_u_b, false);
        memset(g_u_b + n * d_in, 0, (T - n) * d_in * sizeof(real)); /* 0 past the row's steps */
    }
}

/* --- §4.2 one direction's loss, and its gradient (§6.1) --------------------------------------- */


/* z += c over a row of n >= 1 logits, and the largest of the sums, in one pass: 16 running maxima
 * that the compiler can keep in vectors, the same value as one running maximum unless z holds a NaN
 * (which makes the loss NaN anyway). */
static inline real KERNEL(add_bias_maximum)(size_t n, real *restrict z, const real *restrict c)
{
    real top[16];
    for (size_t l = 0; l < 16; l++) {
        top[l] = z[0] + c[0];
    }
    size_t v = 0;
    for (; v + 16 <= n; v += 16) {
        for (size_t l = 0; l < 16; l++) {
            real x = z[v + l] + c[v + l];
            z[v + l] = x;
            top[l] = x > top[l] ? x : top[l];
        }
    }
    for (; v < n; v++) {
        z[v] += c[v];
        top[0] = z[v] > top[0] ? z[v] : top[0];
    }
    real largest = top[0];
    for (size_t l = 1; l < 16; l++) {
        largest = top[l] > largest ? top[l] : largest;
    }
    return largest;
}

WIDE_VECTORS real KERNEL(output_loss)(Arena *arena, size_t n, size_t d, size_t V, const real *states, const size_t *target,
                         const real *out_weight, const real *out_weight_t, const real *out_bias, real *logits,
                         bool grad, real *g_states, real *g_weight, real *g_bias)
{
    /* §3.5: W_out · h (+ c below, row by row) */
    KERNEL(matmul)(n, d, V, states, d, 1, out_weight_t, logits);
    real *ce = arena_alloc(arena, n, sizeof(real));
    real *g_bias_here = arena_alloc(arena, V, sizeof(real));
    /* Row by row, while the row is in cache: its cross-entropy, then (with grad) its gradient
     * ∂(L_dir / 2)/∂z = (softmax(z) - onehot(y)) / n / 2, in the logits' room. */
    for (size_t i = 0; i < n; i++) {
        real *z = logits + i * V;
        size_t y = target[i];
        real largest = KERNEL(add_bias_maximum)(V, z, out_bias);
        real picked = z[y] - largest;
        for (size_t v = 0; v < V; v++) {
            z[v] = KERNEL(exp_nonpositive)(z[v] - largest); /* the maximum subtracted: exp never overflows */
        }
        real total = KERNEL(sum_pairwise)(V, z);
        ce[i] = log(total) - picked;
        if (grad) {
            real *g = z;
            for (size_t v = 0; v < V; v++) {
                real softmax = g[v] / total;
                real g_v = v == y ? softmax - (real)1 : softmax;
                g[v] = g_v / (real)n * (real)0.5;
                g_bias_here[v] += g[v];
            }
        }
    }
    real value = KERNEL(sum_pairwise)(n, ce) / (real)n;
    if (!grad) {
        return value;
    }

    /* Through the shared output layer: to the states, to W_out, to c. */
    const real *g_logits = logits;
    KERNEL(matmul)(n, V, d, g_logits, V, 1, out_weight, g_states);
    real *g_weight_here = arena_alloc_uninit(arena, arena_mul(arena, V, d), sizeof(real));
    KERNEL(matmul)(V, n, d, g_logits, 1, V, states, g_weight_here); /* g_logitsᵀ, read in place */
    for (size_t at = 0; at < V * d; at++) {
        g_weight[at] += g_weight_here[at];
    }
    for (size_t v = 0; v < V; v++) {
        g_bias[v] += g_bias_here[v];
    }
    return value;
}
