/* Hugging Face MarianMTModel folders (config.json with model_type "marian",
 * model.safetensors) as the one encoder-decoder: Marian is post-LN with
 * sinusoidal positions in halves (computed, not stored), embeddings times
 * sqrt(d_model) when scale_embedding, a final_logits_bias (1,V), SiLU
 * ("swish") by default, and its special ids inside the vocabulary
 * (decoder_start_token_id = pad_token_id). Settings tformer does not compute
 * are refused by name. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../nn/nn_internal.h"
#include "../../util/util.h"
#include "seq2seq_internal.h"

/* config.json's keys, MarianConfig's defaults (transformers 4.x); the sizes
 * are required (save_pretrained always writes them). */
typedef struct {
    int vocab, decoder_vocab, context, d_model, enc_layers, dec_layers, enc_heads, dec_heads, enc_ffn, dec_ffn;
    tf_activation activation;
    float dropout, attn_dropout, activation_dropout;
    int scale_embedding, share, tied, pad, eos, start;
} marian_config;

/* ACT2FN's names by tf_activation value ("gelu" is the erf form). */
static const char *const HF_ACTIVATIONS[] = {"relu", "gelu", "gelu_new|gelu_pytorch_tanh", "swish|silu", NULL};
#define HF(m, type, name, def, flags) TF_FIELD_ROW(marian_config, m, type, name, def, NULL, NULL, NULL, flags, NULL)
#define REQ TF_FIELD_REQUIRED
static const tf_field HF_ROWS[] = {
    HF(vocab, TF_FIELD_INT, "vocab_size", "58101", REQ),
    HF(decoder_vocab, TF_FIELD_INT, "decoder_vocab_size", "0", TF_FIELD_NULL_ZERO), /* 0: vocab_size */
    HF(context, TF_FIELD_INT, "max_position_embeddings", "1024", REQ),
    HF(d_model, TF_FIELD_INT, "d_model", "1024", REQ),
    HF(enc_layers, TF_FIELD_INT, "encoder_layers", "12", REQ),
    HF(dec_layers, TF_FIELD_INT, "decoder_layers", "12", REQ),
    HF(enc_heads, TF_FIELD_INT, "encoder_attention_heads", "16", REQ),
    HF(dec_heads, TF_FIELD_INT, "decoder_attention_heads", "16", REQ),
    HF(enc_ffn, TF_FIELD_INT, "encoder_ffn_dim", "4096", REQ),
    HF(dec_ffn, TF_FIELD_INT, "decoder_ffn_dim", "4096", REQ),
    TF_FIELD_ROW(marian_config, activation, TF_FIELD_ENUM, "activation_function", "gelu", NULL, HF_ACTIVATIONS, NULL, 0,
                 NULL),
    HF(dropout, TF_FIELD_FLOAT, "dropout", "0.1", 0),
    HF(attn_dropout, TF_FIELD_FLOAT, "attention_dropout", "0", 0),
    HF(activation_dropout, TF_FIELD_FLOAT, "activation_dropout", "0", 0),
    HF(scale_embedding, TF_FIELD_BOOL, "scale_embedding", "false", 0),
    HF(share, TF_FIELD_BOOL, "share_encoder_decoder_embeddings", "true", 0),
    HF(tied, TF_FIELD_BOOL, "tie_word_embeddings", "true", 0),
    HF(pad, TF_FIELD_INT, "pad_token_id", "58100", 0),
    HF(eos, TF_FIELD_INT, "eos_token_id", "0", 0),
    HF(start, TF_FIELD_INT, "decoder_start_token_id", "58100", 0),
};
#undef HF
#undef REQ
static const tf_field_table HF_TABLE = {"config.json", HF_ROWS, (int)(sizeof HF_ROWS / sizeof HF_ROWS[0])};

/* Older Marian / BART-family keys that change the arithmetic: accepted only
 * at the value tformer computes. */
static const struct {
    const char *key;
    int supported;
} FLAGS[] = {
    {"normalize_before", 0}, {"normalize_embedding", 0}, {"layernorm_embedding", 0}, {"add_final_layer_norm", 0},
    {"add_bias_logits", 0},  {"tie_encoder_decoder", 0}, {"static_position_embeddings", 1},
};

