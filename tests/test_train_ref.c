/* The training path end to end against PyTorch: a tiny GPT (tformer train's
 * defaults shrunk: 2 layers, d_model 32, 2 heads, context 16, char
 * tokenizer, dropout 0) trained 20 steps by tf_train, and the same model
 * trained by tests/ref/gen_train_fixtures.py: transformers' GPT2LMHeadModel
 * loaded from tformer's initial weights, on tformer's batches, with
 * torch.optim.AdamW (weight decay 0 for the vectors), clip_grad_norm_ and
 * transformers' schedules (tf_lr_schedule's, lr_schedules_match_transformers).
 * Every step's loss, gradient norm and learning rate and the final weights
 * (every 11th element of each tensor) agree within the bounds below.
 *
 * With TFORMER_EXPORT_DIR the test writes what the script needs there
 * (init/, the initial weights as a Hugging Face folder; batches.safetensors;
 * train.json) instead of comparing; TFORMER_TRAIN_REF_DATA and
 * TFORMER_TRAIN_REF_FIXTURE give another text and its fixture (make
 * train-conformance: a slice of tinyshakespeare, fixtures made fresh). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define REF_DATA "tests/data/train_ref.txt"
#define REF_FIXTURE "tests/fixtures_train/gpt_tiny.safetensors"
#define REF_STEPS 20
#define REF_STRIDE 11 /* the fixture keeps every 11th element of each tensor */
#define LOSS_TOL 1e-6 /* relative, every step */
#define NORM_TOL 1e-6 /* relative, every step's gradient norm */
#define LR_TOL 1e-6   /* relative */
#define WEIGHT_TOL 1e-5 /* |w - torch's| / max(|torch's|, 0.01), after 20 steps */
#define KEY_BIAS_MAX 1e-4 /* the key biases' rounding-noise drift, either side (weights_diff) */

typedef struct {
    float loss[REF_STEPS], lr[REF_STEPS];
    double norm[REF_STEPS];
    int n;
} ref_log;

static void record(void *user, const tf_train_report *r) {
    ref_log *log = user;
    if (r->notice || r->info || r->step < 1 || r->step > REF_STEPS) return;
    log->loss[r->step - 1] = r->loss, log->lr[r->step - 1] = r->lr, log->norm[r->step - 1] = r->grad_norm;
    log->n = (int)r->step;
}

/* tformer train's defaults, shrunk. */
static void ref_settings(tf_train_config *c, tf_lm_config *lm) {
    *c = tf_train_config_default();
    c->steps = REF_STEPS, c->warmup = 5, c->eval_every = REF_STEPS, c->eval_batches = 2;
    c->checkpoint_every = REF_STEPS;
    *lm = tf_lm_config_default();
    lm->model.n_layer = 2, lm->model.n_head = 2, lm->model.d_model = 32, lm->model.context = 16;
    lm->model.dropout = 0.0f;
}

/* The batches of every step as the trainer draws them (key step * 1024, one
 * micro-batch): input_ids.<s>, targets.<s> (batch, context) into path. */
static int export_batches(const char *run_dir, const char *data, const tf_train_config *c, const tf_lm_config *lm,
                          const char *path) {
    size_t len;
    char *text = test_slurp(data, &len), name[64];
    tf_tokenizer *tok = tf_tokenizer_load(run_dir);
    tf_ids ids = {0};
    int rc = !text || !tok || tf_tokenizer_encode(tok, text, len, &ids) ? -1 : 0;
    tf_loader *ld = rc ? NULL : tf_lm_loader_new(ids.v, (int64_t)ids.n, lm->val_fraction, lm->model.context, c->seed);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_st_writer *w = tf_st_writer_new();
    rc = rc || !ld || !ctx || !w;
    for (int s = 0; !rc && s < REF_STEPS; s++) {
        tf_batch b;
        memset(&b, 0, sizeof b);
        rc = tf_loader_next(ld, ctx, TF_SUBSET_TRAIN, (uint64_t)s * 1024, c->batch, &b);
        const char *keys[2] = {"input_ids", "targets"};
        for (int k = 0; !rc && k < 2; k++) {
            snprintf(name, sizeof name, "%s.%d", keys[k], s);
            tf_tensor *t = tf_batch_get(&b, keys[k]);
            rc = !t || tf_st_writer_add(w, name, t);
        }
    }
    rc = rc || tf_st_writer_save(w, path);
    tf_st_writer_free(w), tf_ctx_free(ctx), tf_loader_free(ld), tf_ids_free(&ids), tf_tokenizer_free(tok), free(text);
    return rc ? -1 : 0;
}

