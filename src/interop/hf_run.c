/* `tformer hf-run`: Hugging Face model folders run on named inputs. */
#include "../core/internal.h"

int tf_hf_run(const char *model_dir, const char *input_path, const char *output_path, FILE *log) {
    (void)input_path, (void)output_path, (void)log;
    return tf_set_error("%s: hf-run is being written", model_dir);
}
