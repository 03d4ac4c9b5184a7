/* The encoder-decoder: configuration, one forward for training and for
 * step-by-step decoding, source padding, gradients to every parameter, and
 * a tiny model that learns to reverse digit strings and decodes them with
 * greedy and beam search through the decoder interface. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "tformer.h"

static tf_seq2seq_config tiny(int norm_first, tf_pos_kind pos) {
    tf_seq2seq_config c = tf_seq2seq_config_default(13, 11);
    c.d_model = 16, c.n_head = 2, c.d_ff = 24, c.n_encoder_layers = 2, c.n_decoder_layers = 2, c.context = 16;
    c.dropout = 0, c.norm_first = norm_first, c.pos = pos;
    return c;
}

static tf_tensor *ids(tf_ctx *ctx, int B, int T, const int32_t *v) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
    memcpy(t->data, v, (size_t)B * (size_t)T * sizeof *v);
    return t;
}

TEST(seq2seq_config_table_and_checks) {
    tf_seq2seq_config c = tf_seq2seq_config_default(100, 120);
    CHECK(tf_seq2seq_config_check(&c) == 0);
    CHECK(c.pos == TF_POS_SINUSOIDAL && !c.norm_first && c.activation == TF_ACT_RELU && c.scale_embedding && c.tied);
    c.share_embeddings = 1;
    CHECK(tf_seq2seq_config_check(&c) != 0 && strstr(tf_error(), "share_embeddings needs one vocabulary"));
    c = tf_seq2seq_config_default(100, 100);
    c.d_model = 30, c.n_head = 4;
    CHECK(tf_seq2seq_config_check(&c) != 0 && strstr(tf_error(), "not a multiple"));
    /* the attention weights' and the activation's dropout: -1 follows --dropout, else their own */
    c = tf_seq2seq_config_default(100, 100);
    CHECK(c.attn_dropout == -1 && c.activation_dropout == -1);
    c.d_model = 8, c.n_head = 2, c.dropout = 0.3f, c.activation_dropout = 0.05f;
    tf_seq2seq *m = tf_seq2seq_new(&c, 1);
    CHECK(m && m->enc_block.attn_dropout == 0.3f && m->dec_block.attn_dropout == 0.3f);
    CHECK(m && m->enc_block.activation_dropout == 0.05f && m->dec_block.activation_dropout == 0.05f);
    tf_seq2seq_free(m);
    c.attn_dropout = -0.5f;
    CHECK(tf_seq2seq_config_check(&c) != 0 && strstr(tf_error(), "attn_dropout -0.5"));
}

/* Logits of the whole target at once equal those fed a token (or two) at a
 * time through the decoder's KV cache: one forward serves both. */
TEST(seq2seq_incremental_decoding_equals_full_forward) {
    for (int variant = 0; variant < 4; variant++) {
        tf_seq2seq_config c = tiny(variant & 1, variant & 2 ? TF_POS_LEARNED : TF_POS_SINUSOIDAL);
        tf_seq2seq *m = tf_seq2seq_new(&c, 5 + (uint64_t)variant);
        CHECK(m != NULL);
        tf_ctx *ctx = tf_ctx_new(0);
        tf_ctx_set_grad(ctx, 0);
        const int32_t src[5] = {3, 7, 1, 12, 4}, tgt[6] = {0, 5, 9, 2, 2, 10};
        tf_seq2seq_inputs in = {.input_ids = ids(ctx, 1, 5, src), .decoder_input_ids = ids(ctx, 1, 6, tgt)};
        tf_seq2seq_outputs out;
        CHECK(tf_seq2seq_run(ctx, m, &in, &out) == 0);
        tf_decoder *d = tf_seq2seq_decoder_new(m, src, 5, 16);
        CHECK(d != NULL);
        float logits[11];
        double worst = 0;
        for (int t = 0; t < 6;) {
            int n = t == 2 ? 2 : 1; /* one step of two tokens */
            CHECK(tf_decoder_step(d, tgt + t, n, logits) == 0);
            t += n;
            const float *want = tf_f32(out.logits) + (t - 1) * 11;
            for (int v = 0; v < 11; v++) worst = fmax(worst, fabs(logits[v] - want[v]) / (1 + fabs(want[v])));
        }
        CHECKF(worst < 1e-5, "variant %d: step logits differ from the full forward by %.3g", variant, worst);
        tf_decoder_free(d);
        tf_ctx_free(ctx);
        tf_seq2seq_free(m);
    }
}

