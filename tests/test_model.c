/* The family registry and the model handle (tformer/model.h): every folder
 * opens through one door with its family's capabilities, what it lacks is
 * refused by name, concurrent calls equal serial ones, and no code outside
 * src/models/ compares a family's name. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define ST_DIR "tests/fixtures_roberta_st/tiny_roberta_st"
#define MLM_DIR "tests/fixtures_distilbert_st/tiny_distilbert_mlm"

TEST(registry_rows_are_unique_and_complete) {
    const tf_family *const *f = tf_families();
    int n = 0;
    for (int i = 0; f[i]; i++, n++) {
        CHECKF(f[i]->name && *f[i]->name && f[i]->summary, "row %d lacks a name or summary", i);
        CHECKF(tf_family_find(f[i]->name) == f[i], "%s: found as another row", f[i]->name);
        if (f[i]->task_new)
            CHECKF(f[i]->task_table && f[i]->task_size && f[i]->task_defaults, "%s: a task without its table", f[i]->name);
        if (f[i]->model_types) CHECKF(f[i]->load && f[i]->free && f[i]->verbs, "%s: folders it cannot load", f[i]->name);
        for (const char *const *t = f[i]->model_types; t && *t; t++)
            CHECKF(tf_family_of_type(*t) == f[i], "model_type %s belongs to two rows", *t);
        CHECKF(!f[i]->archs == !f[i]->run, "%s: architectures without a run function, or the reverse", f[i]->name);
        CHECKF(!(f[i]->caps & TF_CAP_RUN) == !f[i]->archs, "%s: run capability and architectures disagree", f[i]->name);
        CHECKF(!(f[i]->caps & TF_CAP_FILL_MASK) || f[i]->mask_logits, "%s: fill-mask without mask_logits", f[i]->name);
        CHECKF(!(f[i]->caps & TF_CAP_GENERATE) || f[i]->generate, "%s: generate without its call", f[i]->name);
        CHECKF(!(f[i]->caps & TF_CAP_CAPTION) || (f[i]->caption && f[i]->image_shape), "%s: caption without its calls",
               f[i]->name);
        CHECKF(!(f[i]->caps & TF_CAP_EMBED) || (f[i]->embed && f[i]->embed_dim), "%s: embed without its calls",
               f[i]->name);
        CHECKF(!(f[i]->caps & TF_CAP_CLASSIFY_TEXT) || (f[i]->classify_texts && f[i]->n_labels && f[i]->label),
               "%s: classify-text without its calls", f[i]->name);
        CHECKF(!(f[i]->caps & (TF_CAP_TAG | TF_CAP_ANSWER)) || (f[i]->predict_opts && f[i]->predict && f[i]->label),
               "%s: tag or answer without predict's calls", f[i]->name);
        CHECKF(!(f[i]->caps & TF_CAP_CLASSIFY_CLIP) ||
                   (f[i]->classify_clips && f[i]->clip_shape && f[i]->n_labels && f[i]->label),
               "%s: classify-clip without its calls", f[i]->name);
    }
    CHECK(n >= 13);
    char list[256];
    CHECK(!strcmp(tf_family_train_list(list, sizeof list, 1u << TF_TRAIN_PARALLEL), "seq2seq or rnn"));
    CHECK(!strcmp(tf_caps_list(TF_CAP_RUN | TF_CAP_CLASSIFY_IMAGE, list, sizeof list), "run, classify-image"));
    CHECK(!tf_family_find("llama") && !tf_family_of_type("llama"));
}

TEST(model_handle_opens_each_family_with_its_capabilities) {
    static const struct {
        const char *dir, *family;
        unsigned caps;
    } C[] = {
        {"tests/fixtures_gpt2/tiny_gelu_new", "gpt", TF_CAP_RUN}, /* no tokenizer files: no generate */
        {"tests/fixtures_hf/v4_bert_seqcls_5labels", "bert", TF_CAP_RUN},
        {ST_DIR, "bert", TF_CAP_RUN | TF_CAP_EMBED},
        {"tests/fixtures_marian/renormalized_bans", "seq2seq", TF_CAP_RUN | TF_CAP_TRANSLATE},
        {"tests/fixtures_vit/cls_grey28_p4_labels", "vit", TF_CAP_RUN | TF_CAP_CLASSIFY_IMAGE},
        {"tests/fixtures_vit/model_grey10_p5_nopooler", "vit", TF_CAP_RUN},
        {"tests/fixtures_swin/cls_grey28_p2_w7_labels", "swin", TF_CAP_RUN | TF_CAP_CLASSIFY_IMAGE},
        {"tests/fixtures_vivit/m2_cls_grey12_t2p4_labels", "vivit", TF_CAP_RUN | TF_CAP_CLASSIFY_CLIP},
        {"tests/fixtures_nystrom/model_T10_L2_noconv", "nystromformer", TF_CAP_RUN},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        tf_model *m = tf_model_load(C[i].dir, NULL);
        CHECKF(m, "%s: %s", C[i].dir, tf_error());
        char got[256], want[256];
        int ok = !strcmp(tf_model_family(m)->name, C[i].family) && tf_model_caps(m) == C[i].caps;
        tf_caps_list(tf_model_caps(m), got, sizeof got), tf_caps_list(C[i].caps, want, sizeof want);
        CHECKF(ok, "%s: %s with %s, expected %s with %s", C[i].dir, tf_model_family(m)->name, got, C[i].family, want);
        tf_model_free(m);
    }
}

