/* §8: input validation (see validate.h). The checks follow reference/validate.py, in its order,
 * with its messages. */
#include "validate.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steps.h"

enum { DESCRIPTION = 160 };

/* --- the clean validation steps (steps.h) ---------------------------------------------------- */

/* V03: ids are checked at every position, padded positions included. */
bool id_checked_at(size_t t, size_t length)
{
    (void)t;
    (void)length;
    return true;
}

/* V14: γ must be finite. */
bool gamma_accepted(double gamma)
{
    return isfinite(gamma);
}

/* V22: lr must be a finite number > 0. */
bool lr_accepted(double lr)
{
    return isfinite(lr) && lr > 0;
}

/* --- descriptions and conversions ------------------------------------------------------------ */

/* "[3, 4]" */
static void shape_text(const WireArray *a, char *out, size_t size)
{
    size_t at = (size_t)snprintf(out, size, "[");
    for (size_t i = 0; i < a->ndim && at < size; i++) {
        at += (size_t)snprintf(out + at, size - at, "%s%" PRIu64, i ? ", " : "", a->dims[i]);
    }
    if (at < size) {
        snprintf(out + at, size - at, "]");
    }
}

/* What a value is, for a message: "an array of dtype int64 and shape [3, 4]", "a list", ... */
static const char *describe(const WireValue *v, char *out, size_t size)
{
    char shape[96];
    switch (v->kind) {
    case W_NULL: snprintf(out, size, "None"); break;
    case W_BOOL: snprintf(out, size, "a bool (%s)", v->as.boolean ? "True" : "False"); break;
    case W_INT: snprintf(out, size, "an int (%" PRId64 ")", v->as.integer); break;
    case W_FLOAT: snprintf(out, size, "a float (%.17g)", v->as.real); break;
    case W_STRING: snprintf(out, size, "a str"); break;
    case W_LIST: snprintf(out, size, "a list of %zu items", v->as.list.count); break;
    case W_MAP: snprintf(out, size, "a dict"); break;
    case W_ARRAY:
        shape_text(&v->as.array, shape, sizeof shape);
        snprintf(out, size, "an array of dtype %s and shape %s", wire_dtype_name(v->as.array.dtype), shape);
        break;
    }
    return out;
}

static bool is_float_array(const WireValue *v)
{
    return v->kind == W_ARRAY && wire_is_float_dtype(v->as.array.dtype);
}

static bool is_int_array(const WireValue *v)
{
    return v->kind == W_ARRAY && wire_is_int_dtype(v->as.array.dtype);
}

static bool has_shape(const WireArray *a, size_t ndim, const uint64_t *dims)
{
    if (a->ndim != ndim) {
        return false;
    }
    for (size_t i = 0; i < ndim; i++) {
        if (a->dims[i] != dims[i]) {
            return false;
        }
    }
    return true;
}

/* A float array's elements in the call's dtype. */
static double *float_values(const Ctx *ctx, const WireArray *a)
{
    double *out = arena_alloc_uninit(ctx->arena, a->count, sizeof(double)); /* every element written */
    wire_floats(a, out);
    if (ctx->dtype == FLOAT32 && a->dtype != DT_F4) {
        for (size_t i = 0; i < a->count; i++) {
            out[i] = fl(ctx, out[i]);
        }
    }
    return out;
}

static int64_t *int_values(const Ctx *ctx, const WireArray *a)
{
    int64_t *out = arena_alloc(ctx->arena, a->count, sizeof(int64_t));
    for (size_t i = 0; i < a->count; i++) {
        out[i] = wire_int_at(a, i);
    }
    return out;
}

/* --- V06-V09: params ------------------------------------------------------------------------- */

static const char *const LSTM_PARTS[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};

/* The i-th canonical name for L layers, in the order of §2.1 (reference/params.py param_names):
 * embedding, fwd.k.* for every k, bwd.k.*, out.weight, out.bias. */