/* The settings the script repeats, as JSON. */
static int export_settings(const char *path, const tf_train_config *c) {
    char json[1024];
    snprintf(json, sizeof json,
             "{\"steps\": %lld, \"warmup\": %lld, \"lr\": %.9g, \"min_lr\": %.9g, \"weight_decay\": %.9g, "
             "\"beta1\": %.9g, \"beta2\": %.9g, \"eps\": 1e-8, \"grad_clip\": %.9g, \"stride\": %d}\n",
             (long long)c->steps, (long long)c->warmup, c->lr, c->min_lr, c->weight_decay, c->beta1, c->beta2,
             c->grad_clip, REF_STRIDE);
    return test_write_text(path, json);
}

/* The worst relative difference of a[i] against the fixture's tensor `name` (n floats). */
static double worst_rel(const tf_st_file *f, const char *name, const double *a, int n, tf_arena *ar) {
    tf_tensor *want = test_st_tensor(f, name, ar);
    if (!want || tf_numel(want) != n) return -1;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs(a[i] - tf_f32(want)[i]) / fabs(tf_f32(want)[i]);
        worst = d > worst || d != d ? d : worst;
    }
    return worst;
}

/* Every tensor of the folder's model.safetensors at the fixture's
 * "<prefix>.<name>" samples: the worst |w - want| / max(|want|, 0.01), -1
 * when one is missing. The key part of each c_attn.bias is left out, its
 * largest |w| on either side in *noise: its gradient is 0 (a key bias adds
 * q . b_k to every score of query q, which the softmax ignores), so both
 * sides move it by their rounding noise, which Adam's normalisation makes
 * updates of up to lr * |g| / eps: ~1e-6 in tformer, ~1e-8 in torch. */
static double weights_diff(const char *dir, const tf_st_file *f, const char *prefix, tf_arena *ar, double *noise) {
    char path[600], name[300];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    tf_st_file *m = tf_st_open(path);
    double worst = m ? 0 : -1;
    for (int i = 0; m && worst >= 0 && i < tf_st_count(m); i++) {
        const tf_st_entry *e = tf_st_entry_at(m, i);
        snprintf(name, sizeof name, "%s.%s", prefix, e->name);
        tf_tensor *got = tf_st_to_tensor(m, e, ar), *want = test_st_tensor(f, name, ar);
        int64_t n = got ? (tf_numel(got) + REF_STRIDE - 1) / REF_STRIDE : 0;
        if (!got || !want || tf_numel(want) != n) {
            worst = -1;
            break;
        }
        int64_t d_model = e->shape[0] / 3, key_bias = strstr(e->name, "attn.c_attn.bias") != NULL;
        for (int64_t k = 0; k < n; k++) {
            int64_t at = k * REF_STRIDE;
            double w = tf_f32(want)[k], d = fabs(tf_f32(got)[at] - w) / fmax(fabs(w), 0.01);
            if (key_bias && at >= d_model && at < 2 * d_model) { /* noise on both sides: only small */
                *noise = fmax(*noise, fmax(fabs(tf_f32(got)[at]), fabs(w)));
                continue;
            }
            worst = d > worst || d != d ? d : worst;
        }
    }
    tf_st_close(m);
    return worst;
}

