/* Memory of one request: every allocation made while answering it, freed at once.
 *
 * A request allocates its decoded values (wire.c), its converted inputs and its intermediate
 * arrays from one Arena. When an allocation fails, or a size computation overflows, the arena
 * jumps back to the request loop (main.c), which answers an error and frees the arena: so no
 * caller checks for NULL, and no partial result is ever returned (§1.3).
 */
#ifndef ELMO_ARENA_H
#define ELMO_ARENA_H

#include <setjmp.h>
#include <stddef.h>

typedef struct ArenaBlock ArenaBlock;

typedef struct {
    ArenaBlock *blocks;    /* every allocation, newest first */
    jmp_buf *on_failure;   /* where a failed allocation jumps to */
    const char *failure;   /* why it jumped, for the error message */
} Arena;

void arena_init(Arena *arena, jmp_buf *on_failure);

/* `count` zeroed items of `size` bytes, suitably aligned; never NULL (see above). */
void *arena_alloc(Arena *arena, size_t count, size_t size);

/* The same, not zeroed: for an array that is written in full before it is read (a product's
 * result, the logits), so that its room is not cleared for nothing. */
void *arena_alloc_uninit(Arena *arena, size_t count, size_t size);

/* `count` doubles, all +0.0. */
double *arena_doubles(Arena *arena, size_t count);

/* a * b, or a jump to on_failure when the product does not fit in size_t. */
size_t arena_mul(Arena *arena, size_t a, size_t b);

_Noreturn void arena_fail(Arena *arena, const char *why);

void arena_free(Arena *arena);

#endif