static void canonical_name(size_t L, size_t i, char *out, size_t size)
{
    if (i == 0) {
        snprintf(out, size, "embedding");
    } else if (i == 1 + 8 * L) {
        snprintf(out, size, "out.weight");
    } else if (i == 2 + 8 * L) {
        snprintf(out, size, "out.bias");
    } else {
        size_t lstm = (i - 1) / 4, part = (i - 1) % 4;
        snprintf(out, size, "%s.%zu.%s", lstm < L ? "fwd" : "bwd", lstm % L, LSTM_PARTS[part]);
    }
}

/* "fwd.{k}.weight_ih" with k in decimal digits: the keys that count the layers (§2.1). */
static bool is_layer_key(WireText key)
{
    const char *prefix = "fwd.", *suffix = ".weight_ih";
    size_t np = strlen(prefix), ns = strlen(suffix);
    if (key.len <= np + ns || memcmp(key.bytes, prefix, np) != 0 ||
        memcmp(key.bytes + key.len - ns, suffix, ns) != 0) {
        return false;
    }
    for (size_t i = np; i < key.len - ns; i++) {
        if (key.bytes[i] < '0' || key.bytes[i] > '9') {
            return false;
        }
    }
    return true;
}

static int compare_texts(const void *a, const void *b)
{
    const WireText *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n == 0 ? 0 : memcmp(x->bytes, y->bytes, n);
    return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/* The params map's keys, sorted, so that a name is found by binary search. */
static WireText *sorted_keys(const Ctx *ctx, const WireValue *params)
{
    size_t n = params->as.map.count;
    WireText *keys = arena_alloc(ctx->arena, n, sizeof(WireText));
    if (n > 0) {
        memcpy(keys, params->as.map.keys, n * sizeof(WireText));
        qsort(keys, n, sizeof(WireText), compare_texts);
    }
    return keys;
}

static bool has_key(const WireText *sorted, size_t n, const char *name)
{
    WireText wanted = {name, strlen(name)};
    return n > 0 && bsearch(&wanted, sorted, n, sizeof(WireText), compare_texts) != NULL;
}

/* Whether `key` is one of the canonical names for L layers. */
static bool is_canonical(WireText key, size_t L)
{
    char name[64];
    if (wire_text_is(key, "embedding") || wire_text_is(key, "out.weight") || wire_text_is(key, "out.bias")) {
        return true;
    }
    if (key.len < 6 || key.len >= sizeof name || memchr(key.bytes, '\0', key.len) != NULL) {
        return false;
    }
    /* "fwd.{k}.{part}" or "bwd.{k}.{part}" with k as Python writes it: no leading zeros, k < L. */
    memcpy(name, key.bytes, key.len);
    name[key.len] = '\0';
    if ((strncmp(name, "fwd.", 4) != 0 && strncmp(name, "bwd.", 4) != 0) || name[4] < '0' || name[4] > '9') {
        return false;
    }
    char *end;
    unsigned long long k = strtoull(name + 4, &end, 10);
    if (*end != '.' || (name[4] == '0' && end != name + 5) || k >= L) {
        return false;
    }
    for (size_t part = 0; part < 4; part++) {
        if (strcmp(end + 1, LSTM_PARTS[part]) == 0) {
            return true;
        }
    }
    return false;
}

/* The expected shape of canonical entry i (§2.1). */
static size_t canonical_shape(size_t L, size_t i, uint64_t V, uint64_t d, uint64_t *dims)
{
    if (i == 0 || i == 1 + 8 * L) { /* embedding, out.weight */
        dims[0] = V;
        dims[1] = d;
        return 2;
    }
    if (i == 2 + 8 * L) { /* out.bias */
        dims[0] = V;
        return 1;
    }
    dims[0] = 4 * d;
    dims[1] = d;
    return (i - 1) % 4 < 2 ? 2 : 1; /* weights [4d, d], biases [4d] */
}

static bool check_params(Ctx *ctx, const WireValue *params, BiLMParams *p, Error *err)
{
    char desc[DESCRIPTION], name[64], quoted[256];
    if (params->kind != W_MAP) {
        return value_error(err, "params: expected a dict of canonical names to arrays, got %s",
                           describe(params, desc, sizeof desc));
    }
    size_t count = params->as.map.count, L = 0;
    for (size_t i = 0; i < count; i++) {
        L += is_layer_key(params->as.map.keys[i]);
    }
    size_t expected_L = L > 0 ? L : 1;
    size_t n_names = 3 + 8 * expected_L;

    /* V06: a missing name, the first in canonical order. */
    const WireText *sorted = sorted_keys(ctx, params);
    for (size_t i = 0; i < n_names; i++) {
        canonical_name(expected_L, i, name, sizeof name);
        if (!has_key(sorted, count, name)) {
            return value_error(err, "params: missing canonical entry '%s' (§2.1)", name);
        }
    }
    /* V07: a name that is not canonical, the first in sorted order. */
    for (size_t i = 0; i < count; i++) {
        if (!is_canonical(sorted[i], expected_L)) {
            quote_text(quoted, sizeof quoted, sorted[i].bytes, sorted[i].len, 100);
            return value_error(err, "params: '%s' is not a canonical name for L = %zu (§2.1)", quoted, L);
        }
    }
    /* V08-V09: embedding first, since it fixes V, d and the dtype. */
    const WireValue *embedding = wire_map_get(params, "embedding");
    if (!is_float_array(embedding)) {
        return value_error(err, "embedding: expected a float32 or float64 array, got %s",
                           describe(embedding, desc, sizeof desc));
    }
    const WireArray *E = &embedding->as.array;
    if (E->ndim != 2 || E->dims[0] == 0 || E->dims[1] == 0) {
        return value_error(err, "embedding: expected shape [V, d] with V, d >= 1, got %s",
                           describe(embedding, desc, sizeof desc));
    }
    uint64_t V = E->dims[0], d = E->dims[1];
    ctx->dtype = E->dtype == DT_F4 ? FLOAT32 : FLOAT64;
    const double **values = arena_alloc(ctx->arena, n_names, sizeof(double *));
    L = expected_L; /* the same, now that no name is missing */
    for (size_t i = 0; i < n_names; i++) {
        uint64_t dims[2];
        canonical_name(L, i, name, sizeof name);
        const WireValue *entry = wire_map_get(params, name);
        size_t ndim = canonical_shape(L, i, V, d, dims);
        if (entry->kind != W_ARRAY || entry->as.array.dtype != E->dtype) {
            return value_error(err, "%s: expected an array of dtype %s like embedding, got %s", name,
                               wire_dtype_name(E->dtype), describe(entry, desc, sizeof desc));
        }
        if (!has_shape(&entry->as.array, ndim, dims)) {
            char shape[64];
            if (ndim == 2) {
                snprintf(shape, sizeof shape, "[%" PRIu64 ", %" PRIu64 "]", dims[0], dims[1]);
            } else {
                snprintf(shape, sizeof shape, "[%" PRIu64 "]", dims[0]);
            }
            return value_error(err, "%s: expected shape %s (V=%" PRIu64 ", d=%" PRIu64 "), got %s", name, shape, V,
                               d, describe(entry, desc, sizeof desc));
        }
        values[i] = float_values(ctx, &entry->as.array);
    }

    p->V = (size_t)V;
    p->d = (size_t)d;
    p->L = L;
    p->embedding = values[0];
    p->fwd = arena_alloc(ctx->arena, L, sizeof(LSTMWeights));
    p->bwd = arena_alloc(ctx->arena, L, sizeof(LSTMWeights));
    for (size_t k = 0; k < 2 * L; k++) {
        LSTMWeights *w = k < L ? &p->fwd[k] : &p->bwd[k - L];
        const double **parts = values + 1 + 4 * k;
        *w = (LSTMWeights){p->d, p->d, parts[0], parts[1], parts[2], parts[3], NULL, NULL, {NULL, NULL, NULL, NULL, NULL, NULL}};
    }
    p->out_weight = values[1 + 8 * L];
    p->out_bias = values[2 + 8 * L];
    return true;
}

/* --- V01-V05: ids and lengths ---------------------------------------------------------------- */

bool check_bilm_inputs(Ctx *ctx, const WireValue *params, const WireValue *ids, const WireValue *lengths,
                       BiLMParams *p, Batch *batch, Error *err)
{
    char desc[DESCRIPTION];
    if (!check_params(ctx, params, p, err)) {
        return false;
    }
    /* V01-V02 */
    if (!is_int_array(ids) || ids->as.array.ndim != 2) {
        return value_error(err, "ids: expected a 2-D integer array [B, T], got %s", describe(ids, desc, sizeof desc));
    }
    const WireArray *x = &ids->as.array;
    if (x->dims[0] == 0 || x->dims[1] == 0) {
        return value_error(err, "ids: expected B >= 1 and T >= 1, got %s", describe(ids, desc, sizeof desc));
    }
    size_t B = (size_t)x->dims[0], T = (size_t)x->dims[1];

    /* V04-V05; absent lengths mean every row is full. */
    size_t *ell = arena_alloc(ctx->arena, B, sizeof(size_t));
    if (lengths->kind == W_NULL) {
        for (size_t b = 0; b < B; b++) {
            ell[b] = T;
        }
    } else {
        uint64_t shape[1] = {B};
        if (!is_int_array(lengths) || !has_shape(&lengths->as.array, 1, shape)) {
            return value_error(err, "lengths: expected None or a 1-D integer array of length B=%zu, got %s", B,
                               describe(lengths, desc, sizeof desc));
        }
        const int64_t *given = int_values(ctx, &lengths->as.array);
        int64_t low = given[0], high = given[0];
        for (size_t b = 0; b < B; b++) {
            low = given[b] < low ? given[b] : low;
            high = given[b] > high ? given[b] : high;
        }
        if (low < 1 || (uint64_t)high > T) {
            return value_error(err, "lengths: expected values in [1, T=%zu], got values in [%" PRId64 ", %" PRId64 "]",
                               T, low, high);
        }
        for (size_t b = 0; b < B; b++) {
            ell[b] = (size_t)given[b];
        }
    }

    /* V03, at every position the step checks (all of them, padding included). */
    const int64_t *values = int_values(ctx, x);
    bool any = false;
    int64_t low = 0, high = 0;
    for (size_t b = 0; b < B; b++) {
        for (size_t t = 0; t < T; t++) {
            int64_t id = values[b * T + t];
            if (ctx->steps->id_checked_at(t, ell[b])) {
                low = !any || id < low ? id : low;
                high = !any || id > high ? id : high;
                any = true;
            }
        }
    }
    if (any && (low < 0 || (uint64_t)high >= p->V)) {
        return value_error(err, "ids: expected values in [0, %zu), got values in [%" PRId64 ", %" PRId64 "]", p->V, low,
                           high);
    }
    batch->B = B;
    batch->T = T;
    batch->ids = values;
    batch->lengths = ell;
    return true;
}

bool check_has_targets(const WireValue *lengths, const Batch *batch, Error *err)
{
    for (size_t b = 0; b < batch->B; b++) {
        if (batch->lengths[b] >= 2) {
            return true;
        }
    }
    return value_error(err, "%s: no targets, every row has length 1 so the loss is undefined (§4.3)",
                       lengths->kind == W_NULL ? "ids" : "lengths");
}

/* --- V10: g_layers --------------------------------------------------------------------------- */

bool check_g_layers(const Ctx *ctx, const WireValue *g_layers, const BiLMParams *p, const Batch *batch,
                    double **out, Error *err)
{
    char desc[DESCRIPTION];
    uint64_t shape[3] = {batch->B, batch->T, 2 * (uint64_t)p->d};
    bool ok = g_layers->kind == W_LIST && g_layers->as.list.count == p->L + 1;
    for (size_t k = 0; ok && k <= p->L; k++) {
        const WireValue *g = &g_layers->as.list.items[k];
        ok = is_float_array(g) && has_shape(&g->as.array, 3, shape);
    }
    if (!ok) {
        return value_error(err, "g_layers: expected a list of L+1=%zu float arrays of shape [%zu, %zu, %zu], got %s",
                           p->L + 1, batch->B, batch->T, 2 * p->d, describe(g_layers, desc, sizeof desc));
    }
    for (size_t k = 0; k <= p->L; k++) {
        out[k] = float_values(ctx, &g_layers->as.list.items[k].as.array);
    }
    return true;
}

/* --- V12-V15: ScalarMix ---------------------------------------------------------------------- */

bool check_mix(Ctx *ctx, const WireValue *s, const WireValue *gamma, const WireValue *layers, MixInputs *in,
               const WireArray **shape, Error *err)
{
    char desc[DESCRIPTION], other[DESCRIPTION];
    if (layers->kind != W_LIST || layers->as.list.count == 0) {
        return value_error(err, "layers: expected a non-empty list of float arrays, got %s",
                           describe(layers, desc, sizeof desc));
    }
    size_t n = layers->as.list.count;
    const WireValue *first = &layers->as.list.items[0];
    for (size_t k = 0; k < n; k++) {
        const WireValue *layer = &layers->as.list.items[k];
        if (!is_float_array(layer)) {
            return value_error(err, "layers: layer %zu is not a float32 or float64 array, got %s", k,
                               describe(layer, desc, sizeof desc));
        }
        if (layer->as.array.dtype != first->as.array.dtype ||
            !has_shape(&layer->as.array, first->as.array.ndim, first->as.array.dims)) {
            return value_error(err, "layers: layer %zu is %s, layer 0 is %s; all must match", k,
                               describe(layer, desc, sizeof desc), describe(first, other, sizeof other));
        }
    }
    if (!is_float_array(s) || s->as.array.ndim != 1) {
        return value_error(err, "s: expected a 1-D float array, got %s", describe(s, desc, sizeof desc));
    }
    if (s->as.array.count != n) {
        return value_error(err, "s: len(s) = %zu but there are %zu layers (§5.2)", s->as.array.count, n);
    }
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(wire_float_at(&s->as.array, k))) {
            return value_error(err, "s: expected finite values");
        }
    }
    uint64_t one[1] = {1};
    if (!is_float_array(gamma) || !has_shape(&gamma->as.array, 1, one) ||
        !ctx->steps->gamma_accepted(wire_float_at(&gamma->as.array, 0))) {
        return value_error(err, "gamma: expected a finite float array of shape [1], got %s",
                           describe(gamma, desc, sizeof desc));
    }

    ctx->dtype = first->as.array.dtype == DT_F4 ? FLOAT32 : FLOAT64;
    double **values = arena_alloc(ctx->arena, n, sizeof(double *));
    for (size_t k = 0; k < n; k++) {
        values[k] = float_values(ctx, &layers->as.list.items[k].as.array);
    }
    in->n = n;
    in->size = first->as.array.count;
    in->s = float_values(ctx, &s->as.array);
    in->gamma = fl(ctx, wire_float_at(&gamma->as.array, 0));
    in->layers = (const double *const *)values;
    *shape = &first->as.array;
    return true;
}

