/* Hugging Face's VisionEncoderDecoderModel folders (include/tformer/caption.h): config.json's
 * "encoder" (a ViTConfig) and "decoder" (a GPT2Config with add_cross_attention, or a BertConfig:
 * caption_ved_bert.c) read by the ViT's and GPT-2's own readers; the ViT and the GPT-2 built by
 * their families, GPT-2's cross-attention
 * (q_attn, c_attn fused over k and v, c_proj, ln_cross_attn) registered beside the GPT-2's tensors;
 * preprocessor_config.json's normalisation; the folder's tokenizer when it has one. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../nn/nn_internal.h"
#include "../gpt/gpt_internal.h"
#include "../model_folder.h"
#include "../vit/vit_internal.h"
#include "caption_internal.h"

/* ---------------------------------------------------------------- config.json */

/* config[key]'s model_type: want, or (when not NULL) also */
static int sub_type(const cJSON *root, const char *path, const char *key, const char *want, const char *also,
                    const cJSON **sub) {
    *sub = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsObject(*sub)) return tf_set_error("%s: \"%s\" must be an object (a VisionEncoderDecoderModel's %s config)",
                                                   path, key, key);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(*sub, "model_type");
    const char *type = cJSON_IsString(t) ? t->valuestring : "(none)";
    if (strcmp(type, want) && (!also || strcmp(type, also)))
        return tf_set_error("%s: %s model_type \"%s\" is not supported: tformer's VisionEncoderDecoderModel reads a "
                            "\"vit\" encoder and a \"gpt2\" or \"bert\" decoder", path, key, type);
    return 0;
}

static int int_key(const cJSON *o, const char *key, int def) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(j) ? j->valueint : def;
}

/* The decoder's GPT2Config without what GPT-2 alone refuses (its cross-attention, which is ours). */
static int decoder_config(const cJSON *dec, const char *path, tf_gpt_config *c) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(dec, "add_cross_attention");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(dec, "cross_attention_hidden_size");
    if (!cJSON_IsTrue(x))
        return tf_set_error("%s: decoder \"add_cross_attention\" must be true: a decoder without cross-attention does "
                            "not read the image", path);
    if (w && !cJSON_IsNull(w))
        return tf_set_error("%s: decoder \"cross_attention_hidden_size\" must be null: GPT-2's cross-attention reads "
                            "its own width", path);
    cJSON *d = cJSON_Duplicate(dec, 1);
    if (!d) return tf_set_error("%s: out of memory", path);
    cJSON_DeleteItemFromObjectCaseSensitive(d, "add_cross_attention");
    cJSON_DeleteItemFromObjectCaseSensitive(d, "architectures");
    int body = 0, rc = tf_gpt_config_from_hf(d, path, c, &body);
    cJSON_Delete(d);
    return rc;
}

/* ---------------------------------------------------------------- preprocessor_config.json */

/* A number or an array of `channels` numbers into v. */
static int per_channel(const cJSON *j, int channels, float *v, const char *path, const char *key) {
    if (cJSON_IsNumber(j)) {
        for (int i = 0; i < channels; i++) v[i] = (float)j->valuedouble;
        return 0;
    }
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != channels)
        return tf_set_error("%s: \"%s\" must be a number or %d numbers (the image's channels)", path, key, channels);
    for (int i = 0; i < channels; i++) {
        const cJSON *e = cJSON_GetArrayItem(j, i);
        if (!cJSON_IsNumber(e)) return tf_set_error("%s: \"%s\"[%d] is not a number", path, key, i);
        v[i] = (float)e->valuedouble;
        if (!strcmp(key, "image_std") && !(v[i] > 0)) return tf_set_error("%s: \"image_std\"[%d] must be > 0", path, i);
    }
    return 0;
}

/* ViTImageProcessor's settings (its defaults without the file): rescale by 1/255, normalise. */
static int read_preprocessor(tf_caption_ved *m, const char *dir) {
    char path[4200];
    int C = m->encoder->cfg.channels;
    if (tf_path_join(path, sizeof path, dir, "preprocessor_config.json")) return -1;
    m->normalize = 1;
    for (int i = 0; i < C; i++) m->mean[i] = m->std[i] = 0.5f;
    struct stat st;
    if (stat(path, &st)) return 0;
    cJSON *root = tf_json_read(path);
    if (!root || !(m->preprocessor = cJSON_PrintUnformatted(root))) return cJSON_Delete(root), -1;
    const cJSON *rescale = cJSON_GetObjectItemCaseSensitive(root, "do_rescale");
    const cJSON *factor = cJSON_GetObjectItemCaseSensitive(root, "rescale_factor");
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "do_normalize");
    int rc = 0;
    if (cJSON_IsFalse(rescale) || (cJSON_IsNumber(factor) && fabs(factor->valuedouble * 255.0 - 1.0) > 1e-6))
        rc = tf_set_error("%s: tformer reads images as 8-bit values / 255: do_rescale must be true with "
                          "rescale_factor 1/255", path);
    m->normalize = !cJSON_IsFalse(norm);
    const cJSON *mean = cJSON_GetObjectItemCaseSensitive(root, "image_mean");
    const cJSON *std = cJSON_GetObjectItemCaseSensitive(root, "image_std");
    if (!rc && mean) rc = per_channel(mean, C, m->mean, path, "image_mean");
    if (!rc && std) rc = per_channel(std, C, m->std, path, "image_std");
    cJSON_Delete(root);
    return rc;
}