static int refuse_unsupported(const cJSON *root, const marian_config *h, const char *path) {
    for (size_t i = 0; i < sizeof FLAGS / sizeof FLAGS[0]; i++) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, FLAGS[i].key);
        if (j && !cJSON_IsNull(j) && (!cJSON_IsBool(j) || cJSON_IsTrue(j) != FLAGS[i].supported))
            return tf_set_error("%s: \"%s\" must be %s: tformer's Marian does not implement the other setting", path,
                                FLAGS[i].key, FLAGS[i].supported ? "true" : "false");
    }
    if (h->enc_heads != h->dec_heads)
        return tf_set_error("%s: encoder_attention_heads %d and decoder_attention_heads %d differ: tformer's "
                            "encoder-decoder has one n_head", path, h->enc_heads, h->dec_heads);
    if (h->enc_ffn != h->dec_ffn)
        return tf_set_error("%s: encoder_ffn_dim %d and decoder_ffn_dim %d differ: tformer's encoder-decoder has one "
                            "d_ff", path, h->enc_ffn, h->dec_ffn);
    int dv = h->decoder_vocab ? h->decoder_vocab : h->vocab;
    if (!h->share && dv != h->vocab) /* transformers 4.x builds the decoder's table with vocab_size rows */
        return tf_set_error("%s: decoder_vocab_size %d differs from vocab_size %d: not supported (tformer's target "
                            "embedding and output layer have one size)", path, dv, h->vocab);
    return 0;
}

/* MarianConfig -> the seq2seq config. */
int tf_seq2seq_config_from_marian(const cJSON *root, const char *path, tf_seq2seq_config *c) {
    marian_config h;
    tf_fields f = {&HF_TABLE, &h};
    if (tf_fields_defaults(&f, 1) || tf_fields_from_json(root, &f, 1, path, 1) || refuse_unsupported(root, &h, path))
        return -1;
    *c = tf_seq2seq_config_default(h.vocab, h.vocab);
    c->context = h.context, c->n_encoder_layers = h.enc_layers, c->n_decoder_layers = h.dec_layers;
    c->n_head = h.enc_heads, c->d_model = h.d_model, c->d_ff = h.enc_ffn, c->dropout = h.dropout;
    c->attn_dropout = h.attn_dropout, c->activation_dropout = h.activation_dropout;
    c->pos = TF_POS_SINUSOIDAL_HALVES, c->norm_first = 0, c->activation = h.activation;
    c->share_embeddings = h.share, c->tied = h.tied, c->scale_embedding = h.scale_embedding, c->norm_eps = 1e-5f;
    c->final_logits_bias = 1, c->pad_id = h.pad, c->bos_id = h.start, c->eos_id = h.eos;
    if (!tf_seq2seq_config_check(c)) return 0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: %s", path, msg);
}

/* ---------------------------------------------------------------- weights */

/* The file's tensor for one of ours: tied and shared tables may be stored
 * under any of the names transformers gives them (save_pretrained keeps one). */
static const tf_st_entry *find_param(const tf_st_file *f, const tf_seq2seq_config *c, const char *name) {
    static const char *const SHARED[] = {"model.shared.weight", "model.encoder.embed_tokens.weight",
                                         "model.decoder.embed_tokens.weight", "lm_head.weight"};
    const tf_st_entry *e = tf_st_find(f, name);
    int n = !strcmp(name, SHARED[0]) ? (c->tied ? 4 : 3) : 0;
    for (int i = 1; !e && i < n; i++) e = tf_st_find(f, SHARED[i]);
    if (!e && c->tied && !strcmp(name, SHARED[2])) e = tf_st_find(f, SHARED[3]);
    return e;
}

/* Tensors transformers may store besides ours: copies of tied or shared tables
 * and the position tables (checked against the computed one). */
static int known_extra(const tf_seq2seq_config *c, int shared_unused, const char *name) {
    if (strstr(name, ".embed_positions.weight")) return 1;
    if (shared_unused && !strcmp(name, "model.shared.weight")) return 1;
    if (c->share_embeddings && (!strcmp(name, "model.encoder.embed_tokens.weight") ||
                                !strcmp(name, "model.decoder.embed_tokens.weight")))
        return 1;
    return c->tied && !strcmp(name, "lm_head.weight");
}