/* A step that leaves its logits in the decoder (tf_decoder_step_view: what beam search
 * reads, no copy) gives the bits a step into the caller's buffer gives, for a step of one
 * token and of two (each row's last position moved into place), before and after a row
 * selection; a decoder that keeps none says so. */
TEST(seq2seq_step_view_equals_step_into_a_buffer) {
    tf_seq2seq_config c = tiny(0, TF_POS_SINUSOIDAL);
    tf_seq2seq *m = tf_seq2seq_new(&c, 21);
    CHECK(m != NULL);
    const int32_t s0[3] = {3, 7, 1}, s1[5] = {8, 2, 9, 4, 6}, *src[2] = {s0, s1};
    const int n_src[2] = {3, 5}, sel[3] = {1, 0, 1};
    tf_decoder *a = tf_seq2seq_decoder_new_batch(m, src, n_src, 2, 16), *b = tf_seq2seq_decoder_new_batch(m, src, n_src, 2, 16);
    CHECK(a && b);
    const int32_t first[2 * 2] = {0, 5, 0, 9}, next[3] = {2, 4, 7}, last[3] = {10, 1, 3};
    float want[3 * 11];
    CHECK(tf_decoder_step(a, first, 2, want) == 0);
    const float *got = tf_decoder_step_view(b, first, 2);
    CHECK(got && memcmp(got, want, 2 * 11 * sizeof *want) == 0);
    CHECK(tf_decoder_select(a, sel, 3) == 0 && tf_decoder_select(b, sel, 3) == 0);
    CHECK(tf_decoder_step(a, next, 1, want) == 0);
    got = tf_decoder_step_view(b, next, 1);
    CHECK(got && memcmp(got, want, 3 * 11 * sizeof *want) == 0);
    CHECK(tf_decoder_step(a, last, 1, want) == 0 && (got = tf_decoder_step_view(b, last, 1)) != NULL);
    CHECK(memcmp(got, want, 3 * 11 * sizeof *want) == 0 && b->len == 4);
    tf_decoder_free(a), tf_decoder_free(b);
    tf_gpt_config gc = tf_gpt_config_default(11, 8, 1, 2, 8);
    tf_gpt *g = tf_gpt_new(&gc, 1);
    tf_decoder *d = g ? tf_gpt_decoder_new(g, 8) : NULL;
    CHECK(d && !tf_decoder_step_view(d, first, 1) && strstr(tf_error(), "keeps no logits") && d->len == 0);
    CHECK(d && tf_decoder_step(d, first, 1, NULL) != 0 && d->len == 0);
    tf_decoder_free(d);
    tf_gpt_free(g);
    tf_seq2seq_free(m);
}

/* A padded source (attention_mask 0 on the padding) gives the logits of the unpadded one. */
TEST(seq2seq_source_padding_is_invisible) {
    tf_seq2seq_config c = tiny(0, TF_POS_SINUSOIDAL);
    tf_seq2seq *m = tf_seq2seq_new(&c, 9);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_ctx_set_grad(ctx, 0);
    const int32_t src2[2 * 6] = {3, 7, 1, 0, 0, 0, 8, 2, 9, 4, 4, 6}, mask[2 * 6] = {1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1};
    const int32_t tgt2[2 * 4] = {0, 5, 9, 2, 0, 1, 1, 3}, src1[3] = {3, 7, 1};
    tf_tensor *mk = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){2, 6}, 0);
    memcpy(mk->data, mask, sizeof mask);
    tf_seq2seq_inputs in2 = {.input_ids = ids(ctx, 2, 6, src2), .attention_mask = mk, .decoder_input_ids = ids(ctx, 2, 4, tgt2)};
    tf_seq2seq_inputs in1 = {.input_ids = ids(ctx, 1, 3, src1), .decoder_input_ids = ids(ctx, 1, 4, tgt2)};
    tf_seq2seq_outputs o2, o1;
    CHECK(m && tf_seq2seq_run(ctx, m, &in2, &o2) == 0 && tf_seq2seq_run(ctx, m, &in1, &o1) == 0);
    double worst = 0;
    for (int i = 0; i < 4 * 11; i++) worst = fmax(worst, fabs(tf_f32(o2.logits)[i] - tf_f32(o1.logits)[i]));
    CHECKF(worst < 1e-5, "padding changed the logits by %.3g", worst);
    tf_ctx_free(ctx);
    tf_seq2seq_free(m);
}

