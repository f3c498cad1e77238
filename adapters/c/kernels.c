/* The kernels of kernels.h: kernels_real.h compiled twice, for double and for float. */
#include "kernels.h"

#include <stdlib.h> /* defines __GLIBC__ where there is one */
#include <string.h>
#include <tgmath.h>

/* The products' blocks: PRODUCT_ROWS rows of C at a time, over at most PRODUCT_DEPTH terms; rows of
 * A in stripes of PRODUCT_STRIPE (a multiple of PRODUCT_ROWS), columns of B in panels of
 * PRODUCT_PANEL_VECTORS vectors (an even number). */
enum { PRODUCT_ROWS = 4, PRODUCT_DEPTH = 256, PRODUCT_STRIPE = 48, PRODUCT_PANEL_VECTORS = 32 };

/* With GCC or Clang, a block of C is held in vectors of the compiler's vector extension, which every
 * target has (as several registers where they are narrower than 64 bytes); elsewhere the products
 * are plain loops. The block kernel is also compiled for AVX2 and AVX-512 on x86-64 with glibc,
 * which picks the widest the processor has when the program starts: the program runs on every
 * x86-64. Its results do not depend on the choice, as no operation is fused or reordered. */
#if defined(__GNUC__)
#define VECTORS
#endif
#if defined(__GNUC__) && defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define WIDE_VECTORS __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef WIDE_VECTORS
#define WIDE_VECTORS
#endif

#define real double
#define KERNEL KERNEL_F64
#include "kernels_real.h"
#undef KERNEL
#undef real

#define real float
#define KERNEL KERNEL_F32
#include "kernels_real.h"
#undef KERNEL
#undef real