/* A stored position table must be Marian's sinusoidal one: tformer computes it. */
static int check_positions(const tf_st_file *f, const tf_seq2seq_config *c, const char *name, const char *path) {
    const tf_st_entry *e = tf_st_find(f, name);
    if (!e) return 0;
    tf_arena *a = tf_arena_new(0);
    tf_tensor *t = a ? tf_st_to_tensor(f, e, a) : NULL;  // (P,C) stored
    int rc = t ? 0 : -1;
    if (t && (t->ndim != 2 || t->shape[1] != c->d_model))
        rc = tf_set_error("%s: tensor '%s' has the wrong shape for config.json", path, name);
    tf_tensor *want = rc ? NULL : tf_tensor_alloc(a, TF_DTYPE_F32, 2, t->shape, 0);  // (P,C) computed
    if (!rc && !want) rc = -1;
    if (!rc) tf_posenc_sinusoidal_halves(tf_f32(want), 0, t->shape[0], c->d_model);
    for (int64_t i = 0; !rc && i < tf_numel(t); i++)
        if (fabsf(tf_f32(want)[i] - tf_f32(t)[i]) > 1e-6f)
            rc = tf_set_error("%s: '%s' is not Marian's sinusoidal table (position %lld differs): tformer computes "
                              "the positions", path, name, (long long)(i / c->d_model));
    tf_arena_free(a);
    return rc;
}

/* The table a stored copy (known_extra) repeats: the shared one, or the
 * decoder's under tie_word_embeddings; NULL for the position tables and for
 * model.shared.weight where no forward reads it (shared_unused). */
static const char *copied_table(const tf_seq2seq_config *c, int shared_unused, const char *name) {
    if (strstr(name, ".embed_positions.weight") || (shared_unused && !strcmp(name, "model.shared.weight")))
        return NULL;
    return c->share_embeddings ? "model.shared.weight" : "model.decoder.embed_tokens.weight";
}

/* Every stored copy of a shared or tied table must hold the values read for
 * it (a folder whose copies differ is no model transformers 4.x and 5.x read
 * alike: 4.x loads the last copy into its one table). 5.x's untied layout of
 * shared embeddings, its tables apart, is read apart (apart_tables) and its
 * model.shared.weight, which no forward reads, is not compared. */
static int check_copies(const tf_st_file *f, const tf_params *ps, const tf_seq2seq_config *c, int shared_unused,
                        const char *path) {
    tf_arena *a = tf_arena_new(0);
    int rc = a ? 0 : tf_set_error("%s: out of memory", path);
    for (int i = 0; !rc && i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        const char *of = tf_params_get(ps, e->name) ? NULL : copied_table(c, shared_unused, e->name);
        tf_tensor *table = of ? tf_params_get(ps, of) : NULL;  // (V,C) as read
        tf_tensor *copy = table ? tf_st_to_tensor(f, e, a) : NULL;  // (V,C) stored under another name
        if (table && !copy) rc = -1;
        else if (copy && (tf_numel(copy) != tf_numel(table) ||
                          memcmp(tf_f32(copy), tf_f32(table), (size_t)tf_numel(table) * sizeof(float))))
            rc = tf_set_error("%s: tensor '%s' differs from '%s', which config.json makes one table with it "
                              "(share_encoder_decoder_embeddings %s, tie_word_embeddings %s): tformer reads one "
                              "table and refuses to choose", path, e->name, of,
                              c->share_embeddings ? "true" : "false", c->tied ? "true" : "false");
    }
    tf_arena_free(a);
    return rc;
}