/* A temporary folder holding config.json = json (NULL: none). */
static void folder_with_config(char *dir, const char *json) {
    strcpy(dir, "/tmp/tf_model_XXXXXX");
    if (!mkdtemp(dir)) return;
    if (!json) return;
    char path[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (f) fputs(json, f), fclose(f);
}

TEST(model_handle_refuses_by_name) {
    char dir[64];
    folder_with_config(dir, NULL);
    CHECKF(!tf_model_load(dir, NULL) && strstr(tf_error(), "/config.json: No such file or directory (tformer reads"), "%s",
           tf_error());
    test_rm_rf(dir);
    folder_with_config(dir, "{\"model_type\": \"llama\", \"architectures\": [\"LlamaForCausalLM\"]}");
    CHECK(!tf_model_load(dir, NULL));
    CHECKF(strstr(tf_error(), "\"LlamaForCausalLM\"") && strstr(tf_error(), "not one tformer reads") &&
               strstr(tf_error(), "gpt2") && strstr(tf_error(), "vivit"),
           "%s", tf_error());
    test_rm_rf(dir);
    folder_with_config(dir, "{\"hidden_size\": 8}");
    CHECKF(!tf_model_load(dir, NULL) && strstr(tf_error(), "model_type missing is not one tformer reads"), "%s",
           tf_error());
    test_rm_rf(dir);
    CHECK(!tf_model_load("tests/no_such_folder", NULL) && strstr(tf_error(), "tests/no_such_folder/config.json: No such"));
    tf_model *m = tf_model_load("tests/fixtures_vit/model_grey10_p5_nopooler", NULL);
    CHECK(m);
    CHECKF(tf_model_require(m, TF_CAP_TRANSLATE) && strstr(tf_error(), "ViTModel (vit) cannot translate; it can: run"),
           "%s", tf_error());
    CHECKF(tf_model_require(m, TF_CAP_CLASSIFY_IMAGE) && strstr(tf_error(), "not with this folder's head"), "%s",
           tf_error());
    float *e = NULL;
    CHECK(tf_model_embed(m, (const char *const[]){"x"}, 1, NULL, &e) && !e && strstr(tf_error(), "cannot embed"));
    tf_model_free(m);
    m = tf_model_load("tests/fixtures_gpt2/tiny_gelu_new", NULL);
    CHECK(m && tf_model_require(m, TF_CAP_GENERATE) && strstr(tf_error(), "holds no tokenizer"));
    float px[4];
    CHECKF(tf_model_complete_image(m, px, 0, NULL, px) && strstr(tf_error(), "(gpt) cannot complete-image"), "%s",
           tf_error());
    tf_model_free(m);
}

/* tf_model_fill_mask: transformers' fill-mask pipeline's top 3 on the DistilBertForMaskedLM fixture
 * (answers.json: ids and float64 probabilities); a text without a mask and a head without an LM refused. */
TEST(model_handle_fills_masks_as_the_pipeline) {
    tf_model *m = tf_model_load(MLM_DIR, NULL);
    CHECKF(m && tf_model_caps(m) & TF_CAP_FILL_MASK, "%s", m ? "no fill-mask" : tf_error());
    cJSON *root = test_read_json(MLM_DIR "/answers.json");
    CHECK(root != NULL);
    tf_fill_mask_result r;
    CHECKF(!tf_model_fill_mask(m, cJSON_GetObjectItem(root, "text")->valuestring, 3, &r), "%s", tf_error());
    CHECK(r.n == 1 && r.k == 3 && r.positions[0] == 3);
    double worst = 0;
    int j = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "top")) {
        CHECKF(j < r.k && r.ids[j] == cJSON_GetObjectItem(e, "token")->valueint, "choice %d: id %d", j, r.ids[j]);
        worst = fmax(worst, fabs(r.probs[j] - cJSON_GetObjectItem(e, "score")->valuedouble)), j++;
    }
    printf("    top %d as the pipeline's, probabilities %.1e apart\n", j, worst);
    CHECK(j == 3 && worst <= 1e-6);
    tf_fill_mask_result_free(&r);
    CHECK(tf_model_fill_mask(m, "no mask here", 3, &r) && strstr(tf_error(), "holds no mask token") && !r.ids);
    CHECK(!tf_model_fill_mask(m, "a [MASK] b [MASK]", 100000, &r) && r.n == 2 && r.k == 217);
    tf_fill_mask_result_free(&r);
    cJSON_Delete(root);
    tf_model_free(m);
    m = tf_model_load(ST_DIR, NULL);
    CHECK(m && tf_model_fill_mask(m, "a <mask>", 3, &r) && strstr(tf_error(), "cannot fill-mask"));
    tf_model_free(m);
}

