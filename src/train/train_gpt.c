/* Training a GPT: tokenize the corpus, hold out its tail for validation, then
 * AdamW steps on random windows. All randomness is counter-based (seed, step,
 * micro-batch, row), so a run is reproducible bit for bit and a resumed run
 * continues exactly: the checkpoint needs only the step besides the weights
 * and the optimizer state. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../util/util.h"

typedef struct {
    double *x, *y;
    int n, cap;
} series;

typedef struct {
    const tf_train_config *cfg;
    const char *dir;
    tf_gpt *m;
    tf_adamw *opt;
    tf_tokenizer *tok;
    int32_t *ids;
    int64_t n_ids, n_train;
    tf_ctx *ctx;
    series train, val, lr; /* lr and grad norm share x with train */
    series gnorm;
} run;

static int series_add(series *s, double x, double y) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 1024;
        double *nx = realloc(s->x, (size_t)cap * sizeof *nx);
        if (nx) s->x = nx;
        double *ny = nx ? realloc(s->y, (size_t)cap * sizeof *ny) : NULL;
        if (!ny) return tf_set_error("train: out of memory");
        s->y = ny, s->cap = cap;
    }
    s->x[s->n] = x, s->y[s->n++] = y;
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t key(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    uint64_t s = a ^ (b * 0x9E3779B97F4A7C15ull) ^ (c * 0xC2B2AE3D27D4EB4Full) ^ (d * 0x165667B19E3779F9ull);
    return tf_splitmix64(&s);
}

/* ---------------------------------------------------------------- data and tokenizer */

/* The run folder gets its own copy of the tokenizer, in a layout tf_tokenizer_load knows. */
static int install_tokenizer(const char *spec, const char *const *data, int n_data, const char *dir) {
    if (!strcmp(spec, "char")) {
        tf_tokenizer_train_opts o = {TF_TOKENIZER_CHAR, 0, 0};
        return tf_tokenizer_train(&o, data, n_data, dir);
    }
    static const char *const pairs[][2] = {{"encoder.json", "vocab.json"}, {"vocab.bpe", "merges.txt"},
                                           {"vocab.json", "vocab.json"},   {"merges.txt", "merges.txt"},
                                           {"vocab.txt", "vocab.txt"},     {"chars.txt", "chars.txt"},
                                           {"tokenizer.tformer.json", "tokenizer.tformer.json"}};
    tf_tokenizer *t = tf_tokenizer_load(spec); /* validates it before anything is copied */
    if (!t) return -1;
    tf_tokenizer_free(t);
    char from[4096], to[4096];
    struct stat st;
    size_t n = strlen(spec);
    if (!stat(spec, &st) && S_ISREG(st.st_mode)) { /* a WordPiece vocab.txt named directly */
        snprintf(to, sizeof to, "%s/vocab.txt", dir);
        return tf_copy_file(spec, to);
    }
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        snprintf(from, sizeof from, "%.*s/%s", (int)n, spec, pairs[i][0]);
        snprintf(to, sizeof to, "%s/%s", dir, pairs[i][1]);
        if (!stat(from, &st) && tf_copy_file(from, to)) return -1;
    }
    return 0;
}

static int load_data(run *r, const char *const *data, int n_data) {
    tf_ids ids = {0};
    for (int i = 0; i < n_data; i++) {
        size_t len;
        char *text = tf_read_file(data[i], &len);
        if (!text) return tf_ids_free(&ids), -1;
        int rc = tf_tokenizer_encode(r->tok, text, len, &ids);
        free(text);
        if (rc) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", tf_error());
            tf_ids_free(&ids);
            return tf_set_error("%s: %s", data[i], msg);
        }
    }
    int64_t T = r->cfg->model.context, n = (int64_t)ids.n;
    int64_t n_val = (int64_t)((double)n * r->cfg->val_fraction);
    if (n - n_val < T + 2 || n_val < T + 2) {
        tf_ids_free(&ids);
        return tf_set_error("data: %lld tokens are too few: with val_fraction %g and context %lld, at least %lld are needed",
                            (long long)n, r->cfg->val_fraction, (long long)T,
                            (long long)((T + 2) / (r->cfg->val_fraction < 0.5f ? r->cfg->val_fraction : 0.5f)) + 1);
    }
    r->ids = ids.v, r->n_ids = n, r->n_train = n - n_val;
    return 0;
}

