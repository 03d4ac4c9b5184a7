/* tformer serve's text endpoints on a BERT: /v1/classifications through a sequence classifier
 * (each text's labels and probabilities against transformers' BertForSequenceClassification on
 * the text alone; `tformer predict --json` names the same label) and /v1/attention through an
 * encoder (each layer's and head's probabilities against transformers' output_attentions). The
 * fixture: tests/ref/gen_serve_textcls_fixture.py. Bad texts are a 400, and the server answers after. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "serve_case.h"
#include "test.h"

#define CLS_DIR "tests/fixtures_serve_textcls/tiny_bert_cls"

static long request(const server *sv, const char *path, const char *model, cJSON *input, int layer, int head,
                    char **r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", model), cJSON_AddItemToObject(o, "input", input);
    if (layer >= 0) cJSON_AddNumberToObject(o, "layer", layer), cJSON_AddNumberToObject(o, "head", head);
    else cJSON_AddNumberToObject(o, "top_k", 3);
    char *body = cJSON_PrintUnformatted(o);
    long st = post(sv, path, body, NULL, r);
    cJSON_Delete(o), free(body);
    return st;
}

/* The score the reply gives label name of item i, or -1. */
static double score_of(const cJSON *data, int i, const char *name) {
    const cJSON *labels = cJSON_GetObjectItem(cJSON_GetArrayItem(data, i), "labels"), *e;
    cJSON_ArrayForEach(e, labels)
        if (!strcmp(cJSON_GetObjectItem(e, "label")->valuestring, name)) return cJSON_GetObjectItem(e, "score")->valuedouble;
    return -1;
}

TEST(serve_classifies_texts_as_transformers) {
    static const char *const NAMES[] = {"negative", "neutral", "positive"};
    cJSON *want = test_read_json(CLS_DIR "/expected.json"), *texts = cJSON_GetObjectItem(want, "texts");
    CHECKF(want, "%s/expected.json", CLS_DIR);
    server sv;
    CHECK(!server_start(&sv, "--model cls=" CLS_DIR));
    int n = cJSON_GetArraySize(texts);
    cJSON *input = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(input, cJSON_CreateString(cJSON_GetObjectItem(cJSON_GetArrayItem(texts, i), "text")->valuestring));
    char *r;
    CHECK(request(&sv, "/v1/classifications", "cls", input, -1, 0, &r) == 200);
    cJSON *o = cJSON_Parse(r), *data = cJSON_GetObjectItem(o, "data");
    CHECKF(cJSON_GetArraySize(data) == n, "%s", r);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *probs = cJSON_GetObjectItem(cJSON_GetArrayItem(texts, i), "probs");
        for (int j = 0; j < 3; j++) {
            double got = score_of(data, i, NAMES[j]), ref = cJSON_GetArrayItem(probs, j)->valuedouble;
            CHECKF(got >= 0, "text %d: no label %s in %s", i, NAMES[j], r);
            worst = fmax(worst, fabs(got - ref));
        }
    }
    CHECKF(worst <= 1e-6, "probabilities differ from transformers' by %.3g", worst);
    /* the CLI's predict names the same likeliest label for the first text */
    char cli[512], path[64], first[128];
    snprintf(path, sizeof path, "/tmp/tformer_serve_text_%d.txt", (int)getpid());
    snprintf(first, sizeof first, "%s\n", cJSON_GetObjectItem(cJSON_GetArrayItem(texts, 0), "text")->valuestring);
    CHECK(!test_write_text(path, first));
    char cmd[256];
    snprintf(cmd, sizeof cmd, "predict --model " CLS_DIR " --json < %s", path);
    CHECK(test_run_cli("", cmd, cli, sizeof cli) == 0);
    const char *top = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(data, 0), "labels"), 0),
                                          "label")->valuestring;
    CHECKF(strstr(cli, top), "predict: %s; the server's first label: %s", cli, top);
    unlink(path);
    printf("    %d texts: probabilities within %.2g of transformers'; predict's label '%s'\n", n, worst, top);
    cJSON_Delete(o), free(r);
    /* bad texts: 400 (not a string, invalid UTF-8), and the server answers after each */
    CHECK(request(&sv, "/v1/classifications", "cls", cJSON_CreateNumber(3), -1, 0, &r) == 400 && is_error(r));
    free(r);
    CHECK(post(&sv, "/v1/classifications", "{\"model\": \"cls\", \"input\": \"\xff\xfe\"}", NULL, &r) == 400);
    free(r);
    CHECK(request(&sv, "/v1/classifications", "cls", cJSON_CreateString("ok"), -1, 0, &r) == 200);
    free(r);
    CHECK(!server_stop(&sv));
    cJSON_Delete(want);
}

TEST(serve_bert_attention_as_transformers) {
    cJSON *want = test_read_json(CLS_DIR "/expected.json");
    cJSON *att = cJSON_GetObjectItem(want, "attention"), *layers = cJSON_GetObjectItem(att, "layers");
    CHECKF(want, "%s/expected.json", CLS_DIR);
    const char *text = cJSON_GetObjectItem(att, "text")->valuestring;
    server sv;
    CHECK(!server_start(&sv, "--model cls=" CLS_DIR));
    double worst = 0;
    int L = cJSON_GetArraySize(layers), H = cJSON_GetArraySize(cJSON_GetArrayItem(layers, 0)), cells = 0;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            char *r;
            CHECK(request(&sv, "/v1/attention", "cls", cJSON_CreateString(text), l, h, &r) == 200);
            cJSON *o = cJSON_Parse(r), *a = cJSON_GetObjectItem(o, "attention");
            const cJSON *ref = cJSON_GetArrayItem(cJSON_GetArrayItem(layers, l), h);
            int T = cJSON_GetArraySize(ref);
            CHECKF(cJSON_GetArraySize(a) == T && cJSON_GetArraySize(cJSON_GetObjectItem(o, "tokens")) == T, "%s", r);
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++, cells++)
                    worst = fmax(worst, fabs(cJSON_GetArrayItem(cJSON_GetArrayItem(a, i), j)->valuedouble -
                                             cJSON_GetArrayItem(cJSON_GetArrayItem(ref, i), j)->valuedouble));
            cJSON_Delete(o), free(r);
        }
    /* float32 both sides, their sums in other orders, through softmaxes made sharp by the fixture's
     * large weights: the 1e-5 of the other comparisons with transformers (gpt_hugging_face_logits) */
    CHECKF(worst <= 1e-5, "attention differs from transformers' by %.3g", worst);
    printf("    %d layers x %d heads, %d cells: within %.2g of transformers' output_attentions\n", L, H, cells, worst);
    CHECK(!server_stop(&sv));
    cJSON_Delete(want);
}