/* Every parameter takes part: after one backward each has a gradient. */
TEST(seq2seq_every_parameter_gets_a_gradient) {
    tf_seq2seq_config c = tiny(1, TF_POS_LEARNED);
    c.tied = 0;
    tf_seq2seq *m = tf_seq2seq_new(&c, 3);
    tf_ctx *ctx = tf_ctx_new(0);
    const int32_t src[2 * 4] = {3, 7, 1, 2, 8, 2, 9, 4}, tgt[2 * 3] = {0, 5, 9, 0, 1, 1}, lab[2 * 3] = {5, 9, 1, 1, 1, -100};
    tf_seq2seq_inputs in = {.input_ids = ids(ctx, 2, 4, src), .decoder_input_ids = ids(ctx, 2, 3, tgt),
                            .labels = ids(ctx, 2, 3, lab), .label_smoothing = 0.1f};
    tf_seq2seq_outputs out;
    CHECK(m && tf_seq2seq_run(ctx, m, &in, &out) == 0 && tf_backward(ctx, out.loss, NULL) == 0);
    int named = 0;
    for (int i = 0; i < tf_params_count(m->params); i++) {
        tf_tensor *p = tf_params_tensor(m->params, i);
        double s = 0;
        for (int64_t k = 0; k < tf_numel(p); k++) s += fabs(p->grad[k]);
        /* position rows past the sequences' lengths and unused tokens get none: look at the whole table */
        CHECKF(s > 0, "%s has no gradient", tf_params_name(m->params, i));
        named += !strcmp(tf_params_name(m->params, i), "model.decoder.layers.1.encoder_attn.k_proj.weight") ||
                 !strcmp(tf_params_name(m->params, i), "model.encoder.layers.0.self_attn.q_proj.weight") ||
                 !strcmp(tf_params_name(m->params, i), "lm_head.weight");
    }
    CHECK(named == 3);
    tf_ctx_free(ctx);
    tf_seq2seq_free(m);
}

/* ---------------------------------------------------------------- learning to reverse */

enum { MAXLEN = 6 };

/* The ids a toy uses: ten digits from digit0, and the specials. */
typedef struct {
    int32_t digit0, pad, bos, eos;
} toy_ids;

/* src: 3..MAXLEN digits then EOS; target: the digits reversed then EOS. */
static int make_pair(uint64_t *s, const toy_ids *t, int32_t *src, int32_t *tgt) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    int n = 3 + (int)((*s >> 33) % (MAXLEN - 2));
    for (int i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
        src[i] = t->digit0 + (int32_t)((*s >> 33) % 10);
    }
    for (int i = 0; i < n; i++) tgt[i] = src[n - 1 - i];
    src[n] = tgt[n] = t->eos;
    return n + 1;
}

/* One batch of B pairs padded to MAXLEN + 1: a training step's loss. */
static float train_step(tf_seq2seq *m, tf_optim *opt, tf_ctx *ctx, uint64_t *s, const toy_ids *ti, int B, float lr) {
    enum { L = MAXLEN + 1 };
    int32_t src[64 * L], mask[64 * L], tin[64 * L], lab[64 * L], one_s[L], one_t[L];
    for (int b = 0; b < B; b++) {
        int n = make_pair(s, ti, one_s, one_t);
        for (int t = 0; t < L; t++) {
            src[b * L + t] = t < n ? one_s[t] : ti->pad, mask[b * L + t] = t < n;
            tin[b * L + t] = t == 0 ? ti->bos : t < n ? one_t[t - 1] : ti->pad;
            lab[b * L + t] = t < n ? one_t[t] : -100;
        }
    }
    tf_ctx_reset(ctx);
    tf_seq2seq_inputs in = {.input_ids = ids(ctx, B, L, src), .attention_mask = ids(ctx, B, L, mask),
                            .decoder_input_ids = ids(ctx, B, L, tin), .labels = ids(ctx, B, L, lab)};
    tf_seq2seq_outputs out;
    tf_params_zero_grad(m->params);
    if (tf_seq2seq_run(ctx, m, &in, &out) || tf_backward(ctx, out.loss, NULL)) return fprintf(stderr, "    %s\n", tf_error()), NAN;
    tf_clip_grad_norm(m->params, 1.0);
    tf_optim_step(opt, lr);
    return tf_f32(out.loss)[0];
}

