/* What a resume may change: a checkpoint records the trainer's and the task's
 * settings (tformer_config); a resumed run is bit for bit only when those
 * that steer the training's path are the same. Rows flagged
 * TF_FIELD_RESUMABLE (how often to evaluate or keep checkpoints, how long to
 * run) change nothing already done and may differ. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train_internal.h"

/* A value as a person reads it: numbers (floats stored %.9g) in the fewest digits that give the same float. */
static void shown(const cJSON *j, char *out, size_t cap) {
    if (cJSON_IsNumber(j) && fabs(j->valuedouble) < 1e15 && j->valuedouble == (double)(long long)j->valuedouble) {
        snprintf(out, cap, "%lld", (long long)j->valuedouble); /* 750, not 7.5e+02 */
        return;
    }
    if (cJSON_IsNumber(j)) {
        for (int digits = 1; digits <= 17; digits++) {
            snprintf(out, cap, "%.*g", digits, j->valuedouble);
            if (strtod(out, NULL) == j->valuedouble || (float)strtod(out, NULL) == (float)j->valuedouble) return;
        }
    }
    char *text = cJSON_PrintUnformatted(j);
    snprintf(out, cap, "%s", text ? text : "?");
    cJSON_free(text);
}

/* Append "name A -> B" to out (comma-separated); the text is cut at cap. */
static void add_change(char *out, size_t cap, const char *name, const cJSON *was, const cJSON *now) {
    char a[128], b[128];
    shown(was, a, sizeof a), shown(now, b, sizeof b);
    size_t n = strlen(out);
    if (n + 1 < cap) snprintf(out + n, cap - n, "%s%s %s -> %s", n ? ", " : "", name, a, b);
}

/* Does a change of row f steer the training? steps does under the cosine
 * schedule (its length sets every learning rate after the warmup). */
static int steers(const tf_field *f, int cosine) {
    if (!f || f->flags & TF_FIELD_SIGNATURE) return 0; /* the model's shape: refused by the signature check */
    if (!strcmp(f->name, "steps")) return cosine;
    return !(f->flags & TF_FIELD_RESUMABLE);
}

/* The stored value of row f (named name now): under its name, else under an alias (a key renamed since the
 * checkpoint was written: max_tokens is batch_tokens), else NULL. */
static const cJSON *stored_value(const cJSON *was, const char *name, const tf_field *f) {
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(was, name);
    for (const char *p = f ? f->alias : NULL; !w && p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL) {
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)strcspn(p, "|"), p);
        w = cJSON_GetObjectItemCaseSensitive(was, key);
    }
    return w;
}

int tf_resume_changes(const tf_fields *now, int n, const char *stored, int cosine, char *out, size_t cap) {
    out[0] = 0;
    /* both through the parser: numbers are written as raw text, compared as numbers */
    char *text = tf_fields_json(now, n);
    cJSON *was = cJSON_Parse(stored), *cur = text ? cJSON_Parse(text) : NULL;
    free(text);
    int changes = -1;
    if (!cJSON_IsObject(was)) tf_set_error("the checkpoint's settings (tformer_config) are not a JSON object");
    else if (!cur) tf_set_error("resume: out of memory");
    else changes = 0;
    for (const cJSON *c = changes ? NULL : cur->child; c; c = c->next) {
        const tf_field *f = tf_fields_find(now, n, c->string, NULL);
        const cJSON *w = stored_value(was, c->string, f);
        if (!w || cJSON_Compare(w, c, 1)) continue; /* absent: a checkpoint from before the row existed */
        if (!steers(f, cosine)) continue;
        add_change(out, cap, c->string, w, c);
        changes++;
    }
    cJSON_Delete(was), cJSON_Delete(cur);
    return changes;
}

char *tf_resume_step_batch(const char *stored) {
    cJSON *j = cJSON_Parse(stored);
    cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "batch"), *a = cJSON_GetObjectItemCaseSensitive(j, "accum");
    if (cJSON_IsNumber(b) && cJSON_IsNumber(a) && a->valuedouble > 1)
        cJSON_SetNumberValue(b, b->valuedouble * a->valuedouble);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!text) tf_set_error("the checkpoint's settings (tformer_config) are not a JSON object");
    return text;
}
