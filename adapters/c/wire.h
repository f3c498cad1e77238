/* §15.2-§15.3: frames and values of the wire protocol.
 *
 * A frame is "ELMO", the body's length (u32, little-endian) and the body: one value, a map. A
 * value is a one-byte tag and its payload. Decoding checks every length against the bytes left
 * before reading or allocating anything, so a hostile frame cannot make it read out of bounds or
 * allocate memory out of proportion to the frame; arrays are not copied: a decoded array points
 * into the frame's body, and its elements are read with wire_float_at and wire_int_at.
 */
#ifndef ELMO_WIRE_H
#define ELMO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arena.h"

#define WIRE_MAGIC "ELMO"
#define WIRE_MAX_FRAME ((size_t)1 << 30) /* 1 GiB (§15.7) */
#define WIRE_MAX_DEPTH 64                /* values nested deeper are refused, as adapters/wire/codec.py does */
#define WIRE_MAX_VALUES ((size_t)1 << 22) /* values in one frame; bounds the memory of decoding */

/* Array dtypes (§15.3); the digit of the code is the item size. */
typedef enum {
    DT_F8, DT_F4, DT_I8, DT_I4, DT_I2, DT_I1, DT_U8, DT_U4, DT_U2, DT_U1, DT_B1, DT_COUNT
} WireDtype;

typedef struct {
    WireDtype dtype;
    size_t ndim;
    const uint64_t *dims;       /* [ndim] */
    size_t count;               /* the product of dims */
    const unsigned char *data;  /* count items, little-endian, inside the frame's body */
} WireArray;

typedef struct {
    const char *bytes; /* UTF-8, not NUL-terminated */
    size_t len;
} WireText;

typedef enum { W_NULL, W_BOOL, W_INT, W_FLOAT, W_STRING, W_LIST, W_MAP, W_ARRAY } WireKind;

typedef struct WireValue WireValue;
struct WireValue {
    WireKind kind;
    union {
        bool boolean;
        int64_t integer;
        double real;
        WireText text;
        struct {
            WireValue *items;
            size_t count;
        } list;
        struct {
            WireText *keys;
            WireValue *values;
            size_t count;
        } map;
        WireArray array;
    } as;
};

/* --- decoding ---------------------------------------------------------------------------- */

/* The one value of a frame's body; false with a message in `error` when the bytes are not a
 * value of §15.3 or trailing bytes follow it. */
bool wire_decode(Arena *arena, const unsigned char *body, size_t len, WireValue *out, char *error,
                 size_t error_size);

/* The entry of a map named `key`, or NULL. */
const WireValue *wire_map_get(const WireValue *map, const char *key);

bool wire_text_is(WireText text, const char *s);

size_t wire_itemsize(WireDtype dtype);
const char *wire_dtype_code(WireDtype dtype);  /* "f8", ... */
const char *wire_dtype_name(WireDtype dtype);  /* NumPy's name: "float64", ... */
bool wire_is_float_dtype(WireDtype dtype);     /* f8, f4 */
bool wire_is_int_dtype(WireDtype dtype);       /* i*, u*; not b1 */

double wire_float_at(const WireArray *a, size_t i);  /* a float array's element */
void wire_floats(const WireArray *a, double *out);   /* all of a float array's elements */
int64_t wire_int_at(const WireArray *a, size_t i);   /* an integer array's element; u8 values
                                                        above INT64_MAX read as INT64_MAX */

/* --- encoding ---------------------------------------------------------------------------- */

/* A growing body; a failed allocation jumps through the arena (arena.h). */
typedef struct {
    unsigned char *data;
    size_t len, cap;
    Arena *arena;
} WireBuf;

void wire_buf_init(WireBuf *buf, Arena *arena);
void wire_buf_free(WireBuf *buf);

void wire_put_null(WireBuf *buf);
void wire_put_bool(WireBuf *buf, bool value);
void wire_put_int(WireBuf *buf, int64_t value);
void wire_put_float(WireBuf *buf, double value);
void wire_put_string(WireBuf *buf, const char *value);
void wire_put_list(WireBuf *buf, size_t count); /* then `count` values */
void wire_put_map(WireBuf *buf, size_t count);  /* then `count` times wire_put_key and a value */
void wire_put_key(WireBuf *buf, const char *key);
/* A float array (dtype DT_F8 or DT_F4) from doubles; for DT_F4 each is converted to float. */
void wire_put_array(WireBuf *buf, WireDtype dtype, size_t ndim, const size_t *dims, const double *data);

/* --- frames ------------------------------------------------------------------------------ */

/* Write one frame holding `body` and flush; false when the stream fails. */
bool wire_write_frame(FILE *stream, const WireBuf *body);

#endif
