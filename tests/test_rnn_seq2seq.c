/* The RNN translation baseline (Bahdanau attention): one forward for
 * training and step-by-step decoding, source padding, the alignment alpha,
 * gradients to every parameter, a tiny model that learns to reverse digit
 * strings and decodes them greedily and with beam search (also through
 * tformer translate), the folder round trip and tformer train --arch rnn. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "tformer.h"

static tf_rnn_seq2seq_config tiny(tf_rnn_kind cell, int share) {
    tf_rnn_seq2seq_config c = tf_rnn_seq2seq_config_default(13, share ? 13 : 11);
    c.emb_dim = 6, c.hidden = 8, c.attn_size = 5, c.context = 16, c.dropout = 0, c.cell = cell;
    c.share_embeddings = share;
    return c;
}

static tf_tensor *ids(tf_ctx *ctx, int B, int T, const int32_t *v) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
    memcpy(t->data, v, (size_t)B * (size_t)T * sizeof *v);
    return t;
}

TEST(rnn_seq2seq_config_table_and_checks) {
    tf_rnn_seq2seq_config c = tf_rnn_seq2seq_config_default(100, 120);
    CHECK(tf_rnn_seq2seq_config_check(&c) == 0 && c.cell == TF_RNN_GRU && c.hidden == 256 && !c.share_embeddings);
    c.share_embeddings = 1;
    CHECK(tf_rnn_seq2seq_config_check(&c) != 0 && strstr(tf_error(), "share_embeddings needs one vocabulary"));
    tf_rnn_seq2seq_task_config t = tf_rnn_seq2seq_task_config_default();
    CHECK(t.batch_tokens == 4096 && t.max_len == 128 && fabsf(t.label_smoothing - 0.1f) < 1e-7f && t.model.context == 128);
}

/* The teacher-forced forward's logits and alignments equal those of the
 * decoder fed a token (or two) at a time: one step function serves both. */
TEST(rnn_seq2seq_step_decoding_equals_full_forward) {
    for (int variant = 0; variant < 3; variant++) {
        tf_rnn_seq2seq_config c = tiny(variant == 1 ? TF_RNN_LSTM : TF_RNN_GRU, 0);
        c.maxout = variant == 2 ? 3 : 0; /* the paper's deep output */
        tf_rnn_seq2seq *m = tf_rnn_seq2seq_new(&c, 5 + (uint64_t)variant);
        CHECK(m != NULL);
        tf_ctx *ctx = tf_ctx_new(0);
        tf_ctx_set_grad(ctx, 0);
        const int32_t src[5] = {3, 7, 1, 12, 4}, tgt[6] = {9, 5, 9, 2, 2, 10};
        tf_rnn_seq2seq_inputs in = {.input_ids = ids(ctx, 1, 5, src), .decoder_input_ids = ids(ctx, 1, 6, tgt),
                                    .output_attentions = 1};
        tf_rnn_seq2seq_outputs out;
        CHECKF(tf_rnn_seq2seq_run(ctx, m, &in, &out) == 0, "%s", tf_error());
        CHECK(out.attentions && out.attentions->ndim == 3 && out.attentions->shape[1] == 6 && out.attentions->shape[2] == 5);
        tf_decoder *d = tf_rnn_seq2seq_decoder_new(m, src, 5, 16);
        CHECK(d != NULL && tf_rnn_seq2seq_decoder_alpha(d) == NULL);
        float logits[11];
        double worst = 0, worst_a = 0;
        for (int t = 0; t < 6;) {
            int n = t == 2 ? 2 : 1; /* one step of two tokens */
            CHECK(tf_decoder_step(d, tgt + t, n, logits) == 0);
            t += n;
            const float *want = tf_f32(out.logits) + (t - 1) * 11, *wa = tf_f32(out.attentions) + (t - 1) * 5;
            const float *alpha = tf_rnn_seq2seq_decoder_alpha(d);
            for (int v = 0; v < 11; v++) worst = fmax(worst, fabs(logits[v] - want[v]) / (1 + fabs(want[v])));
            for (int j = 0; j < 5; j++) worst_a = fmax(worst_a, fabs(alpha[j] - wa[j]));
        }
        CHECKF(worst < 1e-5 && worst_a < 1e-6, "variant %d: step logits differ by %.3g, alphas by %.3g", variant, worst,
               worst_a);
        /* a fork continues like its parent; reset goes back to s_0 */
        tf_decoder *f = tf_decoder_fork(d);
        float lf[11], ld[11], l0[11];
        CHECK(f && tf_decoder_step(f, tgt, 1, lf) == 0 && tf_decoder_step(d, tgt, 1, ld) == 0 && !memcmp(lf, ld, sizeof lf));
        tf_decoder_reset(d);
        CHECK(tf_decoder_step(d, tgt, 1, l0) == 0);
        CHECK(fabsf(l0[0] - tf_f32(out.logits)[0]) < 1e-5f);
        tf_decoder_free(f), tf_decoder_free(d);
        tf_ctx_free(ctx);
        tf_rnn_seq2seq_free(m);
    }
}

