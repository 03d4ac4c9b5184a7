/* Continual attention (CoReAtt, CoSiAtt) against regular attention on each
 * window, and over a long stream with large scores. */
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* A self-attention with random weights and biases; the q and k rows of the
 * projection scaled by qk_scale (large scores). */
static tf_params *make_mha(tf_mha *m, int E, int H, uint64_t seed, float qk_scale) {
    tf_params *ps = tf_params_new();
    tf_mha_config c = tf_mha_config_default(E, H);
    if (!ps || tf_mha_register(ps, "", m, &c) || tf_params_init(ps, seed)) return tf_params_free(ps), NULL;
    tf_tensor_fill_normal(m->in_proj_bias, seed + 7, 0.5f);
    tf_tensor_fill_normal(m->out_proj.bias, seed + 8, 0.5f);
    for (int64_t i = 0; i < 2 * E * E; i++) tf_f32(m->in_proj_weight)[i] *= qk_scale;
    return ps;
}

/* Regular attention on the window xs[t-n+1..t] (stream-major (T,B,E)):
 * retroactive (B,n,E) or the last row (B,E), into ref. */
static int regular(tf_ctx *ctx, const tf_mha *m, const float *xs, int64_t t, int B, int n, int E, int retro,
                   float *ref) {
    tf_tensor *w = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){B, n, E}, 0);
    if (!w) return -1;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < n; j++)
            memcpy(tf_f32(w) + ((size_t)b * n + j) * E, xs + ((size_t)(t - n + 1 + j) * B + b) * E, E * sizeof(float));
    tf_tensor *y = tf_mha_forward(ctx, m, w, w, w, NULL, NULL);  // y: (B,n,E)
    if (!y) return -1;
    for (int b = 0; b < B; b++)
        if (retro) memcpy(ref + (size_t)b * n * E, tf_f32(y) + (size_t)b * n * E, (size_t)n * E * sizeof(float));
        else memcpy(ref + (size_t)b * E, tf_f32(y) + ((size_t)b * n + n - 1) * E, E * sizeof(float));
    return 0;
}

/* Stream T steps of xs through both kinds; the worst relative error of a step
 * against regular attention on its window (shift 0), or on the window one
 * step earlier (shift 1: must differ). */
static double stream_err(const tf_mha *m, const float *xs, int64_t T, int B, int n, int E, int retro, int shift,
                         int64_t *recomputed) {
    tf_coatt *s = tf_coatt_new(m, retro ? TF_COATT_RETRO : TF_COATT_SINGLE, B, n);
    tf_ctx *ctx = tf_ctx_new(1);
    float *ref = malloc((size_t)B * n * E * sizeof(float));
    double worst = 0.0;
    for (int64_t t = 0; s && ctx && ref && t < T; t++) {
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){B, E}, 0), *out;
        memcpy(tf_f32(x), xs + (size_t)t * B * E, (size_t)B * E * sizeof(float));
        int rc = tf_coatt_step(ctx, s, x, &out);
        if (rc < 0 || (rc == 0) != (t < n - 1)) { worst = INFINITY; break; }
        if (rc == 1 && t - shift >= n - 1) {
            if (regular(ctx, m, xs, t - shift, B, n, E, retro, ref)) { worst = INFINITY; break; }
            double e = test_rel_err(tf_f32(out), ref, (long)tf_numel(out));
            if (!(e <= worst)) worst = e;
        }
        tf_ctx_reset(ctx);
    }
    if (recomputed && s) *recomputed = tf_coatt_recomputed(s);
    if (!s || !ctx || !ref) worst = INFINITY;
    tf_coatt_free(s), tf_ctx_free(ctx), free(ref);
    return worst;
}

static float *random_stream(int64_t n, uint64_t seed, float std) {
    tf_ctx *ctx = tf_ctx_new(0);
    tf_tensor *t = ctx ? tf_tensor_new(ctx, TF_DTYPE_F32, 1, (int64_t[]){n}, 0) : NULL;
    float *xs = t ? malloc((size_t)n * sizeof *xs) : NULL;
    if (xs) tf_tensor_fill_normal(t, seed, std), memcpy(xs, tf_f32(t), (size_t)n * sizeof *xs);
    tf_ctx_free(ctx);
    return xs;
}