/* shared_unused: transformers 5.x's untied layout (apart_tables), whose model.shared.weight no forward reads. */
static int load_weights(tf_seq2seq *m, const char *path, int shared_unused) {
    tf_st_file *f = tf_st_open(path);
    if (!f) return -1;
    const tf_seq2seq_config *c = &m->cfg;
    tf_params *ps = m->params;
    int rc = tf_params_alloc(ps); /* zeros: a missing final_logits_bias stays 0, as transformers' buffer */
    for (int i = 0; !rc && i < tf_params_count(ps); i++) {
        const char *name = tf_params_name(ps, i);
        const tf_st_entry *e = find_param(f, c, name);
        tf_tensor *t = tf_params_tensor(ps, i);
        int same = e && e->ndim == t->ndim;
        for (int d = 0; same && d < t->ndim; d++) same = e->shape[d] == t->shape[d];
        if (!e && !strcmp(name, "final_logits_bias")) continue;
        if (!e) rc = tf_set_error("%s: missing tensor '%s'", path, name);
        else if (!same) rc = tf_set_error("%s: tensor '%s' has the wrong shape for config.json", path, e->name);
        else rc = tf_st_read_f32(f, e, t);
    }
    for (int i = 0; !rc && i < tf_st_count(f); i++) {
        const char *name = tf_st_entry_at(f, i)->name;
        if (!tf_params_get(ps, name) && !known_extra(c, shared_unused, name))
            rc = tf_set_error("%s: unexpected tensor '%s'", path, name);
    }
    if (!rc) rc = check_copies(f, ps, c, shared_unused, path);
    if (!rc) rc = check_positions(f, c, "model.encoder.embed_positions.weight", path);
    if (!rc) rc = check_positions(f, c, "model.decoder.embed_positions.weight", path);
    tf_st_close(f);
    return rc;
}

/* share_encoder_decoder_embeddings true with tie_word_embeddings false: transformers
 * 4.x's encoder and decoder both read model.shared (save_pretrained writes it and
 * lm_head.weight), while 5.x ties them to it only with tie_word_embeddings, so it
 * runs and writes three tables apart: model.encoder.embed_tokens.weight,
 * model.decoder.embed_tokens.weight and lm_head.weight (model.shared.weight then
 * unused). *apart: the file holds both embed_tokens tables (5.x's layout, run as
 * separate tables; equal copies give the same numbers either way). */
static int apart_tables(const char *path, const tf_seq2seq_config *c, int *apart) {
    *apart = 0;
    if (!c->share_embeddings || c->tied) return 0;
    tf_st_file *f = tf_st_open(path);
    if (!f) return -1;
    const tf_st_entry *dec = tf_st_find(f, "model.decoder.embed_tokens.weight");
    *apart = dec && tf_st_find(f, "model.encoder.embed_tokens.weight");
    int rows = *apart && dec->ndim == 2 && dec->shape[0] != c->tgt_vocab; /* 5.x: decoder_vocab_size rows */
    tf_st_close(f);
    if (rows)
        return tf_set_error("%s: model.decoder.embed_tokens.weight has decoder_vocab_size rows, not vocab_size %d: not "
                            "supported (tformer's target embedding and output layer have one size)", path,
                            (int)c->tgt_vocab);
    return 0;
}

int tf_seq2seq_is_marian(const char *dir) {
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "config.json") || access(path, R_OK)) return 0;
    cJSON *root = tf_json_read(path);
    const cJSON *mt = root ? cJSON_GetObjectItemCaseSensitive(root, "model_type") : NULL;
    int yes = cJSON_IsString(mt) && !strcmp(mt->valuestring, "marian");
    cJSON_Delete(root);
    return yes;
}

tf_seq2seq *tf_seq2seq_load_marian(const char *dir) {
    char path[4096];
    tf_seq2seq_config c;
    if (tf_path_join(path, sizeof path, dir, "config.json")) return NULL;
    cJSON *root = tf_json_read(path);
    int rc = !root || tf_seq2seq_config_from_marian(root, path, &c);
    cJSON_Delete(root);
    if (rc) { /* say how the file was read: a tformer folder edited by hand may carry the name */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tf_error());
        return tf_set_error("%s (read as Hugging Face Marian's: model_type \"marian\")", msg), NULL;
    }
    if (tf_path_join(path, sizeof path, dir, "model.safetensors")) return NULL;
    if (access(path, F_OK)) {
        char bin[4096];
        if (tf_path_join(bin, sizeof bin, dir, "pytorch_model.bin")) return NULL;
        if (!access(bin, F_OK))
            return tf_set_error("%s: only pytorch_model.bin, which tformer does not read: re-save the model with "
                                "safetensors (model.save_pretrained(dir, safe_serialization=True))", dir), NULL;
        return tf_set_error("%s: no model.safetensors", dir), NULL;
    }
    int apart;
    if (apart_tables(path, &c, &apart)) return NULL;
    if (apart) c.share_embeddings = 0; /* the source and target tables as stored */
    tf_seq2seq *m = tf_seq2seq_new(&c, 0);
    if (m && load_weights(m, path, apart)) {
        tf_seq2seq_free(m);
        return NULL;
    }
    return m;
}