/* The paper's deep output recomputed in double: a model without maxout whose
 * W_o is the identity on its first rows shows o_i = [s_i; c_i; E y_{i-1}];
 * logits = W_o max(u_{2k}, u_{2k+1}) + b_o with u = U_o o_i + b_u must follow. */
TEST(rnn_seq2seq_maxout_output_equals_its_formula) {
    tf_rnn_seq2seq_config c = tiny(TF_RNN_GRU, 0), p;
    c.tgt_vocab = 40, c.maxout = 3; /* O = 3H + E = 30 <= 40 rows */
    p = c, p.maxout = 0;
    tf_rnn_seq2seq *m = tf_rnn_seq2seq_new(&c, 4), *plain = tf_rnn_seq2seq_new(&p, 4);
    CHECK(m && plain);
    const int O = 30, L = 3, V = 40;
    for (int i = 0; i < tf_params_count(m->params); i++) { /* the same weights but the output layers */
        const char *n = tf_params_name(m->params, i);
        tf_tensor *a = tf_params_tensor(m->params, i), *b = tf_params_get(plain->params, n);
        if (strncmp(n, "decoder.out", 11) && strncmp(n, "decoder.deep_out", 16))
            memcpy(tf_f32(b), tf_f32(a), (size_t)tf_numel(a) * sizeof(float));
    }
    float *w = tf_f32(plain->out.weight), *bo = tf_f32(plain->out.bias); /* (V,O): identity on the first O rows */
    for (int v = 0; v < V; v++)
        for (int k = 0; k < O; k++) w[v * O + k] = v == k;
    memset(bo, 0, V * sizeof *bo);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_ctx_set_grad(ctx, 0);
    const int32_t src[4] = {3, 7, 1, 12}, tgt[3] = {9, 5, 2};
    tf_rnn_seq2seq_inputs in = {.input_ids = ids(ctx, 1, 4, src), .decoder_input_ids = ids(ctx, 1, 3, tgt)};
    tf_rnn_seq2seq_outputs got, shown;
    CHECK(tf_rnn_seq2seq_run(ctx, m, &in, &got) == 0 && tf_rnn_seq2seq_run(ctx, plain, &in, &shown) == 0);
    const float *U = tf_f32(m->deep_out.weight), *bu = tf_f32(m->deep_out.bias);
    const float *W = tf_f32(m->out.weight), *bw = tf_f32(m->out.bias);
    double worst = 0;
    for (int t = 0; t < 3; t++) {
        const float *o = tf_f32(shown.logits) + t * V;
        double tt[3];
        for (int k = 0; k < L; k++) {
            double u[2];
            for (int r = 0; r < 2; r++) {
                u[r] = bu[2 * k + r];
                for (int j = 0; j < O; j++) u[r] += (double)U[(2 * k + r) * O + j] * o[j];
            }
            tt[k] = u[0] > u[1] ? u[0] : u[1];
        }
        for (int v = 0; v < V; v++) {
            double z = bw[v];
            for (int k = 0; k < L; k++) z += (double)W[v * L + k] * tt[k];
            worst = fmax(worst, fabs(z - tf_f32(got.logits)[t * V + v]) / (1 + fabs(z)));
        }
    }
    CHECKF(worst < 1e-5, "maxout logits differ from the formula by %.3g", worst);
    tf_ctx_free(ctx);
    tf_rnn_seq2seq_free(m), tf_rnn_seq2seq_free(plain);
}

/* A padded source (attention_mask 0 on trailing padding) gives the logits of
 * the unpadded one; alpha rows sum to 1 and are 0 on the padding. */
