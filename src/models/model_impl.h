/* Private to src/models: the model handle's fields (tformer/model.h), shared by model.c and
 * model_translate.c. */
#ifndef TF_MODEL_IMPL_H
#define TF_MODEL_IMPL_H

#include "hf_run.h"

struct tf_model {
    const tf_family *f;
    const hf_arch *arch;     /* config.json's architectures[0], when a family reads it */
    void *impl;              /* the family's object */
    unsigned caps;
    char *dir;
    char type[64];           /* config.json's model_type, or "" */
    tf_tokenizer *tok;       /* the folder's tokenizer, for the text capabilities that need one */
    /* Translation (tf_model_translator): made once, then read-only. */
    int translator_ready;
    tf_translation tr;
    tf_translator translator;
    tf_translate_opts topts;                 /* the folder's settings */
    int32_t bad_ids[TF_MARIAN_MAX_BAD];      /* topts.search.bad_ids */
    tf_tokenizer *src_tok, *tgt_tok;         /* tgt_tok == src_tok: one for both */
};

#endif