bool check_g_out(const Ctx *ctx, const WireValue *g_out, const WireArray *shape, double **out, Error *err)
{
    char desc[DESCRIPTION], dims[96];
    if (!is_float_array(g_out) || !has_shape(&g_out->as.array, shape->ndim, shape->dims)) {
        shape_text(shape, dims, sizeof dims);
        return value_error(err, "g_out: expected a float array of a layer's shape %s, got %s", dims,
                           describe(g_out, desc, sizeof desc));
    }
    *out = float_values(ctx, &g_out->as.array);
    return true;
}

/* --- V16-V25: the probe ---------------------------------------------------------------------- */

bool check_features(Ctx *ctx, const WireValue *features, size_t *N, size_t *D, double **X, Error *err)
{
    char desc[DESCRIPTION];
    if (!is_float_array(features) || features->as.array.ndim != 2 || features->as.array.count == 0) {
        return value_error(err, "features: expected a 2-D float array [N, D] with N, D >= 1, got %s",
                           describe(features, desc, sizeof desc));
    }
    const WireArray *a = &features->as.array;
    for (size_t i = 0; i < a->count; i++) {
        if (!isfinite(wire_float_at(a, i))) {
            return value_error(err, "features: expected finite values, found NaN or infinity");
        }
    }
    ctx->dtype = a->dtype == DT_F4 ? FLOAT32 : FLOAT64;
    *N = (size_t)a->dims[0];
    *D = (size_t)a->dims[1];
    *X = float_values(ctx, a);
    return true;
}

