/* `tformer hf-run`: a Hugging Face model folder (config.json's
 * architectures[0] + model.safetensors) run on inputs named as its forward()
 * arguments, writing the output fields Hugging Face returns, by its names.
 * The architecture table below is the one place an architecture is added. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/util.h"
#include "hf_run.h"
#include "tformer/interop.h"
#include "tformer/safetensors.h"

/* ---------------------------------------------------------------- the architecture table */

/* GPT2Model.forward() / GPT2LMHeadModel.forward() (transformers 4.x and 5.x):
 * the arguments hf-run takes, and those it refuses by name. */
static const hf_input GPT2_INPUTS[] = {
    {"input_ids", HF_IN_IDS, "B,T", 1},
    {"attention_mask", HF_IN_MASK, "B,T", 0},
    {"token_type_ids", HF_IN_IDS, "B,T", 0},
    {"position_ids", HF_IN_IDS, "B,T", 0},
    {NULL, 0, NULL, 0},
};
static const hf_input GPT2_LM_INPUTS[] = {
    {"input_ids", HF_IN_IDS, "B,T", 1},
    {"attention_mask", HF_IN_MASK, "B,T", 0},
    {"token_type_ids", HF_IN_IDS, "B,T", 0},
    {"position_ids", HF_IN_IDS, "B,T", 0},
    {"labels", HF_IN_LABELS, "B,T", 0},
    {NULL, 0, NULL, 0},
};
static const char *const GPT2_REFUSED[] = {
    "past_key_values", "head_mask", "inputs_embeds", "encoder_hidden_states", "encoder_attention_mask",
    "cache_position", "logits_to_keep", "use_cache", "output_attentions", "output_hidden_states",
    "return_dict", NULL,
};
/* ImageGPTModel / ImageGPTForCausalImageModeling.forward() (transformers 4.x): GPT-2's
 * arguments; the deprecated pixel_values (token ids under another name) is refused. */
static const char *const IMAGEGPT_REFUSED[] = {
    "pixel_values", "past_key_values", "head_mask", "inputs_embeds", "encoder_hidden_states",
    "encoder_attention_mask", "use_cache", "output_attentions", "output_hidden_states", "return_dict", NULL,
};
static const char *const OUT_LM[] = {"logits", "loss", NULL};
static const char *const OUT_BODY[] = {"last_hidden_state", NULL};

/* BertModel / BertFor*.forward() (transformers 4.x and 5.x); RobertaModel / RobertaFor* take the same. */
#define BERT_COMMON {"input_ids", HF_IN_IDS, "B,T", 1}, {"attention_mask", HF_IN_MASK, "B,T", 0}, \
                    {"token_type_ids", HF_IN_IDS, "B,T", 0}, {"position_ids", HF_IN_IDS, "B,T", 0}
static const hf_input BERT_INPUTS[] = {BERT_COMMON, {NULL, 0, NULL, 0}};
static const hf_input BERT_PRE_INPUTS[] = {
    BERT_COMMON, {"labels", HF_IN_LABELS, "B,T", 0}, {"next_sentence_label", HF_IN_IDS, "B", 0}, {NULL, 0, NULL, 0},
};
/* BigBirdModel: rand_attn is tformer's, not forward()'s: block_sparse's random
 * key blocks per layer (docs/long-sequences.md); absent, transformers' eval mode. */
static const hf_input BIGBIRD_INPUTS[] = {BERT_COMMON, {"rand_attn", HF_IN_IDS, "L,H,N,R", 0}, {NULL, 0, NULL, 0}};
static const hf_input BERT_TOKEN_INPUTS[] = {BERT_COMMON, {"labels", HF_IN_LABELS, "B,T", 0}, {NULL, 0, NULL, 0}};
static const hf_input BERT_SEQ_INPUTS[] = {BERT_COMMON, {"labels", HF_IN_TARGETS, "B", 0}, {NULL, 0, NULL, 0}};
static const hf_input BERT_QA_INPUTS[] = {
    BERT_COMMON, {"start_positions", HF_IN_INT, "B", 0}, {"end_positions", HF_IN_INT, "B", 0}, {NULL, 0, NULL, 0},
};
#undef BERT_COMMON
static const char *const BERT_REFUSED[] = {
    "head_mask", "inputs_embeds", "encoder_hidden_states", "encoder_attention_mask", "past_key_values",
    "use_cache", "output_attentions", "output_hidden_states", "return_dict", NULL,
};
static const char *const OUT_BERT_BODY[] = {"last_hidden_state", "pooler_output", NULL};

