/* §15.2-§15.3: frames and values of the wire protocol (see wire.h). */
#include "wire.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static const struct {
    const char *code;
    const char *name;
    size_t itemsize;
} DTYPES[DT_COUNT] = {
    [DT_F8] = {"f8", "float64", 8}, [DT_F4] = {"f4", "float32", 4}, [DT_I8] = {"i8", "int64", 8},
    [DT_I4] = {"i4", "int32", 4},   [DT_I2] = {"i2", "int16", 2},   [DT_I1] = {"i1", "int8", 1},
    [DT_U8] = {"u8", "uint64", 8},  [DT_U4] = {"u4", "uint32", 4},  [DT_U2] = {"u2", "uint16", 2},
    [DT_U1] = {"u1", "uint8", 1},   [DT_B1] = {"b1", "bool", 1},
};

size_t wire_itemsize(WireDtype dtype) { return DTYPES[dtype].itemsize; }
const char *wire_dtype_code(WireDtype dtype) { return DTYPES[dtype].code; }
const char *wire_dtype_name(WireDtype dtype) { return DTYPES[dtype].name; }
bool wire_is_float_dtype(WireDtype dtype) { return dtype == DT_F8 || dtype == DT_F4; }

bool wire_is_int_dtype(WireDtype dtype)
{
    return dtype != DT_F8 && dtype != DT_F4 && dtype != DT_B1;
}

/* --- little-endian reading ---------------------------------------------------------------- */

static uint64_t read_le(const unsigned char *p, size_t n)
{
    uint64_t value = 0;
    for (size_t i = 0; i < n; i++) {
        value |= (uint64_t)p[i] << (8 * i);
    }
    return value;
}

double wire_float_at(const WireArray *a, size_t i)
{
    if (a->dtype == DT_F4) {
        uint32_t bits = (uint32_t)read_le(a->data + 4 * i, 4);
        float value;
        memcpy(&value, &bits, sizeof value);
        return value;
    }
    uint64_t bits = read_le(a->data + 8 * i, 8);
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

void wire_floats(const WireArray *a, double *out)
{
    /* wire_float_at for every element; on a little-endian host a float32 array's bytes are its
     * floats as they are, read as plain loads. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (a->dtype == DT_F4) {
        for (size_t i = 0; i < a->count; i++) {
            float value;
            memcpy(&value, a->data + 4 * i, sizeof value);
            out[i] = value;
        }
        return;
    }
#endif
    for (size_t i = 0; i < a->count; i++) {
        out[i] = wire_float_at(a, i);
    }
}

int64_t wire_int_at(const WireArray *a, size_t i)
{
    size_t size = DTYPES[a->dtype].itemsize;
    uint64_t bits = read_le(a->data + size * i, size);
    switch (a->dtype) {
    case DT_I8: return (int64_t)bits;
    case DT_I4: return (int32_t)(uint32_t)bits;
    case DT_I2: return (int16_t)(uint16_t)bits;
    case DT_I1: return (int8_t)(uint8_t)bits;
    case DT_U8: return bits > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)bits;
    default: return (int64_t)bits; /* u4, u2, u1, b1 */
    }
}

/* --- decoding ------------------------------------------------------------------------------ */

typedef struct {
    const unsigned char *data;
    size_t len, at;
    Arena *arena;
    size_t values; /* decoded so far, against WIRE_MAX_VALUES */
    char *error;
    size_t error_size;
} Reader;

static bool bad(Reader *r, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(r->error, r->error_size, fmt, args);
    va_end(args);
    return false;
}

/* The next n bytes, or NULL (with the error set) when fewer are left. */
static const unsigned char *take(Reader *r, size_t n, const char *what)
{
    if (n > r->len - r->at) {
        bad(r, "the body ends inside %s (byte %zu of %zu)", what, r->at, r->len);
        return NULL;
    }
    const unsigned char *p = r->data + r->at;
    r->at += n;
    return p;
}

static bool take_u32(Reader *r, const char *what, size_t *out)
{
    const unsigned char *p = take(r, 4, what);
    if (p == NULL) {
        return false;
    }
    *out = (size_t)read_le(p, 4);
    return true;
}

