/* The kernels of kernels.h: kernels_real.h compiled twice, for double and for float. */
#include "kernels.h"

#include <stdint.h>
#include <stdlib.h> /* defines __GLIBC__ where there is one */
#include <string.h>
#include <tgmath.h>

/* The products' blocks: PRODUCT_ROWS rows of C at a time, over at most PRODUCT_DEPTH terms; rows of
 * A in stripes of PRODUCT_STRIPE (a multiple of PRODUCT_ROWS), columns of B in panels of
 * PRODUCT_PANEL_VECTORS vectors (an even number). */
enum { PRODUCT_ROWS = 8, PRODUCT_DEPTH = 256, PRODUCT_STRIPE = 48, PRODUCT_PANEL_VECTORS = 32 };

/* With GCC or Clang, a block of C is held in vectors of the compiler's vector extension, which every
 * target has (as several registers where they are narrower than 64 bytes); elsewhere the products
 * are plain loops. The block kernel is also compiled for AVX2 and AVX-512 on x86-64 with glibc,
 * which picks the widest the processor has when the program starts: the program runs on every
 * x86-64. Its AVX2 clone is x86-64-v3 (AVX2 with FMA), so that a product may be fused into the
 * sum it is added to (below) on every clone but the baseline's. */
#if defined(__GNUC__)
#define VECTORS
#endif
#if defined(__GNUC__) && defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define WIDE_VECTORS __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef WIDE_VECTORS
#define WIDE_VECTORS
#endif
/* A loop of a constant, small count unrolled, so that the loop around it can be vectorized. */
#if defined(__GNUC__)
#define UNROLLED _Pragma("GCC unroll 16")
#else
#define UNROLLED
#endif

/* In both dtypes a product may be fused into the sum it is added to (a multiply-add rounded once,
 * as NumPy's BLAS does), in these kernels only: the build's -ffp-contract=off keeps every other
 * operation of the program as written. A kernel's result may so differ in its last bits from one
 * processor to another (FMA or not), well within the tolerances of spec/tolerances.json; on one
 * machine it is reproducible, and each element's terms are still added in index order. */
#if defined(__clang__)
#pragma clang fp contract(fast)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")
#endif

/* Each type's exp_nonpositive (kernels_real.h): an unsigned integer of its width, its mantissa bits
 * and exponent bias, the degree of the Taylor series, the lowest argument whose 2^n is normal, and
 * ln 2 as a part whose products with every n are exact plus the rest. */
#define real double
#define KERNEL KERNEL_F64
#define EXP_BITS uint64_t
#define EXP_MANTISSA_BITS 52
#define EXP_BIAS 1023
#define EXP_DEGREE 13
#define EXP_LOWEST (-708.0)
#define EXP_LN2_HI 0x1.62e42fee00000p-1
#define EXP_LN2_LO 0x1.a39ef35793c76p-33
#include "kernels_real.h"
#undef EXP_BITS
#undef EXP_MANTISSA_BITS
#undef EXP_BIAS
#undef EXP_DEGREE
#undef EXP_LOWEST
#undef EXP_LN2_HI
#undef EXP_LN2_LO
#undef KERNEL
#undef real

#define real float
#define KERNEL KERNEL_F32
#define TANH_VECTORIZED
#define EXP_BITS uint32_t
#define EXP_MANTISSA_BITS 23
#define EXP_BIAS 127
#define EXP_DEGREE 7
#define EXP_LOWEST (-87.0)
#define EXP_LN2_HI 0x1.62e400p-1
#define EXP_LN2_LO 0x1.7f7d1cp-20
#include "kernels_real.h"
#undef EXP_BITS
#undef EXP_MANTISSA_BITS
#undef EXP_BIAS
#undef EXP_DEGREE
#undef EXP_LOWEST
#undef EXP_LN2_HI
#undef EXP_LN2_LO
#undef KERNEL
#undef real
#undef TANH_VECTORIZED
#if !defined(__clang__) && defined(__GNUC__)
#pragma GCC pop_options
#endif