/* A pre-LN model with one shared table of vocab ids trained 800 steps to reverse digit strings. */
static tf_seq2seq *train_reverser(int vocab, const toy_ids *ti, float *first, float *last) {
    tf_seq2seq_config c = tf_seq2seq_config_default(vocab, vocab);
    c.d_model = 32, c.n_head = 4, c.d_ff = 64, c.n_encoder_layers = 2, c.n_decoder_layers = 2, c.context = 16;
    c.dropout = 0, c.share_embeddings = 1, c.norm_first = 1;
    tf_seq2seq *m = tf_seq2seq_new(&c, 42);
    tf_optim *opt = m ? tf_adamw_new(m->params, (tf_adamw_config){0.9f, 0.98f, 1e-9f, 0.0f}) : NULL;
    tf_ctx *ctx = tf_ctx_new(0);
    uint64_t s = 1;
    *first = *last = opt && ctx ? train_step(m, opt, ctx, &s, ti, 32, 1e-5f) : NAN;
    for (int step = 1; step < 800 && isfinite(*last); step++)
        *last = train_step(m, opt, ctx, &s, ti, 32, tf_lr_schedule(TF_SCHEDULE_COSINE, step, 50, 800, 3e-3f, 1e-4f));
    tf_ctx_free(ctx);
    tf_optim_free(opt);
    return m;
}

TEST(seq2seq_learns_to_reverse_and_decodes_greedy_and_beam) {
    const toy_ids ti = {2, 0, 0, 1}; /* BOS and padding share id 0, EOS 1 */
    float first, last;
    tf_seq2seq *m = train_reverser(12, &ti, &first, &last);
    CHECK(m != NULL);
    CHECKF(last < 0.1f * first, "loss %.3f -> %.3f", first, last);
    int right[2] = {0, 0};
    uint64_t held = 987654321;
    for (int k = 0; k < 20; k++) {
        int32_t src[MAXLEN + 1], tgt[MAXLEN + 1], bos = ti.bos;
        int n = make_pair(&held, &ti, src, tgt);
        for (int beam = 0; beam < 2; beam++) {
            tf_generate_opts o = tf_generate_opts_default();
            o.max_tokens = MAXLEN + 2, o.eos_id = ti.eos, o.beam = beam ? 4 : 1, o.temperature = 0;
            tf_decoder *d = tf_seq2seq_decoder_new(m, src, n, 16);
            tf_ids got = {0};
            CHECK(d && tf_generate(d, &bos, 1, &o, NULL, NULL, &got, NULL) == 0);
            right[beam] += got.n == (size_t)n && !memcmp(got.v, tgt, (size_t)n * sizeof *tgt);
            tf_ids_free(&got);
            tf_decoder_free(d);
        }
    }
    printf("    loss %.3f -> %.3f; reversed right: greedy %d/20, beam 4 %d/20\n", first, last, right[0], right[1]);
    CHECK(right[0] >= 18 && right[1] >= 18);
    /* the 20 sources as rows of one decoder, beam 4 (beams sharing their source's cross-attention
     * rows, sentences ending at different steps): each row's result is the one it gets alone, before
     * and after the memory kept between batches is given back */
    int32_t srcs[20][MAXLEN + 1], tgt[MAXLEN + 1], bos = ti.bos;
    const int32_t *sp[20];
    int lens[20], alone = 0, batched[2] = {0, 0};
    held = 987654321;
    tf_generate_opts o = tf_generate_opts_default();
    o.max_tokens = MAXLEN + 2, o.eos_id = ti.eos, o.beam = 4, o.temperature = 0;
    tf_ids one[20] = {{0}}, rows[20] = {{0}};
    for (int k = 0; k < 20; k++) {
        lens[k] = make_pair(&held, &ti, srcs[k], tgt), sp[k] = srcs[k];
        tf_decoder *d = tf_seq2seq_decoder_new(m, srcs[k], lens[k], 16);
        alone += d && !tf_generate(d, &bos, 1, &o, NULL, NULL, &one[k], NULL);
        tf_decoder_free(d);
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass) tf_translate_trim();
        tf_decoder *d = tf_seq2seq_decoder_new_batch(m, sp, lens, 20, 16);
        CHECK(d && !tf_generate_rows(d, &bos, 1, &o, NULL, rows, NULL));
        for (int k = 0; k < 20; k++) {
            batched[pass] += rows[k].n == one[k].n && !memcmp(rows[k].v, one[k].v, one[k].n * sizeof *one[k].v);
            tf_ids_free(&rows[k]);
        }
        tf_decoder_free(d);
    }
    for (int k = 0; k < 20; k++) tf_ids_free(&one[k]);
    CHECKF(alone == 20 && batched[0] == 20 && batched[1] == 20, "alone %d, batched %d and %d (after the trim) of 20",
           alone, batched[0], batched[1]);
    tf_seq2seq_free(m);
}