TEST(rnn_seq2seq_source_padding_is_invisible_and_alpha_is_a_distribution) {
    for (int variant = 0; variant < 3; variant++) {
        tf_rnn_seq2seq_config c = tiny(variant == 1 ? TF_RNN_LSTM : TF_RNN_GRU, 0);
        c.maxout = variant == 2 ? 3 : 0; /* the paper's deep output */
        tf_rnn_seq2seq *m = tf_rnn_seq2seq_new(&c, 9);
        tf_ctx *ctx = tf_ctx_new(0);
        tf_ctx_set_grad(ctx, 0);
        const int32_t src2[2 * 6] = {3, 7, 1, 0, 0, 0, 8, 2, 9, 4, 4, 6}, mask[2 * 6] = {1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1};
        const int32_t tgt2[2 * 4] = {9, 5, 9, 2, 9, 1, 1, 3}, src1[3] = {3, 7, 1};
        tf_rnn_seq2seq_inputs in2 = {.input_ids = ids(ctx, 2, 6, src2), .attention_mask = ids(ctx, 2, 6, mask),
                                     .decoder_input_ids = ids(ctx, 2, 4, tgt2), .output_attentions = 1};
        tf_rnn_seq2seq_inputs in1 = {.input_ids = ids(ctx, 1, 3, src1), .decoder_input_ids = ids(ctx, 1, 4, tgt2),
                                     .output_attentions = 1};
        tf_rnn_seq2seq_outputs o2, o1;
        CHECK(m && tf_rnn_seq2seq_run(ctx, m, &in2, &o2) == 0 && tf_rnn_seq2seq_run(ctx, m, &in1, &o1) == 0);
        double worst = 0, sum_err = 0, on_pad = 0;
        for (int i = 0; i < 4 * 11; i++) worst = fmax(worst, fabs(tf_f32(o2.logits)[i] - tf_f32(o1.logits)[i]));
        for (int b = 0; b < 2; b++)
            for (int t = 0; t < 4; t++) {
                const float *a = tf_f32(o2.attentions) + (b * 4 + t) * 6;
                double s = 0;
                for (int j = 0; j < 6; j++) s += a[j], on_pad = fmax(on_pad, mask[b * 6 + j] ? 0 : fabs(a[j]));
                sum_err = fmax(sum_err, fabs(s - 1));
            }
        for (int t = 0; t < 4; t++)
            for (int j = 0; j < 3; j++)
                worst = fmax(worst, fabs(tf_f32(o2.attentions)[t * 6 + j] - tf_f32(o1.attentions)[t * 3 + j]));
        CHECKF(worst < 1e-5, "variant %d: padding changed the logits or alphas by %.3g", variant, worst);
        CHECKF(sum_err < 1e-5 && on_pad == 0, "alpha rows sum to 1 within %.3g, %.3g on padding", sum_err, on_pad);
        tf_ctx_free(ctx);
        tf_rnn_seq2seq_free(m);
    }
}

/* Every parameter takes part: after one backward each has a gradient. */
TEST(rnn_seq2seq_every_parameter_gets_a_gradient) {
    for (int variant = 0; variant < 3; variant++) {
        tf_rnn_seq2seq_config c = tiny(variant == 1 ? TF_RNN_LSTM : TF_RNN_GRU, 0);
        c.maxout = variant == 2 ? 3 : 0; /* the paper's deep output */
        tf_rnn_seq2seq *m = tf_rnn_seq2seq_new(&c, 3);
        tf_ctx *ctx = tf_ctx_new(0);
        const int32_t src[2 * 4] = {3, 7, 1, 2, 8, 2, 9, 4}, mask[2 * 4] = {1, 1, 1, 0, 1, 1, 1, 1};
        const int32_t tgt[2 * 3] = {9, 5, 9, 9, 1, 1}, lab[2 * 3] = {5, 9, 1, 1, 1, -100};
        tf_rnn_seq2seq_inputs in = {.input_ids = ids(ctx, 2, 4, src), .attention_mask = ids(ctx, 2, 4, mask),
                                    .decoder_input_ids = ids(ctx, 2, 3, tgt), .labels = ids(ctx, 2, 3, lab),
                                    .label_smoothing = 0.1f};
        tf_rnn_seq2seq_outputs out;
        CHECK(m && tf_rnn_seq2seq_run(ctx, m, &in, &out) == 0 && tf_backward(ctx, out.loss, NULL) == 0);
        int named = 0;
        for (int i = 0; i < tf_params_count(m->params); i++) {
            tf_tensor *p = tf_params_tensor(m->params, i);
            double s = 0;
            for (int64_t k = 0; k < tf_numel(p); k++) s += fabs(p->grad[k]);
            CHECKF(s > 0, "%s has no gradient", tf_params_name(m->params, i));
            named += !strcmp(tf_params_name(m->params, i), "encoder.rnn.weight_hh_l0_reverse") ||
                     !strcmp(tf_params_name(m->params, i), "decoder.attention.v_a.weight") ||
                     !strcmp(tf_params_name(m->params, i), "decoder.init.weight") ||
                     !strcmp(tf_params_name(m->params, i), "decoder.cell.weight_ih");
        }
        CHECK(named == 4 && tf_params_count(m->params) == (variant == 2 ? 23 : 21));
        tf_ctx_free(ctx);
        tf_rnn_seq2seq_free(m);
    }
}