/* DistilBertModel / DistilBertFor*.forward(): no token_type_ids; position_ids
 * is 5.x's (4.x's forward() has none and counts 0..T-1, as hf-run does
 * without it); head_mask is 4.x's. */
#define DISTIL_COMMON {"input_ids", HF_IN_IDS, "B,T", 1}, {"attention_mask", HF_IN_MASK, "B,T", 0}, \
                      {"position_ids", HF_IN_IDS, "B,T", 0}
static const hf_input DISTIL_INPUTS[] = {DISTIL_COMMON, {NULL, 0, NULL, 0}};
static const hf_input DISTIL_TOKEN_INPUTS[] = {DISTIL_COMMON, {"labels", HF_IN_LABELS, "B,T", 0}, {NULL, 0, NULL, 0}};
static const hf_input DISTIL_SEQ_INPUTS[] = {DISTIL_COMMON, {"labels", HF_IN_TARGETS, "B", 0}, {NULL, 0, NULL, 0}};
static const hf_input DISTIL_QA_INPUTS[] = {
    DISTIL_COMMON, {"start_positions", HF_IN_INT, "B", 0}, {"end_positions", HF_IN_INT, "B", 0}, {NULL, 0, NULL, 0},
};
#undef DISTIL_COMMON
static const char *const DISTIL_REFUSED[] = {
    "head_mask", "inputs_embeds", "output_attentions", "output_hidden_states", "return_dict", NULL,
};

/* RoFormerModel / RoFormerFor*.forward() (transformers 4.x): BERT's inputs but
 * position_ids (its positions are the rotation's, 0..T-1). */
#define ROFORMER_COMMON {"input_ids", HF_IN_IDS, "B,T", 1}, {"attention_mask", HF_IN_MASK, "B,T", 0}, \
                        {"token_type_ids", HF_IN_IDS, "B,T", 0}
static const hf_input ROFORMER_INPUTS[] = {ROFORMER_COMMON, {NULL, 0, NULL, 0}};
static const hf_input ROFORMER_TOKEN_INPUTS[] = {ROFORMER_COMMON, {"labels", HF_IN_LABELS, "B,T", 0}, {NULL, 0, NULL, 0}};
static const hf_input ROFORMER_QA_INPUTS[] = {
    ROFORMER_COMMON, {"start_positions", HF_IN_INT, "B", 0}, {"end_positions", HF_IN_INT, "B", 0}, {NULL, 0, NULL, 0},
};
#undef ROFORMER_COMMON
static const char *const OUT_BERT_PRE[] = {"prediction_logits", "seq_relationship_logits", "loss", NULL};
static const char *const OUT_BERT_QA[] = {"start_logits", "end_logits", "loss", NULL};

/* MarianMTModel.forward() (transformers 4.x): the source, the target (or
 * labels, shifted right into it as transformers does). */
static const hf_input MARIAN_INPUTS[] = {
    {"input_ids", HF_IN_IDS, "B,T", 1},
    {"attention_mask", HF_IN_MASK, "B,T", 0},
    {"decoder_input_ids", HF_IN_IDS, "B,U", 0},
    {"decoder_attention_mask", HF_IN_MASK, "B,U", 0},
    {"labels", HF_IN_LABELS, "B,U", 0},
    {NULL, 0, NULL, 0},
};
static const char *const MARIAN_REFUSED[] = {
    "head_mask", "decoder_head_mask", "cross_attn_head_mask", "encoder_outputs", "past_key_values",
    "inputs_embeds", "decoder_inputs_embeds", "use_cache", "output_attentions", "output_hidden_states",
    "return_dict", NULL,
};
static const char *const OUT_SEQ2SEQ_LM[] = {"logits", "loss", "encoder_last_hidden_state", NULL};

/* ViTModel / ViTForImageClassification.forward() (transformers 4.x). */
static const hf_input VIT_INPUTS[] = {{"pixel_values", HF_IN_FLOAT, "B,C,H,W", 1}, {NULL, 0, NULL, 0}};
static const hf_input VIT_CLS_INPUTS[] = {
    {"pixel_values", HF_IN_FLOAT, "B,C,H,W", 1}, {"labels", HF_IN_LABELS, "B", 0}, {NULL, 0, NULL, 0},
};
static const char *const VIT_REFUSED[] = {
    "bool_masked_pos", "head_mask", "interpolate_pos_encoding", "output_attentions", "output_hidden_states",
    "return_dict", NULL,
};
static const char *const OUT_VIT_BODY[] = {"last_hidden_state", "pooler_output", NULL};

