/* §11: the protocol functions, as calls of the wire protocol (see calls.h). */
#include "calls.h"

#include <stdio.h>
#include <string.h>

#include "bilm.h"
#include "loss.h"
#include "probe.h"
#include "scalar_mix.h"
#include "validate.h"

/* --- results ------------------------------------------------------------------------------- */

/* An array of the computing dtype (§1.2). */
static void put_array(WireBuf *out, const Ctx *ctx, size_t ndim, const size_t *dims, const double *data)
{
    wire_put_array(out, ctx->dtype == FLOAT32 ? DT_F4 : DT_F8, ndim, dims, data);
}

/* An array of the shape of a ScalarMix layer. */
static void put_layer_shaped(WireBuf *out, const Ctx *ctx, const WireArray *shape, const double *data)
{
    size_t dims[256];
    for (size_t i = 0; i < shape->ndim; i++) {
        dims[i] = (size_t)shape->dims[i];
    }
    put_array(out, ctx, shape->ndim, dims, data);
}

static void put_lstm_grads(WireBuf *out, const Ctx *ctx, const char *direction, size_t k, size_t d,
                           const LSTMGrads *g)
{
    const char *parts[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    const double *values[4] = {g->weight_ih, g->weight_hh, g->bias_ih, g->bias_hh};
    for (size_t part = 0; part < 4; part++) {
        char name[64];
        size_t dims[2] = {4 * d, d};
        snprintf(name, sizeof name, "%s.%zu.%s", direction, k, parts[part]);
        wire_put_key(out, name);
        put_array(out, ctx, part < 2 ? 2 : 1, dims, values[part]);
    }
}

/* A gradient dictionary: a map with every canonical name, in the order of §2.1. */
static void put_grads(WireBuf *out, const Ctx *ctx, const BiLMParams *p, const BiLMGrads *g)
{
    size_t table[2] = {p->V, p->d};
    wire_put_map(out, 3 + 8 * p->L);
    wire_put_key(out, "embedding");
    put_array(out, ctx, 2, table, g->embedding);
    for (size_t k = 0; k < p->L; k++) {
        put_lstm_grads(out, ctx, "fwd", k, p->d, &g->fwd[k]);
    }
    for (size_t k = 0; k < p->L; k++) {
        put_lstm_grads(out, ctx, "bwd", k, p->d, &g->bwd[k]);
    }
    wire_put_key(out, "out.weight");
    put_array(out, ctx, 2, table, g->out_weight);
    wire_put_key(out, "out.bias");
    put_array(out, ctx, 1, table, g->out_bias);
}

/* --- §5 and §6.3 ----------------------------------------------------------------------------- */

static bool call_scalar_mix(Ctx *ctx, const WireValue *const *args, WireBuf *out, Error *err)
{
    MixInputs in;
    const WireArray *shape;
    if (!check_mix(ctx, args[0], args[1], args[2], &in, &shape, err)) {
        return false;
    }
    double *mix = arena_doubles(ctx->arena, in.size);
    scalar_mix(ctx, &in, mix);
    put_layer_shaped(out, ctx, shape, mix);
    return true;
}

static bool call_scalar_mix_vjp(Ctx *ctx, const WireValue *const *args, WireBuf *out, Error *err)
{
    MixInputs in;
    const WireArray *shape;
    double *g_out;
    if (!check_mix(ctx, args[0], args[1], args[2], &in, &shape, err) ||
        !check_g_out(ctx, args[3], shape, &g_out, err)) {
        return false;
    }
    double *g_s = arena_doubles(ctx->arena, in.n), g_gamma;
    double **g_layers = arena_alloc(ctx->arena, in.n, sizeof(double *));
    for (size_t k = 0; k < in.n; k++) {
        g_layers[k] = arena_doubles(ctx->arena, in.size);
    }
    scalar_mix_vjp(ctx, &in, g_out, g_s, &g_gamma, g_layers);
    size_t n = in.n, one = 1;
    wire_put_list(out, 3); /* (g_s, g_gamma, [g_layer, ...]) */
    put_array(out, ctx, 1, &n, g_s);
    put_array(out, ctx, 1, &one, &g_gamma);
    wire_put_list(out, in.n);
    for (size_t k = 0; k < in.n; k++) {
        put_layer_shaped(out, ctx, shape, g_layers[k]);
    }
    return true;
}

/* --- §3, §4, §6.1, §6.2 ---------------------------------------------------------------------- */

/* The biLM functions' common start: check params, ids and lengths (§8), then run §3. */
static BiLMPass *checked_run(Ctx *ctx, const WireValue *const *args, BiLMParams *p, Error *err)
{
    Batch batch;
    if (!check_bilm_inputs(ctx, args[0], args[1], args[2], p, &batch, err)) {
        return NULL;
    }
    bilm_prepare(ctx, p);
    return bilm_run(ctx, p, &batch);
}

static bool call_bilm_layers(Ctx *ctx, const WireValue *const *args, WireBuf *out, Error *err)
{
    BiLMParams p;
    BiLMPass *pass = checked_run(ctx, args, &p, err);
    if (pass == NULL) {
        return false;
    }
    size_t dims[3] = {pass->batch.B, pass->batch.T, 2 * p.d};
    double *layer = arena_doubles(ctx->arena, arena_mul(ctx->arena, dims[0] * dims[1], dims[2]));
    wire_put_list(out, p.L + 1); /* [R^0, ..., R^L] */
    for (size_t k = 0; k <= p.L; k++) {
        bilm_layer(ctx, pass, k, layer);
        put_array(out, ctx, 3, dims, layer);
    }
    return true;
}

static bool call_bilm_logits(Ctx *ctx, const WireValue *const *args, WireBuf *out, Error *err)
{
    BiLMParams p;
    BiLMPass *pass = checked_run(ctx, args, &p, err);
    if (pass == NULL) {
        return false;
    }
    Arena *arena = ctx->arena;
    size_t positions = pass->batch.B * pass->batch.T, d = p.d;
    double *top = arena_doubles(arena, arena_mul(arena, positions, 2 * d));
    double *states = arena_doubles(arena, positions * d);
    double *logits = arena_doubles(arena, arena_mul(arena, positions, p.V));
    size_t dims[3] = {pass->batch.B, pass->batch.T, p.V};
    bilm_layer(ctx, pass, p.L, top); /* f^L and b^L, 0 at padded positions (§3.4) */
    wire_put_list(out, 2);           /* (fwd, bwd) */
    for (size_t half = 0; half < 2; half++) {
        for (size_t i = 0; i < positions; i++) {
            memcpy(states + i * d, top + i * 2 * d + half * d, d * sizeof(double));
        }
        bilm_output_layer(ctx, &p, positions, states, logits);
        put_array(out, ctx, 3, dims, logits);
    }
    return true;
}

static bool call_bilm_loss(Ctx *ctx, const WireValue *const *args, WireBuf *out, Error *err)
{
    BiLMParams p;
    Batch batch;
    if (!check_bilm_inputs(ctx, args[0], args[1], args[2], &p, &batch, err) ||
        !check_has_targets(args[2], &batch, err)) {
        return false;
    }
    bilm_prepare(ctx, &p);
    wire_put_float(out, bilm_loss(ctx, bilm_run(ctx, &p, &batch)));
    return true;
}

static bool call_bilm_loss_grad(Ctx *ctx, const WireValue *const *args, WireBuf *out, Error *err)
{
    BiLMParams p;
    Batch batch;
    if (!check_bilm_inputs(ctx, args[0], args[1], args[2], &p, &batch, err) ||
        !check_has_targets(args[2], &batch, err)) {
        return false;
    }
    bilm_prepare(ctx, &p);
    BiLMGrads grads = bilm_grads_new(ctx, &p);
    bilm_loss_grad(ctx, bilm_run(ctx, &p, &batch), &grads);
    put_grads(out, ctx, &p, &grads);
    return true;
}

static bool call_bilm_layers_vjp(Ctx *ctx, const WireValue *const *args, WireBuf *out, Error *err)
{
    BiLMParams p;
    Batch batch;
    if (!check_bilm_inputs(ctx, args[0], args[1], args[2], &p, &batch, err)) {
        return false;
    }
    double **g_layers = arena_alloc(ctx->arena, p.L + 1, sizeof(double *));
    if (!check_g_layers(ctx, args[3], &p, &batch, g_layers, err)) {
        return false;
    }
    bilm_prepare(ctx, &p);
    BiLMGrads grads = bilm_grads_new(ctx, &p); /* out.weight and out.bias stay 0: they do not reach R^k */
    bilm_backprop(ctx, bilm_run(ctx, &p, &batch), (const double *const *)g_layers, &grads);
    put_grads(out, ctx, &p, &grads);
    return true;
}

/* --- §7 -------------------------------------------------------------------------------------- */

static bool call_fit_linear_probe(Ctx *ctx, const WireValue *const *args, WireBuf *out, Error *err)
{
    size_t N, D, C;
    double *X, lr, l2;
    uint64_t steps;
    int64_t *labels;
    /* V16-V23 in the table's order: features, the settings, labels, two classes. */
    if (!check_features(ctx, args[0], &N, &D, &X, err) ||
        !check_fit_settings(ctx, args[2], args[4], args[5], args[3], &C, &steps, &lr, &l2, err) ||
        !check_labels(ctx, args[1], N, C, &labels, err) || !check_two_classes(labels, N, err)) {
        return false;
    }
    double *W = arena_doubles(ctx->arena, arena_mul(ctx->arena, D, C));
    double *b = arena_doubles(ctx->arena, C);
    fit_linear_probe(ctx, N, D, C, X, labels, l2, steps, lr, W, b);
    size_t dims[2] = {D, C};
    wire_put_list(out, 2); /* (W, b) */
    put_array(out, ctx, 2, dims, W);
    put_array(out, ctx, 1, &C, b);
    return true;
}

static bool call_probe_accuracy(Ctx *ctx, const WireValue *const *args, WireBuf *out, Error *err)
{
    size_t N, D, C;
    double *X, *W, *b;
    int64_t *labels;
    if (!check_features(ctx, args[2], &N, &D, &X, err) ||
        !check_probe_weights(ctx, args[0], args[1], D, &C, &W, &b, err) ||
        !check_labels(ctx, args[3], N, C, &labels, err)) {
        return false;
    }
    wire_put_float(out, probe_accuracy(ctx, N, D, C, W, b, X, labels));
    return true;
}

/* --- the table (spec/protocol.json) ---------------------------------------------------------- */

static const ProtocolFunction FUNCTIONS[] = {
    {"scalar_mix", {"s", "gamma", "layers"}, call_scalar_mix},
    {"scalar_mix_vjp", {"s", "gamma", "layers", "g_out"}, call_scalar_mix_vjp},
    {"bilm_layers", {"params", "ids", "lengths"}, call_bilm_layers},
    {"bilm_logits", {"params", "ids", "lengths"}, call_bilm_logits},
    {"bilm_loss", {"params", "ids", "lengths"}, call_bilm_loss},
    {"bilm_loss_grad", {"params", "ids", "lengths"}, call_bilm_loss_grad},
    {"bilm_layers_vjp", {"params", "ids", "lengths", "g_layers"}, call_bilm_layers_vjp},
    {"fit_linear_probe", {"features", "labels", "n_classes", "l2", "steps", "lr"}, call_fit_linear_probe},
    {"probe_accuracy", {"W", "b", "features", "labels"}, call_probe_accuracy},
};

const ProtocolFunction *find_function(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof FUNCTIONS / sizeof FUNCTIONS[0]; i++) {
        if (strlen(FUNCTIONS[i].name) == len && memcmp(FUNCTIONS[i].name, name, len) == 0) {
            return &FUNCTIONS[i];
        }
    }
    return NULL;
}
