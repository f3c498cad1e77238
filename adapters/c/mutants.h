/* §13: the mutants this program can become, selected per call by the request's `mutant` field. */
#ifndef ELMO_MUTANTS_H
#define ELMO_MUTANTS_H

#include <stdbool.h>
#include <stddef.h>

#include "steps.h"

typedef struct {
    const char *id;     /* "s01" .. "s10" (spec/mutants.json), or "x-..." for an extra one */
    const char *title;  /* one line, for the hello answer (§15.4) */
    void (*apply)(Steps *steps); /* replaces the clean steps the defect sits in */
} Mutant;

size_t mutant_count(void);
const Mutant *mutant_at(size_t i);

/* The mutant named by `id` (`len` bytes), or NULL. */
const Mutant *find_mutant(const char *id, size_t len);

#endif