typedef struct {
    char text[256];
    size_t len;
    int pieces;
} text_sink;

static int collect(void *user, const char *piece, size_t len) {
    text_sink *s = user;
    if (s->len + len < sizeof s->text) memcpy(s->text + s->len, piece, len), s->len += len;
    s->pieces++;
    return 0;
}

/* tf_model_generate on a run folder trained here: the CLI's text (greedy, sampled with a seed, beam);
 * the pieces streamed add up to it; a stop string cuts it. */
TEST(model_handle_generates_as_the_cli) {
    char dir[64], out[4096], cmd[512];
    snprintf(dir, sizeof dir, "/tmp/tformer_model_gen_%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "train --data tests/data/unicode_stress.txt --tokenizer char --out %s --steps 6 --layers 1 "
             "--heads 2 --width 16 --context 16 --batch 4 --eval-every 3 --eval-batches 2", dir);
    CHECKF(test_run_cli("", cmd, out, sizeof out) == 0, "%s", out);
    tf_model *m = tf_model_load(dir, NULL);
    CHECKF(m && tf_model_caps(m) & TF_CAP_GENERATE, "%s", m ? "no generate" : tf_error());
    static const char *const FLAGS[] = {"--temperature 0", "--temperature 0.9 --top-k 5 --seed 7", "--beam 3"};
    for (int i = 0; i < 3; i++) {
        tf_generate_opts o = tf_generate_opts_default();
        o.max_tokens = 10;
        o.temperature = i == 0 ? 0.f : 0.9f, o.top_k = i == 1 ? 5 : o.top_k, o.seed = i == 1 ? 7 : o.seed;
        o.beam = i == 2 ? 3 : 0;
        text_sink s = {{0}, 0, 0};
        char *text;
        size_t len;
        tf_generation g;
        CHECKF(!tf_model_generate(m, "ab", &o, NULL, collect, &s, &text, &len, &g), "%s", tf_error());
        /* the ids: the family's own generate on the prompt's ids, with the tokenizer's end token */
        tf_ids prompt = {0}, want = {0};
        tf_generate_opts e = o;
        e.eos_id = tf_tokenizer_token_id(tf_model_tokenizer(m), "<|endoftext|>");
        CHECK(!tf_tokenizer_encode(tf_model_tokenizer(m), "ab", 2, &prompt) && prompt.n == 2);
        CHECK(!tf_gpt_generate(tf_model_impl(m), prompt.v, 2, &e, NULL, NULL, &want, NULL));
        CHECKF(g.prompt_tokens == 2 && g.ids.n == want.n && !memcmp(g.ids.v, want.v, want.n * sizeof *want.v) &&
               !strcmp(g.finish, want.n == 10 ? "length" : "eos"), "%s: %zu ids, %zu wanted, %s", FLAGS[i], g.ids.n,
               want.n, g.finish);
        tf_generation_free(&g), tf_ids_free(&prompt), tf_ids_free(&want);
        snprintf(cmd, sizeof cmd, "generate --model %s --prompt ab --max-tokens 10 %s", dir, FLAGS[i]);
        CHECK(test_run_cli("", cmd, out, sizeof out) == 0);
        CHECKF(!strncmp(out, "ab", 2) && strlen(out) == len + 3 && !memcmp(out + 2, text, len), "%s: '%s' vs the CLI's '%s'",
               FLAGS[i], text, out);
        CHECK(s.len == len && !memcmp(s.text, text, len) && s.pieces >= 1);
        if (len > 2) { /* the text's third byte as a stop string: the text before it */
            char stop[2] = {text[2], 0};
            char *cut;
            size_t cut_len;
            CHECK(!tf_model_generate(m, "ab", &o, stop, NULL, NULL, &cut, &cut_len, NULL));
            CHECK(cut_len == (size_t)(strchr(text, stop[0]) - text) && !memcmp(cut, text, cut_len));
            free(cut);
        }
        free(text);
    }
    tf_model_free(m);
    test_rm_rf(dir);
}

