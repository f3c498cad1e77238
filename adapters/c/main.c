/* elmo-c: the C implementation of spec/elmo.md, speaking the wire protocol of §15.
 *
 * Reads frames on standard input and answers each with one frame on standard output, flushed,
 * until standard input ends (then exits 0). The first request is a `hello` (§15.4), then `call`s
 * (§15.5), each answered with a `result` or an `error` (§15.6). Nothing else is written to
 * standard output; a request that cannot be read is answered with a ProtocolError.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "arena.h"
#include "calls.h"
#include "error.h"
#include "mutants.h"
#include "steps.h"
#include "wire.h"

#define PROTOCOL_VERSION "1.0"

/* One request's state, outside the function that calls setjmp, so that it is still valid when
 * a failed allocation jumps back there. */
typedef struct {
    Arena arena;
    WireBuf response;
    bool has_id;
    int64_t id;
    bool failed; /* an allocation failed while answering */
} Request;

static void put_message_start(WireBuf *out, const char *type, size_t extra_fields, const Request *req)
{
    wire_put_map(out, 2 + extra_fields);
    wire_put_key(out, "type");
    wire_put_string(out, type);
    wire_put_key(out, "id");
    if (req->has_id) {
        wire_put_int(out, req->id);
    } else {
        wire_put_null(out);
    }
}

static void put_error(Request *req, const Error *err)
{
    WireBuf *out = &req->response;
    out->len = 0;
    put_message_start(out, "error", 2, req);
    wire_put_key(out, "kind");
    wire_put_string(out, err->kind);
    wire_put_key(out, "message");
    wire_put_string(out, err->message);
}

/* §15.4: our hello, whatever version the harness speaks; the harness refuses a major mismatch. */
static void put_hello(WireBuf *out)
{
    wire_put_map(out, 7);
    wire_put_key(out, "type");
    wire_put_string(out, "hello");
    wire_put_key(out, "protocol");
    wire_put_string(out, PROTOCOL_VERSION);
    wire_put_key(out, "name");
    wire_put_string(out, "c");
    wire_put_key(out, "capabilities");
    wire_put_list(out, 3);
    wire_put_string(out, "float64");
    wire_put_string(out, "float32");
    wire_put_string(out, "grad");
    wire_put_key(out, "device");
    wire_put_string(out, "cpu");
    wire_put_key(out, "unavailable");
    wire_put_null(out);
    wire_put_key(out, "mutants");
    wire_put_list(out, mutant_count());
    for (size_t i = 0; i < mutant_count(); i++) {
        wire_put_map(out, 2);
        wire_put_key(out, "id");
        wire_put_string(out, mutant_at(i)->id);
        wire_put_key(out, "title");
        wire_put_string(out, mutant_at(i)->title);
    }
}

