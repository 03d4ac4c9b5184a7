/* The captioner as a folder: config.json (the configuration table's keys, model_type
 * "tformer-caption") and model.safetensors, loaded strictly (model_folder.h). */
#include "../model_folder.h"
#include "tformer/caption.h"

TF_FOLDER_CALLS(tf_caption, "tformer-caption")

tf_caption *tf_caption_load(const char *dir) { return read_folder(dir); }
