/* The captioner as a folder: config.json (the configuration table's keys, model_type
 * "tformer-caption") and model.safetensors, loaded strictly (model_folder.h); the ViT captioner
 * (encoder vit) as transformers' VisionEncoderDecoderModel folder instead (caption_vit.c), which
 * tformer reads back through that family's reader. */
#include "../model_folder.h"
#include "caption_internal.h"

static tf_caption *read_folder(const char *dir) {
    tf_caption_config c;
    if (tf_folder_read_config(dir, "tformer-caption", &tf_caption_config_table, &c)) return NULL;
    tf_caption *m = tf_caption_new(&c, 0);
    if (m && tf_folder_load_weights(dir, m->params)) {
        tf_caption_free(m);
        return NULL;
    }
    return m;
}

int tf_caption_save(const tf_caption *m, const char *dir) {
    if (m->ved) return tf_caption_vit_save(m, dir);
    return tf_folder_save(dir, "tformer-caption", &tf_caption_config_table, &m->cfg, m->params);
}

tf_caption *tf_caption_load(const char *dir) { return read_folder(dir); }