/* The translate verb on a folder: a character tokenizer of the ten digits
 * (ids 0-9) and a reverser with pad 10, BOS 11, EOS 12 after them; its
 * output scored by the bleu verb (chrF); a source past the context refused. */
TEST(seq2seq_translate_cli_reverses_and_scores) {
    char dir[] = "/tmp/tformer_tr_XXXXXX", path[600], cmd[2400], out[4096];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/digits.txt", dir);
    FILE *f = fopen(path, "w");
    fputs("0123456789", f);
    fclose(f);
    const char *files[] = {path};
    tf_tokenizer_train_opts to = {.kind = TF_TOKENIZER_CHAR};
    CHECKF(tf_tokenizer_train(&to, files, 1, dir) == 0, "%s", tf_error());
    tf_tokenizer *tok = tf_tokenizer_load(dir);
    CHECK(tok && tf_tokenizer_vocab_size(tok) == 10 && tf_tokenizer_token_id(tok, "7") == 7);
    tf_tokenizer_free(tok);
    const toy_ids ti = {0, tf_seq2seq_pad_id(13), tf_seq2seq_bos_id(13), tf_seq2seq_eos_id(13)};
    float first, last;
    tf_seq2seq *m = train_reverser(13, &ti, &first, &last);
    CHECK(m && tf_seq2seq_save(m, dir) == 0);
    tf_seq2seq_free(m);
    snprintf(cmd, sizeof cmd,
             "printf '345\\n90127\\n8888\\n' > %s/src.txt && printf '543\\n72109\\n8888\\n' > %s/ref.txt && "
             "%s translate --model %s --beam 3 --attention-png %s/att/png < %s/src.txt > %s/hyp.txt && cat %s/hyp.txt && "
             "%s bleu --metrics chrf --ref %s/ref.txt < %s/hyp.txt",
             dir, dir, test_tformer_bin(), dir, dir, dir, dir, dir, test_tformer_bin(), dir, dir);
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[k] = 0;
    CHECKF(p && pclose(p) == 0, "output: %s", out);
    CHECKF(!strcmp(out, "543\n72109\n8888\nchrF2 = 100.00\n"), "output:\n%s", out); /* one token a line: BLEU has no 2-grams */
    /* gzip'ed standard input (a pipe): the same translations */
    snprintf(cmd, sizeof cmd, "gzip -c %s/src.txt | %s translate --model %s --beam 3 2>/dev/null", dir, test_tformer_bin(), dir);
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && !strcmp(out, "543\n72109\n8888\n"), "gzip'ed input: %s", out);
    /* the start-up line, whole (as cli_other_verbs_say_what_they_assumed checks the other verbs') */
    char said[1024], want[1024];
    snprintf(cmd, sizeof cmd, "translate --model %s --beam 3 --threads 1 < %s/src.txt", dir, dir);
    snprintf(want, sizeof want, "tformer translate: seq2seq model from %s/; tokenizer %s/chars.txt (10 tokens); 1 thread "
             "(--threads); float32, %s kernels; beam 3 (--beam)", dir, dir, tf_kernels_info());
    CHECKF(test_said_line(cmd, said, sizeof said) == 0 && !strcmp(said, want), "\n    want: %s\n    got:  %s", want,
           said);
    /* --attention-png: one picture per line, 4 layers x heads under the average (taller than the RNN's panel) */
    for (int i = 1; i <= 4; i++) {
        int w, h;
        snprintf(path, sizeof path, "%s/att/png/%04d.png", dir, i);
        if (i == 4) CHECKF(access(path, F_OK) != 0, "%s: more pictures than lines", path);
        else CHECKF(test_png_size(path, &w, &h) == 0 && w > 200 && h > 400, "%s: not a picture", path);
    }
    /* batches (sorted by length, printed in input order), greedy and beam: as one sentence at a time */
    for (int beam = 1; beam <= 3; beam += 2) {
        char one[4096] = "";
        for (int batch = 1; batch <= 3; batch += 2) {
            snprintf(cmd, sizeof cmd, "printf '90127\\n345\\n8888\\n1\\n60\\n' | %s translate --model %s --beam %d --batch %d",
                     test_tformer_bin(), dir, beam, batch);
            p = popen(cmd, "r");
            k = p ? fread(out, 1, sizeof out - 1, p) : 0;
            out[k] = 0;
            CHECKF(p && pclose(p) == 0 && !strncmp(out, "72109\n543\n8888\n", 15), "beam %d, batch %d:\n%s", beam, batch, out);
            if (batch == 1) snprintf(one, sizeof one, "%s", out);
            else CHECKF(!strcmp(out, one), "beam %d: batch 3 gives\n%s\none at a time\n%s", beam, out, one);
        }
    }
    /* a source past the context: the line is named (batched or not) */
    for (int batch = 1; batch <= 32; batch += 31) {
        snprintf(cmd, sizeof cmd, "printf '345\\n0123456789012345678\\n' | %s translate --model %s --batch %d 2>&1",
                 test_tformer_bin(), dir, batch);
        p = popen(cmd, "r");
        k = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[k] = 0;
        CHECKF(p && pclose(p) != 0 && strstr(out, "line 2") && strstr(out, "context of 16"), "batch %d: %s", batch, out);
    }
    /* --json: one {"source", "translation"} per line (JSON Lines), batched and with pictures (one at a time) */
    for (int pictures = 0; pictures < 2; pictures++) {
        snprintf(cmd, sizeof cmd, "printf '345\\n90127\\n' | %s translate --model %s --json %s%s | python3 -c \"import json, "
                 "sys; r = [json.loads(l) for l in sys.stdin]; assert r == [{'source': '345', 'translation': '543'}, "
                 "{'source': '90127', 'translation': '72109'}], r\"", test_tformer_bin(), dir,
                 pictures ? "--attention-png " : "", pictures ? dir : "");
        CHECKF(system(cmd) == 0, "%s", cmd);
    }
    /* --attention-scale auto draws the pictures; it needs --attention-png */
    snprintf(cmd, sizeof cmd, "printf '345\\n' | %s translate --model %s --attention-png %s/auto --attention-scale auto "
             "> /dev/null 2>&1 && test -s %s/auto/0001.png && printf '345\\n' | %s translate --model %s "
             "--attention-scale auto 2>&1 | grep -q 'attention-scale goes with --attention-png'",
             test_tformer_bin(), dir, dir, dir, test_tformer_bin(), dir);
    CHECKF(system(cmd) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}