/* SwinModel / SwinForImageClassification.forward(): ViT's inputs. */
static const char *const SWIN_REFUSED[] = {
    "bool_masked_pos", "head_mask", "output_attentions", "output_hidden_states", "return_dict", NULL,
};

/* VivitModel / VivitForVideoClassification.forward() (transformers 4.x): clips (B,T,C,H,W). */
static const hf_input VIVIT_INPUTS[] = {{"pixel_values", HF_IN_FLOAT, "B,T,C,H,W", 1}, {NULL, 0, NULL, 0}};
static const hf_input VIVIT_CLS_INPUTS[] = {
    {"pixel_values", HF_IN_FLOAT, "B,T,C,H,W", 1}, {"labels", HF_IN_LABELS, "B", 0}, {NULL, 0, NULL, 0},
};
static const char *const VIVIT_REFUSED[] = {"head_mask", "output_attentions", "output_hidden_states", "return_dict", NULL};

/* NystromformerModel / NystromformerFor*.forward() (transformers 4.x): BERT's inputs. */
#define NYSTROM_COMMON {"input_ids", HF_IN_IDS, "B,T", 1}, {"attention_mask", HF_IN_MASK, "B,T", 0}, \
                       {"token_type_ids", HF_IN_IDS, "B,T", 0}, {"position_ids", HF_IN_IDS, "B,T", 0}
static const hf_input NYSTROM_INPUTS[] = {NYSTROM_COMMON, {NULL, 0, NULL, 0}};
static const hf_input NYSTROM_TOKEN_INPUTS[] = {NYSTROM_COMMON, {"labels", HF_IN_LABELS, "B,T", 0}, {NULL, 0, NULL, 0}};
static const hf_input NYSTROM_SEQ_INPUTS[] = {NYSTROM_COMMON, {"labels", HF_IN_TARGETS, "B", 0}, {NULL, 0, NULL, 0}};
#undef NYSTROM_COMMON
static const char *const NYSTROM_REFUSED[] = {
    "head_mask", "inputs_embeds", "output_attentions", "output_hidden_states", "return_dict", NULL,
};

