/* The clean steps (steps.h), each defined in the file of its section. */
#include "steps.h"

#include "bilm.h"
#include "loss.h"
#include "probe.h"
#include "scalar_mix.h"
#include "validate.h"

const Steps CLEAN_STEPS = {
    .mix_weights = mix_weights,                         /* §5.1, scalar_mix.c */
    .gamma_factor = gamma_factor,                       /* §5.2, scalar_mix.c */
    .forward_layer_input = forward_layer_input,         /* §3.2, bilm.c */
    .backward_order = backward_order,                   /* §3.3, bilm.c */
    .backward_store = backward_store,                   /* §3.3, bilm.c */
    .backward_state_returned = backward_state_returned, /* §3.4, bilm.c */
    .forward_target = forward_target,                   /* §4.1, loss.c */
    .backward_target = backward_target,                 /* §4.1, loss.c */
    .gradient_step = gradient_step,                     /* §7.3, probe.c */
    .fold_back = fold_back,                             /* §7.4, probe.c */
    .id_checked_at = id_checked_at,                     /* §8 V03, validate.c */
    .gamma_accepted = gamma_accepted,                   /* §8 V14, validate.c */
    .lr_accepted = lr_accepted,                         /* §8 V22, validate.c */
};