/* A real number for lr and l2: an int, a float or a 0-d float array (a NumPy float scalar); not a
 * bool. */
static bool real_value(const WireValue *v, double *out)
{
    if (v->kind == W_INT) {
        *out = (double)v->as.integer;
        return true;
    }
    if (v->kind == W_FLOAT) {
        *out = v->as.real;
        return true;
    }
    if (is_float_array(v) && v->as.array.ndim == 0) {
        *out = wire_float_at(&v->as.array, 0);
        return true;
    }
    return false;
}

bool check_fit_settings(const Ctx *ctx, const WireValue *n_classes, const WireValue *steps, const WireValue *lr,
                        const WireValue *l2, size_t *C, uint64_t *steps_out, double *lr_out, double *l2_out,
                        Error *err)
{
    char desc[DESCRIPTION];
    /* Python ints count as integers (so do NumPy integer scalars, which travel as ints); bools and
     * floats do not (§8). */
    if (n_classes->kind != W_INT || n_classes->as.integer < 2) {
        return value_error(err, "n_classes: expected an integer >= 2, got %s", describe(n_classes, desc, sizeof desc));
    }
    if (steps->kind != W_INT || steps->as.integer < 0) {
        return value_error(err, "steps: expected an integer >= 0, got %s", describe(steps, desc, sizeof desc));
    }
    if (!real_value(lr, lr_out) || !ctx->steps->lr_accepted(*lr_out)) {
        return value_error(err, "lr: expected a finite number > 0, got %s", describe(lr, desc, sizeof desc));
    }
    if (!real_value(l2, l2_out) || !isfinite(*l2_out) || *l2_out < 0) {
        return value_error(err, "l2: expected a finite number >= 0, got %s", describe(l2, desc, sizeof desc));
    }
    *C = (size_t)n_classes->as.integer;
    *steps_out = (uint64_t)steps->as.integer;
    return true;
}

