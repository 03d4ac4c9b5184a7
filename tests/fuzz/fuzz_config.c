/* libFuzzer target for the configuration readers. The input is JSON text,
 * given to
 *   - every field table the library reads (tf_fields_from_json, strict as
 *     --config reads them, and lenient as finetune.json is read): the
 *     trainer's with each task's, the fine-tuning one alone, each model's;
 *   - the model folder readers, as dir/config.json: Hugging Face GPT-2,
 *     BERT and Marian, tformer's own encoder-decoder and RNN folders,
 *     torch-run's module config, the tokenizer's tokenizer_config.json and
 *     special_tokens_map.json, sentence-transformers' files.
 * Each must accept the text or say why, never crash. What a field table
 * accepted is within its rows (tf_fields_check), and what a folder reader
 * accepted passes its model's check; either then writes out and reads back
 * (strictly) to the same values, row by row, and the same JSON text, through
 * tf_fields_json and through a file (tf_fields_save / tf_fields_load). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tformer.h"
#include "interop/torch_run.h"
#include "models/bert/bert_internal.h"
#include "models/gpt/gpt_internal.h"
#include "models/model_folder.h"
#include "models/seq2seq/seq2seq_internal.h"
#include "tokenizer/tok_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[128];

/* ---------------------------------------------------------------- the round trip */

typedef struct {
    const char *base;
    size_t end;
} extent_ctx;

static int extent_fn(void *user, const tf_field *f, void *obj) {
    extent_ctx *c = user;
    size_t end = (size_t)((const char *)obj - c->base) + f->offset + f->size;
    if (end > c->end) c->end = end;
    return 0;
}

/* Where s's rows end in its struct: a zeroed copy of that many bytes takes them back. */
static size_t extent(const tf_fields *s) {
    extent_ctx c = {s->obj, 0};
    tf_fields_each(s, 1, extent_fn, &c);
    return c.end;
}

enum { MAX_OBJ = 16384 };

typedef struct {
    const char *base, *copy; /* the struct read, the one read back */
} same_ctx;

/* Each row's value as text (floats the shortest that reads back the same) in both structs. */
static int same_fn(void *user, const tf_field *f, void *obj) {
    const same_ctx *c = user;
    char a[512], b[512];
    const char *back = c->copy + ((const char *)obj - c->base);
    if (tf_fields_format(f, obj, a, sizeof a) < 0 || tf_fields_format(f, back, b, sizeof b) < 0) return 0;
    return strcmp(a, b) != 0;
}

/* s's tables read back strictly (from text, else from the file path) into zeroed structs,
 * which must hold every value s holds; their JSON text. */
static char *read_back(const tf_fields *s, int n, const char *text, const char *path) {
    static _Alignas(max_align_t) char fresh[2][MAX_OBJ];
    tf_fields r[2];
    for (int i = 0; i < n; i++) {
        if (extent(&s[i]) > MAX_OBJ) abort(); /* MAX_OBJ too small for a new table */
        memset(fresh[i], 0, MAX_OBJ);
        r[i] = (tf_fields){s[i].table, fresh[i]};
    }
    int rc;
    if (text) {
        cJSON *j = cJSON_Parse(text);
        rc = !j || tf_fields_from_json(j, r, n, "round trip", 0);
        cJSON_Delete(j);
    } else {
        rc = tf_fields_load(r, n, path, 0);
    }
    for (int i = 0; !rc && i < n; i++) {
        same_ctx c = {s[i].obj, fresh[i]};
        if (tf_fields_each(&s[i], 1, same_fn, &c)) abort(); /* a value changed on its way through JSON */
    }
    return rc ? NULL : tf_fields_json(r, n);
}

/* A read and checked configuration writes out and reads back to the same values and text. */
static void round_trip(const tf_fields *s, int n) {
    char path[192], *a = tf_fields_json(s, n);
    if (!a) abort(); /* a checked configuration must write out */
    char *b = read_back(s, n, a, NULL);
    if (!b || strcmp(a, b)) abort();
    snprintf(path, sizeof path, "%s/round_trip.json", g_dir);
    char *c = tf_fields_save(s, n, path) ? NULL : read_back(s, n, NULL, path);
    if (!c || strcmp(a, c)) abort();
    free(a), free(b), free(c);
}

