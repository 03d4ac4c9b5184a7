/* `tformer torch-run`: run a torch.nn module's state_dict in C on named
 * inputs, in PyTorch's layouts, and write the output (and gradients). */
#include <stdlib.h>
#include <string.h>

#include "tformer/interop.h"
#include "torch_run.h"

/* The forward() arguments of each module: sequences first, then masks. */
static const char *const SEQS[TR_MODULE_COUNT][4] = {
    [TR_MHA] = {"query", "key", "value"},
    [TR_ENCODER_LAYER] = {"src"},
    [TR_DECODER_LAYER] = {"tgt", "memory"},
    [TR_ENCODER] = {"src"},
    [TR_DECODER] = {"tgt", "memory"},
    [TR_TRANSFORMER] = {"src", "tgt"},
    [TR_CO_RETRO] = {"query"},
    [TR_CO_SINGLE] = {"query"},
    [TR_CO_ENCODER] = {"input"},
};
static const char *const MASKS[TR_MODULE_COUNT][7] = {
    [TR_MHA] = {"key_padding_mask", "attn_mask"},
    [TR_ENCODER_LAYER] = {"src_mask", "src_key_padding_mask"},
    [TR_DECODER_LAYER] = {"tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask"},
    [TR_ENCODER] = {"mask", "src_key_padding_mask"},
    [TR_DECODER] = {"tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask"},
    [TR_TRANSFORMER] = {"src_mask", "tgt_mask", "memory_mask", "src_key_padding_mask",
                        "tgt_key_padding_mask", "memory_key_padding_mask"},
};

#define MAX_INPUTS 12

typedef struct {
    const tr_config *cfg;
    tf_ctx *ctx;
    const char *path;         /* the input file, for messages */
    const char *name[MAX_INPUTS];
    tf_tensor *t[MAX_INPUTS]; /* as loaded, PyTorch's layout */
    int n;
    int unbatched;            /* sequences are (T,E) */
    tf_tensor *grad_output;
} tr_inputs;

typedef struct {
    tf_mha mha;
    tf_block layer;   /* TransformerEncoderLayer, TransformerDecoderLayer */
    tf_stack stack;   /* TransformerEncoder, TransformerDecoder */
    tf_transformer tr;
    tr_continual co;  /* continual-inference's modules */
} tr_weights;

static tf_tensor *input(const tr_inputs *in, const char *name) {
    for (int i = 0; i < in->n; i++)
        if (!strcmp(in->name[i], name)) return in->t[i];
    return NULL;
}

static int is_known_input(tr_module m, const char *name) {
    for (int i = 0; i < 4 && SEQS[m][i]; i++)
        if (!strcmp(SEQS[m][i], name)) return 1;
    for (int i = 0; i < 7 && MASKS[m][i]; i++)
        if (!strcmp(MASKS[m][i], name)) return 1;
    return 0;
}

/* Load every input tensor; float inputs track gradients when grad_output is given. */
static int load_inputs(tr_inputs *in, const tf_st_file *f, FILE *log) {
    const tf_st_entry *go = tf_st_find(f, "grad_output");
    for (int i = 0; i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        int is_go = e == go;
        if (!is_go && !is_known_input(in->cfg->kind, e->name)) {
            if (log) fprintf(log, "warning: %s: tensor '%s' is not an input of %s; ignored\n", in->path,
                             e->name, tr_module_name(in->cfg->kind));
            continue;
        }
        tf_tensor *t = tf_st_to_tensor(f, e, tf_ctx_arena(in->ctx));
        if (!t) return -1;
        if (t->dtype == TF_DTYPE_I32)
            return tf_set_error("%s: tensor '%s' is %s; inputs are float, masks BOOL or float",
                                in->path, e->name, tf_st_dtype_name(e->dtype));
        if (is_go) {
            in->grad_output = t;
            continue;
        }
        if (go && t->dtype == TF_DTYPE_F32) {
            tf_tensor *g = tf_tensor_new(in->ctx, TF_DTYPE_F32, t->ndim, t->shape, 1);
            if (!g) return -1;
            memcpy(g->data, t->data, (size_t)tf_numel(t) * sizeof(float));
            t = g;
        }
        in->name[in->n] = e->name;
        in->t[in->n++] = t;
    }
    return 0;
}