bool check_labels(const Ctx *ctx, const WireValue *labels, size_t N, size_t C, int64_t **out, Error *err)
{
    char desc[DESCRIPTION];
    uint64_t shape[1] = {N};
    if (!is_int_array(labels) || !has_shape(&labels->as.array, 1, shape)) {
        return value_error(err, "labels: expected a 1-D integer array of length N=%zu, got %s", N,
                           describe(labels, desc, sizeof desc));
    }
    int64_t *y = int_values(ctx, &labels->as.array);
    int64_t low = y[0], high = y[0];
    for (size_t n = 0; n < N; n++) {
        low = y[n] < low ? y[n] : low;
        high = y[n] > high ? y[n] : high;
    }
    if (low < 0 || (uint64_t)high >= C) {
        return value_error(err, "labels: expected values in [0, %zu), got values in [%" PRId64 ", %" PRId64 "]", C,
                           low, high);
    }
    *out = y;
    return true;
}

bool check_two_classes(const int64_t *labels, size_t N, Error *err)
{
    for (size_t n = 1; n < N; n++) {
        if (labels[n] != labels[0]) {
            return true;
        }
    }
    return value_error(err, "labels: expected at least two distinct classes, every label is %" PRId64, labels[0]);
}

bool check_probe_weights(const Ctx *ctx, const WireValue *W, const WireValue *b, size_t D, size_t *C,
                         double **W_out, double **b_out, Error *err)
{
    char desc[DESCRIPTION];
    if (!is_float_array(W) || W->as.array.ndim != 2 || W->as.array.dims[0] != D || W->as.array.dims[1] == 0) {
        return value_error(err, "W: expected a 2-D float array [D=%zu, C], got %s", D, describe(W, desc, sizeof desc));
    }
    size_t classes = (size_t)W->as.array.dims[1];
    uint64_t shape[1] = {classes};
    if (!is_float_array(b) || !has_shape(&b->as.array, 1, shape)) {
        return value_error(err, "b: expected a 1-D float array of length C=%zu, got %s", classes,
                           describe(b, desc, sizeof desc));
    }
    *C = classes;
    *W_out = float_values(ctx, &W->as.array);
    *b_out = float_values(ctx, &b->as.array);
    return true;
}
