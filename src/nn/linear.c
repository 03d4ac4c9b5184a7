/* Registration of the two plain layers every module is built from: a Linear
 * ("<name>.weight" (out,in), "<name>.bias" (out)) and a LayerNorm
 * ("<name>.weight", "<name>.bias" (C)), PyTorch's names and layouts. */
#include <math.h>
#include <stdio.h>

#include "tformer/heads.h"

/* "<name><suffix>" into out; an error naming the parameter when it does not fit. */
static int param_name(char *out, size_t n, const char *layer, const char *name, const char *suffix) {
    if ((size_t)snprintf(out, n, "%s%s", name, suffix) >= n)
        return tf_set_error("%s %.64s...: parameter name longer than %zu bytes", layer, name, n - 1);
    return 0;
}

int tf_linear_register(tf_params *ps, const char *name, tf_linear *l, int64_t in, int64_t out, int bias,
                       float init_std) {
    if (!ps || !name || !l) return tf_set_error("linear: registry, name and layer are required");
    if (in <= 0 || out <= 0)
        return tf_set_error("linear %s: sizes in %lld, out %lld must be positive", name, (long long)in,
                            (long long)out);
    /* TF_INIT_ZEROS (0) or a positive std; TF_INIT_ONES and NaN make no sense for a weight */
    if (!(init_std >= 0.0f) || isinf(init_std))
        return tf_set_error("linear %s: init std %g must be >= 0 and finite", name, (double)init_std);
    char w[512], b[512];
    if (param_name(w, sizeof w, "linear", name, ".weight") || param_name(b, sizeof b, "linear", name, ".bias"))
        return -1;
    l->weight = l->bias = NULL;
    if (tf_params_add(ps, w, &l->weight, 2, (int64_t[]){out, in}, init_std)) return -1;  // (out,in)
    return bias ? tf_params_add(ps, b, &l->bias, 1, (int64_t[]){out}, TF_INIT_ZEROS) : 0;  // (out)
}

int tf_layer_norm_register(tf_params *ps, const char *name, tf_layer_norm *n, int64_t C, float eps, int bias) {
    if (!ps || !name || !n) return tf_set_error("layer norm: registry, name and layer are required");
    if (C <= 0) return tf_set_error("layer norm %s: size %lld must be positive", name, (long long)C);
    if (!(eps >= 0.0f) || isinf(eps))
        return tf_set_error("layer norm %s: eps %g must be >= 0 and finite", name, (double)eps);
    char w[512], b[512];
    if (param_name(w, sizeof w, "layer norm", name, ".weight") ||
        param_name(b, sizeof b, "layer norm", name, ".bias"))
        return -1;
    n->weight = n->bias = NULL;
    n->eps = eps;
    if (tf_params_add(ps, w, &n->weight, 1, (int64_t[]){C}, TF_INIT_ONES)) return -1;  // (C)
    return bias ? tf_params_add(ps, b, &n->bias, 1, (int64_t[]){C}, TF_INIT_ZEROS) : 0;  // (C)
}