int test_marian_spm_folder(char *dir); /* tests/test_marian_spm.c */

typedef struct {
    const tf_model *m;
    const tf_translate_opts *o;
    const char *const *texts;
    int n, rc;
    char **out;
} translate_job;

static void *translate_thread(void *arg) {
    translate_job *j = arg;
    j->rc = tf_model_translate(j->m, j->n, j->texts, j->o, j->out, NULL);
    return NULL;
}

/* tf_model_translate on a Marian folder (source.spm / target.spm): transformers' generate() texts
 * (greedy and beam 4, tests/fixtures_marian_spm/generate.json); two threads at once the same. */
TEST(model_handle_translates_as_generate) {
    char dir[] = "/tmp/tformer_model_tr_XXXXXX";
    static const char *const MODEL_FILE[] = {"model.safetensors"};
    size_t len;
    char *json = test_slurp("tests/fixtures_marian_spm/generate.json", &len);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    free(json);
    CHECK(root && !test_marian_spm_folder(dir) && !test_marian_generate_config("tests/fixtures_marian_spm", dir, NULL) &&
          !test_copy_files("tests/fixtures_marian_spm", dir, MODEL_FILE, 1));
    tf_model *m = tf_model_load(dir, NULL);
    CHECKF(m && tf_model_translate(m, 0, NULL, NULL, NULL, NULL) && strstr(tf_error(), "tf_model_translator first"),
           "%s", tf_error());
    tf_translate_opts o;
    CHECKF(!tf_model_translator(m, NULL, NULL, &o), "%s", tf_error());
    const char *texts[16];
    int n = 0, bad = 0;
    const cJSON *e, *run;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "sentences")) if (n < 16) texts[n++] = e->valuestring;
    cJSON_ArrayForEach(run, cJSON_GetObjectItem(root, "runs")) {
        o.search.beam = cJSON_GetObjectItem(run, "num_beams")->valueint;
        o.search.length_penalty = (float)cJSON_GetObjectItem(run, "length_penalty")->valuedouble;
        o.max_len_a = 0, o.max_len_b = cJSON_GetObjectItem(run, "max_length")->valueint - 1;
        char *out[2][16];
        translate_job jobs[2] = {{m, &o, texts, n, 0, out[0]}, {m, &o, texts, n, 0, out[1]}};
        pthread_t th[2];
        for (int t = 0; t < 2; t++) CHECK(!pthread_create(&th[t], NULL, translate_thread, &jobs[t]));
        for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
        CHECKF(!jobs[0].rc && !jobs[1].rc, "%s", tf_error());
        for (int i = 0; i < n; i++) {
            const char *want = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "texts"), i)->valuestring;
            bad += strcmp(out[0][i], want) != 0 || strcmp(out[1][i], want) != 0;
            free(out[0][i]), free(out[1][i]);
        }
    }
    printf("    %d sentences x 3 runs in two threads at once: %d differ from generate()\n", n, bad);
    CHECK(n == 8 && bad == 0);
    tf_model_free(m);
    test_rm_rf(dir);
    cJSON_Delete(root);
    m = tf_model_load(ST_DIR, NULL);
    CHECK(m && tf_model_translator(m, NULL, NULL, NULL) && strstr(tf_error(), "cannot translate"));
    tf_model_free(m);
}

