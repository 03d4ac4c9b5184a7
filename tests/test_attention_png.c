/* Attention pictures (issue 11): the Transformer's cross-attention
 * probabilities from its one forward pass (output_attentions) against a
 * recomputation from the layer's pieces, and the PNG renderer's output and
 * refusals. The translate CLI's --attention-png is tested with the trained
 * toys of test_seq2seq.c and test_rnn_seq2seq.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "tformer.h"

static tf_tensor *ids(tf_ctx *ctx, int B, int T, const int32_t *v) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
    memcpy(t->data, v, (size_t)B * (size_t)T * sizeof *v);
    return t;
}

/* The decoder's input: E[ids] sqrt(C) + positions, (B,T,C) (no dropout: evaluation). */
static tf_tensor *embed_target(tf_ctx *ctx, const tf_seq2seq *m, tf_tensor *tgt) {
    int64_t T = tgt->shape[1], C = m->cfg.d_model;
    tf_tensor *x = tf_embedding(ctx, m->cfg.share_embeddings ? m->src_embed : m->tgt_embed, tgt);
    if (m->cfg.scale_embedding) x = tf_scale(ctx, x, sqrtf((float)C));
    return tf_add(ctx, x, m->tgt_pos ? tf_posenc_learned(ctx, m->tgt_pos, 0, T) : tf_posenc_sinusoidal_tensor(ctx, 0, T, C));
}

/* Decoder layer l's cross-attention probabilities recomputed from its
 * pieces: the layers before it (tf_block_forward), its causal self-attention
 * sub-layer (tf_mha_forward), the q and k projections, then softmax(q k^T /
 * sqrt(D)) over the unpadded source positions in double: want (B,H,T,S). */
static int reference(tf_ctx *ctx, const tf_seq2seq *m, tf_tensor *tgt, tf_tensor *memory, tf_tensor *mask,
                     const int32_t *valid, int l, double *want) {
    int64_t B = tgt->shape[0], T = tgt->shape[1], S = memory->shape[1], C = m->cfg.d_model, H = m->cfg.n_head, D = C / H;
    tf_attn_mask pad = {.key_padding_mask = mask}, causal = {.causal = 1};
    tf_block_args args = {.memory = memory, .cross_mask = &pad};
    tf_tensor *x = embed_target(ctx, m, tgt);
    for (int i = 0; i < l; i++) x = tf_block_forward(ctx, &m->decoder[i], &m->dec_block, x, &args);
    const tf_block *b = &m->decoder[l];
    tf_tensor *h;
    if (m->cfg.norm_first) {
        tf_tensor *y = tf_layer_norm_forward(ctx, &b->norm_attn, x);
        h = tf_layer_norm_forward(ctx, &b->norm_cross, tf_add(ctx, x, tf_mha_forward(ctx, &b->self_attn, y, y, y, &causal, NULL)));
    } else {
        h = tf_layer_norm_forward(ctx, &b->norm_attn, tf_add(ctx, x, tf_mha_forward(ctx, &b->self_attn, x, x, x, &causal, NULL)));
    }
    tf_linear wq = {b->cross_attn.q_proj_weight, b->cross_attn.q_proj_bias};
    tf_linear wk = {b->cross_attn.k_proj_weight, b->cross_attn.k_proj_bias};
    tf_tensor *q = tf_contiguous(ctx, tf_linear_forward(ctx, &wq, h));      // q: (B,T,C)
    tf_tensor *k = tf_contiguous(ctx, tf_linear_forward(ctx, &wk, memory)); // k: (B,S,C)
    if (!q || !k) return -1;
    for (int64_t bi = 0; bi < B; bi++)
        for (int64_t hh = 0; hh < H; hh++)
            for (int64_t t = 0; t < T; t++) {
                double *row = want + ((bi * H + hh) * T + t) * S, max = -INFINITY, sum = 0;
                for (int64_t s = 0; s < S; s++) {
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++)
                        dot += (double)tf_f32(q)[(bi * T + t) * C + hh * D + d] * tf_f32(k)[(bi * S + s) * C + hh * D + d];
                    row[s] = valid[bi * S + s] ? dot / sqrt((double)D) : -INFINITY;
                    max = fmax(max, row[s]);
                }
                for (int64_t s = 0; s < S; s++) sum += row[s] = valid[bi * S + s] ? exp(row[s] - max) : 0;
                for (int64_t s = 0; s < S; s++) row[s] /= sum;
            }
    return 0;
}