/* ---------------------------------------------------------------- learning to reverse */

enum { MAXLEN = 6, L = MAXLEN + 1 };

/* Ten digits 0-9 and the folder convention's specials: pad 10, BOS 11, EOS 12. */
enum { VOCAB = 13, PAD = 10, BOS = 11, EOS = 12 };

/* src: 3..MAXLEN digits then EOS; target: the digits reversed then EOS. */
static int make_pair(uint64_t *s, int32_t *src, int32_t *tgt) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    int n = 3 + (int)((*s >> 33) % (MAXLEN - 2));
    for (int i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
        src[i] = (int32_t)((*s >> 33) % 10);
    }
    for (int i = 0; i < n; i++) tgt[i] = src[n - 1 - i];
    src[n] = tgt[n] = EOS;
    return n + 1;
}

/* One batch of B pairs padded to L: a training step's loss. */
static float train_step(tf_rnn_seq2seq *m, tf_optim *opt, tf_ctx *ctx, uint64_t *s, int B, float lr) {
    int32_t src[64 * L], mask[64 * L], tin[64 * L], lab[64 * L], one_s[L], one_t[L];
    for (int b = 0; b < B; b++) {
        int n = make_pair(s, one_s, one_t);
        for (int t = 0; t < L; t++) {
            src[b * L + t] = t < n ? one_s[t] : PAD, mask[b * L + t] = t < n;
            tin[b * L + t] = t == 0 ? BOS : t < n ? one_t[t - 1] : PAD;
            lab[b * L + t] = t < n ? one_t[t] : -100;
        }
    }
    tf_ctx_reset(ctx);
    tf_rnn_seq2seq_inputs in = {.input_ids = ids(ctx, B, L, src), .attention_mask = ids(ctx, B, L, mask),
                                .decoder_input_ids = ids(ctx, B, L, tin), .labels = ids(ctx, B, L, lab)};
    tf_rnn_seq2seq_outputs out;
    tf_params_zero_grad(m->params);
    if (tf_rnn_seq2seq_run(ctx, m, &in, &out) || tf_backward(ctx, out.loss, NULL))
        return fprintf(stderr, "    %s\n", tf_error()), NAN;
    tf_clip_grad_norm(m->params, 1.0);
    tf_optim_step(opt, lr);
    return tf_f32(out.loss)[0];
}

static tf_rnn_seq2seq *train_reverser(float *first, float *last) {
    tf_rnn_seq2seq_config c = tf_rnn_seq2seq_config_default(VOCAB, VOCAB);
    c.emb_dim = 16, c.hidden = 32, c.attn_size = 32, c.context = 16, c.dropout = 0, c.share_embeddings = 1;
    tf_rnn_seq2seq *m = tf_rnn_seq2seq_new(&c, 42);
    tf_optim *opt = m ? tf_adamw_new(m->params, (tf_adamw_config){0.9f, 0.98f, 1e-9f, 0.0f}) : NULL;
    tf_ctx *ctx = tf_ctx_new(0);
    uint64_t s = 1;
    *first = *last = opt && ctx ? train_step(m, opt, ctx, &s, 32, 1e-5f) : NAN;
    for (int step = 1; step < 800 && isfinite(*last); step++)
        *last = train_step(m, opt, ctx, &s, 32, tf_lr_schedule(TF_SCHEDULE_COSINE, step, 50, 800, 1e-2f, 1e-4f));
    tf_ctx_free(ctx);
    tf_optim_free(opt);
    return m;
}

/* popen(cmd): its output into out; the exit status. */
static int run(const char *cmd, char *out, size_t n) {
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(out, 1, n - 1, p) : 0;
    out[k] = 0;
    return p ? pclose(p) : -1;
}

/* Greedy and beam search through the decoder interface, then tformer
 * translate on the model saved with a character tokenizer of the digits. */