/* A folder saved through the handle opens as the same family with the same capabilities; a
 * family whose folders tformer only reads says so. */
TEST(model_handle_saves_what_it_loads) {
    static const char *const DIRS[] = {
        "tests/fixtures_vit/cls_grey28_p4_labels", "tests/fixtures_gpt2/tiny_gelu_new",
        "tests/fixtures_hf/v4_bert_seqcls_5labels", "tests/fixtures_vivit/m2_cls_grey12_t2p4_labels",
    };
    for (size_t i = 0; i < sizeof DIRS / sizeof *DIRS; i++) {
        char dir[64];
        folder_with_config(dir, NULL);
        tf_model *m = tf_model_load(DIRS[i], NULL), *back = NULL;
        CHECKF(m && !tf_model_save(m, dir) && (back = tf_model_load(dir, NULL)), "%s: %s", DIRS[i], tf_error());
        CHECKF(tf_model_family(back) == tf_model_family(m) && tf_model_caps(back) == tf_model_caps(m), "%s", DIRS[i]);
        tf_model_free(m), tf_model_free(back), test_rm_rf(dir);
    }
    tf_model *n = tf_model_load("tests/fixtures_nystrom/model_T10_L2_noconv", NULL);
    CHECK(n && tf_model_save(n, "/tmp/tf_never_written") && strstr(tf_error(), "does not write them"));
    tf_model_free(n);
}

/* ---------------------------------------------------------------- threads */

static const char *const TEXTS[] = {
    "a man rides a horse", "  two dogs play in the snow ", "", "the quick brown fox jumps over the lazy dog",
    "ein Hund", "x", "children are playing soccer on a field near the school", "a",
};
enum { N_TEXTS = sizeof TEXTS / sizeof TEXTS[0], N_THREADS = 4, ROUNDS = 3 };

typedef struct {
    const tf_model *m;
    float *out[ROUNDS];
    int rc;
} embed_job;

static void *embed_thread(void *arg) {
    embed_job *j = arg;
    for (int r = 0; r < ROUNDS && !j->rc; r++) j->rc = tf_model_embed(j->m, TEXTS, N_TEXTS, NULL, &j->out[r]);
    return NULL;
}

TEST(model_handle_threads_match_serial) {
    tf_model *m = tf_model_load(ST_DIR, NULL);
    CHECK(m);
    float *serial = NULL;
    CHECK(!tf_model_embed(m, TEXTS, N_TEXTS, NULL, &serial));
    int d = tf_model_embed_dim(m);
    CHECK(d > 0);
    embed_job jobs[N_THREADS] = {{0}};
    pthread_t th[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        jobs[t].m = m;
        CHECK(!pthread_create(&th[t], NULL, embed_thread, &jobs[t]));
    }
    for (int t = 0; t < N_THREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < N_THREADS; t++) {
        CHECKF(!jobs[t].rc, "thread %d: %s", t, tf_error());
        for (int r = 0; r < ROUNDS; r++) {
            CHECKF(!memcmp(jobs[t].out[r], serial, (size_t)N_TEXTS * (size_t)d * sizeof *serial),
                   "thread %d round %d: embeddings differ from the serial call", t, r);
            free(jobs[t].out[r]);
        }
    }
    free(serial);
    tf_model_free(m);
}

/* ---------------------------------------------------------------- the one door */

/* Whether line holds a comparison (strcmp, strncmp, strcasecmp) against the quoted word w. */
static int compares_word(const char *line, const char *w) {
    if (!strstr(line, "strcmp(") && !strstr(line, "strncmp(") && !strstr(line, "strcasecmp(")) return 0;
    char quoted[80];
    snprintf(quoted, sizeof quoted, "\"%s\"", w);
    return strstr(line, quoted) != NULL;
}