/* §15.5: a call; false with `err` set when it fails. */
static bool answer_call(Request *req, const WireValue *message, Error *err)
{
    const WireValue *function = wire_map_get(message, "function");
    const WireValue *mutant = wire_map_get(message, "mutant");
    const WireValue *args = wire_map_get(message, "args");
    char quoted[256];
    if (!req->has_id) {
        return fail_with(err, "ProtocolError", "a call needs an integer 'id'");
    }
    if (function == NULL || function->kind != W_STRING) {
        return fail_with(err, "ProtocolError", "a call needs a string 'function'");
    }
    if (args == NULL || args->kind != W_MAP) {
        return fail_with(err, "ProtocolError", "a call needs a map 'args'");
    }
    const ProtocolFunction *f = find_function(function->as.text.bytes, function->as.text.len);
    if (f == NULL) {
        quote_text(quoted, sizeof quoted, function->as.text.bytes, function->as.text.len, 100);
        return fail_with(err, "NotImplemented", "unknown protocol function '%s' (§11)", quoted);
    }

    /* The steps: clean, or the mutant's (§13). */
    Steps steps = CLEAN_STEPS;
    if (mutant != NULL && mutant->kind != W_NULL) {
        const Mutant *m = mutant->kind == W_STRING ? find_mutant(mutant->as.text.bytes, mutant->as.text.len) : NULL;
        if (m == NULL) {
            if (mutant->kind == W_STRING) {
                quote_text(quoted, sizeof quoted, mutant->as.text.bytes, mutant->as.text.len, 100);
            } else {
                snprintf(quoted, sizeof quoted, "(not a string)");
            }
            return fail_with(err, "UnknownMutant", "this program declares no mutant '%s' (§13)", quoted);
        }
        m->apply(&steps);
    }

    /* Every argument of the function by name, and no other (§15.5). */
    const WireValue *values[MAX_ARGUMENTS] = {NULL};
    size_t n_arguments = 0;
    for (; n_arguments < MAX_ARGUMENTS && f->arguments[n_arguments] != NULL; n_arguments++) {
        values[n_arguments] = wire_map_get(args, f->arguments[n_arguments]);
        if (values[n_arguments] == NULL) {
            return fail_with(err, "ProtocolError", "%s: 'args' lacks the argument '%s'", f->name,
                             f->arguments[n_arguments]);
        }
    }
    if (args->as.map.count != n_arguments) {
        for (size_t i = 0; i < args->as.map.count; i++) {
            bool known = false;
            for (size_t k = 0; k < n_arguments; k++) {
                known = known || wire_text_is(args->as.map.keys[i], f->arguments[k]);
            }
            if (!known) {
                quote_text(quoted, sizeof quoted, args->as.map.keys[i].bytes, args->as.map.keys[i].len, 100);
                return fail_with(err, "ProtocolError", "%s has no argument '%s' (spec/protocol.json)", f->name, quoted);
            }
        }
    }

    Ctx ctx = {FLOAT64, &steps, &req->arena};
    put_message_start(&req->response, "result", 1, req);
    wire_put_key(&req->response, "value");
    return f->call(&ctx, values, &req->response, err);
}

/* Decode one frame's body and build its answer in req->response. */
static void answer(Request *req, const unsigned char *body, size_t len)
{
    Error err = {"ProtocolError", ""};
    WireValue message;
    if (!wire_decode(&req->arena, body, len, &message, err.message, sizeof err.message)) {
        put_error(req, &err);
        return;
    }
    if (message.kind != W_MAP) {
        fail_with(&err, "ProtocolError", "a frame holds a value that is not a map; every message is a map (§15.2)");
        put_error(req, &err);
        return;
    }
    const WireValue *id = wire_map_get(&message, "id");
    if (id != NULL && id->kind == W_INT) {
        req->has_id = true;
        req->id = id->as.integer;
    }
    const WireValue *type = wire_map_get(&message, "type");
    if (type != NULL && type->kind == W_STRING && wire_text_is(type->as.text, "hello")) {
        put_hello(&req->response);
    } else if (type != NULL && type->kind == W_STRING && wire_text_is(type->as.text, "call")) {
        if (!answer_call(req, &message, &err)) {
            put_error(req, &err);
        }
    } else {
        fail_with(&err, "ProtocolError", "expected a message of type 'hello' or 'call' (§15.4, §15.5)");
        put_error(req, &err);
    }
}

/* Answer one frame's body on standard output; false when standard output fails. */
static bool respond(Request *req, const unsigned char *body, size_t len)
{
    jmp_buf on_failure;
    arena_init(&req->arena, &on_failure);
    wire_buf_init(&req->response, &req->arena);
    req->has_id = false;
    req->failed = false;
    if (setjmp(on_failure) == 0) {
        answer(req, body, len);
    } else if (!req->failed) {
        /* An allocation failed (arena.h): drop everything computed and answer an error. */
        Error err;
        req->failed = true;
        fail_with(&err, "InternalError", "%s", req->arena.failure);
        arena_free(&req->arena);
        put_error(req, &err);
    } else {
        fprintf(stderr, "elmo-c: out of memory while answering an error\n");
        exit(1);
    }
    if (req->response.len > WIRE_MAX_FRAME) {
        Error err;
        fail_with(&err, "InternalError", "the answer of %zu bytes exceeds the frame limit of 1 GiB (§15.7)",
                  req->response.len);
        arena_free(&req->arena);
        put_error(req, &err);
    }
    bool written = wire_write_frame(stdout, &req->response);
    arena_free(&req->arena);
    wire_buf_free(&req->response);
    return written;
}