/* ---------------------------------------------------------------- generate()'s settings */

static int read_bad_words(const cJSON *bad, const char *path, int32_t vocab, tf_marian_generation *g) {
    const cJSON *w;
    if (!bad || cJSON_IsNull(bad)) return 0;
    if (!cJSON_IsArray(bad)) return tf_set_error("%s: \"bad_words_ids\" must be a list of lists of ids", path);
    cJSON_ArrayForEach(w, bad) {
        const cJSON *id = cJSON_IsArray(w) ? cJSON_GetArrayItem(w, 0) : NULL;
        if (!cJSON_IsArray(w) || cJSON_GetArraySize(w) != 1)
            return tf_set_error("%s: \"bad_words_ids\" entries of more than one token are not implemented "
                                "(only single tokens, as Helsinki-NLP's [[pad]])", path);
        if (!cJSON_IsNumber(id) || id->valuedouble != (double)id->valueint || id->valueint < 0 ||
            id->valueint >= vocab)
            return tf_set_error("%s: \"bad_words_ids\" holds an id outside the vocabulary of %d", path, (int)vocab);
        if (g->n_bad_ids == TF_MARIAN_MAX_BAD)
            return tf_set_error("%s: more than %d \"bad_words_ids\"", path, TF_MARIAN_MAX_BAD);
        g->bad_ids[g->n_bad_ids++] = id->valueint;
    }
    return 0;
}

/* generate()'s settings that change its ids and that tformer does not
 * apply, with the value that leaves them off (NAN: only null, false or
 * absent; an empty list is off too). */
static const struct {
    const char *key;
    double off;
} NOT_APPLIED[] = {
    {"no_repeat_ngram_size", 0}, {"encoder_no_repeat_ngram_size", 0}, {"min_length", 0}, {"min_new_tokens", 0},
    {"repetition_penalty", 1}, {"encoder_repetition_penalty", 1}, {"diversity_penalty", 0}, {"num_beam_groups", 1},
    {"do_sample", NAN}, {"penalty_alpha", NAN}, {"forced_bos_token_id", NAN}, {"suppress_tokens", NAN},
    {"begin_suppress_tokens", NAN}, {"forced_decoder_ids", NAN}, {"exponential_decay_length_penalty", NAN},
    {"sequence_bias", NAN}, {"guidance_scale", 1}, {"force_words_ids", NAN}, {"constraints", NAN},
    {"max_time", NAN}, {"num_return_sequences", 1},
};

static int check_not_applied(const cJSON *src, const char *path) {
    for (size_t i = 0; i < sizeof NOT_APPLIED / sizeof NOT_APPLIED[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, NOT_APPLIED[i].key);
        int off = !v || cJSON_IsNull(v) || cJSON_IsFalse(v) || (cJSON_IsArray(v) && !cJSON_GetArraySize(v)) ||
                  (cJSON_IsNumber(v) && v->valuedouble == NOT_APPLIED[i].off);
        if (!off)
            return tf_set_error("%s: \"%s\" is set, which tformer's decoding does not apply (generate() would give "
                                "other ids): remove it, or decode with transformers", path, NOT_APPLIED[i].key);
    }
    return 0;
}