/* "file:line: text" of the first comparison against a family's name or model type in dir/<*.c|*.h>, or "". */
static void find_comparison(const char *dir, char *hit, size_t n) { /* n: room for a path and a 1 KB line */
    hit[0] = 0;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(hit, n, "%s: cannot open", dir);
        return;
    }
    for (struct dirent *e; !*hit && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 3 || (strcmp(e->d_name + len - 2, ".c") && strcmp(e->d_name + len - 2, ".h"))) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        char line[1024];
        for (int no = 1; f && !*hit && fgets(line, sizeof line, f); no++)
            for (const tf_family *const *fam = tf_families(); *fam && !*hit; fam++) {
                int bad = compares_word(line, (*fam)->name);
                for (const char *const *t = (*fam)->model_types; t && *t && !bad; t++) bad = compares_word(line, *t);
                if (bad) snprintf(hit, n, "%s:%d: %s", path, no, line);
            }
        if (f) fclose(f);
    }
    closedir(d);
}

/* tf_model_top ranks as tformer predict scores (ties to the lower label, exp(x - max) / sum in double); the
 * handle's clip logits give tf_vivit_predict's label and probability, bit for bit (the CLI's numbers). */
TEST(model_handle_classifies_clips_and_ranks_labels) {
    const float x[4] = {1, 3, 3, -2};
    int32_t ids[4];
    float p[4];
    CHECK(tf_model_top(x, 4, 9, ids, p) == 4 && ids[0] == 1 && ids[1] == 2 && ids[2] == 0 && ids[3] == 3);
    double z = 0;
    for (int j = 0; j < 4; j++) z += exp((double)x[j] - 3.0);
    CHECK(p[0] == (float)(1.0 / z) && p[1] == p[0] && p[2] == (float)(exp(-2.0) / z) && p[3] < p[2]);
    CHECK(tf_model_top(x, 4, 1, ids, p) == 1 && ids[0] == 1);
    tf_model *m = tf_model_load("tests/fixtures_vivit/m2_cls_grey12_t2p4_labels", NULL);
    CHECKF(m, "%s", tf_error());
    int frames, channels, size, L = tf_model_n_labels(m);
    tf_model_clip_shape(m, &frames, &channels, &size);
    const tf_vivit *v = tf_model_impl(m);
    CHECK(frames == v->cfg.num_frames && channels == v->cfg.channels && size == v->cfg.image_size);
    CHECK(L == v->cfg.n_labels && L > 1);
    size_t per = (size_t)frames * (size_t)channels * (size_t)size * (size_t)size;
    float *clips = malloc(3 * per * sizeof *clips), *logits = malloc(3 * (size_t)L * sizeof *logits);
    CHECK(clips && logits);
    for (size_t i = 0; i < 3 * per; i++) clips[i] = (float)((i * 7919u) % 256u) / 255.0f;
    CHECKF(tf_model_classify_clips(m, clips, 3, logits) == 0, "%s", tf_error());
    for (int c = 0; c < 3; c++) {
        int32_t pred;
        float prob;
        char a[32], b[32];
        CHECKF(tf_vivit_predict(v, clips + c * per, 1, 1, NULL, &pred, &prob, NULL, NULL) == 0, "%s", tf_error());
        CHECK(tf_model_top(logits + c * L, L, 1, ids, p) == 1);
        CHECKF(ids[0] == pred && p[0] == prob, "clip %d: %d %.9g, tf_vivit_predict %d %.9g", c, ids[0], p[0], pred, prob);
        CHECK(!strcmp(tf_model_label(m, pred, a, sizeof a), tf_vivit_label(v, pred, b, sizeof b)));
    }
    free(clips), free(logits);
    tf_model_free(m);
    m = tf_model_load(ST_DIR, NULL);
    CHECK(m && tf_model_n_labels(m) == 0);
    const char *text = "a text";
    CHECK(tf_model_classify_texts(m, &text, NULL, 1, p) == -1 && strstr(tf_error(), "cannot classify-text"));
    tf_model_free(m);
}