/* A saved folder loads back to the same logits; bad folders are refused by name. */
TEST(seq2seq_folder_round_trip_and_bad_folders) {
    char dir[] = "/tmp/tformer_s2s_XXXXXX", cmd[600];
    CHECK(mkdtemp(dir) != NULL);
    tf_seq2seq_config c = tiny(1, TF_POS_LEARNED);
    c.tied = 0;
    tf_seq2seq *m = tf_seq2seq_new(&c, 17);
    CHECK(m && tf_seq2seq_save(m, dir) == 0);
    tf_seq2seq *r = tf_seq2seq_load(dir);
    CHECKF(r != NULL, "%s", tf_error());
    tf_ctx *ctx = tf_ctx_new(0);
    tf_ctx_set_grad(ctx, 0);
    const int32_t src[4] = {3, 7, 1, 12}, tgt[3] = {0, 5, 9};
    tf_seq2seq_inputs in = {.input_ids = ids(ctx, 1, 4, src), .decoder_input_ids = ids(ctx, 1, 3, tgt)};
    tf_seq2seq_outputs a, b;
    CHECK(tf_seq2seq_run(ctx, m, &in, &a) == 0 && tf_seq2seq_run(ctx, r, &in, &b) == 0);
    CHECK(!memcmp(a.logits->data, b.logits->data, 3 * 11 * sizeof(float)));
    CHECK(r->cfg.norm_first == 1 && r->cfg.pos == TF_POS_LEARNED && r->cfg.tied == 0 && r->cfg.d_ff == 24);
    tf_seq2seq_free(r);
    /* a different configuration: the tensors no longer fit */
    c.d_ff = 32;
    tf_seq2seq *other = tf_seq2seq_new(&c, 1);
    char sub[700];
    snprintf(sub, sizeof sub, "%s/other", dir);
    CHECK(other && tf_seq2seq_save(other, sub) == 0);
    snprintf(cmd, sizeof cmd, "cp %s/other/model.safetensors %s/model.safetensors", dir, dir);
    CHECK(system(cmd) == 0);
    CHECK(tf_seq2seq_load(dir) == NULL && strstr(tf_error(), "wrong shape") && strstr(tf_error(), "fc1.weight"));
    snprintf(cmd, sizeof cmd, "sed -i 's/tformer-seq2seq/marian/' %s/config.json", dir);
    CHECK(system(cmd) == 0);
    CHECK(tf_seq2seq_load(dir) == NULL && strstr(tf_error(), "model_type \"marian\""));
    tf_ctx_free(ctx);
    tf_seq2seq_free(m), tf_seq2seq_free(other);
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}