static const hf_arch ARCHS[] = {
    {"GPT2LMHeadModel", &hf_gpt2_family, GPT2_LM_INPUTS, GPT2_REFUSED, OUT_LM},
    {"GPT2Model", &hf_gpt2_family, GPT2_INPUTS, GPT2_REFUSED, OUT_BODY},
    {"BertModel", &hf_bert_family, BERT_INPUTS, BERT_REFUSED, OUT_BERT_BODY},
    {"BertForPreTraining", &hf_bert_family, BERT_PRE_INPUTS, BERT_REFUSED, OUT_BERT_PRE},
    {"BertForMaskedLM", &hf_bert_family, BERT_TOKEN_INPUTS, BERT_REFUSED, OUT_LM},
    {"BertForSequenceClassification", &hf_bert_family, BERT_SEQ_INPUTS, BERT_REFUSED, OUT_LM},
    {"BertForTokenClassification", &hf_bert_family, BERT_TOKEN_INPUTS, BERT_REFUSED, OUT_LM},
    {"BertForQuestionAnswering", &hf_bert_family, BERT_QA_INPUTS, BERT_REFUSED, OUT_BERT_QA},
    {"RobertaModel", &hf_bert_family, BERT_INPUTS, BERT_REFUSED, OUT_BERT_BODY}, /* BERT, positions from the ids */
    {"RobertaForMaskedLM", &hf_bert_family, BERT_TOKEN_INPUTS, BERT_REFUSED, OUT_LM},
    {"RobertaForSequenceClassification", &hf_bert_family, BERT_SEQ_INPUTS, BERT_REFUSED, OUT_LM},
    {"RobertaForTokenClassification", &hf_bert_family, BERT_TOKEN_INPUTS, BERT_REFUSED, OUT_LM},
    {"RobertaForQuestionAnswering", &hf_bert_family, BERT_QA_INPUTS, BERT_REFUSED, OUT_BERT_QA},
    {"DistilBertModel", &hf_bert_family, DISTIL_INPUTS, DISTIL_REFUSED, OUT_BODY}, /* BERT's block, no token types */
    {"DistilBertForMaskedLM", &hf_bert_family, DISTIL_TOKEN_INPUTS, DISTIL_REFUSED, OUT_LM},
    {"DistilBertForSequenceClassification", &hf_bert_family, DISTIL_SEQ_INPUTS, DISTIL_REFUSED, OUT_LM},
    {"DistilBertForTokenClassification", &hf_bert_family, DISTIL_TOKEN_INPUTS, DISTIL_REFUSED, OUT_LM},
    {"DistilBertForQuestionAnswering", &hf_bert_family, DISTIL_QA_INPUTS, DISTIL_REFUSED, OUT_BERT_QA},
    {"XLMRobertaModel", &hf_bert_family, BERT_INPUTS, BERT_REFUSED, OUT_BERT_BODY}, /* RoBERTa's arithmetic, "roberta." */
    {"XLMRobertaForMaskedLM", &hf_bert_family, BERT_TOKEN_INPUTS, BERT_REFUSED, OUT_LM},
    {"XLMRobertaForSequenceClassification", &hf_bert_family, BERT_SEQ_INPUTS, BERT_REFUSED, OUT_LM},
    {"XLMRobertaForTokenClassification", &hf_bert_family, BERT_TOKEN_INPUTS, BERT_REFUSED, OUT_LM},
    {"XLMRobertaForQuestionAnswering", &hf_bert_family, BERT_QA_INPUTS, BERT_REFUSED, OUT_BERT_QA},
    {"BigBirdModel", &hf_bert_family, BIGBIRD_INPUTS, BERT_REFUSED, OUT_BERT_BODY}, /* original_full or block_sparse */
    {"RoFormerModel", &hf_bert_family, ROFORMER_INPUTS, BERT_REFUSED, OUT_BODY}, /* BERT, rotary, no position table */
    {"RoFormerForMaskedLM", &hf_bert_family, ROFORMER_TOKEN_INPUTS, BERT_REFUSED, OUT_LM},
    {"RoFormerForTokenClassification", &hf_bert_family, ROFORMER_TOKEN_INPUTS, BERT_REFUSED, OUT_LM},
    {"RoFormerForQuestionAnswering", &hf_bert_family, ROFORMER_QA_INPUTS, BERT_REFUSED, OUT_BERT_QA},
    {"MarianMTModel", &hf_marian_family, MARIAN_INPUTS, MARIAN_REFUSED, OUT_SEQ2SEQ_LM},
    {"ViTModel", &hf_vit_family, VIT_INPUTS, VIT_REFUSED, OUT_VIT_BODY},
    {"ViTForImageClassification", &hf_vit_family, VIT_CLS_INPUTS, VIT_REFUSED, OUT_LM},
    {"SwinModel", &hf_swin_family, VIT_INPUTS, SWIN_REFUSED, OUT_VIT_BODY},
    {"SwinForImageClassification", &hf_swin_family, VIT_CLS_INPUTS, SWIN_REFUSED, OUT_LM},
    {"VivitModel", &hf_vivit_family, VIVIT_INPUTS, VIVIT_REFUSED, OUT_VIT_BODY},
    {"VivitForVideoClassification", &hf_vivit_family, VIVIT_CLS_INPUTS, VIVIT_REFUSED, OUT_LM},
    {"ImageGPTForCausalImageModeling", &hf_gpt2_family, GPT2_LM_INPUTS, IMAGEGPT_REFUSED, OUT_LM},
    {"ImageGPTModel", &hf_gpt2_family, GPT2_INPUTS, IMAGEGPT_REFUSED, OUT_BODY},
    {"NystromformerModel", &hf_nystrom_family, NYSTROM_INPUTS, NYSTROM_REFUSED, OUT_BODY},
    {"NystromformerForMaskedLM", &hf_nystrom_family, NYSTROM_TOKEN_INPUTS, NYSTROM_REFUSED, OUT_LM},
    {"NystromformerForSequenceClassification", &hf_nystrom_family, NYSTROM_SEQ_INPUTS, NYSTROM_REFUSED, OUT_LM},
    {"NystromformerForTokenClassification", &hf_nystrom_family, NYSTROM_TOKEN_INPUTS, NYSTROM_REFUSED, OUT_LM},
};
#define N_ARCHS ((int)(sizeof ARCHS / sizeof ARCHS[0]))