/* ---------------------------------------------------------------- the model */

static int add(tf_params *ps, const char *prefix, const char *name, tf_tensor **slot, int ndim, int64_t d0, int64_t d1,
               float init) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    return tf_params_add(ps, full, slot, ndim, (int64_t[]){d0, d1}, init);
}

/* GPT-2's cross-attention of every layer, beside its other tensors (Conv1D: (in,out)); initialised (the
 * ViT captioner's) as transformers' GPT-2 does: N(0, 0.02), c_proj's scaled by 1/sqrt(2 n_layer), biases 0,
 * the norm's weight 1. */
static int register_xattn(tf_caption_ved *m) {
    if (m->bert) return 0; /* caption_ved_bert.c registered BERT's */
    const tf_gpt_config *c = &m->decoder->cfg;
    int64_t E = c->d_model;
    tf_params *ps = m->decoder->params;
    if (!(m->xattn = calloc((size_t)c->n_layer, sizeof *m->xattn))) return tf_set_error("caption: out of memory");
    for (int i = 0; i < c->n_layer; i++) {
        tf_caption_xattn *x = &m->xattn[i];
        char p[96];
        snprintf(p, sizeof p, "transformer.h.%d.", i);
        x->norm.eps = c->norm_eps;
        float std = 0.02f, scaled = 0.02f / sqrtf(2.0f * (float)c->n_layer);
        if (add(ps, p, "crossattention.c_attn.weight", &x->kv.weight, 2, E, 2 * E, std) ||
            add(ps, p, "crossattention.c_attn.bias", &x->kv.bias, 1, 2 * E, 0, TF_INIT_ZEROS) ||
            add(ps, p, "crossattention.q_attn.weight", &x->q.weight, 2, E, E, std) ||
            add(ps, p, "crossattention.q_attn.bias", &x->q.bias, 1, E, 0, TF_INIT_ZEROS) ||
            add(ps, p, "crossattention.c_proj.weight", &x->proj.weight, 2, E, E, scaled) ||
            add(ps, p, "crossattention.c_proj.bias", &x->proj.bias, 1, E, 0, TF_INIT_ZEROS) ||
            add(ps, p, "ln_cross_attn.weight", &x->norm.weight, 1, E, 0, TF_INIT_ONES) ||
            add(ps, p, "ln_cross_attn.bias", &x->norm.bias, 1, E, 0, TF_INIT_ZEROS))
            return -1;
    }
    return 0;
}

static const tf_st_entry *find_encoder(const tf_st_file *f, const char *name) {
    char full[300];
    snprintf(full, sizeof full, "encoder.%s", name);
    return tf_st_find(f, full);
}

