/* Private to src/models: the image classifiers' shared training defaults and checks
 * (ViT and Swin train by DeiT's recipe; ViViT by the same optimiser settings). */
#ifndef TF_VISION_FAMILY_H
#define TF_VISION_FAMILY_H

#include "family.h"

/* AdamW as DeiT (weight decay 0.05, beta2 0.999) and at most one validation pass. */
static inline void tf_vision_train_defaults(tf_train_config *train) {
    train->weight_decay = 0.05f, train->beta2 = 0.999f;
    train->eval_batches = 1000; /* at most one pass over the validation images */
}

/* --norm is GPT's older flag; these families are pre-LN. */
#define TF_VISION_NORM_REFUSAL "--norm is a GPT setting (ViT, Swin and ViViT are pre-LN)"

#endif
