/* §4: the biLM loss, and §6.1: its gradient. */
#ifndef ELMO_LOSS_H
#define ELMO_LOSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bilm.h"

/* §4.2: (L_fwd + L_bwd) / 2. The batch has at least one target (§4.3, checked by validate.c). */
double bilm_loss(const Ctx *ctx, const BiLMPass *pass);

/* §6.1: the gradient of bilm_loss with respect to every parameter, into `grads` (zero on entry). */
void bilm_loss_grad(const Ctx *ctx, const BiLMPass *pass, BiLMGrads *grads);

/* The clean steps of §4.1 (steps.h). */
bool forward_target(const int64_t *row_ids, size_t t, size_t length, size_t *target);
bool backward_target(const int64_t *row_ids, size_t t, size_t length, size_t *target);

#endif