/* A sequence input in batch-first layout (B,T,width); NULL + error when absent or misshapen. */
static tf_tensor *sequence(tr_inputs *in, const char *name, int64_t width) {
    tf_tensor *t = input(in, name);
    char s[64];
    if (!t) return tf_set_error("%s: missing input tensor '%s'", in->path, name), NULL;
    if (t->dtype != TF_DTYPE_F32 || t->ndim != 3 - in->unbatched || t->shape[t->ndim - 1] != width)
        return tf_set_error("%s: input '%s' has shape %s; expected %s with last dim %lld", in->path,
                            name, tf_shape_str(t, s, sizeof s),
                            in->unbatched ? "(T,E)" : in->cfg->batch_first ? "(B,T,E)" : "(T,B,E)",
                            (long long)width), NULL;
    if (in->unbatched) return tf_unsqueeze(in->ctx, t, 0);
    return in->cfg->batch_first ? t : tf_transpose(in->ctx, t, 0, 1);
}

/* Masks of one attention from Tq queries to Tk keys, checked by their input names. */
static int attn_mask(tr_inputs *in, const char *mask_name, const char *kpm_name, int64_t B,
                     int64_t H, int64_t Tq, int64_t Tk, tf_attn_mask *out) {
    memset(out, 0, sizeof *out);
    tf_tensor *m = mask_name ? input(in, mask_name) : NULL, *k = kpm_name ? input(in, kpm_name) : NULL;
    char s[64];
    if (m && !((m->ndim == 2 && m->shape[0] == Tq && m->shape[1] == Tk) ||
               (m->ndim == 3 && m->shape[0] == B * H && m->shape[1] == Tq && m->shape[2] == Tk)))
        return tf_set_error("%s: '%s' has shape %s; expected (%lld,%lld) or (%lld,%lld,%lld)", in->path,
                            mask_name, tf_shape_str(m, s, sizeof s), (long long)Tq, (long long)Tk,
                            (long long)(B * H), (long long)Tq, (long long)Tk);
    if (k && !(in->unbatched ? k->ndim == 1 && k->shape[0] == Tk
                             : k->ndim == 2 && k->shape[0] == B && k->shape[1] == Tk))
        return tf_set_error("%s: '%s' has shape %s; expected (%s%lld)", in->path, kpm_name,
                            tf_shape_str(k, s, sizeof s), in->unbatched ? "" : "B,", (long long)Tk);
    out->mask = m;
    out->key_padding_mask = k && in->unbatched ? tf_unsqueeze(in->ctx, k, 0) : k;
    return 0;
}

static int register_module(tf_params *ps, const tr_config *c, tr_weights *w, const tf_st_file *wf) {
    switch (c->kind) {
    case TR_MHA: return tf_mha_register(ps, "", &w->mha, &c->mha);
    case TR_ENCODER_LAYER: return tf_encoder_layer_register(ps, "", &w->layer, &c->layer);
    case TR_DECODER_LAYER: return tf_decoder_layer_register(ps, "", &w->layer, &c->layer);
    case TR_CO_RETRO:
    case TR_CO_SINGLE:
    case TR_CO_ENCODER: return tr_continual_register(ps, c, &w->co);
    case TR_ENCODER:
    case TR_DECODER: {
        tf_block_config lc = c->layer;
        lc.cross = c->kind == TR_DECODER;
        return tf_stack_register(ps, "", &w->stack, &lc, c->num_layers, tf_st_find(wf, "norm.weight") != NULL);
    }
    default:
        return tf_transformer_register(ps, "", &w->tr, &c->layer, c->num_encoder_layers, c->num_decoder_layers);
    }
}