TEST(continual_attention_equals_regular) {
    const int E = 12, H = 3, B = 2, n = 6, T = 40;
    tf_mha m;
    tf_params *ps = make_mha(&m, E, H, 3, 1.0f);
    float *xs = random_stream((int64_t)T * B * E, 11, 1.0f);
    CHECK(ps && xs);
    for (int retro = 0; retro < 2; retro++) {
        double e = stream_err(&m, xs, T, B, n, E, retro, 0, NULL);
        double off = stream_err(&m, xs, T, B, n, E, retro, 1, NULL);
        printf("    %s: worst step rel err %.3g (against the previous window: %.3g)\n", retro ? "CoReAtt" : "CoSiAtt", e, off);
        CHECKF(e <= 1e-5, "%s rel err %g", retro ? "retro" : "single", e);
        CHECKF(off > 1e-2, "the comparison cannot tell windows apart (%g)", off);
    }
    /* window 1 and a window as long as the stream */
    for (int retro = 0; retro < 2; retro++) {
        CHECK(stream_err(&m, xs, T, B, 1, E, retro, 0, NULL) <= 1e-5);
        CHECK(stream_err(&m, xs, T, B, T, E, retro, 0, NULL) <= 1e-5);
    }
    free(xs), tf_params_free(ps);
}

/* Scores of several hundred: exp overflows float32 (and double past ~709);
 * 100,000 steps of a small model stay within 1e-4 of regular inference. */
TEST(continual_attention_long_stream_large_scores) {
    const int E = 4, H = 2, B = 1, n = 5;
    const int64_t T = 100000;
    tf_mha m;
    tf_params *ps = make_mha(&m, E, H, 5, 12.0f);
    float *xs = random_stream(T * B * E, 13, 2.0f);
    CHECK(ps && xs);
    for (int retro = 0; retro < 2; retro++) {
        int64_t rec = 0;
        double e = stream_err(&m, xs, T, B, n, E, retro, 0, &rec);
        printf("    %s: %lld steps, worst step rel err %.3g, rows recomputed %lld\n", retro ? "CoReAtt" : "CoSiAtt",
               (long long)T, e, (long long)rec);
        CHECKF(e <= 1e-4, "rel err %g", e);
        if (retro) CHECKF(rec > 0, "the large scores never made a row cancel");
    }
    free(xs), tf_params_free(ps);
}

TEST(continual_attention_bad_input) {
    tf_mha m;
    tf_params *ps = make_mha(&m, 4, 2, 1, 1.0f);
    CHECK(ps);
    CHECK(!tf_coatt_new(&m, TF_COATT_RETRO, 1, 0) && strstr(tf_error(), "window 0"));
    tf_coatt *s = tf_coatt_new(&m, TF_COATT_RETRO, 2, 3);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){2, 5}, 0), *out;
    CHECK(s && x);
    CHECK(tf_coatt_step(ctx, s, x, &out) == -1 && strstr(tf_error(), "(2,5)") && !out);
    tf_coatt_free(s), tf_ctx_free(ctx), tf_params_free(ps);
}

/* ---------------------------------------------------------------- the encoder */

/* Worst relative error over a stream of T steps between step mode and batch
 * mode on the same window; shift 1 compares with the previous window instead. */
static double encoder_err(const tf_continual_config *c, int B, int T, int shift) {
    tf_continual e;
    tf_params *ps = tf_params_new();
    if (!ps || tf_continual_register(ps, "", &e, c) || tf_params_init(ps, 21)) return tf_params_free(ps), INFINITY;
    for (int i = 0; i < tf_params_count(ps); i++) tf_tensor_fill_normal(tf_params_tensor(ps, i), 40 + i, 0.3f);
    int n = c->window, E = c->d_model;
    float *xs = random_stream((int64_t)T * B * E, 17, 1.0f);
    tf_continual_state *s = tf_continual_state_new(&e, B);
    tf_ctx *ctx = tf_ctx_new(1);
    double worst = xs && s && ctx ? 0.0 : INFINITY;
    for (int64_t t = 0; worst < INFINITY && t < T; t++, tf_ctx_reset(ctx)) {
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){B, E}, 0), *out;
        memcpy(tf_f32(x), xs + (size_t)t * B * E, (size_t)B * E * sizeof(float));
        int rc = tf_continual_step(ctx, s, x, &out);
        if (rc < 0 || (rc == 0) != (t < n - 1)) worst = INFINITY;
        if (rc != 1 || t - shift < n - 1) continue;
        int64_t t0 = t - shift - n + 1;
        tf_tensor *w = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){B, n, E}, 0);
        for (int b = 0; b < B; b++)
            for (int j = 0; j < n; j++)
                memcpy(tf_f32(w) + ((size_t)b * n + j) * E, xs + ((size_t)(t0 + j) * B + b) * E, E * sizeof(float));
        tf_tensor *ref = tf_continual_forward(ctx, &e, w, t0);
        double err = ref ? test_rel_err(tf_f32(out), tf_f32(ref), (long)tf_numel(ref)) : INFINITY;
        if (!(err <= worst)) worst = err;
    }
    tf_continual_state_free(s), tf_ctx_free(ctx), free(xs), tf_continual_free(&e), tf_params_free(ps);
    return worst;
}

