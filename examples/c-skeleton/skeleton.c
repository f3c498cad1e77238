/* A skeleton of an implementation in C that speaks the wire protocol (spec/elmo.md §15).
 *
 * It reads frames on stdin and answers on stdout: the handshake (§15.4), and calls (§15.5).
 * It implements ScalarMix (§5.2) in float64 and declares the capability "scalar_mix", so the
 * suite checks ScalarMix only and reports the biLM and the probe as not implemented; every other
 * function answers with an error of kind "NotImplemented". Grow it one protocol function at a
 * time; adapters/c/ is a complete implementation laid out the same way.
 *
 *   cc -std=c11 -O2 -Wall -Wextra -o skeleton skeleton.c -lm
 *   python -m pytest conformance --impl 'cmd:./skeleton'
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- values (§15.3): a tree read from one frame's body ---------------------------------- */

typedef struct Value Value;
struct Value {
    char tag;            /* n t f i d s l m a */
    int64_t integer;     /* i */
    double real;         /* d */
    const char *text;    /* s: not NUL-terminated */
    uint32_t length;     /* s: bytes; l, m: items */
    Value *items;        /* l, m: the items */
    const char **keys;   /* m: the keys (not NUL-terminated) */
    uint32_t *key_lengths;
    char dtype[3];       /* a: "f8", "i8", ... */
    uint8_t ndim;        /* a */
    uint64_t shape[8];   /* a */
    const uint8_t *data; /* a: little-endian elements, C order */
};

typedef struct {
    const uint8_t *at, *end;
} Reader;

static int take(Reader *r, size_t n, const uint8_t **out) {
    if ((size_t)(r->end - r->at) < n) return 0;
    *out = r->at;
    r->at += n;
    return 1;
}

static int take_u32(Reader *r, uint32_t *out) {
    const uint8_t *p;
    if (!take(r, 4, &p)) return 0;
    *out = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return 1;
}

static size_t item_size(const char *dtype) { return (size_t)(dtype[1] - '0'); }

/* The dtypes of §15.3: f8 f4 i8 i4 i2 i1 u8 u4 u2 u1 b1. */
static int known_dtype(const char *dtype) {
    static const char *const known[] = {"f8", "f4", "i8", "i4", "i2", "i1", "u8", "u4", "u2", "u1", "b1"};
    for (size_t k = 0; k < sizeof known / sizeof *known; k++)
        if (dtype[0] == known[k][0] && dtype[1] == known[k][1]) return 1;
    return 0;
}