/* Compare every layer's (B,H,T,S) with the reference: rows sum to 1, exact 0 on padding. */
static int check_layers(tf_ctx *ctx, const tf_seq2seq *m, const tf_seq2seq_inputs *in, const tf_seq2seq_outputs *out,
                        const int32_t *valid, double *worst) {
    int64_t B = 2, T = 4, S = 6, H = m->cfg.n_head;
    double want[2 * 4 * 4 * 6];
    for (int l = 0; l < m->cfg.n_decoder_layers; l++) {
        tf_tensor *p = tf_contiguous(ctx, out->cross_attentions[l]);
        if (!p || p->ndim != 4 || p->shape[0] != B || p->shape[1] != H || p->shape[2] != T || p->shape[3] != S) return -1;
        tf_tensor *pad = tf_tensor_new(ctx, TF_DTYPE_U8, 2, (int64_t[]){B, S}, 0);
        for (int i = 0; i < B * S; i++) tf_u8(pad)[i] = !valid[i];
        if (reference(ctx, m, in->decoder_input_ids, out->encoder_last_hidden_state, pad, valid, l, want)) return -1;
        for (int64_t r = 0; r < B * H * T; r++) {
            double sum = 0;
            for (int64_t s = 0; s < S; s++) {
                float got = tf_f32(p)[r * S + s];
                if (!valid[(r / (H * T)) * S + s] && got != 0.0f) return fprintf(stderr, "    padding gets %g\n", got), -1;
                sum += got;
                *worst = fmax(*worst, fabs(got - want[r * S + s]));
            }
            *worst = fmax(*worst, fabs(sum - 1));
        }
    }
    return 0;
}

/* output_attentions gives each decoder layer's cross-attention (B,H,T,S) of a
 * padded batch, post-LN and pre-LN: equal to the recomputation, rows summing
 * to 1, zero on the padding; the logits match the fused default path's. */