TEST(continual_encoder_step_equals_batch) {
    tf_continual_config c;
    tf_fields f = {tf_continual_config_fields(), &c};
    CHECK(tf_fields_defaults(&f, 1) == 0);
    c.d_model = 8, c.n_head = 2, c.d_ff = 16, c.window = 5, c.pos_len = 7; /* 7 > 5: the positions wrap */
    double worst = 0.0;
    for (int L = 1; L <= 4; L++)
        for (int v = 0; v < 8; v++) {
            c.n_layer = L, c.norm_first = v & 1, c.pos = (v >> 1) & 1 ? TF_POS_SINUSOIDAL : TF_POS_LEARNED;
            c.cls_token = (v >> 2) & 1;
            if (c.cls_token && L == 1) continue;
            double e = encoder_err(&c, 2, 19, 0);
            CHECKF(e <= 1e-5, "depth %d %s-LN %s cls %d: step vs batch rel err %g", L, c.norm_first ? "pre" : "post",
                   c.pos ? "sinusoidal" : "learned", c.cls_token, e);
            if (e > worst) worst = e;
            double off = encoder_err(&c, 2, 19, 1);
            CHECKF(off > 1e-3, "depth %d: cannot tell windows apart (%g)", L, off);
        }
    printf("    depths 1-4, pre/post-LN, learned/sinusoidal, class token: worst step vs batch rel err %.3g\n", worst);
}

TEST(continual_encoder_bad_input) {
    tf_continual_config c;
    tf_fields f = {tf_continual_config_fields(), &c};
    CHECK(tf_fields_defaults(&f, 1) == 0);
    c.d_model = 4, c.n_head = 2, c.d_ff = 8, c.window = 9, c.pos_len = 8;
    tf_continual e;
    tf_params *ps = tf_params_new();
    CHECK(tf_continual_register(ps, "", &e, &c) == -1 && strstr(tf_error(), "window 9 is larger than the position table"));
    tf_continual_free(&e), tf_params_free(ps);
    c.window = 0;
    ps = tf_params_new();
    CHECK(tf_continual_register(ps, "", &e, &c) == -1 && strstr(tf_error(), "window"));
    tf_continual_free(&e), tf_params_free(ps);
    c.window = 3;
    ps = tf_params_new();
    CHECK(tf_continual_register(ps, "", &e, &c) == 0 && tf_params_init(ps, 1) == 0);
    tf_continual_state *s = tf_continual_state_new(&e, 1);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){1, 4}, 0), *out;
    CHECK(s && x && tf_continual_step(ctx, s, x, &out) == 0);
    tf_f32(x)[2] = NAN;
    CHECK(tf_continual_step(ctx, s, x, &out) == -1 && strstr(tf_error(), "step 1"));
    tf_continual_state_free(s), tf_ctx_free(ctx), tf_continual_free(&e), tf_params_free(ps);
}