/* Run the module; returns its output (B,T,E) and, for attention, the weights. */
static tf_tensor *forward(tr_inputs *in, const tr_weights *w, tf_tensor **weights) {
    const tr_config *c = in->cfg;
    const char *const *S = SEQS[c->kind], *const *M = MASKS[c->kind];
    tf_ctx *ctx = in->ctx;
    tf_tensor *first = input(in, S[0]);
    if (!first) return tf_set_error("%s: missing input tensor '%s'", in->path, S[0]), NULL;
    if (c->kind >= TR_CO_RETRO) {
        if (in->grad_output)
            return tf_set_error("%s: grad_output: %s runs step by step, without gradients (its batch mode is the "
                                "regular module)", in->path, tr_module_name(c->kind)), NULL;
        return tr_continual_forward(ctx, c, &w->co, first, in->path);
    }
    in->unbatched = first->ndim == 2;
    if (c->kind == TR_MHA) {
        tf_tensor *q, *k, *v; /* in order, so that the first bad one is reported */
        tf_attn_mask am;
        if (!(q = sequence(in, "query", c->mha.d_model)) || !(k = sequence(in, "key", c->mha.kdim)) ||
            !(v = sequence(in, "value", c->mha.vdim)))
            return NULL;
        if (k->shape[0] != q->shape[0] || v->shape[0] != q->shape[0] || v->shape[1] != k->shape[1])
            return tf_set_error("%s: query, key and value disagree on batch size or key length", in->path), NULL;
        if (attn_mask(in, "attn_mask", "key_padding_mask", q->shape[0], c->mha.n_head,
                      q->shape[1], k->shape[1], &am))
            return NULL;
        return tf_mha_forward(ctx, &w->mha, q, k, v, &am, weights);
    }
    int64_t d = c->layer.d_model, H = c->layer.n_head;
    tf_tensor *a = sequence(in, S[0], d), *b = NULL;
    if (!a || (S[1] && !(b = sequence(in, S[1], d)))) return NULL;
    if (b && a->shape[0] != b->shape[0])
        return tf_set_error("%s: '%s' and '%s' have different batch sizes", in->path, S[0], S[1]), NULL;
    int64_t B = a->shape[0];
    tf_attn_mask m1, m2, m3;
    tf_block_args args = {0};
    switch (c->kind) {
    case TR_ENCODER_LAYER:
    case TR_ENCODER:
        if (attn_mask(in, M[0], M[1], B, H, a->shape[1], a->shape[1], &m1)) return NULL;
        args.self_mask = &m1;
        return c->kind == TR_ENCODER ? tf_stack_forward(ctx, &w->stack, &c->layer, a, &args)
                                     : tf_block_forward(ctx, &w->layer, &c->layer, a, &args);
    case TR_DECODER_LAYER:
    case TR_DECODER: /* a = tgt, b = memory */
        if (attn_mask(in, M[0], M[2], B, H, a->shape[1], a->shape[1], &m1) ||
            attn_mask(in, M[1], M[3], B, H, a->shape[1], b->shape[1], &m2))
            return NULL;
        args.memory = b, args.self_mask = &m1, args.cross_mask = &m2;
        return c->kind == TR_DECODER ? tf_stack_forward(ctx, &w->stack, &c->layer, a, &args)
                                     : tf_block_forward(ctx, &w->layer, &c->layer, a, &args);
    default: /* a = src, b = tgt */
        if (attn_mask(in, M[0], M[3], B, H, a->shape[1], a->shape[1], &m1) ||
            attn_mask(in, M[1], M[4], B, H, b->shape[1], b->shape[1], &m2) ||
            attn_mask(in, M[2], M[5], B, H, b->shape[1], a->shape[1], &m3))
            return NULL;
        return tf_transformer_forward(ctx, &w->tr, &c->layer, a, b, &m1, &m2, &m3);
    }
}