/* tformer train --arch seq2seq on small line-aligned files (a character
 * tokenizer of both), then translate with the run folder; the verb's
 * misuse is refused with the flag's name. */
TEST(seq2seq_train_cli_then_translate) {
    char dir[] = "/tmp/tformer_s2t_XXXXXX", cmd[3000], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    static const char *const W[] = {"abc", "bcd", "cde", "dea", "eab", "ace", "bda", "ceb"};
    for (int split = 0; split < 2; split++) {
        char sp[600], tp[600];
        snprintf(sp, sizeof sp, "%s/%s.src", dir, split ? "val" : "train");
        snprintf(tp, sizeof tp, "%s/%s.tgt", dir, split ? "val" : "train");
        FILE *fs = fopen(sp, "w"), *ft = fopen(tp, "w");
        uint64_t r = 11 + (uint64_t)split;
        for (int i = 0; i < (split ? 16 : 300); i++) { /* target: the source's words in reverse order */
            r = r * 6364136223846793005ULL + 1442695040888963407ULL;
            int a = (int)(r >> 40) % 8, b = (int)(r >> 50) % 8;
            fprintf(fs, "%s %s\n", W[a], W[b]);
            fprintf(ft, "%s %s\n", W[b], W[a]);
        }
        fclose(fs), fclose(ft);
    }
    snprintf(cmd, sizeof cmd,
             "%s train --arch seq2seq --src %s/train.src --tgt %s/train.tgt --valid-src %s/val.src --valid-tgt %s/val.tgt "
             "--out %s/run --steps 1000 --lr 4e-3 --warmup 50 --label-smoothing 0 --d-model 32 --n-head 4 --n-encoder-layers 2 "
             "--n-decoder-layers 2 --dropout 0 --batch-tokens 256 --eval-every 500 --log-every 500 --context 16 --max-len 16 "
             "--threads 1 2>&1 && printf 'abc cde\\nbda eab\\n' | %s translate --model %s/run --beam 2",
             test_tformer_bin(), dir, dir, dir, dir, dir, test_tformer_bin(), dir);
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[k] = 0;
    CHECKF(p && pclose(p) == 0, "output:\n%s", out);
    CHECKF(strstr(out, "cde abc\nbda eab\n") || strstr(out, "cde abc\neab bda\n"), "output:\n%s", out);
    CHECKF(strstr(out, "eab bda\n") != NULL, "the second sentence, reversed: output:\n%s", out);
    /* 40 lines in batches of 4: one thread, then two (one batch per thread) give the same lines */
    char outs[2][4096];
    for (int threads = 1; threads <= 2; threads++) {
        snprintf(cmd, sizeof cmd, "head -40 %s/train.src | %s translate --model %s/run --beam 2 --beam-stop hf-early "
                 "--batch 4 --threads %d", dir, test_tformer_bin(), dir, threads);
        p = popen(cmd, "r");
        k = p ? fread(outs[threads - 1], 1, sizeof outs[0] - 1, p) : 0;
        outs[threads - 1][k] = 0;
        CHECKF(p && pclose(p) == 0, "--threads %d: %s", threads, outs[threads - 1]);
    }
    int lines = 0;
    for (const char *c = outs[0]; *c; c++) lines += *c == '\n';
    CHECKF(lines == 40 && !strcmp(outs[0], outs[1]), "%d lines; one thread:\n%s\ntwo:\n%s", lines, outs[0], outs[1]);
    static const struct {
        const char *args, *want;
    } BAD[] = {
        {"train --arch seq2seq --src a --tgt b --valid-src c --out x", "--arch seq2seq needs --valid-tgt"},
        {"train --arch seq2seq --data a --src a --tgt b --valid-src c --valid-tgt d --out x", "not --data"},
        {"train --data a --src b --out x", "--src is a seq2seq setting"},
        {"train --arch seq2seq --src /nonexistent/a --tgt b --valid-src c --valid-tgt d --out /tmp/tformer_s2s_bad_run", "/nonexistent/a"},
        {"train --arch seq2seq --src a --tgt b --valid-src c --valid-tgt d --out x --attn-dropout nan", "--attn-dropout expects"},
        {"train --arch seq2seq --src a --tgt b --valid-src c --valid-tgt d --out x --activation-dropout 1", "in [-1,1)"},
        {"train --arch rnn --src a --tgt b --valid-src c --valid-tgt d --out x --maxout -3", "--maxout expects"},
        {"train --arch rnn --src a --tgt b --valid-src c --valid-tgt d --out x --maxout abc", "--maxout expects"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s 2>&1", test_tformer_bin(), BAD[i].args);
        p = popen(cmd, "r");
        k = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[k] = 0;
        CHECKF(p && pclose(p) != 0 && strstr(out, BAD[i].want), "%s: %s", BAD[i].args, out);
    }
    /* data refused after the tokenizer went into the new folder: no folder left */
    snprintf(cmd, sizeof cmd, "printf 'a b\\n\\n' > %s/empty.txt; %s train --arch seq2seq --src %s/empty.txt --tgt %s/empty.txt "
             "--valid-src %s/empty.txt --valid-tgt %s/empty.txt --out /tmp/tformer_s2s_refused 2>/dev/null",
             dir, test_tformer_bin(), dir, dir, dir, dir);
    CHECK(system(cmd) != 0);
    CHECK(access("/tmp/tformer_s2s_refused", F_OK) != 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s /tmp/tformer_s2s_bad_run", dir);
    CHECK(system(cmd) == 0);
}

/* Hostile input to translate: clear messages and exit statuses, no crash. */
TEST(seq2seq_translate_cli_hostile_input) {
    static const test_cli_case CASES[] = {
        {"translate --model /nonexistent/run", "/nonexistent/run/config.json", 1},
        {"translate --model /dev/null", "/dev/null/config.json", 1},
        {"translate --model /tmp --beam 0", "--beam expects an integer in [1,64], got '0'", 2},
        {"translate --model /tmp --beam abc", "--beam", 2},
        {"translate --model /tmp --length-penalty nan", "--length-penalty expects a number", 2},
        {"translate --model /tmp --max-len-a -1", "--max-len-a expects a number", 2},
        {"translate --model /tmp --beam-stop first", "--beam-stop expects one of tformer, hf, hf-early, hf-never, got 'first'", 2},
        {"translate --model /tmp --attention-png /dev/null/att", "--attention-png /dev/null/att: cannot create /dev/null/att: Not a directory", 1},
        {"translate --model /tmp --attention-png /dev/null", "--attention-png /dev/null: not a folder", 1},
        {"translate", "missing --model", 2},
    };
    char why[8192];
    CHECKF(test_cli_cases(CASES, sizeof CASES / sizeof CASES[0], "", why, sizeof why) == 0, "%s", why);
}
