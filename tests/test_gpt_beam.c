/* Beam search with a repetition penalty against transformers 4.36's
 * generate(num_beams=N, repetition_penalty=P): tests/fixtures_gpt2_beam
 * (tests/ref/gen_gpt2_beam_fixtures.py) holds random GPT-2 folders and the
 * ids generate() gives for penalties above and below 1, the three
 * early_stopping rules and four length penalties. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "test.h"

#define FXB "tests/fixtures_gpt2_beam"

static tf_beam_stop stop_rule(const cJSON *es) {
    if (cJSON_IsString(es)) return TF_BEAM_HF_NEVER; /* "never" */
    return cJSON_IsTrue(es) ? TF_BEAM_HF_EARLY : TF_BEAM_HF_HEURISTIC;
}

static int same_ids(const tf_ids *got, const cJSON *want) {
    if (cJSON_GetArraySize(want) != (int)got->n) return 0;
    for (size_t k = 0; k < got->n; k++)
        if (cJSON_GetArrayItem(want, (int)k)->valueint != got->v[k]) return 0;
    return 1;
}

/* Every run of dir/generate.json: *n sequences compared, *bad differ,
 * *bare differ when the penalty is left out (the test can fail). */
static int beam_case(const char *dir, int *n, int *bad, int *bare) {
    char path[1200];
    size_t len;
    snprintf(path, sizeof path, "%s/generate.json", dir);
    char *text = test_slurp(path, &len);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    tf_gpt *m = root ? tf_gpt_load(dir) : NULL;
    if (!m) return fprintf(stderr, "    %s: %s\n", dir, root ? tf_error() : "no generate.json"), free(text), -1;
    const cJSON *prompts = cJSON_GetObjectItem(root, "prompts"), *run;
    int32_t eos = cJSON_GetObjectItem(root, "eos_token_id")->valueint;
    cJSON_ArrayForEach(run, cJSON_GetObjectItem(root, "runs")) {
        tf_generate_opts o = tf_generate_opts_default();
        o.beam = cJSON_GetObjectItem(run, "num_beams")->valueint, o.eos_id = eos;
        o.max_tokens = cJSON_GetObjectItem(run, "max_new_tokens")->valueint;
        o.length_penalty = (float)cJSON_GetObjectItem(run, "length_penalty")->valuedouble;
        o.beam_stop = stop_rule(cJSON_GetObjectItem(run, "early_stopping"));
        float penalty = (float)cJSON_GetObjectItem(run, "repetition_penalty")->valuedouble;
        const cJSON *outs = cJSON_GetObjectItem(run, "outputs");
        for (int i = 0; i < cJSON_GetArraySize(prompts); i++) {
            const cJSON *p = cJSON_GetArrayItem(prompts, i);
            int32_t ids[64];
            int np = cJSON_GetArraySize(p);
            for (int k = 0; k < np && k < 64; k++) ids[k] = cJSON_GetArrayItem(p, k)->valueint;
            for (int with = 1; with >= 0; with--) {
                tf_ids got = {0};
                o.repetition_penalty = with ? penalty : 1.0f;
                int ok = tf_gpt_generate(m, ids, np, &o, NULL, NULL, &got, NULL) == 0 &&
                         same_ids(&got, cJSON_GetArrayItem(outs, i));
                if (with && !ok && (*bad)++ < 8) /* the first few */
                    fprintf(stderr, "    %s: prompt %d, beam %d, penalty %g, length penalty %g, rule %d: %zu ids, "
                            "not transformers'\n", dir, i, o.beam, penalty, o.length_penalty, (int)o.beam_stop, got.n);
                if (!with) *bare += !ok;
                tf_ids_free(&got);
            }
            (*n)++;
        }
    }
    tf_gpt_free(m);
    cJSON_Delete(root);
    free(text);
    return 0;
}

TEST(gpt_beam_repetition_penalty_matches_transformers) {
    char *names[64], dir[1100];
    int k = test_dir_entries(FXB, names, 64), n = 0, bad = 0, bare = 0;
    CHECKF(k > 0, "no cases in %s", FXB);
    for (int i = 0; i < k; i++) {
        snprintf(dir, sizeof dir, FXB "/%s", names[i]);
        CHECKF(beam_case(dir, &n, &bad, &bare) == 0, "%s", dir);
        free(names[i]);
    }
    printf("    %d beam sequences with a repetition penalty: %d differ from transformers' generate(); without the "
           "penalty %d would\n", n, bad, bare);
    CHECKF(n > 0 && bad == 0, "%d of %d sequences differ", bad, n);
    CHECKF(bare > 0, "the fixtures do not need the penalty: the test cannot fail");
}