/* ---------------------------------------------------------------- field tables */

/* Everything the tables below fill, at the library's defaults (each passes tf_fields_check). */
typedef struct {
    tf_train_config train;
    tf_lm_config lm;
    tf_bert_pretrain_config bert;
    tf_seq2seq_task_config s2s;
    tf_rnn_seq2seq_task_config rnn;
    tf_finetune_config ft;
    tf_gpt_config gpt;
    tf_bert_config bert_model;
    tf_seq2seq_config s2s_model;
    tf_rnn_seq2seq_config rnn_model;
} configs;

/* The models' own defaults are their tasks' (the tables leave required rows as they are). */
static void defaults(configs *c) {
    c->train = tf_train_config_default(), c->lm = tf_lm_config_default(), c->bert = tf_bert_pretrain_config_default();
    c->s2s = tf_seq2seq_task_config_default(), c->rnn = tf_rnn_seq2seq_task_config_default();
    c->ft = tf_finetune_config_default(), c->gpt = c->lm.model, c->bert_model = c->bert.model;
    c->s2s_model = c->s2s.model, c->rnn_model = c->rnn.model;
}

/* The tables read together: --config files (the trainer's and the task's), finetune.json, each model's. */
typedef struct {
    const tf_field_table *t[2];
    size_t at[2];
    int n;
} combo;

#define WITH_TRAINER(table, m) {{&tf_train_config_table, &table}, {offsetof(configs, train), offsetof(configs, m)}, 2}
#define ALONE(table, m) {{&table, NULL}, {offsetof(configs, m), 0}, 1}
static const combo COMBOS[] = {
    WITH_TRAINER(tf_lm_config_table, lm),
    WITH_TRAINER(tf_bert_pretrain_config_table, bert),
    WITH_TRAINER(tf_seq2seq_task_config_table, s2s),
    WITH_TRAINER(tf_rnn_seq2seq_task_config_table, rnn),
    WITH_TRAINER(tf_finetune_config_table, ft),
    ALONE(tf_finetune_config_table, ft),
    ALONE(tf_gpt_config_table, gpt),
    ALONE(tf_bert_config_table, bert_model),
    ALONE(tf_seq2seq_config_table, s2s_model),
    ALONE(tf_rnn_seq2seq_config_table, rnn_model),
};
#undef WITH_TRAINER
#undef ALONE

/* The checks the library makes of these configurations before use: they must not crash. */
static void model_checks(const configs *c) {
    (void)tf_train_config_check(&c->train), (void)tf_lm_config_check(&c->lm);
    (void)tf_bert_config_check(&c->bert.model), (void)tf_seq2seq_config_check(&c->s2s.model);
    (void)tf_rnn_seq2seq_config_check(&c->rnn.model), (void)tf_gpt_config_check(&c->gpt);
    (void)tf_bert_config_check(&c->bert_model), (void)tf_seq2seq_config_check(&c->s2s_model);
    (void)tf_rnn_seq2seq_config_check(&c->rnn_model);
}

static void fuzz_tables(const cJSON *root) {
    for (size_t k = 0; k < sizeof COMBOS / sizeof COMBOS[0]; k++)
        for (int lenient = 0; lenient < 2; lenient++) {
            configs c;
            tf_fields s[2];
            defaults(&c);
            for (int i = 0; i < COMBOS[k].n; i++) s[i] = (tf_fields){COMBOS[k].t[i], (char *)&c + COMBOS[k].at[i]};
            if (tf_fields_from_json(root, s, COMBOS[k].n, "config.json", lenient)) continue;
            if (tf_fields_check(s, COMBOS[k].n)) abort(); /* a value read is within its row */
            model_checks(&c);
            round_trip(s, COMBOS[k].n);
        }
}

/* ---------------------------------------------------------------- model folders */