/* Rows of (B,T) windows: inputs and next-token targets. */
static void fill_batch(const run *r, int val, uint64_t k, tf_tensor *x, tf_tensor *y) {
    int64_t B = x->shape[0], T = x->shape[1];
    int64_t base = val ? r->n_train : 0, len = val ? r->n_ids - r->n_train : r->n_train;
    for (int64_t b = 0; b < B; b++) {
        int64_t off = base + (int64_t)(key(r->cfg->seed, k, (uint64_t)b, val) % (uint64_t)(len - T - 1));
        memcpy(tf_i32(x) + b * T, r->ids + off, (size_t)T * sizeof(int32_t));
        memcpy(tf_i32(y) + b * T, r->ids + off + 1, (size_t)T * sizeof(int32_t));
    }
}

/* ---------------------------------------------------------------- steps */

static double micro_loss(run *r, int val, uint64_t k, int train, float grad_scale) {
    tf_ctx *ctx = r->ctx;
    tf_ctx_reset(ctx);
    tf_ctx_set_training(ctx, train);
    tf_ctx_set_grad(ctx, train);
    tf_ctx_set_seed(ctx, key(r->cfg->seed, k, 0xD0, 1));
    int64_t shape[2] = {r->cfg->batch, r->cfg->model.context};
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, shape, 0), *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, shape, 0);
    if (!x || !y) return NAN;
    fill_batch(r, val, k, x, y);
    tf_tensor *loss = tf_gpt_forward(ctx, r->m, x, y, NULL);
    if (!loss) return NAN;
    if (train) {
        tf_tensor *g = tf_tensor_new(ctx, TF_DTYPE_F32, 0, NULL, 0);
        if (!g) return NAN;
        tf_f32(g)[0] = grad_scale;
        if (tf_backward(ctx, loss, g)) return NAN;
    }
    return tf_f32(loss)[0];
}

static double evaluate(run *r) {
    double sum = 0;
    for (int i = 0; i < r->cfg->eval_batches; i++) sum += micro_loss(r, 1, (uint64_t)i, 0, 0);
    return sum / r->cfg->eval_batches;
}

static int train_step(run *r, int64_t step, tf_train_report *rep) {
    const tf_train_config *c = r->cfg;
    tf_params_zero_grad(r->m->params);
    double loss = 0;
    for (int micro = 0; micro < c->accum; micro++) {
        double l = micro_loss(r, 0, (uint64_t)step * 1024 + (uint64_t)micro, 1, 1.0f / (float)c->accum);
        if (isnan(l)) return -1;
        loss += l / c->accum;
    }
    rep->grad_norm = tf_clip_grad_norm(r->m->params, c->grad_clip);
    rep->lr = tf_lr_schedule(step, c->warmup, c->steps, c->lr, c->min_lr);
    tf_adamw_step(r->opt, rep->lr);
    rep->loss = (float)loss;
    return 0;
}

/* ---------------------------------------------------------------- files of the run */

static void model_signature(const tf_gpt_config *m, char *out, size_t n) {
    snprintf(out, n, "vocab_size=%d context=%d n_layer=%d n_head=%d d_model=%d d_ff=%d pos=%s norm_first=%d activation=%d tied=%d",
             m->vocab_size, m->context, m->n_layer, m->n_head, m->d_model, m->d_ff,
             m->pos == TF_POS_LEARNED ? "learned" : "sinusoidal", m->norm_first, (int)m->activation, m->tied);
}

static int write_history(const run *r) {
    tf_buf b = {0};
    char line[256], path[4096];
    int rc = tf_buf_put(&b, "step,train_loss,val_loss,lr,grad_norm\n", 38), v = 0;
    for (int i = 0; !rc && i < r->train.n; i++) {
        while (v < r->val.n && r->val.x[v] < r->train.x[i]) v++;
        char val[40] = "";
        if (v < r->val.n && r->val.x[v] == r->train.x[i]) snprintf(val, sizeof val, "%.9g", r->val.y[v]);
        int n = snprintf(line, sizeof line, "%.0f,%.9g,%s,%.9g,%.9g\n", r->train.x[i], r->train.y[i], val,
                         r->lr.y[i], r->gnorm.y[i]);
        rc = tf_buf_put(&b, line, (size_t)n);
    }
    snprintf(path, sizeof path, "%s/losses.csv", r->dir);
    rc = rc || tf_write_file(path, b.p, b.n);
    free(b.p);
    if (rc) return -1;
    snprintf(path, sizeof path, "%s/loss.png", r->dir);
    return tf_png_plot(path, r->train.x, r->train.y, r->train.n, r->val.x, r->val.y, r->val.n);
}