/* torch-run on continual-inference's modules: clear errors for what it cannot run. */
TEST(continual_torch_run_bad_config) {
    const char *dir = "tests/fixtures/co_retro";
    char w[512], in[512], out[] = "/tmp/tformer_co_out_XXXXXX", cfg[] = "/tmp/tformer_co_cfg_XXXXXX";
    snprintf(w, sizeof w, "%s/weights.safetensors", dir);
    snprintf(in, sizeof in, "%s/input.safetensors", dir);
    CHECK(test_temp_file(out) == 0 && test_temp_file(cfg) == 0);
    const char *bad[3][2] = {
        {"{\"module\":\"continual.RetroactiveMultiheadAttention\",\"embed_dim\":6,\"num_heads\":2,\"sequence_len\":4,"
         "\"batch_first\":false}", "only batch_first true"},
        {"{\"module\":\"continual.RetroactiveMultiheadAttention\",\"embed_dim\":6,\"num_heads\":2,\"sequence_len\":20}",
         "11 steps are fewer than sequence_len 20"},
        {"{\"module\":\"continual.SingleOutputMultiheadAttention\",\"embed_dim\":6,\"num_heads\":2}", "sequence_len"}};
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(cfg, "w");
        CHECK(f);
        fputs(bad[i][0], f);
        fclose(f);
        CHECKF(tf_torch_run(cfg, w, in, out, NULL) == -1 && strstr(tf_error(), bad[i][1]), "case %d: %s", i, tf_error());
    }
    CHECK(tf_torch_run("tests/fixtures/co_retro/config.json", w, in, out, NULL) == 0);
    unlink(out), unlink(cfg);
}

/* ---------------------------------------------------------------- tformer stream */

TEST(continual_stream_cli) {
    tf_continual_config c;
    tf_fields f = {tf_continual_config_fields(), &c};
    CHECK(tf_fields_defaults(&f, 1) == 0);
    c.d_model = 4, c.n_head = 2, c.d_ff = 8, c.n_layer = 3, c.window = 3, c.pos_len = 5, c.cls_token = 1;
    tf_continual e;
    tf_params *ps = tf_params_new();
    CHECK(tf_continual_register(ps, "", &e, &c) == 0 && tf_params_init(ps, 4) == 0);
    char dir[] = "/tmp/tformer_costream_XXXXXX", in[1200], cmd[2600], *out = malloc(1 << 16);
    CHECK(mkdtemp(dir) && out && tf_continual_save(dir, &e, ps) == 0);
    const int T = 9, E = 4;
    float *xs = random_stream(T * E, 5, 1.0f);
    snprintf(in, sizeof in, "%s/in.txt", dir);
    FILE *fi = fopen(in, "w");
    CHECK(fi && xs);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < E; i++) fprintf(fi, i == E - 1 ? "%.9g\n" : "%.9g, ", xs[t * E + i]);
    fclose(fi);
    snprintf(cmd, sizeof cmd, "stream --model %s < %s 2>/dev/null", dir, in);
    CHECK(test_run_cli("", cmd, out, 1 << 16) == 0);
    /* each output line against batch mode on its window */
    tf_ctx *ctx = tf_ctx_new(0);
    char *p = out;
    double worst = 0.0;
    int lines = 0;
    for (int t = c.window - 1; t < T; t++, lines++) {
        tf_tensor *w = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){1, c.window, E}, 0);
        memcpy(tf_f32(w), xs + (t - c.window + 1) * E, (size_t)c.window * E * sizeof(float));
        tf_tensor *ref = tf_continual_forward(ctx, &e, w, t - c.window + 1);
        float got[4];
        for (int i = 0; i < E; i++) got[i] = strtof(p, &p);
        CHECK(ref);
        double err = test_rel_err(got, tf_f32(ref), E);
        if (err > worst) worst = err;
        tf_ctx_reset(ctx);
    }
    while (*p == '\n' || *p == ' ') p++;
    CHECKF(lines == T - c.window + 1 && *p == 0, "unexpected output tail '%.40s'", p);
    CHECKF(worst <= 1e-5, "stream vs batch rel err %g", worst);
    printf("    stream: %d outputs, worst rel err against batch mode %.3g\n", lines, worst);
    /* bad input: a wrong width (line named), NaN (step named), windows 0 and past the table */
    struct { const char *text, *args, *want; } bad[] = {
        {"1 2 3 4\n1 2 3\n", "", "line 2: 3 values; the model takes d_model = 4"},
        {"1 2 3 4\n1 2 3 4\nnan 1 2 3\n", "", "line 3: continual: step 2: stream 0 feature 0 is nan"},
        {"1 2 3 4\n", "--window 0", "window"},
        {"1 2 3 4\n", "--window 6", "window 6 is larger than the position table (pos_len 5)"},
        {"1 x 3 4\n", "", "line 1: 'x 3 4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fi = fopen(in, "w");
        CHECK(fi);
        fputs(bad[i].text, fi);
        fclose(fi);
        snprintf(cmd, sizeof cmd, "stream --model %s %s < %s", dir, bad[i].args, in);
        int rc = test_run_cli("", cmd, out, 1 << 16);
        CHECKF(rc == 1 && strstr(out, bad[i].want), "case %zu: status %d, output %s", i, rc, out);
    }
    /* standard input closed, or a folder: a read error, not the end of a stream (it exited 0) */
    const char *unreadable[] = {"<&-", "<"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "stream --model %s %s %s", dir, unreadable[i], i ? dir : "");
        int rc = test_run_cli("", cmd, out, 1 << 16);
        CHECKF(rc == 1 && strstr(out, "tformer stream: cannot read standard input: "), "%s: status %d, output %s",
               unreadable[i], rc, out);
    }
    /* gzip'ed standard input (through a pipe): the plain input's outputs */
    fi = fopen(in, "w");
    CHECK(fi && fputs("1 2 3 4\n0.5 0 -1 2\n3 1 0 2\n", fi) >= 0 && fclose(fi) == 0);
    char *gz = malloc(1 << 16), said[1024], want[1024];
    CHECK(gz != NULL);
    snprintf(cmd, sizeof cmd, "%s stream --model %s < %s 2>/dev/null", test_tformer_bin(), dir, in);
    CHECK(test_popen(cmd, out, 1 << 16) == 0 && *out);
    snprintf(cmd, sizeof cmd, "gzip -c %s | %s stream --model %s 2>/dev/null", in, test_tformer_bin(), dir);
    CHECKF(test_popen(cmd, gz, 1 << 16) == 0 && !strcmp(gz, out), "gzip'ed: %s\nplain: %s", gz, out);
    free(gz);
    /* the start-up line, whole (as cli_other_verbs_say_what_they_assumed checks the other verbs') */
    snprintf(cmd, sizeof cmd, "stream --model %s --threads 1 < %s", dir, in);
    snprintf(want, sizeof want, "tformer stream: continual model from %s/; 1 thread (--threads); float32, %s kernels; "
             "window 3 (the config's); step mode (no --recompute)", dir, tf_kernels_info());
    CHECKF(test_said_line(cmd, said, sizeof said) == 0 && !strcmp(said, want), "\n    want: %s\n    got:  %s", want,
           said);
    tf_ctx_free(ctx), free(xs), free(out), tf_continual_free(&e), tf_params_free(ps);
    test_rm_rf(dir);
}

