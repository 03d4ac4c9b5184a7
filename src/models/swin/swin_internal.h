/* Private to src/models/swin. */
#ifndef TF_SWIN_INTERNAL_H
#define TF_SWIN_INTERNAL_H

#include "../vision.h"
#include "tformer/swin.h"

/* "2,2,6" into out: the count, or -1 with an error naming field. */
int tf_swin_parse_list(const char *s, const char *field, int out[TF_SWIN_MAX_STAGES]);
/* Block l's (of n_blocks, over all stages) drop-path rate. */
float tf_swin_drop_path(const tf_swin_config *c, int l, int n_blocks);

#endif