/* Strict UTF-8, as Python decodes it: no overlong forms, no surrogates, nothing above U+10FFFF. */
static bool valid_utf8(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        uint32_t cp, min;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { n = 1; cp = c & 0x1Fu; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { n = 2; cp = c & 0x0Fu; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { n = 3; cp = c & 0x07u; min = 0x10000; }
        else { return false; }
        if (n > len - i - 1) {
            return false;
        }
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        i += n + 1;
    }
    return true;
}

static bool take_text(Reader *r, const char *what, WireText *out)
{
    size_t len;
    if (!take_u32(r, what, &len)) {
        return false;
    }
    size_t start = r->at;
    const unsigned char *p = take(r, len, what);
    if (p == NULL) {
        return false;
    }
    if (!valid_utf8(p, len)) {
        return bad(r, "%s at byte %zu is not UTF-8", what, start);
    }
    out->bytes = (const char *)p;
    out->len = len;
    return true;
}

static bool count_values(Reader *r, size_t n)
{
    if (n > WIRE_MAX_VALUES - r->values) {
        return bad(r, "a frame holding more than %zu values", WIRE_MAX_VALUES);
    }
    r->values += n;
    return true;
}

static int compare_texts(const void *a, const void *b)
{
    const WireText *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n == 0 ? 0 : memcmp(x->bytes, y->bytes, n);
    if (c != 0) {
        return c;
    }
    return (x->len > y->len) - (x->len < y->len);
}

static bool decode_value(Reader *r, WireValue *out, int depth);

static bool decode_array(Reader *r, WireValue *out, size_t where)
{
    const unsigned char *code = take(r, 2, "an array's dtype");
    if (code == NULL) {
        return false;
    }
    WireDtype dtype = DT_COUNT;
    for (int i = 0; i < DT_COUNT; i++) {
        if (memcmp(code, DTYPES[i].code, 2) == 0) {
            dtype = (WireDtype)i;
        }
    }
    if (dtype == DT_COUNT) {
        return bad(r, "unknown array dtype at byte %zu (expected one of f8 f4 i8 i4 i2 i1 u8 u4 u2 u1 b1)", where);
    }
    const unsigned char *ndim_byte = take(r, 1, "an array's number of dimensions");
    if (ndim_byte == NULL) {
        return false;
    }
    size_t ndim = *ndim_byte;
    const unsigned char *raw_dims = take(r, 8 * ndim, "an array's shape");
    if (raw_dims == NULL) {
        return false;
    }
    uint64_t *dims = arena_alloc(r->arena, ndim, sizeof(uint64_t));
    bool empty = false;
    for (size_t i = 0; i < ndim; i++) {
        dims[i] = read_le(raw_dims + 8 * i, 8);
        empty = empty || dims[i] == 0;
    }
    /* The element count, checked against the bytes left before anything is multiplied out. */
    size_t itemsize = DTYPES[dtype].itemsize;
    size_t room = (r->len - r->at) / itemsize;
    size_t count = empty ? 0 : 1;
    for (size_t i = 0; i < ndim && !empty; i++) {
        if (dims[i] > room / count) {
            return bad(r, "the body ends inside the data of a %s array at byte %zu", DTYPES[dtype].code, where);
        }
        count *= (size_t)dims[i];
    }
    const unsigned char *data = take(r, count * itemsize, "an array's data");
    if (data == NULL) {
        return false;
    }
    if (dtype == DT_B1) {
        for (size_t i = 0; i < count; i++) {
            if (data[i] > 1) {
                return bad(r, "a b1 array at byte %zu holds bytes other than 0 and 1", where);
            }
        }
    }
    out->kind = W_ARRAY;
    out->as.array = (WireArray){dtype, ndim, dims, count, data};
    return true;
}

static bool decode_list(Reader *r, WireValue *out, int depth)
{
    size_t count;
    if (!take_u32(r, "a list's length", &count)) {
        return false;
    }
    if (count > r->len - r->at) { /* every item takes at least one byte */
        return bad(r, "a list of %zu items in the %zu bytes left", count, r->len - r->at);
    }
    if (!count_values(r, count)) {
        return false;
    }
    WireValue *items = arena_alloc(r->arena, count, sizeof(WireValue));
    for (size_t i = 0; i < count; i++) {
        if (!decode_value(r, &items[i], depth + 1)) {
            return false;
        }
    }
    out->kind = W_LIST;
    out->as.list.items = items;
    out->as.list.count = count;
    return true;
}

static bool decode_map(Reader *r, WireValue *out, int depth)
{
    size_t count;
    if (!take_u32(r, "a map's length", &count)) {
        return false;
    }
    if (count > (r->len - r->at) / 5) { /* every entry takes at least 5 bytes */
        return bad(r, "a map of %zu entries in the %zu bytes left", count, r->len - r->at);
    }
    if (!count_values(r, count)) {
        return false;
    }
    WireText *keys = arena_alloc(r->arena, count, sizeof(WireText));
    WireValue *values = arena_alloc(r->arena, count, sizeof(WireValue));
    for (size_t i = 0; i < count; i++) {
        if (!take_text(r, "a map key", &keys[i]) || !decode_value(r, &values[i], depth + 1)) {
            return false;
        }
    }
    /* Keys are unique (§15.3): sort a copy and compare neighbours. */
    if (count > 1) {
        WireText *sorted = arena_alloc(r->arena, count, sizeof(WireText));
        memcpy(sorted, keys, count * sizeof(WireText));
        qsort(sorted, count, sizeof(WireText), compare_texts);
        for (size_t i = 1; i < count; i++) {
            if (compare_texts(&sorted[i - 1], &sorted[i]) == 0) {
                char quoted[256];
                quote_text(quoted, sizeof quoted, sorted[i].bytes, sorted[i].len, 100);
                return bad(r, "the map key '%s' appears twice", quoted);
            }
        }
    }
    out->kind = W_MAP;
    out->as.map.keys = keys;
    out->as.map.values = values;
    out->as.map.count = count;
    return true;
}

static bool decode_value(Reader *r, WireValue *out, int depth)
{
    if (depth > WIRE_MAX_DEPTH) {
        return bad(r, "values are nested more than %d deep", WIRE_MAX_DEPTH);
    }
    size_t where = r->at;
    const unsigned char *tag = take(r, 1, "a tag");
    if (tag == NULL) {
        return false;
    }
    const unsigned char *p;
    switch (*tag) {
    case 'n':
        out->kind = W_NULL;
        return true;
    case 't':
    case 'f':
        out->kind = W_BOOL;
        out->as.boolean = *tag == 't';
        return true;
    case 'i':
        if ((p = take(r, 8, "an integer")) == NULL) {
            return false;
        }
        out->kind = W_INT;
        out->as.integer = (int64_t)read_le(p, 8);
        return true;
    case 'd': {
        if ((p = take(r, 8, "a float")) == NULL) {
            return false;
        }
        uint64_t bits = read_le(p, 8);
        out->kind = W_FLOAT;
        memcpy(&out->as.real, &bits, sizeof bits);
        return true;
    }
    case 's':
        out->kind = W_STRING;
        return take_text(r, "a string", &out->as.text);
    case 'l':
        return decode_list(r, out, depth);
    case 'm':
        return decode_map(r, out, depth);
    case 'a':
        return decode_array(r, out, where);
    default:
        return bad(r, "unknown tag 0x%02x at byte %zu (expected one of n t f i d s l m a)", *tag, where);
    }
}

bool wire_decode(Arena *arena, const unsigned char *body, size_t len, WireValue *out, char *error,
                 size_t error_size)
{
    Reader r = {body, len, 0, arena, 1, error, error_size};
    if (!decode_value(&r, out, 0)) {
        return false;
    }
    if (r.at != len) {
        return bad(&r, "%zu bytes follow the value in the body", len - r.at);
    }
    return true;
}

bool wire_text_is(WireText text, const char *s)
{
    size_t n = strlen(s);
    return text.len == n && (n == 0 || memcmp(text.bytes, s, n) == 0);
}

const WireValue *wire_map_get(const WireValue *map, const char *key)
{
    if (map == NULL || map->kind != W_MAP) {
        return NULL;
    }
    for (size_t i = 0; i < map->as.map.count; i++) {
        if (wire_text_is(map->as.map.keys[i], key)) {
            return &map->as.map.values[i];
        }
    }
    return NULL;
}

/* --- encoding ------------------------------------------------------------------------------ */

void wire_buf_init(WireBuf *buf, Arena *arena)
{
    buf->data = NULL;
    buf->len = buf->cap = 0;
    buf->arena = arena;
}

void wire_buf_free(WireBuf *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

/* Room for n more bytes; the body grows by doubling. */
static unsigned char *reserve(WireBuf *buf, size_t n)
{
    if (n > SIZE_MAX / 2 - buf->len) {
        arena_fail(buf->arena, "a result too large to encode");
    }
    if (buf->len + n > buf->cap) {
        size_t cap = buf->cap < 4096 ? 4096 : buf->cap;
        while (cap < buf->len + n) {
            cap *= 2;
        }
        unsigned char *data = realloc(buf->data, cap);
        if (data == NULL) {
            arena_fail(buf->arena, "out of memory while encoding the result");
        }
        buf->data = data;
        buf->cap = cap;
    }
    unsigned char *p = buf->data + buf->len;
    buf->len += n;
    return p;
}

static void write_le(unsigned char *p, uint64_t value, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (unsigned char)(value >> (8 * i));
    }
}

static void put_tag(WireBuf *buf, char tag) { *reserve(buf, 1) = (unsigned char)tag; }

static void put_u32(WireBuf *buf, size_t value)
{
    if (value > UINT32_MAX) {
        arena_fail(buf->arena, "a count larger than a u32 in the result");
    }
    write_le(reserve(buf, 4), value, 4);
}

static void put_text(WireBuf *buf, const char *s)
{
    size_t n = strlen(s);
    put_u32(buf, n);
    memcpy(reserve(buf, n), s, n);
}

void wire_put_null(WireBuf *buf) { put_tag(buf, 'n'); }
void wire_put_bool(WireBuf *buf, bool value) { put_tag(buf, value ? 't' : 'f'); }

void wire_put_int(WireBuf *buf, int64_t value)
{
    put_tag(buf, 'i');
    write_le(reserve(buf, 8), (uint64_t)value, 8);
}

void wire_put_float(WireBuf *buf, double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    put_tag(buf, 'd');
    write_le(reserve(buf, 8), bits, 8);
}

void wire_put_string(WireBuf *buf, const char *value)
{
    put_tag(buf, 's');
    put_text(buf, value);
}

void wire_put_list(WireBuf *buf, size_t count)
{
    put_tag(buf, 'l');
    put_u32(buf, count);
}

void wire_put_map(WireBuf *buf, size_t count)
{
    put_tag(buf, 'm');
    put_u32(buf, count);
}

void wire_put_key(WireBuf *buf, const char *key) { put_text(buf, key); }

void wire_put_array(WireBuf *buf, WireDtype dtype, size_t ndim, const size_t *dims, const double *data)
{
    size_t count = 1;
    put_tag(buf, 'a');
    memcpy(reserve(buf, 2), DTYPES[dtype].code, 2);
    *reserve(buf, 1) = (unsigned char)ndim;
    for (size_t i = 0; i < ndim; i++) {
        write_le(reserve(buf, 8), dims[i], 8);
        count = arena_mul(buf->arena, count, dims[i]);
    }
    size_t itemsize = DTYPES[dtype].itemsize;
    unsigned char *p = reserve(buf, arena_mul(buf->arena, count, itemsize));
    for (size_t i = 0; i < count; i++) {
        if (dtype == DT_F4) {
            float value = (float)data[i];
            uint32_t bits;
            memcpy(&bits, &value, sizeof bits);
            write_le(p + 4 * i, bits, 4);
        } else {
            uint64_t bits;
            memcpy(&bits, &data[i], sizeof bits);
            write_le(p + 8 * i, bits, 8);
        }
    }
}

/* --- frames -------------------------------------------------------------------------------- */

bool wire_write_frame(FILE *stream, const WireBuf *body)
{
    unsigned char header[8];
    memcpy(header, WIRE_MAGIC, 4);
    write_le(header + 4, body->len, 4);
    return fwrite(header, 1, sizeof header, stream) == sizeof header &&
           (body->len == 0 || fwrite(body->data, 1, body->len, stream) == body->len) && fflush(stream) == 0;
}
