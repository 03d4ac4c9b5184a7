/* The family registry (tformer/model.h): one line per family. A family's
 * row is defined in its own folder (src/models/<family>/<family>_family.c);
 * the order of TF_FAMILIES is the order of `train --arch`'s list and of --help. */
#include <stdio.h>
#include <string.h>

#include "family.h"

/* One line per family: its row, tf_family_<name>, is defined in src/models/<name>/<name>_family.c. */
#define TF_FAMILIES(X)                                                                                            \
    X(gpt) X(bert) X(seq2seq) X(rnn) X(vit) X(swin) X(imagegpt) X(vivit) X(continual) X(listops) X(roformer)     \
    X(bigbird) X(nystrom) X(caption)

#define DECLARE(name) extern const tf_family tf_family_##name;
TF_FAMILIES(DECLARE)
#undef DECLARE

#define ROW(name) &tf_family_##name,
static const tf_family *const FAMILIES[] = {TF_FAMILIES(ROW) NULL};
#undef ROW

const tf_family *const *tf_families(void) { return FAMILIES; }

const tf_family *tf_family_find(const char *name) {
    for (int i = 0; name && FAMILIES[i]; i++)
        if (!strcmp(FAMILIES[i]->name, name)) return FAMILIES[i];
    return NULL;
}

const tf_family *tf_family_of_type(const char *type) {
    for (int i = 0; type && FAMILIES[i]; i++)
        for (const char *const *t = FAMILIES[i]->model_types; t && *t; t++)
            if (!strcmp(*t, type)) return FAMILIES[i];
    return NULL;
}

const char *tf_family_train_list(char *buf, size_t n, unsigned inputs) {
    int count = 0, total = 0;
    for (int i = 0; FAMILIES[i]; i++) total += FAMILIES[i]->task_new && (inputs >> FAMILIES[i]->input & 1u);
    size_t k = 0;
    if (n) buf[0] = 0;
    for (int i = 0; FAMILIES[i] && k < n; i++) {
        if (!FAMILIES[i]->task_new || !(inputs >> FAMILIES[i]->input & 1u)) continue;
        const char *sep = !count ? "" : count == total - 1 ? " or " : ", ";
        k += (size_t)snprintf(buf + k, n - k, "%s%s", sep, FAMILIES[i]->name);
        count++;
    }
    return buf;
}

int64_t tf_family_one_pass(int64_t n, int64_t rows) { return rows > 0 ? (n + rows - 1) / rows : 1; }

/* ---------------------------------------------------------------- capabilities */

static const char *const CAP_NAMES[TF_CAP_COUNT] = {
    "run", "generate", "translate", "embed", "classify-text", "classify-image", "classify-clip", "fill-mask",
    "stream", "caption", "complete-image", "tag", "answer",
};

const char *tf_cap_name(unsigned cap) {
    for (int i = 0; i < TF_CAP_COUNT; i++)
        if (cap == 1u << i) return CAP_NAMES[i];
    return "?";
}

const char *tf_caps_list(unsigned caps, char *buf, size_t n) {
    size_t k = 0;
    if (n) buf[0] = 0;
    for (int i = 0; i < TF_CAP_COUNT && k < n; i++)
        if (caps >> i & 1u) k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", CAP_NAMES[i]);
    return buf;
}
