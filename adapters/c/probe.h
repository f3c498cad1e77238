/* §7: the linear probe. */
#ifndef ELMO_PROBE_H
#define ELMO_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "real.h"

/* Softmax regression on standardized features (§7.1, §7.2). */
typedef struct ProbeProblem ProbeProblem;
struct ProbeProblem {
    size_t N, D, C;
    const double *Z;      /* [N, D] standardized features */
    const double *Z_t;    /* [D, N] its transpose */
    const double *Y;      /* [N, C] one-hot labels */
    const double *mu;     /* [D] column means (a constant column's value) */
    const double *sigma;  /* [D] population standard deviations (1 for a constant column) */
    double l2, lr;        /* in the call's dtype */
};

/* §7: standardize, `steps` gradient-descent steps from zero, fold back: W [D, C], b [C].
 * X [N, D] and labels [N] are validated (§8); l2 and lr are the arguments as given. */
void fit_linear_probe(const Ctx *ctx, size_t N, size_t D, size_t C, const double *X, const int64_t *labels,
                      double l2, uint64_t steps, double lr, double *W, double *b);

/* §7.5: the fraction of rows whose argmax of X W + b (lowest index on ties) is the label. */
double probe_accuracy(const Ctx *ctx, size_t N, size_t D, size_t C, const double *W, const double *b,
                      const double *X, const int64_t *labels);

/* The clean steps of §7 (steps.h). */
void gradient_step(const Ctx *ctx, const ProbeProblem *problem, double *V, double *a);
void fold_back(const Ctx *ctx, const ProbeProblem *problem, const double *V, const double *a, double *W, double *b);

#endif