TEST(no_family_name_compared_outside_models) {
    static const char *const DIRS[] = {"cli", "src/train", "src/generate", "src/data", "src/interop"};
    char hit[2400];
    for (size_t i = 0; i < sizeof DIRS / sizeof DIRS[0]; i++) {
        find_comparison(DIRS[i], hit, sizeof hit);
        CHECKF(!*hit, "a family compared by name outside src/models/ (use the registry): %s", hit);
    }
    /* the check finds one: a line as cmd_train.c had them */
    CHECK(compares_word("    if (!strcmp(t->arch, \"vivit\")) {", "vivit"));
    CHECK(!compares_word("    if (!strcmp(t->arch, \"vivid\")) {", "vivit"));
}

/* tf_model_run: the inputs of a committed hf-run case as the caller's arrays give the same bytes as
 * tf_model_run_file writes, on the ViT classifier (logits, loss) and a DistilBERT body with padding; a
 * missing input and an array of the wrong size are errors naming them. */
TEST(model_run_in_memory_equals_the_file_run) {
    static const char *const DIRS[] = {"tests/fixtures_vit/cls_grey28_p4_labels",
                                       "tests/fixtures_distilbert/v4_body_leftpad_pad3_sinusoidal"};
    static const char *const REQUIRED[] = {"pixel_values", "input_ids"};
    for (int k = 0; k < 2; k++) {
        char in_path[512], out_path[] = "/tmp/tformer_modelrun_XXXXXX";
        snprintf(in_path, sizeof in_path, "%s/input.safetensors", DIRS[k]);
        int fd = mkstemp(out_path);
        CHECK(fd >= 0);
        close(fd);
        tf_model *m = tf_model_load(DIRS[k], NULL);
        tf_st_file *in = tf_st_open(in_path);
        CHECK(m && in && tf_model_run_file(m, in_path, out_path, NULL) == 0);
        tf_st_entry e[8];
        int n = tf_st_count(in);
        CHECK(n <= 8);
        for (int i = 0; i < n; i++) e[i] = *tf_st_entry_at(in, i);
        tf_run_output *out;
        int n_out;
        CHECKF(tf_model_run(m, e, n, &out, &n_out) == 0, "%s: %s", DIRS[k], tf_error());
        tf_st_file *want = tf_st_open(out_path);
        CHECK(want && n_out == tf_st_count(want));
        for (int i = 0; i < n_out; i++) {
            const tf_st_entry *w = tf_st_find(want, out[i].name);
            CHECKF(w && w->nbytes == out[i].nbytes && !memcmp(w->data, out[i].data, w->nbytes) &&
                       w->ndim == out[i].ndim && !memcmp(w->shape, out[i].shape, (size_t)w->ndim * sizeof *w->shape),
                   "%s: output %s differs from the file run's", DIRS[k], out[i].name);
        }
        tf_run_outputs_free(out, n_out);
        /* the required input left out (the last entry in its place), then one with too few bytes */
        int r = 0;
        while (r < n && strcmp(e[r].name, REQUIRED[k])) r++;
        CHECK(r < n);
        tf_st_entry kept = e[r];
        e[r] = e[n - 1];
        CHECKF(tf_model_run(m, e, n - 1, &out, &n_out) == -1 && !out && strstr(tf_error(), "inputs: missing input") &&
                   strstr(tf_error(), REQUIRED[k]),
               "%s", tf_error());
        e[r] = kept, e[0].nbytes--;
        CHECKF(tf_model_run(m, e, n, &out, &n_out) == -1 && strstr(tf_error(), "bytes of data for a shape and dtype"),
               "%s", tf_error());
        tf_st_close(want), tf_st_close(in), tf_model_free(m), unlink(out_path);
    }
}

/* A fine-tuned encoder's tag and span predictions through the handle (tf_model_predict_opts, tf_model_predict):
 * the task from the head when there is no finetune.json, the predictions those of the family's own encode and
 * predict on the same folder, and the wrong task or capability refused by name. */
