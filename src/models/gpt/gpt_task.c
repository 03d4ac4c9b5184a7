/* The language-modelling task: a GPT on windows of tokenized text (the LM
 * loader), next-token cross-entropy, saved as a Hugging Face GPT-2 folder
 * with its tokenizer. The run folder gets its own copy of the tokenizer,
 * which also goes into the checkpoint's metadata (a resume must find the
 * same one). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../task/task_internal.h"
#include "tformer/dist.h"
#include "tformer/gpt.h"

typedef struct {
    tf_text_task text; /* base, tokenizer, loader, run folder */
    tf_lm_config cfg;
    tf_gpt *m;
} lm_task;

/* A file being tokenized a piece at a time: where the piece starts, and the bound on the ids held. */
typedef struct {
    tf_tokenizer *tok;
    tf_ids *ids;
    const char *path;
    long long line, byte, size;
    size_t max_ids;
} file_pieces;

static size_t piece_cut(void *ctx, const char *text, size_t n) {
    return tf_tokenizer_encode_cut(((file_pieces *)ctx)->tok, text, n);
}

static int piece_encode(void *ctx, const char *text, size_t n) {
    file_pieces *p = ctx;
    if (tf_tokenizer_encode(p->tok, text, n, p->ids)) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tf_error());
        if (!p->byte) return tf_set_error("%s: %s", p->path, msg);
        return tf_set_error("%s: in the text from line %lld (byte %lld) on: %s", p->path, p->line, p->byte, msg);
    }
    for (size_t i = 0; i < n; i++) p->line += text[i] == '\n';
    p->byte += (long long)n;
    if (p->ids->n > p->max_ids)
        return tf_set_error("%s (%lld bytes): its token ids reached %zu MB after %lld of its bytes; a training holds "
                            "every token id in memory (twice while its loader is made), at most a quarter of this "
                            "machine's memory (%zu MB): give less data", p->path, p->size,
                            p->ids->n * sizeof(int32_t) >> 20, p->byte, p->max_ids * sizeof(int32_t) * 4 >> 20);
    return 0;
}

/* Every file's tokens, one stream, each file read a piece at a time (tf_read_data_pieces: cut where the
 * tokenizer's ids cannot change), never whole; the ids are bounded by a quarter of the machine's memory. Errors
 * name the file. */
static int tokenize_files(tf_tokenizer *tok, const char *const *data, int n_data, tf_ids *ids) {
    size_t quarter = tf_memory_quarter();
    int whole = !tf_tokenizer_encode_cut(tok, "a\na", 3); /* no place to cut: each file is encoded whole */
    for (int i = 0; i < n_data; i++) {
        struct stat st;
        file_pieces p = {tok, ids, data[i], 1, 0, stat(data[i], &st) ? -1 : (long long)st.st_size,
                         quarter / sizeof(int32_t)};
        if (whole && p.size > 0 && (unsigned long long)p.size > quarter) /* refused before anything is read */
            return tf_set_error("%s (%lld bytes): this tokenizer encodes a text whole (it has no place to cut one: "
                                "SentencePiece, or a prefix space), and the file is above %zu MB, the limit for a file "
                                "held whole (a quarter of this machine's memory, or of ulimit -v): give less data",
                                data[i], p.size, quarter >> 20);
        if (tf_read_data_pieces(data[i], piece_cut, piece_encode, &p)) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the task's table */

static tf_tensor *lm_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    (void)m;
    tf_gpt_inputs in = {.input_ids = tf_batch_get(b, "input_ids"), .targets = tf_batch_get(b, "targets")};
    tf_gpt_outputs out;
    return tf_gpt_run(ctx, ((lm_task *)t)->m, &in, &out) ? NULL : out.loss;
}

static int lm_save(tf_task *t, const char *dir) { return tf_gpt_save(((lm_task *)t)->m, dir); }

static void lm_free(tf_task *t) {
    tf_gpt_free(((lm_task *)t)->m);
    tf_text_task_free(t);
}

static const tf_task_vt LM_TASK = TF_TEXT_TASK_VT(lm_loss, lm_save, lm_free);

/* ---------------------------------------------------------------- construction */

/* The tokenizer, the token stream and its loader. */
static int load_data(lm_task *l, const char *const *data, int n_data, const char *tokenizer, int resume,
                     uint64_t seed) {
    tf_gpt_config *model = &l->cfg.model;
    if (tf_text_task_tokenizer(&l->text, tokenizer, data, n_data, resume, &model->vocab_size) ||
        tf_lm_config_check(&l->cfg))
        return -1;
    tf_ids ids = {0};
    int rc = tokenize_files(l->text.tok, data, n_data, &ids);
    if (rc) return tf_ids_free(&ids), -1;
    int32_t *v = ids.n ? realloc(ids.v, ids.n * sizeof *ids.v) : NULL; /* no spare capacity held while training */
    if (!v) v = ids.v;
    if (!(l->text.loader = tf_lm_loader_take(v, (int64_t)ids.n, l->cfg.val_fraction, model->context, seed))) return -1;
    return 0;
}

tf_task *tf_lm_task_new(const tf_lm_config *c, const char *const *data, int n_data, const char *tokenizer,
                        const char *run_dir, int resume, uint64_t seed) {
    lm_task *l = tf_text_task_alloc(sizeof *l, &LM_TASK, n_data, run_dir);
    if (!l) return NULL;
    l->cfg = *c;
    l->text.base.config = (tf_fields){&tf_lm_config_table, &l->cfg};
    if (load_data(l, data, n_data, tokenizer ? tokenizer : "char", resume, seed) ||
        !(l->m = tf_gpt_new(&l->cfg.model, seed ? seed : 1))) {
        lm_free(&l->text.base);
        return NULL;
    }
    tf_text_task_set_model(&l->text, l->m->params, &tf_gpt_config_table, &l->m->cfg, l->cfg.model.context);
    return &l->text.base;
}

const tf_gpt *tf_lm_task_model(const tf_task *t) { return ((const lm_task *)t)->m; }

/* ---------------------------------------------------------------- evaluation */

int tf_gpt_evaluate(const tf_gpt *m, tf_tokenizer *tok, const char *const *data, int n_data, double *loss,
                    int64_t *tokens) {
    tf_ids ids = {0};
    if (tokenize_files(tok, data, n_data, &ids)) return tf_ids_free(&ids), -1;
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