/* Each output is written when its step is done, not at the end of the input:
 * with standard input still open, the first output arrives after `window` lines. */
TEST(continual_stream_flushes_each_step) {
    tf_continual_config c;
    tf_fields f = {tf_continual_config_fields(), &c};
    CHECK(tf_fields_defaults(&f, 1) == 0);
    c.d_model = 4, c.n_head = 2, c.d_ff = 8, c.n_layer = 2, c.window = 2, c.pos_len = 2;
    tf_continual e;
    tf_params *ps = tf_params_new();
    char dir[] = "/tmp/tformer_coflush_XXXXXX";
    CHECK(tf_continual_register(ps, "", &e, &c) == 0 && tf_params_init(ps, 4) == 0 && mkdtemp(dir) &&
          tf_continual_save(dir, &e, ps) == 0);
    int in[2], out[2];
    CHECK(pipe(in) == 0 && pipe(out) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(in[0], 0), dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        execl(test_tformer_bin(), "tformer", "stream", "--model", dir, (char *)NULL);
        _exit(127);
    }
    close(in[0]), close(out[1]);
    const char *lines = "1 2 3 4\n0.5 0 -1 2\n";
    CHECK(write(in[1], lines, strlen(lines)) == (ssize_t)strlen(lines));
    struct pollfd p = {out[0], POLLIN, 0};
    int ready = poll(&p, 1, 20000); /* the output must come while stdin is still open */
    char buf[256] = {0};
    ssize_t k = ready == 1 ? read(out[0], buf, sizeof buf - 1) : -1;
    close(in[1]);
    int st;
    waitpid(pid, &st, 0);
    close(out[0]);
    tf_continual_free(&e), tf_params_free(ps), test_rm_rf(dir);
    CHECKF(ready == 1 && k > 0 && strchr(buf, '\n'), "no output line before the input ended (poll %d, read %zd)", ready, k);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The model handle's stream (tf_model_stream_new) of a saved classifier of tokens: step mode
 * equals the encoder's own tf_continual_step with the classifier after, bit for bit; recompute
 * gives the same labels within float tolerance; a bad id or window is an error, the labels are
 * label_names', and a model without the capability refuses by name. */
TEST(continual_model_stream_equals_the_encoder_steps) {
    tf_continual_config c;
    tf_fields f = {tf_continual_config_fields(), &c};
    CHECK(tf_fields_defaults(&f, 1) == 0);
    c.d_model = 8, c.n_head = 2, c.d_ff = 16, c.n_layer = 2, c.window = 3, c.pos_len = 4, c.vocab_size = 5;
    c.n_labels = 2;
    snprintf(c.label_names, sizeof c.label_names, "en,de");
    tf_continual e;
    tf_params *ps = tf_params_new();
    char dir[] = "/tmp/tformer_costream_XXXXXX";
    CHECK(tf_continual_register(ps, "", &e, &c) == 0 && tf_params_init(ps, 9) == 0 && mkdtemp(dir) &&
          tf_continual_save(dir, &e, ps) == 0);
    tf_model *m = tf_model_load(dir, NULL);
    CHECK(m && tf_model_caps(m) == TF_CAP_STREAM);
    tf_stream *s = tf_model_stream_new(m, NULL), *r = tf_model_stream_new(m, &(tf_stream_opts){0, 1});
    tf_continual_state *st = tf_continual_state_new(&e, 1);
    tf_ctx *ctx = tf_ctx_new(0);
    CHECK(s && r && st && ctx);
    tf_stream_shape h = tf_stream_shape_of(s);
    CHECK(h.window == 3 && h.d_model == 8 && h.vocab_size == 5 && h.n_labels == 2);
    const int32_t ids[] = {1, 4, 0, 2, 2, 3, 1};
    int outputs = 0;
    for (int t = 0; t < 7; t++) {
        float got[2], again[2];
        tf_tensor *id = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){1}, 0), *y = NULL;
        tf_i32(id)[0] = ids[t];
        int want = tf_continual_step(ctx, st, tf_continual_embed(ctx, &e, id), &y);
        if (want == 1) y = tf_continual_classify(ctx, &e, y);
        CHECK(tf_stream_step(s, ids[t], NULL, got) == want && tf_stream_step(r, ids[t], NULL, again) == want);
        if (want == 1) {
            CHECKF(!memcmp(got, tf_f32(y), sizeof got), "step %d: the stream's logits are not the encoder's", t);
            CHECKF(fabsf(got[0] - again[0]) < 1e-4f && fabsf(got[1] - again[1]) < 1e-4f, "step %d: recompute", t);
            outputs++;
        }
        tf_ctx_reset(ctx);
    }
    CHECK(outputs == 5 && tf_stream_steps(s) == 7 && tf_stream_steps(r) == 7);
    float z[2];
    CHECK(tf_stream_step(s, 5, NULL, z) == -1 && strstr(tf_error(), "token id 5 is outside the vocabulary (0..4)"));
    CHECK(tf_stream_steps(s) == 7);
    char buf[32];
    CHECK(!strcmp(tf_model_label(m, 1, buf, sizeof buf), "de"));
    CHECK(!tf_model_stream_new(m, &(tf_stream_opts){5, 0}) && strstr(tf_error(), "window 5 is larger"));
    tf_stream_free(s), tf_stream_free(r), tf_continual_state_free(st), tf_ctx_free(ctx), tf_model_free(m);
    tf_continual_free(&e), tf_params_free(ps), test_rm_rf(dir);
    /* a model that cannot stream says so */
    tf_model *vit = tf_model_load("tests/fixtures_vit/cls_grey28_p4_labels", NULL);
    CHECK(vit && !tf_model_stream_new(vit, NULL) && strstr(tf_error(), "cannot stream"));
    tf_model_free(vit);
}