/* ---------------------------------------------------------------- named tensors */

tf_tensor *hf_get(const hf_tensors *ts, const char *name) {
    for (int i = 0; i < ts->n; i++)
        if (!strcmp(ts->name[i], name)) return ts->t[i];
    return NULL;
}

int hf_put(hf_tensors *ts, const char *name, tf_tensor *t) {
    if (!t) return 0;
    if (ts->n == HF_MAX_TENSORS) return tf_set_error("hf-run: more than %d tensors", HF_MAX_TENSORS);
    ts->name[ts->n] = name;
    ts->t[ts->n++] = t;
    return 0;
}

/* "(b,t)" of a flat index into a tensor of shape dims, for messages. */
static const char *index_str(const tf_tensor *t, int64_t i, char *buf, size_t n) {
    int64_t idx[TF_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = t->shape[d] ? i % t->shape[d] : 0;
        i = t->shape[d] ? i / t->shape[d] : 0;
    }
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < t->ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "", (long long)idx[d]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

int hf_check_range(const hf_job *job, const char *name, int32_t lo, int32_t hi, int32_t skip, const char *what) {
    const tf_tensor *t = hf_get(&job->in, name);
    if (!t) return 0;
    const int32_t *v = tf_i32(t);
    for (int64_t i = 0; i < tf_numel(t); i++)
        if (v[i] != skip && (v[i] < lo || v[i] >= hi)) {
            char at[96];
            return tf_set_error("%s: input '%s' holds %d at %s; %s", job->input_path, name, (int)v[i],
                                index_str(t, i, at, sizeof at), what);
        }
    return 0;
}

/* ---------------------------------------------------------------- config.json */

static const hf_arch *find_arch(const char *name) {
    for (int i = 0; i < N_ARCHS; i++)
        if (!strcmp(ARCHS[i].name, name)) return &ARCHS[i];
    return NULL;
}

static const char *supported_list(char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < N_ARCHS && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "", ARCHS[i].name);
    return buf;
}

/* architectures[0] of dir/config.json, looked up in the table. */
static const hf_arch *read_architecture(const char *dir, FILE *log) {
    char path[4096], list[2048];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *root = tf_json_read(path);
    if (!root) return NULL;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, 0) : NULL;
    const hf_arch *arch = NULL;
    supported_list(list, sizeof list);
    if (!cJSON_IsString(first))
        tf_set_error("%s: no \"architectures\" list naming the model class (hf-run supports: %s)", path, list);
    else if (!(arch = find_arch(first->valuestring)))
        tf_set_error("%s: architecture \"%s\" is not supported by hf-run (supported: %s)", path,
                     first->valuestring, list);
    else if (log && cJSON_GetArraySize(a) > 1)
        fprintf(log, "warning: %s: %d architectures; running the first, %s\n", path, cJSON_GetArraySize(a), arch->name);
    cJSON_Delete(root);
    return arch;
}

/* dir/model.safetensors, the one weights file every family reads; without it,
 * what the folder holds instead, named: a sharded checkpoint (save_pretrained's
 * max_shard_size, 5 GB by default in 4.x, 50 GB in 5.x) or PyTorch's pickle. */
static int check_weights_file(const char *dir) {
    static const struct {
        const char *file, *what;
    } OTHER[] = {
        {"model.safetensors.index.json", "a sharded checkpoint (model.safetensors.index.json and its shards), which "
                                         "hf-run does not read: re-save it as one file "
                                         "(model.save_pretrained(dir, max_shard_size=\"1000GB\"))"},
        {"pytorch_model.bin", "only pytorch_model.bin, which tformer does not read: re-save the model with "
                              "safetensors (model.save_pretrained(dir, safe_serialization=True))"},
        {"pytorch_model.bin.index.json", "only a sharded pytorch_model.bin, which tformer does not read: re-save the "
                                         "model as one safetensors file (model.save_pretrained(dir, "
                                         "safe_serialization=True, max_shard_size=\"1000GB\"))"},
    };
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!access(path, F_OK)) return 0;
    for (size_t i = 0; i < sizeof OTHER / sizeof OTHER[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, OTHER[i].file);
        if (!access(path, F_OK)) return tf_set_error("%s: no model.safetensors; %s", dir, OTHER[i].what);
    }
    return tf_set_error("%s: no model.safetensors (the weights save_pretrained writes)", dir);
}