static int read_history(run *r, int64_t upto) {
    char path[4096];
    snprintf(path, sizeof path, "%s/losses.csv", r->dir);
    size_t len;
    char *text = tf_read_file(path, &len);
    if (!text) return 0; /* no history: the plot restarts */
    int rc = 0;
    for (char *line = strchr(text, '\n'); line && !rc; line = strchr(line + 1, '\n')) {
        double step, loss, val = NAN, lr, gn;
        char *p = line + 1, *end;
        step = strtod(p, &end);
        if (end == p || *end != ',') break;
        loss = strtod(end + 1, &end);
        if (*end == ',' && end[1] != ',') val = strtod(end + 1, &end);
        else if (*end == ',') end++;
        lr = strtod(end + 1, &end);
        gn = strtod(end + 1, &end);
        if (step > (double)upto) break;
        rc = series_add(&r->train, step, loss) || series_add(&r->lr, step, lr) || series_add(&r->gnorm, step, gn) ||
             (!isnan(val) && series_add(&r->val, step, val));
    }
    free(text);
    return rc;
}

static const char *const TOKENIZER_FILES[] = {"vocab.json", "merges.txt", "vocab.txt", "chars.txt",
                                              "tokenizer.tformer.json"};

/* The training configuration as JSON (the keys tf_train_config_load reads). */
static char *config_json(const tf_train_config *c) {
    char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"steps\":%lld,\"batch\":%d,\"accum\":%d,\"lr\":%.9g,\"min_lr\":%.9g,\"warmup\":%lld,"
             "\"weight_decay\":%.9g,\"beta1\":%.9g,\"beta2\":%.9g,\"grad_clip\":%.9g,\"eval_every\":%lld,"
             "\"eval_batches\":%d,\"val_fraction\":%.9g,\"checkpoint_every\":%lld,\"seed\":%llu,"
             "\"n_layer\":%d,\"n_head\":%d,\"d_model\":%d,\"d_ff\":%d,\"context\":%d,\"dropout\":%.9g,"
             "\"norm_first\":%s,\"tied\":%s,\"norm_eps\":%.9g,\"pos\":\"%s\",\"activation\":\"%s\"}",
             (long long)c->steps, c->batch, c->accum, c->lr, c->min_lr, (long long)c->warmup, c->weight_decay,
             c->beta1, c->beta2, c->grad_clip, (long long)c->eval_every, c->eval_batches, c->val_fraction,
             (long long)c->checkpoint_every, (unsigned long long)c->seed, c->model.n_layer, c->model.n_head,
             c->model.d_model, c->model.d_ff, c->model.context, c->model.dropout,
             c->model.norm_first ? "true" : "false", c->model.tied ? "true" : "false", c->model.norm_eps,
             c->model.pos == TF_POS_LEARNED ? "learned" : "sinusoidal",
             c->model.activation == TF_ACT_RELU ? "relu" : c->model.activation == TF_ACT_GELU ? "gelu" : "gelu_tanh");
    size_t n = strlen(buf) + 1;
    char *out = malloc(n);
    if (out) memcpy(out, buf, n);
    return out;
}

/* The tokenizer's files go into the checkpoint's metadata too: it is complete by itself. */
static int add_tokenizer_metadata(tf_st_writer *w, const char *dir) {
    for (size_t i = 0; i < sizeof TOKENIZER_FILES / sizeof TOKENIZER_FILES[0]; i++) {
        char path[4096], key[128];
        snprintf(path, sizeof path, "%s/%s", dir, TOKENIZER_FILES[i]);
        struct stat st;
        if (stat(path, &st)) continue;
        size_t n;
        char *text = tf_read_file(path, &n);
        snprintf(key, sizeof key, "tformer_tokenizer/%s", TOKENIZER_FILES[i]);
        int rc = !text || tf_st_writer_set_metadata(w, key, text);
        free(text);
        if (rc) return -1;
    }
    return 0;
}