#define CLS_DIR "tests/fixtures_serve_textcls/tiny_bert_cls"
static int head_folder(const char *dir, int head) {
    static const char *const TOK[] = {"tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"};
    tf_bert *b = tf_bert_load(CLS_DIR, &(tf_bert_load_opts){.head = head, .n_labels = 3, .seed = 5});
    int rc = !b || tf_bert_save(b, dir) || test_copy_files(CLS_DIR, dir, TOK, 4);
    tf_bert_free(b);
    return rc ? -1 : 0;
}

/* tf_model_predict against the family's own encode and predict: 0 when the predictions and the inputs cut agree
 * (and some were cut when max_len is 8). */
static int same_predictions(const tf_model *m, const tf_finetune_set *s, const tf_predict_opts *o) {
    tf_finetune_prediction p[4] = {0}, q[4] = {0};
    tf_finetune_data d = {0};
    int cut = -1;
    int rc = tf_model_predict(m, s, o, p, &cut) || tf_finetune_encode(tf_model_tokenizer(m), s, NULL, 0, o->max_len, &d) ||
             tf_finetune_predict(tf_model_impl(m), &d, o->batch, o->max_answer, q) || cut != d.n_truncated ||
             (o->max_len == 8 && cut < 1);
    for (int i = 0; !rc && i < s->n; i++) {
        rc |= p[i].label != q[i].label || p[i].n_tags != q[i].n_tags || p[i].answer_off != q[i].answer_off ||
              p[i].answer_len != q[i].answer_len;
        for (int w = 0; !rc && w < p[i].n_tags; w++) rc |= p[i].tags[w] != q[i].tags[w];
    }
    tf_finetune_data_free(&d);
    tf_finetune_predictions_free(p, s->n), tf_finetune_predictions_free(q, s->n);
    return rc;
}

TEST(model_predict_tags_and_answers_as_the_family) {
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tformer_model_pred_%d", (int)getpid());
    static const char TAGS[] = "the cat sat on the mat and the dog ran\na dog\n"; /* a sentence a line */
    static const char SPANS[] = "{\"context\": \"paris is the capital of france\", \"question\": \"what is the capital\"}\n";
    for (int k = 0; k < 2; k++) {
        CHECKF(!head_folder(dir, k ? TF_BERT_QA : TF_BERT_TOKEN_CLS), "%s", tf_error());
        tf_model *m = tf_model_load(dir, &(tf_model_opts){.require = TF_CAP_TAG | TF_CAP_ANSWER});
        CHECKF(m, "%s", tf_error());
        CHECK(tf_model_caps(m) & (k ? TF_CAP_ANSWER : TF_CAP_TAG) && !(tf_model_caps(m) & TF_CAP_CLASSIFY_TEXT));
        tf_predict_opts o;
        const char *from;
        CHECKF(!tf_model_predict_opts(m, 0, &o, &from), "%s", tf_error());
        CHECK(o.task == (k ? TF_FINETUNE_SPAN : TF_FINETUNE_TAG) && !strcmp(from, "the model's head") && o.batch == 16);
        tf_finetune_set s;
        const char *in = k ? SPANS : TAGS;
        CHECKF(!tf_finetune_parse(o.task, in, strlen(in), "in", 0, &s) && s.n == (k ? 1 : 2), "%s", tf_error());
        CHECK(!same_predictions(m, &s, &o));
        o.max_len = 8; /* cut: the same predictions, and the inputs counted */
        CHECK(!same_predictions(m, &s, &o));
        o.task = TF_FINETUNE_CLASSIFY; /* options for another format */
        tf_finetune_prediction p[2] = {0};
        CHECK(tf_model_predict(m, &s, &o, p, NULL) && strstr(tf_error(), "options for classify"));
        tf_finetune_set_free(&s);
        CHECK(!tf_finetune_parse(TF_FINETUNE_CLASSIFY, "a text\n", 7, "in", 0, &s));
        CHECK(tf_model_predict(m, &s, &o, p, NULL) && strstr(tf_error(), "cannot classify-text"));
        tf_finetune_set_free(&s);
        tf_model_free(m);
        test_rm_rf(dir);
    }
    tf_model *m = tf_model_load(ST_DIR, NULL); /* an embedder: no task of its own */
    tf_predict_opts o;
    CHECK(m && tf_model_predict_opts(m, 0, &o, NULL) && strstr(tf_error(), "cannot classify-text"));
    tf_model_free(m);
}