/* max_new_tokens, else max_length - 1 (the start token is the first of max_length); GenerationConfig's 20. */
static int read_lengths(const cJSON *src, const char *path, tf_marian_generation *g) {
    const cJSON *most = cJSON_GetObjectItemCaseSensitive(src, "max_length");
    const cJSON *fresh = cJSON_GetObjectItemCaseSensitive(src, "max_new_tokens");
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(src, "length_penalty");
    const cJSON *es = cJSON_GetObjectItemCaseSensitive(src, "early_stopping");
    if (most && !cJSON_IsNull(most) && (!cJSON_IsNumber(most) || most->valuedouble != (double)most->valueint ||
                                       most->valueint < 1))
        return tf_set_error("%s: \"max_length\" must be a positive integer", path);
    if (fresh && !cJSON_IsNull(fresh) && (!cJSON_IsNumber(fresh) || fresh->valuedouble != (double)fresh->valueint ||
                                         fresh->valueint < 1))
        return tf_set_error("%s: \"max_new_tokens\" must be a positive integer or null", path);
    if (lp && (!cJSON_IsNumber(lp) || !isfinite(lp->valuedouble)))
        return tf_set_error("%s: \"length_penalty\" must be a number", path);
    if (es && !cJSON_IsBool(es) && !(cJSON_IsString(es) && !strcmp(es->valuestring, "never")))
        return tf_set_error("%s: \"early_stopping\" must be true, false or \"never\"", path);
    if (cJSON_IsNumber(most)) g->max_new_tokens = most->valueint - 1;
    if (cJSON_IsNumber(fresh)) g->max_new_tokens = fresh->valueint;
    if (lp) g->length_penalty = (float)lp->valuedouble;
    if (es)
        g->beam_stop = cJSON_IsString(es) ? TF_BEAM_HF_NEVER
                       : cJSON_IsTrue(es) ? TF_BEAM_HF_EARLY
                                          : TF_BEAM_HF_HEURISTIC;
    g->renormalize_logits = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(src, "renormalize_logits"));
    return 0;
}

int tf_seq2seq_marian_generation(const char *dir, tf_marian_generation *g) {
    char path[4096];
    *g = (tf_marian_generation){0, {0}, 0, 1, 19, 1.0f, TF_BEAM_HF_HEURISTIC, 0};
    if (tf_path_join(path, sizeof path, dir, "config.json")) return -1;
    cJSON *cfg = tf_json_read(path);
    const cJSON *v = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, "decoder_vocab_size") : NULL;
    if (!cfg) return -1;
    if (!cJSON_IsNumber(v)) v = cJSON_GetObjectItemCaseSensitive(cfg, "vocab_size");
    int32_t vocab = cJSON_IsNumber(v) ? v->valueint : 0;
    if (tf_path_join(path, sizeof path, dir, "generation_config.json")) return cJSON_Delete(cfg), -1;
    int has_gen = access(path, F_OK) == 0;
    cJSON *gen = has_gen ? tf_json_read(path) : NULL;
    if (has_gen && !gen) return cJSON_Delete(cfg), -1; /* the reader's message names the file */
    if (!gen) tf_path_join(path, sizeof path, dir, "config.json"); /* it fitted above */
    int rc = 0;
    const cJSON *src = gen ? gen : cfg, *f = cJSON_GetObjectItemCaseSensitive(src, "forced_eos_token_id");
    const cJSON *beams = cJSON_GetObjectItemCaseSensitive(src, "num_beams");
    if (!rc && gen && !f) g->forced_eos_id = -1; /* a generation config names what it forces */
    if (!rc && f && cJSON_IsNull(f)) g->forced_eos_id = -1;
    else if (!rc && f && (!cJSON_IsNumber(f) || f->valueint < 0 || f->valueint >= vocab))
        rc = tf_set_error("%s: \"forced_eos_token_id\" must be an id below %d or null", path, (int)vocab);
    else if (!rc && f) g->forced_eos_id = f->valueint;
    if (!rc && beams && (!cJSON_IsNumber(beams) || beams->valueint < 1 || beams->valueint > 64))
        rc = tf_set_error("%s: \"num_beams\" must be 1 to 64", path);
    else if (!rc && beams) g->num_beams = beams->valueint;
    if (!rc) rc = read_bad_words(cJSON_GetObjectItemCaseSensitive(src, "bad_words_ids"), path, vocab, g);
    if (!rc && (read_lengths(src, path, g) || check_not_applied(src, path))) rc = -1;
    cJSON_Delete(gen), cJSON_Delete(cfg);
    return rc;
}