/* Answer a frame that could not be read at all: an error with id null (§15.6). */
static bool respond_unreadable(Request *req, const char *message)
{
    jmp_buf on_failure;
    Error err;
    arena_init(&req->arena, &on_failure);
    wire_buf_init(&req->response, &req->arena);
    req->has_id = false;
    if (setjmp(on_failure) != 0) {
        fprintf(stderr, "elmo-c: out of memory while answering an error\n");
        exit(1);
    }
    fail_with(&err, "ProtocolError", "%s", message);
    put_error(req, &err);
    bool written = wire_write_frame(stdout, &req->response);
    wire_buf_free(&req->response);
    return written;
}

/* Read and drop n bytes of standard input; false when it ends first. */
static bool skip_input(size_t n)
{
    unsigned char chunk[65536];
    while (n > 0) {
        size_t want = n < sizeof chunk ? n : sizeof chunk;
        size_t got = fread(chunk, 1, want, stdin);
        if (got == 0) {
            return false;
        }
        n -= got;
    }
    return true;
}

int main(void)
{
    static Request req;
    char message[256];
#ifdef __GLIBC__
    /* Large arrays come from the heap and stay there between requests (up to 512 MiB of it kept
     * free), rather than being mapped afresh, and faulted in page by page, for every request. */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
    for (;;) {
        unsigned char header[8];
        size_t got = fread(header, 1, sizeof header, stdin);
        if (got == 0) {
            return ferror(stdin) ? 1 : 0; /* end of input: done (§15.1) */
        }
        if (got < sizeof header) {
            snprintf(message, sizeof message, "the stream ends inside a frame header (%zu of 8 bytes)", got);
            respond_unreadable(&req, message);
            return 0;
        }
        if (memcmp(header, WIRE_MAGIC, 4) != 0) {
            /* Without the magic the frame's length means nothing: the stream cannot be resynchronized. */
            respond_unreadable(&req, "expected a frame starting with 'ELMO' (§15.2)");
            fprintf(stderr, "elmo-c: a frame without the magic 'ELMO'; stopping\n");
            return 1;
        }
        size_t length = (size_t)header[4] | (size_t)header[5] << 8 | (size_t)header[6] << 16 | (size_t)header[7] << 24;
        if (length > WIRE_MAX_FRAME) {
            /* Refused before it is read; skipping it keeps the stream in step. */
            snprintf(message, sizeof message, "a frame declares %zu bytes, more than the limit of %zu (§15.7)", length,
                     WIRE_MAX_FRAME);
            if (!skip_input(length)) {
                return 0;
            }
            if (!respond_unreadable(&req, message)) {
                return 1;
            }
            continue;
        }
        unsigned char *body = malloc(length > 0 ? length : 1);
        if (body == NULL) {
            snprintf(message, sizeof message, "out of memory for a frame of %zu bytes", length);
            if (!skip_input(length) || !respond_unreadable(&req, message)) {
                return 1;
            }
            continue;
        }
        got = fread(body, 1, length, stdin);
        if (got < length) {
            free(body);
            snprintf(message, sizeof message, "the stream ends inside a frame body (%zu of %zu bytes)", got, length);
            respond_unreadable(&req, message);
            return 0;
        }
        bool written = respond(&req, body, length);
        free(body);
        if (!written) {
            return 1; /* standard output is gone */
        }
    }
}