static const tf_st_entry *find_decoder(const tf_st_file *f, const char *name) {
    char full[300];
    snprintf(full, sizeof full, "decoder.%s", name);
    return tf_st_find(f, full);
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

/* Each call checks its own part of the file; the last (enc_to_dec_proj's) also refuses a tensor of no part. */
static int known_encoder(const tf_params *ps, const char *name) {
    return strncmp(name, "encoder.", 8) || tf_params_get(ps, name + 8);
}
static int known_decoder(const tf_params *ps, const char *name) {
    if (strncmp(name, "decoder.", 8)) return 1;
    name += 8;
    if (tf_params_get(ps, "bert.embeddings.word_embeddings.weight")) /* a BERT decoder's */
        return tf_params_get(ps, name) || tf_caption_ved_bert_extra(name); /* GPT-2's causal-mask buffers (older transformers saved them); the tied head's copy */
    return tf_params_get(ps, name) || ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") ||
           ends_with(name, ".crossattention.bias") || ends_with(name, ".crossattention.masked_bias") ||
           !strcmp(name, "lm_head.weight");
}
static int known_rest(const tf_params *ps, const char *name) {
    return !strncmp(name, "encoder.", 8) || !strncmp(name, "decoder.", 8) || tf_params_get(ps, name);
}

/* params: every tensor under its folder name, the same tensors as the parts'. */
static int gather(tf_caption_ved *m) {
    const tf_params *parts[3] = {m->encoder->params, tf_caption_ved_decoder_params(m), m->proj_params};
    const char *prefix[3] = {"encoder.", "decoder.", ""};
    int n = 0, k = 0;
    for (int p = 0; p < 3; p++) n += tf_params_count(parts[p]);
    if (!(m->params = tf_params_new()) || !(m->alias = calloc((size_t)n, sizeof *m->alias)))
        return tf_set_error("caption: out of memory");
    for (int p = 0; p < 3; p++)
        for (int i = 0; i < tf_params_count(parts[p]); i++, k++) {
            tf_tensor *t = tf_params_tensor(parts[p], i);
            char name[300];
            snprintf(name, sizeof name, "%s%s", prefix[p], tf_params_name(parts[p], i));
            if (tf_params_add(m->params, name, &m->alias[k], t->ndim, t->shape, 0)) return -1;
            m->alias[k] = t;
        }
    return 0;
}

/* The decoder's configuration: GPT-2's (bc NULL) or BERT's. */
static int build(tf_caption_ved *m, const tf_vit_config *vc, const tf_gpt_config *gc, const tf_bert_config *bc,
                 const char *weights) {
    tf_st_file *f = tf_st_open(weights);
    if (!f) return -1;
    tf_vit_config v = *vc;
    v.pooler = tf_st_find(f, "encoder.pooler.dense.weight") != NULL;
    int rc = !(m->encoder = tf_vit_new(&v, 0)) || (bc ? tf_caption_ved_bert_new(m, bc) : !(m->decoder = tf_gpt_new(gc, 0))) ||
             !(m->proj_params = tf_params_new()) || register_xattn(m);
    int E = bc ? bc->d_model : gc->d_model;
    if (!rc && vc->d_model != E)
        rc = tf_linear_register(m->proj_params, "enc_to_dec_proj", &m->enc_to_dec, vc->d_model, E, 1, 0.02f);
    rc = rc || tf_folder_read_weights(f, weights, m->encoder->params, find_encoder, known_encoder) ||
         tf_folder_read_weights(f, weights, tf_caption_ved_decoder_params(m), find_decoder, known_decoder) ||
         tf_folder_read_weights(f, weights, m->proj_params, NULL, known_rest) || gather(m);
    tf_st_close(f);
    return rc ? -1 : 0;
}

/* The folder's tokenizer when it holds one (GPT-2's vocab.json and merges.txt, or tokenizer.json). */
static int read_tokenizer(tf_caption_ved *m, const char *dir) {
    char a[4200], b[4200];
    struct stat st;
    if (tf_path_join(a, sizeof a, dir, "tokenizer.json") || tf_path_join(b, sizeof b, dir, "vocab.json")) return -1;
    if (stat(a, &st) && stat(b, &st)) return 0;
    return (m->tok = tf_tokenizer_load(dir)) ? 0 : -1;
}

/* An image's channels: the image processor's mean and std have one each. */
static int channels(const tf_vit_config *c, const char *path) {
    return c->channels == 1 || c->channels == 3
               ? 0 : tf_set_error("%s: encoder num_channels %d: an image has 1 or 3", path, c->channels);
}

static int read_ids(tf_caption_ved *m, const cJSON *root, const cJSON *dec, const char *path) {
    m->start_id = int_key(root, "decoder_start_token_id", int_key(dec, "bos_token_id", -1));
    m->eos_id = int_key(root, "eos_token_id", int_key(dec, "eos_token_id", -1));
    m->pad_id = int_key(root, "pad_token_id", -1);
    int V = tf_caption_ved_decoder_dims(m).vocab;
    if (m->start_id < 0 || m->start_id >= V)
        return tf_set_error("%s: decoder_start_token_id %d: an id below the decoder's vocab_size %d is needed to "
                            "start a caption", path, m->start_id, V);
    if (m->eos_id >= V) m->eos_id = -1;
    return 0;
}

tf_caption_ved *tf_caption_ved_load(const char *dir) {
    char path[4200], weights[4200];
    if (tf_path_join(path, sizeof path, dir, "config.json") ||
        tf_path_join(weights, sizeof weights, dir, "model.safetensors"))
        return NULL;
    tf_caption_ved *m = calloc(1, sizeof *m);
    cJSON *root = tf_json_read(path);
    const cJSON *enc = NULL, *dec = NULL;
    tf_vit_config vc;
    tf_gpt_config gc;
    tf_bert_config bc;
    memset(&gc, 0, sizeof gc), memset(&bc, 0, sizeof bc);
    int rc = !m || !root || sub_type(root, path, "encoder", "vit", NULL, &enc) ||
             sub_type(root, path, "decoder", "gpt2", "bert", &dec) || tf_vit_config_from_hf(enc, path, &vc) ||
             channels(&vc, path);
    int bert = !rc && !strcmp(cJSON_GetObjectItemCaseSensitive(dec, "model_type")->valuestring, "bert");
    rc = rc || (bert ? tf_caption_ved_bert_config(dec, path, &bc) : decoder_config(dec, path, &gc)) ||
         build(m, &vc, &gc, bert ? &bc : NULL, weights);
    if (!rc && (read_ids(m, root, dec, path) || read_preprocessor(m, dir) || read_tokenizer(m, dir))) rc = 1;
    if (!rc && !(m->config = cJSON_PrintUnformatted(root))) rc = tf_set_error("caption: out of memory");
    cJSON_Delete(root);
    if (rc && !m) tf_set_error("caption: out of memory");
    if (rc) tf_caption_ved_free(m), m = NULL;
    return m;
}

/* The ViT captioner's model (caption_vit.c): built from its config.json object, not read. */
tf_caption_ved *tf_caption_ved_new(const cJSON *root, const char *path) {
    tf_caption_ved *m = calloc(1, sizeof *m);
    const cJSON *enc = NULL, *dec = NULL;
    tf_vit_config vc;
    tf_gpt_config gc;
    int rc = !m || sub_type(root, path, "encoder", "vit", NULL, &enc) || sub_type(root, path, "decoder", "gpt2", NULL, &dec) ||
             tf_vit_config_from_hf(enc, path, &vc) || channels(&vc, path) || decoder_config(dec, path, &gc);
    rc = rc || !(m->encoder = tf_vit_new(&vc, 0)) || !(m->decoder = tf_gpt_new(&gc, 0)) ||
         !(m->proj_params = tf_params_new()) || register_xattn(m) ||
         (vc.d_model != gc.d_model &&
          tf_linear_register(m->proj_params, "enc_to_dec_proj", &m->enc_to_dec, vc.d_model, gc.d_model, 1, 0.02f)) ||
         !(m->params = tf_params_new()) || tf_params_add_view(m->params, "encoder.", m->encoder->params) ||
         tf_params_add_view(m->params, "decoder.", m->decoder->params) || tf_params_add_view(m->params, "", m->proj_params) ||
         read_ids(m, root, dec, path) || !(m->config = cJSON_PrintUnformatted(root));
    if (rc && !m) tf_set_error("caption: out of memory");
    if (rc) return tf_caption_ved_free(m), NULL;
    m->normalize = 1;
    for (int i = 0; i < 3; i++) m->mean[i] = m->std[i] = 0.5f; /* ViTImageProcessor's */
    return m;
}

void tf_caption_ved_free(tf_caption_ved *m) {
    if (!m) return;
    tf_params_free(m->params), tf_params_free(m->proj_params);
    tf_vit_free(m->encoder), tf_gpt_free(m->decoder), tf_caption_ved_bert_free(m->bert);
    tf_tokenizer_free(m->tok);
    free(m->xattn), free(m->alias), free(m->config), free(m->preprocessor), free(m);
}

/* ---------------------------------------------------------------- saving */

/* ViTImageProcessor's settings as read (or its defaults). */
static cJSON *preprocessor_json(const tf_caption_ved *m) {
    if (m->preprocessor) return cJSON_Parse(m->preprocessor);
    const tf_vit_config *c = &m->encoder->cfg;
    cJSON *r = cJSON_CreateObject(), *size = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "image_processor_type", "ViTImageProcessor");
    cJSON_AddBoolToObject(r, "do_resize", 1), cJSON_AddBoolToObject(r, "do_rescale", 1);
    cJSON_AddNumberToObject(r, "rescale_factor", 1.0 / 255.0);
    cJSON_AddBoolToObject(r, "do_normalize", m->normalize);
    cJSON_AddItemToObject(r, "image_mean", cJSON_CreateFloatArray(m->mean, c->channels));
    cJSON_AddItemToObject(r, "image_std", cJSON_CreateFloatArray(m->std, c->channels));
    cJSON_AddNumberToObject(r, "resample", 2);
    cJSON_AddNumberToObject(size, "height", c->image_size), cJSON_AddNumberToObject(size, "width", c->image_size);
    cJSON_AddItemToObject(r, "size", size);
    return r;
}

int tf_caption_ved_save(const tf_caption_ved *m, const char *dir) {
    if (mkdir(dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", dir, strerror(errno));
    char path[4200];
    cJSON *config = cJSON_Parse(m->config), *pre = preprocessor_json(m);
    int rc = !config || !pre ? tf_set_error("%s: out of memory", dir)
                             : tf_path_join(path, sizeof path, dir, "config.json") || tf_json_write(path, config);
    rc = rc || tf_path_join(path, sizeof path, dir, "preprocessor_config.json") || tf_json_write(path, pre);
    rc = rc || tf_path_join(path, sizeof path, dir, "model.safetensors") || tf_params_save(m->params, path);
    cJSON_Delete(config), cJSON_Delete(pre);
    return rc ? -1 : 0;
}