/* Back to the caller's layout: (T,B,E) unless batch_first, (T,E) when unbatched. */
static tf_tensor *to_torch_layout(tr_inputs *in, tf_tensor *y, int is_weights) {
    if (!y) return NULL;
    if (in->cfg->kind >= TR_CO_RETRO) return y; /* continual-inference's own layouts */
    if (in->unbatched) return tf_reshape(in->ctx, y, 2, (int64_t[]){y->shape[1], y->shape[2]});
    if (is_weights || in->cfg->batch_first) return y;
    return tf_contiguous(in->ctx, tf_transpose(in->ctx, y, 0, 1));
}

static int write_outputs(const tr_inputs *in, const tf_params *ps, tf_tensor *out, tf_tensor *weights,
                         const char *path) {
    tf_st_writer *w = tf_st_writer_new();
    if (!w) return tf_set_error("out of memory");
    int rc = tf_st_writer_add(w, "output", out);
    if (!rc && weights) rc = tf_st_writer_add(w, "attn_output_weights", weights);
    char name[300];
    for (int i = 0; !rc && in->grad_output && i < in->n; i++)
        if (in->t[i]->grad) {
            snprintf(name, sizeof name, "grad.%s", in->name[i]);
            rc = tf_st_writer_add_grad(w, name, in->t[i]);
        }
    for (int i = 0; !rc && in->grad_output && i < tf_params_count(ps); i++) {
        snprintf(name, sizeof name, "grad.%s", tf_params_name(ps, i));
        rc = tf_st_writer_add_grad(w, name, tf_params_tensor(ps, i));
    }
    if (!rc) rc = tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    return rc;
}

/* Prefix the current error with a file name (the message is copied first:
 * tf_set_error must not read the buffer it writes). */
static int prefix_error(const char *prefix) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: %s", prefix, msg);
}

static void free_weights(const tr_config *c, tr_weights *w) {
    if (c->kind == TR_ENCODER || c->kind == TR_DECODER) tf_stack_free(&w->stack);
    if (c->kind == TR_TRANSFORMER) tf_transformer_free(&w->tr);
    if (c->kind >= TR_CO_RETRO) tr_continual_free(c, &w->co);
}

int tf_torch_run(const char *config_path, const char *weights_path, const char *input_path,
                 const char *output_path, FILE *log) {
    tr_config cfg;
    if (tr_config_load(config_path, &cfg, log)) return -1;
    tf_st_file *wf = tf_st_open(weights_path), *inf = wf ? tf_st_open(input_path) : NULL;
    tf_params *ps = tf_params_new();
    tf_ctx *ctx = tf_ctx_new(0);
    tr_weights w;
    memset(&w, 0, sizeof w);
    tr_inputs in = {.cfg = &cfg, .ctx = ctx, .path = input_path};
    int rc = -1;
    if (!wf || !inf || !ps || !ctx) goto out;
    if (register_module(ps, &cfg, &w, wf) || tf_params_load(ps, wf, 1)) {
        prefix_error(weights_path);
        goto out;
    }
    if (load_inputs(&in, inf, log)) goto out;
    tf_tensor *weights = NULL;
    tf_tensor *y = forward(&in, &w, cfg.kind == TR_MHA ? &weights : NULL);
    tf_tensor *out = to_torch_layout(&in, y, 0);
    if (weights) weights = to_torch_layout(&in, weights, 1);
    if (!out) goto out;
    if (in.grad_output && tf_backward(ctx, out, in.grad_output)) {
        prefix_error(input_path);
        goto out;
    }
    rc = write_outputs(&in, ps, out, weights, output_path);
out:
    free_weights(&cfg, &w);
    tf_ctx_free(ctx);
    tf_params_free(ps);
    tf_st_close(inf);
    tf_st_close(wf);
    return rc;
}