/* ---------------------------------------------------------------- inputs */

static const char *accepted_list(const hf_arch *arch, char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    for (const hf_input *in = arch->inputs; in->name && k < n; in++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", in == arch->inputs ? "" : ", ", in->name);
    return buf;
}

static const hf_input *find_input(const hf_arch *arch, const char *name) {
    for (const hf_input *in = arch->inputs; in->name; in++)
        if (!strcmp(in->name, name)) return in;
    return NULL;
}

/* Every tensor of the file must be an argument hf-run takes. */
static int check_names(const hf_arch *arch, const tf_st_file *f, const char *path) {
    char list[512];
    for (int i = 0; i < tf_st_count(f); i++) {
        const char *name = tf_st_entry_at(f, i)->name;
        if (find_input(arch, name)) continue;
        int refused = 0;
        for (const char *const *r = arch->refused; *r && !refused; r++) refused = !strcmp(*r, name);
        accepted_list(arch, list, sizeof list);
        if (refused)
            return tf_set_error("%s: input '%s' (an argument of %s.forward()) is not supported by hf-run; "
                                "it takes: %s", path, name, arch->name, list);
        return tf_set_error("%s: input '%s' is not an argument of %s.forward(); hf-run takes: %s", path, name,
                            arch->name, list);
    }
    return 0;
}

/* The shape pattern ("B,T"): sizes by letter, bound by the first input that
 * has the letter (binder names it for messages). */
typedef struct {
    int64_t size[26];
    const char *binder[26];
} hf_dims;

static int check_shape(hf_dims *d, const hf_input *in, const tf_st_entry *e, const char *path) {
    char got[96];
    size_t k = (size_t)snprintf(got, sizeof got, "(");
    for (int i = 0; i < e->ndim && k < sizeof got; i++)
        k += (size_t)snprintf(got + k, sizeof got - k, "%s%lld", i ? "," : "", (long long)e->shape[i]);
    if (k < sizeof got) snprintf(got + k, sizeof got - k, ")");
    int n = (int)(strlen(in->shape) + 1) / 2;
    if (e->ndim != n) return tf_set_error("%s: input '%s' has shape %s; expected (%s)", path, in->name, got, in->shape);
    for (int i = 0; i < n; i++) {
        int l = in->shape[2 * i] - 'A';
        if (e->shape[i] < 1) return tf_set_error("%s: input '%s' has shape %s; no size may be 0", path, in->name, got);
        if (!d->binder[l]) {
            d->size[l] = e->shape[i];
            d->binder[l] = in->name;
        } else if (d->size[l] != e->shape[i]) {
            return tf_set_error("%s: input '%s' has shape %s; expected (%s) with %c = %lld as in '%s'", path,
                                in->name, got, in->shape, in->shape[2 * i], (long long)d->size[l], d->binder[l]);
        }
    }
    return 0;
}

static int dtype_ok(hf_in_kind kind, tf_st_dtype dt) {
    int is_int = dt == TF_ST_I64 || dt == TF_ST_I32, is_float = dt == TF_ST_F32 || dt == TF_ST_F16 || dt == TF_ST_BF16;
    switch (kind) {
    case HF_IN_IDS:
    case HF_IN_LABELS:
    case HF_IN_INT: return is_int;
    case HF_IN_FLOAT: return is_float;
    case HF_IN_TARGETS: return is_int || is_float;
    default: return 1; /* masks: any dtype, values checked */
    }
}

static const char *const KIND_DTYPES[] = {
    [HF_IN_IDS] = "I64 or I32", [HF_IN_LABELS] = "I64 or I32",
    [HF_IN_MASK] = "I64, I32, U8, BOOL or float", [HF_IN_FLOAT] = "F32, F16 or BF16",
    [HF_IN_INT] = "I64 or I32", [HF_IN_TARGETS] = "I64, I32 (classes) or F32, F16, BF16 (regression)",
};

/* A mask of 0/1 values in any dtype -> U8, 1 = attend. */
static tf_tensor *to_mask(tf_tensor *t, tf_arena *a, const char *name, const char *path) {
    tf_tensor *m = t->dtype == TF_DTYPE_U8 ? t : tf_tensor_alloc(a, TF_DTYPE_U8, t->ndim, t->shape, 0);
    if (!m) return NULL;
    for (int64_t i = 0; i < tf_numel(t); i++) {
        double v = t->dtype == TF_DTYPE_F32 ? tf_f32(t)[i] : t->dtype == TF_DTYPE_I32 ? tf_i32(t)[i] : tf_u8(t)[i];
        if (v != 0 && v != 1) {
            char at[96];
            return tf_set_error("%s: input '%s' holds %g at %s; a mask holds 0 (padding) or 1", path, name, v,
                                index_str(t, i, at, sizeof at)), NULL;
        }
        tf_u8(m)[i] = v != 0;
    }
    return m;
}

/* Check and convert one given input; sign checks here, model ranges in the family. */
static tf_tensor *load_input(hf_dims *d, const hf_input *in, const tf_st_file *f, const tf_st_entry *e,
                             tf_arena *a, const char *path) {
    if (!dtype_ok(in->kind, e->dtype))
        return tf_set_error("%s: input '%s' is %s; expected %s", path, in->name, tf_st_dtype_name(e->dtype),
                            KIND_DTYPES[in->kind]), NULL;
    if (check_shape(d, in, e, path)) return NULL;
    tf_tensor *t = tf_st_to_tensor(f, e, a);
    if (!t) return NULL;
    if (in->kind == HF_IN_MASK) return to_mask(t, a, in->name, path);
    int labels = in->kind == HF_IN_LABELS || in->kind == HF_IN_TARGETS;
    for (int64_t i = 0; in->kind != HF_IN_INT && t->dtype == TF_DTYPE_I32 && i < tf_numel(t); i++)
        if (tf_i32(t)[i] < 0 && !(labels && tf_i32(t)[i] == -100)) {
            char at[96];
            return tf_set_error("%s: input '%s' holds %d at %s; expected %s", path, in->name, (int)tf_i32(t)[i],
                                index_str(t, i, at, sizeof at),
                                labels ? "a label >= 0 or -100 (ignored)" : "ids >= 0"), NULL;
        }
    return t;
}

/* Every input of the table row, in its order (so input_ids binds the sizes first). */
static int load_inputs(hf_job *job, const hf_arch *arch, const tf_st_file *f) {
    if (check_names(arch, f, job->input_path)) return -1;
    hf_dims d;
    memset(&d, 0, sizeof d);
    for (const hf_input *in = arch->inputs; in->name; in++) {
        const tf_st_entry *e = tf_st_find(f, in->name);
        if (!e && in->required)
            return tf_set_error("%s: missing input '%s' (%s.forward() needs it)", job->input_path, in->name, arch->name);
        if (!e) continue;
        tf_tensor *t = load_input(&d, in, f, e, tf_ctx_arena(job->ctx), job->input_path);
        if (!t || hf_put(&job->in, in->name, t)) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- running */

static int write_outputs(const hf_job *job, const hf_arch *arch, const char *path) {
    tf_st_writer *w = tf_st_writer_new();
    if (!w) return tf_set_error("out of memory");
    int rc = 0, n = 0;
    for (const char *const *o = arch->outputs; !rc && *o; o++) {
        tf_tensor *t = hf_get(&job->out, *o);
        if (t) rc = tf_st_writer_add(w, *o, t), n++;
    }
    if (!rc && !n) rc = tf_set_error("hf-run: %s computed none of its output fields", arch->name);
    if (!rc) rc = tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    return rc;
}

int tf_hf_run(const char *model_dir, const char *input_path, const char *output_path, FILE *log) {
    const hf_arch *arch = read_architecture(model_dir, log);
    if (!arch || check_weights_file(model_dir)) return -1;
    tf_st_file *f = tf_st_open(input_path);
    tf_ctx *ctx = f ? tf_ctx_new(0) : NULL;
    void *model = NULL;
    int rc = -1;
    if (f && ctx) { /* the inputs first: a bad one is reported before a large model loads */
        tf_ctx_set_grad(ctx, 0);
        hf_job job = {.ctx = ctx, .input_path = input_path, .log = log};
        if (!load_inputs(&job, arch, f) && (model = arch->family->load(model_dir, arch->name))) {
            job.model = model;
            rc = arch->family->run(&job) || write_outputs(&job, arch, output_path) ? -1 : 0;
        }
    } else if (f) {
        tf_set_error("out of memory");
    }
    if (model) arch->family->free(model);
    tf_ctx_free(ctx);
    tf_st_close(f);
    return rc;
}