/* A model's configuration its folder reader accepted (check_rc: its check's answer): it writes out and reads back. */
static void accepted(const tf_field_table *t, void *cfg, int check_rc) {
    if (check_rc) abort(); /* the Hugging Face readers check what they return */
    tf_fields s = {t, cfg};
    round_trip(&s, 1);
}

static void fuzz_hf(const char *path) {
    cJSON *root = tf_json_read(path);
    if (!root) return;
    tf_gpt_config g;
    tf_bert_config b;
    tf_seq2seq_config m;
    int body, head;
    if (!tf_gpt_config_from_hf(root, path, &g, &body)) accepted(&tf_gpt_config_table, &g, tf_gpt_config_check(&g));
    if (!tf_bert_config_from_hf(root, path, NULL, &b, &head)) accepted(&tf_bert_config_table, &b, tf_bert_config_check(&b));
    tf_bert_load_opts o = {TF_BERT_SEQ_CLS, 3, 1}; /* a body fine-tuned with another head */
    if (!tf_bert_config_from_hf(root, path, &o, &b, &head)) accepted(&tf_bert_config_table, &b, tf_bert_config_check(&b));
    if (!tf_seq2seq_config_from_marian(root, path, &m))
        accepted(&tf_seq2seq_config_table, &m, tf_seq2seq_config_check(&m));
    cJSON_Delete(root);
}

static void fuzz_folders(const char *path, FILE *sink) {
    tf_seq2seq_config m;
    tf_rnn_seq2seq_config r;
    tr_config t;
    tf_hf_config h;
    tf_embed_opts e;
    fuzz_hf(path);
    (void)tf_seq2seq_is_marian(g_dir);
    if (!tf_folder_read_config(g_dir, "tformer-seq2seq", &tf_seq2seq_config_table, &m) && !tf_seq2seq_config_check(&m))
        accepted(&tf_seq2seq_config_table, &m, 0);
    if (!tf_folder_read_config(g_dir, "tformer-rnn-seq2seq", &tf_rnn_seq2seq_config_table, &r) &&
        !tf_rnn_seq2seq_config_check(&r))
        accepted(&tf_rnn_seq2seq_config_table, &r, 0);
    (void)tr_config_load(path, &t, sink);
    if (!tf_hf_config_read(&h, g_dir)) tf_hf_config_free(&h);
    (void)tf_embed_opts_load(g_dir, &e);
}

/* ---------------------------------------------------------------- the input */

static void cleanup(void) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd)) return;
}

/* A folder of our own; on tmpfs when there is one (tf_fields_save syncs every file it writes). */
static int setup(void) {
    struct stat st;
    const char *root = !stat("/dev/shm", &st) && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/tformer_fuzz_config_%d", root, (int)getpid());
    char sub[192];
    snprintf(sub, sizeof sub, "%s/1_Pooling", g_dir);
    (void)mkdir(g_dir, 0755), (void)mkdir(sub, 0755);
    if (stat(sub, &st) || !S_ISDIR(st.st_mode)) return -1;
    atexit(cleanup);
    return 0;
}

/* The input as every file a folder reader opens. */
static int write_files(const uint8_t *data, size_t size, char *config, size_t cap) {
    static const char *const NAMES[] = {"config.json", "tokenizer_config.json", "special_tokens_map.json",
                                        "sentence_bert_config.json", "modules.json", "1_Pooling/config.json"};
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", g_dir, NAMES[i]);
        FILE *f = fopen(path, "wb");
        if (!f) return -1;
        int ok = fwrite(data, 1, size, f) == size;
        if (fclose(f) || !ok) return -1;
    }
    snprintf(config, cap, "%s/config.json", g_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink;
    char config[256];
    if (!sink && (!(sink = fopen("/dev/null", "w")) || setup())) abort();
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (cJSON_IsObject(root)) fuzz_tables(root);
    cJSON_Delete(root);
    if (write_files(data, size, config, sizeof config)) abort();
    fuzz_folders(config, sink);
    return 0;
}