TEST(rnn_seq2seq_learns_to_reverse_and_decodes_greedy_beam_and_cli) {
    float first, last;
    tf_rnn_seq2seq *m = train_reverser(&first, &last);
    CHECK(m != NULL);
    CHECKF(last < 0.1f * first, "loss %.3f -> %.3f", first, last);
    int right[2] = {0, 0}, same[2] = {0, 0};
    uint64_t held = 987654321;
    int32_t src[20][L], tgt[20][L], bos = BOS;
    int n[20];
    tf_ids got[2][20];
    memset(got, 0, sizeof got);
    for (int k = 0; k < 20; k++) {
        n[k] = make_pair(&held, src[k], tgt[k]);
        for (int beam = 0; beam < 2; beam++) {
            tf_generate_opts o = tf_generate_opts_default();
            o.max_tokens = MAXLEN + 2, o.eos_id = EOS, o.beam = beam ? 4 : 1, o.temperature = 0;
            tf_decoder *d = tf_rnn_seq2seq_decoder_new(m, src[k], n[k], 16);
            CHECK(d && tf_generate(d, &bos, 1, &o, NULL, NULL, &got[beam][k], NULL) == 0);
            right[beam] += got[beam][k].n == (size_t)n[k] && !memcmp(got[beam][k].v, tgt[k], (size_t)n[k] * sizeof **tgt);
            tf_decoder_free(d);
        }
    }
    /* the 20 sources (lengths differ: padded, masked) as rows of one decoder: each its own result */
    const int32_t *rows[20];
    for (int k = 0; k < 20; k++) rows[k] = src[k];
    for (int beam = 0; beam < 2; beam++) {
        tf_generate_opts o = tf_generate_opts_default();
        o.max_tokens = MAXLEN + 2, o.eos_id = EOS, o.beam = beam ? 4 : 1, o.temperature = 0;
        tf_decoder *d = tf_rnn_seq2seq_decoder_new_batch(m, rows, n, 20, 16);
        tf_ids all[20];
        memset(all, 0, sizeof all);
        CHECKF(d && tf_generate_rows(d, &bos, 1, &o, NULL, all, NULL) == 0, "%s", tf_error());
        for (int k = 0; k < 20; k++) {
            same[beam] += all[k].n == got[beam][k].n && !memcmp(all[k].v, got[beam][k].v, all[k].n * sizeof *all[k].v);
            tf_ids_free(&all[k]), tf_ids_free(&got[beam][k]);
        }
        tf_decoder_free(d);
    }
    printf("    loss %.3f -> %.3f; reversed right: greedy %d/20, beam 4 %d/20; as rows of one decoder: %d/20, %d/20 the same\n",
           first, last, right[0], right[1], same[0], same[1]);
    CHECK(right[0] >= 18 && right[1] >= 18);
    CHECK(same[0] == 20 && same[1] == 20);
    char dir[] = "/tmp/tformer_rnntr_XXXXXX", path[600], cmd[2400], out[4096];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/digits.txt", dir);
    FILE *f = fopen(path, "w");
    fputs("0123456789", f);
    fclose(f);
    const char *files[] = {path};
    tf_tokenizer_train_opts to = {.kind = TF_TOKENIZER_CHAR};
    CHECKF(tf_tokenizer_train(&to, files, 1, dir) == 0, "%s", tf_error());
    CHECK(tf_rnn_seq2seq_save(m, dir) == 0);
    snprintf(cmd, sizeof cmd, "printf '345\\n90127\\n8888\\n' | %s translate --model %s --beam 3 --attention-png %s/att "
             "2>%s/said", test_tformer_bin(), dir, dir, dir);
    CHECKF(run(cmd, out, sizeof out) == 0 && !strcmp(out, "543\n72109\n8888\n"), "output:\n%s", out);
    snprintf(path, sizeof path, "%s/said", dir); /* where the pictures went */
    size_t said_len;
    char *said = test_slurp(path, &said_len), want[700];
    snprintf(want, sizeof want, "tformer translate: 3 attention pictures in %s/att/: 0001.png to 0003.png\n", dir);
    CHECKF(said && strstr(said, want), "stderr: %s", said ? said : "(none)");
    free(said);
    /* (stderr apart: under the sanitizers LeakSanitizer reports the fontconfig suppression there) */
    for (int i = 1; i <= 4; i++) { /* one picture per line: the alignment alone */
        int w, h;
        snprintf(path, sizeof path, "%s/att/%04d.png", dir, i);
        if (i == 4) CHECKF(access(path, F_OK) != 0, "%s: more pictures than lines", path);
        else CHECKF(test_png_size(path, &w, &h) == 0 && w > 200 && h > 150 && h < 400, "%s: %dx%d", path, w, h);
    }
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
    tf_rnn_seq2seq_free(m);
}