TEST(seq2seq_cross_attentions_equal_a_recomputation) {
    for (int variant = 0; variant < 2; variant++) {
        tf_seq2seq_config c = tf_seq2seq_config_default(13, 11);
        c.d_model = 16, c.n_head = 4, c.d_ff = 24, c.n_encoder_layers = 2, c.n_decoder_layers = 2, c.context = 16;
        c.dropout = 0, c.norm_first = variant, c.pos = variant ? TF_POS_LEARNED : TF_POS_SINUSOIDAL;
        tf_seq2seq *m = tf_seq2seq_new(&c, 31 + (uint64_t)variant);
        CHECK(m != NULL);
        tf_ctx *ctx = tf_ctx_new(0);
        tf_ctx_set_grad(ctx, 0);
        const int32_t src[12] = {3, 7, 1, 12, 4, 9, 5, 8, 12, 10, 10, 10}, valid[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
        const int32_t tgt[8] = {9, 5, 2, 7, 9, 3, 3, 1};
        tf_seq2seq_inputs in = {.input_ids = ids(ctx, 2, 6, src), .attention_mask = ids(ctx, 2, 6, valid),
                                .decoder_input_ids = ids(ctx, 2, 4, tgt)};
        tf_seq2seq_outputs plain, out;
        CHECKF(tf_seq2seq_run(ctx, m, &in, &plain) == 0, "%s", tf_error());
        CHECK(plain.cross_attentions == NULL);
        in.output_attentions = 1;
        CHECKF(tf_seq2seq_run(ctx, m, &in, &out) == 0 && out.cross_attentions, "%s", tf_error());
        CHECK(test_rel_err(tf_f32(out.logits), tf_f32(plain.logits), 2 * 4 * 11) < 1e-5);
        double worst = 0;
        CHECKF(check_layers(ctx, m, &in, &out, valid, &worst) == 0, "variant %d: %s", variant, tf_error());
        CHECKF(worst < 2e-5, "variant %d: the probabilities differ from the recomputation by %.3g", variant, worst);
        tf_ctx_free(ctx);
        tf_seq2seq_free(m);
    }
}

/* The renderer: a panel with a grid and a panel alone (labels with umlauts
 * and an invalid byte) give readable PNGs, the grid one larger; bad inputs
 * and an unwritable path are refused with the path named. */
TEST(attention_png_renderer_draws_and_refuses) {
    char dir[] = "/tmp/tformer_attpng_XXXXXX", a[600], b[600], bad[600];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(a, sizeof a, "%s/grid.png", dir), snprintf(b, sizeof b, "%s/panel.png", dir);
    snprintf(bad, sizeof bad, "%s/missing/x.png", dir);
    const char *src[3] = {"Mädchen", "gr\xFF\xFEn", "</s>"}, *tgt[2] = {"girl", "</s>"};
    float panel[6] = {0.9f, 0.1f, 0, 0.2f, 0.3f, 0.5f}, grid[2 * 3 * 6];
    for (int i = 0; i < 36; i++) grid[i] = panel[i % 6];
    tf_attention_plot p = {"sentence 1", "average", src, tgt, 3, 2, panel, grid, 2, 3, "layer", "head", 0};
    int w1, h1, w2, h2;
    CHECKF(tf_plot_attention(a, &p) == 0, "%s", tf_error());
    p.grid = NULL;
    CHECKF(tf_plot_attention(b, &p) == 0, "%s", tf_error());
    CHECK(test_png_size(a, &w1, &h1) == 0 && test_png_size(b, &w2, &h2) == 0);
    CHECKF(w2 > 100 && h2 > 100 && h1 > h2, "grid %dx%d, panel %dx%d", w1, h1, w2, h2);
    CHECK(tf_plot_attention(bad, &p) == -1 && strstr(tf_error(), "missing/x.png"));
    p.n_src = 0;
    CHECK(tf_plot_attention(a, &p) == -1 && strstr(tf_error(), "0 source"));
    p.n_src = 3, p.grid = grid, p.rows = 0;
    CHECK(tf_plot_attention(a, &p) == -1 && strstr(tf_error(), "grid"));
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s/grid.png.tmp", dir);
    CHECK(access(tmp, F_OK) != 0);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}

/* Pixels of viridis' top colour (yellow, 0.993 0.906 0.144) in a PNG, -1 when unreadable. */
static long top_colour_pixels(const char *path) {
    tf_images im;
    if (tf_images_read_png(path, 3, &im)) return -1;
    long n = 0, hw = (long)im.height * im.width;
    for (long i = 0; i < hw; i++)
        n += im.pixels[i] > 0.95f && im.pixels[hw + i] > 0.85f && im.pixels[hw + i] < 0.95f && im.pixels[2 * hw + i] < 0.3f;
    tf_images_free(&im);
    return n;
}

/* --attention-scale auto (auto_scale): a flat map of 0.2 fills the panel with the top colour, where
 * the fixed 0-1 scale draws it as one dark block (issue 55); fixed is the default. */
TEST(attention_png_auto_scale_spreads_a_flat_map) {
    char dir[] = "/tmp/tformer_attscale_XXXXXX", fixed[600], autos[600];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(fixed, sizeof fixed, "%s/fixed.png", dir), snprintf(autos, sizeof autos, "%s/auto.png", dir);
    const char *src[4] = {"a", "b", "c", "</s>"}, *tgt[4] = {"w", "x", "y", "</s>"};
    float panel[16];
    for (int i = 0; i < 16; i++) panel[i] = 0.2f;
    tf_attention_plot p = {"flat", "average", src, tgt, 4, 4, panel, NULL, 0, 0, NULL, NULL, 0};
    CHECKF(tf_plot_attention(fixed, &p) == 0, "%s", tf_error());
    p.auto_scale = 1;
    CHECKF(tf_plot_attention(autos, &p) == 0, "%s", tf_error());
    long f = top_colour_pixels(fixed), a = top_colour_pixels(autos);
    /* the panel is 4 x 4 cells of at least 8 pixels a side: 1024 pixels or more */
    CHECKF(f >= 0 && a > f + 1000, "top-colour pixels: fixed %ld, auto %ld", f, a);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}
