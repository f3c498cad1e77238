/* Memory of one request (see arena.h). */
#include "arena.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct ArenaBlock {
    ArenaBlock *next;
};

/* The block header, rounded up so that the memory after it is aligned for any type. */
static size_t header_size(void)
{
    size_t align = _Alignof(max_align_t);
    return (sizeof(ArenaBlock) + align - 1) / align * align;
}

void arena_init(Arena *arena, jmp_buf *on_failure)
{
    arena->blocks = NULL;
    arena->on_failure = on_failure;
    arena->failure = NULL;
}

_Noreturn void arena_fail(Arena *arena, const char *why)
{
    arena->failure = why;
    longjmp(*arena->on_failure, 1);
}

size_t arena_mul(Arena *arena, size_t a, size_t b)
{
    if (a != 0 && b > SIZE_MAX / a) {
        arena_fail(arena, "an array size overflows");
    }
    return a * b;
}

/* A block of `count` items of `size` bytes, zeroed or not, linked into the arena. */
static void *arena_block(Arena *arena, size_t count, size_t size, bool zeroed)
{
    size_t bytes = arena_mul(arena, count, size);
    if (bytes > SIZE_MAX - header_size()) {
        arena_fail(arena, "an array size overflows");
    }
    /* calloc zeroes the memory: all-zero bytes are +0.0 for IEEE 754 doubles. */
    ArenaBlock *block = zeroed ? calloc(1, header_size() + bytes) : malloc(header_size() + bytes);
    if (block == NULL) {
        arena_fail(arena, "out of memory");
    }
    block->next = arena->blocks;
    arena->blocks = block;
    return (unsigned char *)block + header_size();
}

void *arena_alloc(Arena *arena, size_t count, size_t size)
{
    return arena_block(arena, count, size, true);
}

void *arena_alloc_uninit(Arena *arena, size_t count, size_t size)
{
    return arena_block(arena, count, size, false);
}

double *arena_doubles(Arena *arena, size_t count)
{
    return arena_alloc(arena, count, sizeof(double));
}

void arena_free(Arena *arena)
{
    while (arena->blocks != NULL) {
        ArenaBlock *next = arena->blocks->next;
        free(arena->blocks);
        arena->blocks = next;
    }
}