/* Strings and keys are UTF-8 (§15.3): no overlong form, no surrogate, nothing above U+10FFFF. */
static int utf8(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        size_t more = 9; /* continuation bytes after the lead; 9: not a lead byte */
        if (c < 0x80) more = 0;
        else if (c >= 0xC2 && c <= 0xDF) more = 1;
        else if ((c & 0xF0) == 0xE0) more = 2;
        else if (c >= 0xF0 && c <= 0xF4) more = 3;
        if (more == 9 || more > n - i - 1) return 0;
        uint32_t cp = more ? c & (0x3F >> more) : c;
        for (size_t k = 1; k <= more; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        if (more == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0; /* overlong, surrogate */
        if (more == 3 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;                 /* overlong, too large */
        i += more + 1;
    }
    return 1;
}

static int read_value(Reader *r, Value *v, int depth) {
    const uint8_t *p;
    memset(v, 0, sizeof *v);
    if (depth > 64 || !take(r, 1, &p)) return 0;
    v->tag = (char)p[0];
    switch (v->tag) {
    case 'n': case 't': case 'f': return 1;
    case 'i': case 'd':
        if (!take(r, 8, &p)) return 0;
        if (v->tag == 'i') memcpy(&v->integer, p, 8); else memcpy(&v->real, p, 8); /* little-endian host */
        return 1;
    case 's':
        if (!take_u32(r, &v->length) || !take(r, v->length, &p) || !utf8(p, v->length)) return 0;
        v->text = (const char *)p;
        return 1;
    case 'l': case 'm':
        if (!take_u32(r, &v->length) || v->length > (size_t)(r->end - r->at)) return 0;
        v->items = calloc(v->length ? v->length : 1, sizeof *v->items);
        v->keys = calloc(v->length ? v->length : 1, sizeof *v->keys);
        v->key_lengths = calloc(v->length ? v->length : 1, sizeof *v->key_lengths);
        if (!v->items || !v->keys || !v->key_lengths) return 0;
        for (uint32_t k = 0; k < v->length; k++) {
            if (v->tag == 'm') {
                uint32_t n = 0;
                if (!take_u32(r, &n) || !take(r, n, &p) || !utf8(p, n)) return 0;
                v->key_lengths[k] = n, v->keys[k] = (const char *)p;
                for (uint32_t j = 0; j < k; j++) /* keys are unique */
                    if (v->key_lengths[j] == n && memcmp(v->keys[j], p, n) == 0) return 0;
            }
            if (!read_value(r, &v->items[k], depth + 1)) return 0;
        }
        return 1;
    case 'a': {
        uint64_t count = 1;
        if (!take(r, 2, &p)) return 0;
        v->dtype[0] = (char)p[0], v->dtype[1] = (char)p[1];
        if (!known_dtype(v->dtype) || !take(r, 1, &p) || p[0] > 8) return 0;
        v->ndim = p[0];
        for (int k = 0; k < v->ndim; k++) {
            if (!take(r, 8, &p)) return 0;
            memcpy(&v->shape[k], p, 8);
            if (v->shape[k] && count > UINT64_MAX / v->shape[k]) return 0;
            count *= v->shape[k];
        }
        if (count > (uint64_t)(r->end - r->at) / item_size(v->dtype)) return 0;
        if (!take(r, (size_t)count * item_size(v->dtype), &v->data)) return 0;
        for (uint64_t i = 0; v->dtype[0] == 'b' && i < count; i++)
            if (v->data[i] > 1) return 0; /* a bool is 0 or 1 */
        return 1;
    }
    default: return 0;
    }
}

static const Value *get(const Value *map, const char *key) {
    for (uint32_t k = 0; map->tag == 'm' && k < map->length; k++)
        if (map->key_lengths[k] == strlen(key) && memcmp(map->keys[k], key, map->key_lengths[k]) == 0)
            return &map->items[k];
    return NULL;
}

static int is(const Value *v, const char *text) {
    return v && v->tag == 's' && v->length == strlen(text) && memcmp(v->text, text, v->length) == 0;
}

/* ---- writing a frame (§15.2): a growing buffer ------------------------------------------ */

typedef struct {
    uint8_t *bytes;
    size_t size, capacity;
} Out;

static void put(Out *o, const void *data, size_t n) {
    if (o->size + n > o->capacity) {
        o->capacity = 2 * (o->size + n);
        o->bytes = realloc(o->bytes, o->capacity);
        if (!o->bytes) exit(70);
    }
    memcpy(o->bytes + o->size, data, n);
    o->size += n;
}
static void put_u32(Out *o, uint32_t n) { put(o, &n, 4); }
static void put_tag(Out *o, char tag) { put(o, &tag, 1); }
static void put_key(Out *o, const char *key) { put_u32(o, (uint32_t)strlen(key)), put(o, key, strlen(key)); }
static void put_text(Out *o, const char *text) { put_tag(o, 's'), put_key(o, text); }
static void put_map(Out *o, uint32_t n) { put_tag(o, 'm'), put_u32(o, n); }
static void put_int(Out *o, int64_t n) { put_tag(o, 'i'), put(o, &n, 8); }

static void send_frame(Out *o) {
    uint32_t n = (uint32_t)o->size;
    fwrite("ELMO", 1, 4, stdout), fwrite(&n, 4, 1, stdout), fwrite(o->bytes, 1, o->size, stdout);
    fflush(stdout);
    o->size = 0;
}

static void send_error(Out *o, const Value *id, const char *kind, const char *message) {
    put_map(o, 4);
    put_key(o, "type"), put_text(o, "error");
    put_key(o, "id");
    if (id && id->tag == 'i') put_int(o, id->integer); else put_tag(o, 'n');
    put_key(o, "kind"), put_text(o, kind);
    put_key(o, "message"), put_text(o, message);
    send_frame(o);
}

/* ---- the protocol ----------------------------------------------------------------------- */

static void hello(Out *o) {
    put_map(o, 5);
    put_key(o, "type"), put_text(o, "hello");
    put_key(o, "protocol"), put_text(o, "1.0");
    put_key(o, "name"), put_text(o, "skeleton");
    put_key(o, "capabilities"), put_tag(o, 'l'), put_u32(o, 2), put_text(o, "float64"), put_text(o, "scalar_mix");
    put_key(o, "mutants"), put_tag(o, 'l'), put_u32(o, 0);
    send_frame(o);
}

static int is_f8_array(const Value *v) { return v && v->tag == 'a' && strcmp(v->dtype, "f8") == 0; }

/* s and gamma of the other float dtype are converted, not refused (§8): float32 is read as double. */
static int is_float_array(const Value *v) { return is_f8_array(v) || (v && v->tag == 'a' && strcmp(v->dtype, "f4") == 0); }

static uint64_t element_count(const Value *v) {
    uint64_t n = 1;
    for (int k = 0; k < v->ndim; k++) n *= v->shape[k];
    return n;
}

static double element(const Value *v, uint64_t i) {
    if (v->dtype[1] == '4') {
        float x;
        memcpy(&x, v->data + 4 * i, 4);
        return x;
    }
    double x;
    memcpy(&x, v->data + 8 * i, 8);
    return x;
}

/* §8 V12-V14: NULL when the inputs are good, else the message, which names the argument. */
static const char *check_mix(const Value *s, const Value *gamma, const Value *layers) {
    if (!layers || layers->tag != 'l' || layers->length == 0) return "layers: expected a non-empty list of float arrays";
    const Value *first = &layers->items[0];
    for (uint32_t k = 0; k < layers->length; k++) {
        const Value *layer = &layers->items[k];
        if (!is_f8_array(layer) || layer->ndim != first->ndim ||
            memcmp(layer->shape, first->shape, sizeof(uint64_t) * first->ndim) != 0)
            return "layers: expected float64 arrays of one shape (this skeleton computes in float64 only)";
    }
    if (!is_float_array(s) || s->ndim != 1 || s->shape[0] != layers->length)
        return "s: expected a 1-D float array with one weight per layer";
    for (uint32_t k = 0; k < layers->length; k++)
        if (!isfinite(element(s, k))) return "s: expected finite values";
    if (!is_float_array(gamma) || gamma->ndim != 1 || gamma->shape[0] != 1 || !isfinite(element(gamma, 0)))
        return "gamma: expected a finite float array of shape [1]";
    return NULL;
}

/* §5.1-§5.2: gamma * sum_k softmax(s)_k R^k, the softmax shifted by max(s). */
static void scalar_mix(Out *o, const Value *id, const Value *args) {
    const Value *s = get(args, "s"), *gamma = get(args, "gamma"), *layers = get(args, "layers");
    const char *problem = check_mix(s, gamma, layers);
    if (problem) {
        send_error(o, id, "ValueError", problem);
        return;
    }
    const Value *first = &layers->items[0];
    uint64_t n = element_count(first);
    double *w = calloc(layers->length, sizeof *w), *mix = calloc(n ? n : 1, sizeof *mix);
    if (!w || !mix) exit(70);
    double top = -INFINITY, total = 0.0;
    for (uint32_t k = 0; k < layers->length; k++) top = fmax(top, element(s, k));
    for (uint32_t k = 0; k < layers->length; k++) total += (w[k] = exp(element(s, k) - top));
    for (uint64_t i = 0; i < n; i++) {
        double sum = 0.0;
        for (uint32_t k = 0; k < layers->length; k++) sum += (w[k] / total) * element(&layers->items[k], i);
        mix[i] = element(gamma, 0) * sum;
    }
    put_map(o, 3);
    put_key(o, "type"), put_text(o, "result");
    put_key(o, "id"), put_int(o, id->integer);
    put_key(o, "value"), put_tag(o, 'a'), put(o, "f8", 2), put(o, &first->ndim, 1);
    put(o, first->shape, 8 * (size_t)first->ndim), put(o, mix, 8 * (size_t)n);
    send_frame(o);
    free(w), free(mix);
}

static void free_value(Value *v) {
    for (uint32_t k = 0; (v->tag == 'l' || v->tag == 'm') && k < v->length; k++) free_value(&v->items[k]);
    free(v->items), free(v->keys), free(v->key_lengths);
}

/* §15.5-§15.6: one request, read from a frame's body. */
static void answer(Out *o, const Value *request) {
    const Value *id = get(request, "id"), *function = get(request, "function"), *mutant = get(request, "mutant");
    const Value *args = get(request, "args");
    if (is(get(request, "type"), "hello")) {
        hello(o);
    } else if (!is(get(request, "type"), "call")) {
        send_error(o, id, "ProtocolError", "expected a message of type 'hello' or 'call'");
    } else if (!id || id->tag != 'i') {
        send_error(o, NULL, "ProtocolError", "a call needs an integer 'id'");
    } else if (!function || function->tag != 's') {
        send_error(o, id, "ProtocolError", "a call needs a string 'function'");
    } else if (!args || args->tag != 'm') {
        send_error(o, id, "ProtocolError", "a call needs a map 'args'");
    } else if (mutant && mutant->tag != 'n') {
        send_error(o, id, "UnknownMutant", "this program declares no mutants");
    } else if (!is(function, "scalar_mix")) {
        send_error(o, id, "NotImplemented", "only scalar_mix is written so far");
    } else if (!get(args, "s") || !get(args, "gamma") || !get(args, "layers")) {
        send_error(o, id, "ProtocolError", "scalar_mix: 'args' needs s, gamma and layers");
    } else {
        scalar_mix(o, id, args);
    }
}

int main(void) {
    Out out = {0};
    uint8_t header[8];
    size_t got;
    while ((got = fread(header, 1, 8, stdin)) == 8) {
        uint32_t n;
        memcpy(&n, header + 4, 4);
        if (memcmp(header, "ELMO", 4) != 0) { /* no way to find the next frame: answer, then exit */
            send_error(&out, NULL, "ProtocolError", "expected a frame starting with 'ELMO'");
            return 1;
        }
        uint8_t *body = malloc(n ? n : 1);
        if (n > (1u << 30) || !body || fread(body, 1, n, stdin) != n) return 1;
        Reader reader = {body, body + n};
        Value request;
        if (!read_value(&reader, &request, 0) || reader.at != reader.end || request.tag != 'm') {
            send_error(&out, NULL, "ProtocolError", "cannot read the request: not exactly one map (§15.2, §15.3)");
        } else {
            answer(&out, &request);
        }
        free_value(&request);
        free(body);
    }
    return got == 0 ? 0 : 1; /* end of stdin between frames: exit 0 (§15.1) */
}