/* A saved folder loads back to the same logits; bad folders are refused by name. */
TEST(rnn_seq2seq_folder_round_trip_and_bad_folders) {
    char dir[] = "/tmp/tformer_rnns_XXXXXX", cmd[600], sub[700];
    CHECK(mkdtemp(dir) != NULL);
    tf_rnn_seq2seq_config c = tiny(TF_RNN_LSTM, 0);
    tf_rnn_seq2seq *m = tf_rnn_seq2seq_new(&c, 17);
    CHECK(m && tf_rnn_seq2seq_save(m, dir) == 0);
    tf_rnn_seq2seq *r = tf_rnn_seq2seq_load(dir);
    CHECKF(r != NULL, "%s", tf_error());
    tf_ctx *ctx = tf_ctx_new(0);
    tf_ctx_set_grad(ctx, 0);
    const int32_t src[4] = {3, 7, 1, 12}, tgt[3] = {9, 5, 9};
    tf_rnn_seq2seq_inputs in = {.input_ids = ids(ctx, 1, 4, src), .decoder_input_ids = ids(ctx, 1, 3, tgt)};
    tf_rnn_seq2seq_outputs a, b;
    CHECK(tf_rnn_seq2seq_run(ctx, m, &in, &a) == 0 && tf_rnn_seq2seq_run(ctx, r, &in, &b) == 0);
    CHECK(!memcmp(a.logits->data, b.logits->data, 3 * 11 * sizeof(float)));
    CHECK(r->cfg.cell == TF_RNN_LSTM && r->cfg.hidden == 8 && r->cfg.attn_size == 5 && r->cfg.emb_dim == 6);
    tf_rnn_seq2seq_free(r);
    c.hidden = 10; /* a different configuration: the tensors no longer fit */
    tf_rnn_seq2seq *other = tf_rnn_seq2seq_new(&c, 1);
    snprintf(sub, sizeof sub, "%s/other", dir);
    CHECK(other && tf_rnn_seq2seq_save(other, sub) == 0);
    CHECK(test_cp_weights(sub, dir) == 0);
    CHECKF(tf_rnn_seq2seq_load(dir) == NULL && strstr(tf_error(), "encoder"), "%s", tf_error());
    CHECK(test_edit_config(dir, "tformer-rnn-seq2seq", "tformer-seq2seq") == 0);
    CHECK(tf_rnn_seq2seq_load(dir) == NULL && strstr(tf_error(), "model_type \"tformer-seq2seq\""));
    tf_ctx_free(ctx);
    tf_rnn_seq2seq_free(m), tf_rnn_seq2seq_free(other);
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}

/* tformer train --arch rnn runs the shared translation task (a few steps)
 * and writes a folder tformer translate reads; its misuse names the arch. */
TEST(rnn_seq2seq_train_cli_then_translate) {
    char dir[] = "/tmp/tformer_rnnt_XXXXXX", cmd[3000], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd,
             "printf 'ab\\nba\\naab\\nbba\\n' > %s/s && printf 'ba\\nab\\nbaa\\nabb\\n' > %s/t && "
             "%s train --arch rnn --src %s/s --tgt %s/t --valid-src %s/s --valid-tgt %s/t --out %s/run --steps 20 "
             "--emb-dim 8 --hidden 8 --attn-size 8 --cell lstm --context 16 --max-len 8 --batch-tokens 64 --log-every 20 "
             "--eval-every 20 --threads 1 2>&1 && grep -q tformer-rnn-seq2seq %s/run/config.json && "
             "printf 'ab\\n' | %s translate --model %s/run 2>&1",
             dir, dir, test_tformer_bin(), dir, dir, dir, dir, dir, dir, test_tformer_bin(), dir);
    CHECKF(run(cmd, out, sizeof out) == 0, "output:\n%s", out);
    snprintf(cmd, sizeof cmd, "%s train --arch rnn --src a --tgt b --valid-src c --out x 2>&1", test_tformer_bin());
    CHECKF(run(cmd, out, sizeof out) != 0 && strstr(out, "--arch rnn needs --valid-tgt"), "%s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}