/* On resume the run folder's tokenizer must be the one the checkpoint was trained with. */
static int check_tokenizer(const tf_st_file *f, const char *dir, const char *ck) {
    for (size_t i = 0; i < sizeof TOKENIZER_FILES / sizeof TOKENIZER_FILES[0]; i++) {
        char path[4096], key[128];
        snprintf(key, sizeof key, "tformer_tokenizer/%s", TOKENIZER_FILES[i]);
        const char *want = tf_st_metadata(f, key);
        if (!want) continue;
        snprintf(path, sizeof path, "%s/%s", dir, TOKENIZER_FILES[i]);
        size_t n;
        char *have = tf_read_file(path, &n);
        int same = have && n == strlen(want) && !memcmp(have, want, n);
        free(have);
        if (!same) return tf_set_error("%s: %s differs from the tokenizer the checkpoint was trained with", ck, path);
    }
    return 0;
}

static int save_checkpoint(const run *r, int64_t step) {
    char path[4096], sig[512], num[32];
    tf_st_writer *w = tf_st_writer_new();
    if (!w) return tf_set_error("checkpoint: out of memory");
    model_signature(&r->m->cfg, sig, sizeof sig);
    snprintf(num, sizeof num, "%lld", (long long)step);
    int rc = tf_st_writer_set_metadata(w, "tformer_step", num) || tf_st_writer_set_metadata(w, "tformer_model", sig);
    snprintf(num, sizeof num, "%llu", (unsigned long long)r->cfg->seed);
    rc = rc || tf_st_writer_set_metadata(w, "tformer_seed", num);
    char *cj = config_json(r->cfg);
    rc = rc || !cj || tf_st_writer_set_metadata(w, "tformer_config", cj) || add_tokenizer_metadata(w, r->dir);
    free(cj);
    for (int i = 0; !rc && i < tf_params_count(r->m->params); i++)
        rc = tf_st_writer_add(w, tf_params_name(r->m->params, i), tf_params_tensor(r->m->params, i));
    rc = rc || tf_adamw_save(r->opt, w);
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", r->dir);
    rc = rc || tf_st_writer_save(w, path) || tf_gpt_save_hf(r->m, r->dir) || write_history(r);
    tf_st_writer_free(w);
    return rc ? -1 : 0;
}

/* Weights, optimizer state and step from run_dir/checkpoint.safetensors. */
static int load_checkpoint(run *r, int64_t *step) {
    char path[4096], sig[512];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", r->dir);
    tf_st_file *f = tf_st_open(path);
    if (!f) return -1;
    const char *s = tf_st_metadata(f, "tformer_step"), *msig = tf_st_metadata(f, "tformer_model");
    const char *seed = tf_st_metadata(f, "tformer_seed");
    model_signature(&r->m->cfg, sig, sizeof sig);
    char want_seed[32];
    snprintf(want_seed, sizeof want_seed, "%llu", (unsigned long long)r->cfg->seed);
    int rc = 0;
    if (!s || !msig || !seed) rc = tf_set_error("%s: not a tformer checkpoint (no step, model or seed)", path);
    else if (strcmp(msig, sig)) rc = tf_set_error("%s: checkpoint of another model: it has %s; the config asks for %s", path, msig, sig);
    else if (strcmp(seed, want_seed)) rc = tf_set_error("%s: checkpoint trained with seed %s, not %s", path, seed, want_seed);
    else if ((*step = atoll(s)) < 0 || *step > r->cfg->steps)
        rc = tf_set_error("%s: step %s is outside the run's %lld steps", path, s, (long long)r->cfg->steps);
    else rc = check_tokenizer(f, r->dir, path) || tf_params_load(r->m->params, f, 0) || tf_adamw_load(r->opt, f, *step);
    if (rc && s && msig && !strstr(tf_error(), path)) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", tf_error());
        tf_set_error("%s: %s", path, msg);
    }
    tf_st_close(f);
    return rc ? -1 : read_history(r, *step);
}

/* ---------------------------------------------------------------- the run */