TEST(gpt_training_matches_torch) {
    const char *data = getenv("TFORMER_TRAIN_REF_DATA"), *fixture = getenv("TFORMER_TRAIN_REF_FIXTURE");
    const char *export = getenv("TFORMER_EXPORT_DIR");
    data = data ? data : REF_DATA, fixture = fixture ? fixture : REF_FIXTURE;
    tf_train_config c;
    tf_lm_config lm;
    ref_settings(&c, &lm);
    char run[] = "/tmp/tformer_train_ref_XXXXXX", path[700];
    CHECK(mkdtemp(run) != NULL);
    tf_task *t = tf_lm_task_new(&lm, (const char *const[]){data}, 1, "char", run, 0, c.seed);
    CHECK(t != NULL);
    if (export) { /* the script's inputs: the initial weights, the batches, the settings */
        snprintf(path, sizeof path, "%s/init", export);
        CHECK(tf_gpt_save(tf_lm_task_model(t), path) == 0);
        snprintf(path, sizeof path, "%s/batches.safetensors", export);
        CHECK(export_batches(run, data, &c, &lm, path) == 0);
        snprintf(path, sizeof path, "%s/train.json", export);
        CHECK(export_settings(path, &c) == 0);
        printf("    exported to %s (no comparison)\n", export);
        tf_task_free(t), test_rm_rf(run);
        return;
    }
    tf_st_file *f = tf_st_open(fixture);
    tf_arena *ar = tf_arena_new(0);
    CHECK(f && ar);
    /* the fixture must be of these initial weights (tformer's init, seed 1337) */
    snprintf(path, sizeof path, "%s/init", run);
    CHECK(tf_gpt_save(tf_lm_task_model(t), path) == 0);
    double noise = 0, init = weights_diff(path, f, "init", ar, &noise);
    CHECKF(init == 0, "the initial weights are not the fixture's (%.3g): regenerate it (tests/ref/gen_train_fixtures.py)",
           init);
    ref_log log = {0};
    CHECK(tf_train(&c, t, run, 0, NULL, record, &log) == 0 && log.n == REF_STEPS);
    double loss[REF_STEPS], lr[REF_STEPS];
    for (int s = 0; s < REF_STEPS; s++) loss[s] = log.loss[s], lr[s] = log.lr[s];
    double dl = worst_rel(f, "loss", loss, REF_STEPS, ar), dn = worst_rel(f, "grad_norm", log.norm, REF_STEPS, ar);
    double dr = worst_rel(f, "lr", lr, REF_STEPS, ar), dw = weights_diff(run, f, "final", ar, &noise);
    tf_tensor *want = test_st_tensor(f, "loss", ar);
    printf("    %d steps (%s): loss %.4f -> %.4f (torch %.4f -> %.4f)\n", REF_STEPS, tf_kernels_info(), loss[0],
           loss[REF_STEPS - 1], want ? tf_f32(want)[0] : NAN, want ? tf_f32(want)[REF_STEPS - 1] : NAN);
    printf("    worst relative: loss %.2e, gradient norm %.2e, lr %.2e; final weights %.2e (key biases at most %.2e)\n",
           dl, dn, dr, dw, noise);
    CHECKF(dl >= 0 && dl <= LOSS_TOL, "losses: %.3g", dl);
    CHECKF(dn >= 0 && dn <= NORM_TOL, "gradient norms: %.3g", dn);
    CHECKF(dr >= 0 && dr <= LR_TOL, "learning rates: %.3g", dr);
    CHECKF(dw >= 0 && dw <= WEIGHT_TOL, "final weights: %.3g", dw);
    CHECKF(noise <= KEY_BIAS_MAX, "a key bias (gradient 0) moved to %.3g", noise);
    tf_arena_free(ar), tf_st_close(f), tf_task_free(t), test_rm_rf(run);
}