static int setup(run *r, const char *const *data, int n_data, const char *tokenizer, int resume) {
    tf_train_config *cfg = (tf_train_config *)r->cfg;
    if (mkdir(r->dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", r->dir, strerror(errno));
    if (!resume && install_tokenizer(tokenizer, data, n_data, r->dir)) return -1;
    if (!(r->tok = tf_tokenizer_load(r->dir))) return -1;
    cfg->model.vocab_size = tf_tokenizer_vocab_size(r->tok);
    if (tf_train_config_check(cfg) || load_data(r, data, n_data)) return -1;
    if (!(r->m = tf_gpt_new(&cfg->model, cfg->seed ? cfg->seed : 1)) || !(r->ctx = tf_ctx_new(cfg->seed))) return -1;
    tf_adamw_config oc = {cfg->beta1, cfg->beta2, 1e-8f, cfg->weight_decay};
    return (r->opt = tf_adamw_new(r->m->params, oc)) ? 0 : -1;
}

static void teardown(run *r) {
    tf_adamw_free(r->opt);
    tf_gpt_free(r->m);
    tf_ctx_free(r->ctx);
    tf_tokenizer_free(r->tok);
    free(r->ids);
    series *s[] = {&r->train, &r->val, &r->lr, &r->gnorm};
    for (int i = 0; i < 4; i++) free(s[i]->x), free(s[i]->y);
}

int tf_gpt_train(const tf_train_config *cfg_in, const char *const *data, int n_data, const char *tokenizer,
                 const char *run_dir, int resume, volatile int *stop, tf_train_report_fn report, void *user) {
    if (n_data < 1) return tf_set_error("train: no data files");
    tf_train_config cfg = *cfg_in;
    run r;
    memset(&r, 0, sizeof r);
    r.cfg = &cfg, r.dir = run_dir;
    int64_t step = 0;
    int rc = setup(&r, data, n_data, tokenizer, resume) || (resume && load_checkpoint(&r, &step)) ? -1 : 0;
    double t0 = now_s();
    int64_t first = step, tokens = (int64_t)cfg.batch * cfg.accum * cfg.model.context;
    while (!rc && step < cfg.steps) {
        if (stop && *stop) {
            rc = save_checkpoint(&r, step) ? -1 : 1;
            break;
        }
        tf_train_report rep = {.step = step + 1, .steps = cfg.steps, .val_loss = NAN};
        if (train_step(&r, step, &rep)) {
            rc = -1;
            break;
        }
        step++;
        rc = series_add(&r.train, (double)step, rep.loss) || series_add(&r.lr, (double)step, rep.lr) ||
             series_add(&r.gnorm, (double)step, rep.grad_norm);
        if (!rc && (step % cfg.eval_every == 0 || step == cfg.steps)) {
            rep.val_loss = evaluate(&r);
            rc = series_add(&r.val, (double)step, rep.val_loss);
        }
        double dt = now_s() - t0;
        rep.elapsed_s = dt;
        rep.tokens_per_s = (double)(step - first) * (double)tokens / dt;
        rep.eta_s = dt / (double)(step - first) * (double)(cfg.steps - step);
        if (report) report(user, &rep);
        if (!rc && (step % cfg.checkpoint_every == 0 || step == cfg.steps)) rc = save_checkpoint(&r, step);
    }
    teardown(&r);
    return rc;
}

int tf_gpt_evaluate(const tf_gpt *m, tf_tokenizer *tok, const char *const *data, int n_data, double *loss,
                    int64_t *tokens) {
    tf_ids ids = {0};
    for (int i = 0; i < n_data; i++) {
        size_t len;
        char *text = tf_read_file(data[i], &len);
        int rc = !text || tf_tokenizer_encode(tok, text, len, &ids);
        free(text);
        if (rc) return tf_ids_free(&ids), -1;
    }
    int64_t T = m->cfg.context, n = (int64_t)ids.n;
    if (n < 2) {
        tf_ids_free(&ids);
        return tf_set_error("eval: the data holds %lld tokens; at least 2 are needed", (long long)n);
    }
    tf_ctx *ctx = tf_ctx_new(0);
    double sum = 0;
    int64_t count = 0;
    for (int64_t off = 0; off + 1 < n && ctx; off += T) { /* non-overlapping windows */
        int64_t len = n - 1 - off < T ? n - 1 - off : T;
        tf_ctx_reset(ctx);
        tf_ctx_set_grad(ctx, 0);
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, len}, 0);
        tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, len}, 0);
        if (!x || !y) break;
        memcpy(tf_i32(x), ids.v + off, (size_t)len * 4);
        memcpy(tf_i32(y), ids.v + off + 1, (size_t)len * 4);
        tf_tensor *l = tf_gpt_forward(ctx, m, x, y, NULL);
        if (!l) break;
        sum += (double)tf_f32(l)[0] * (double)len;
        count += len;
    }
    tf_ctx_free(ctx);
    tf_ids_free(&ids);
    if (count != n - 1) return -1;
    *loss = sum / (double)count;
    *tokens = count;
    return 0;
}
