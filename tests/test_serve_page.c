/* tformer serve's page at / in a real browser (headless Chromium, Debian's `chromium`; skipped
 * without it): the page's address asks it to complete a prompt (streamed) and draw the attention
 * of a layer and head; the DOM it leaves holds the CLI's greedy text and a heatmap whose cells are
 * /v1/attention's numbers. The page needs no key; the API behind it does. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "serve_case.h"
#include "test.h"

/* The DOM Chromium leaves after the page's scripts ran (15 s of virtual time), malloc'd; NULL without Chromium. */
static char *dump_dom(const char *url) {
    const char *bin = getenv("TFORMER_CHROMIUM") ? getenv("TFORMER_CHROMIUM") : "chromium";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1 && timeout 120 %s --headless --no-sandbox --disable-gpu "
             "--virtual-time-budget=15000 --dump-dom '%s' 2>/dev/null", bin, bin, url);
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t n = 0, cap = 1 << 16;
    char *dom = malloc(cap);
    for (size_t k; dom && (k = fread(dom + n, 1, cap - n - 1, p)) > 0;) {
        n += k;
        if (n + 1 == cap) dom = realloc(dom, cap *= 2);
    }
    pclose(p);
    if (dom) dom[n] = 0;
    if (dom && !n) free(dom), dom = NULL;
    return dom;
}

/* The text of the element with id="id" (up to the next tag), malloc'd. */
static char *text_of(const char *dom, const char *id) {
    char key[64];
    snprintf(key, sizeof key, "id=\"%s\"", id);
    const char *at = strstr(dom, key), *gt = at ? strchr(at, '>') : NULL, *lt = gt ? strchr(gt, '<') : NULL;
    return lt ? strndup(gt + 1, (size_t)(lt - gt - 1)) : NULL;
}

TEST(serve_page_completes_and_draws_attention_in_chromium) {
    char dir[64] = "", cli[1024], url[512], *r;
    server sv;
    CHECK(!gpt_serve(&sv, dir, sizeof dir, "--max-tokens 8 --temperature 0", cli, sizeof cli,
                     "--model st=" ST_DIR " --model vit=tests/fixtures_vit/cls_grey28_p4_labels --api-key pg-k3y"));
    CHECK(http(&sv, "/", NULL, 0, NULL, &r) == 200 && strstr(r, "<html") && strstr(r, "/v1/attention"));
    free(r);
    CHECK(http(&sv, "/v1/models", NULL, 0, NULL, &r) == 401);
    free(r);
    /* /v1/attention's bad requests: 400 (a head past the model's, no tokens, past 256 tokens), 422 */
    char many[400] = "{\"model\":\"gpt\",\"input\":\"";
    memset(many + strlen(many), 'a', 300), strcat(many, "\"}");
    const struct {
        const char *body;
        long status;
        const char *says;
    } bad[] = {{"{\"model\":\"gpt\",\"input\":\"ab\",\"head\":2}", 400, "head"},
               {"{\"model\":\"gpt\",\"input\":\"ab\",\"layer\":-1}", 400, "layer"},
               {"{\"model\":\"gpt\",\"input\":\"\"}", 400, "0 tokens"},
               {"{\"model\":\"gpt\",\"input\":7}", 400, "input"},
               {many, 400, "300 tokens"},
               {"{\"model\":\"vit\",\"input\":\"ab\"}", 422, "model_cannot"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        long st = post(&sv, "/v1/attention", bad[i].body, "pg-k3y", &r);
        CHECKF(st == bad[i].status && is_error(r) && strstr(r, bad[i].says), "%.60s: %ld %s", bad[i].body, st, r);
        free(r);
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%d/#key=pg-k3y&model=gpt&input=ab&run=complete,attention&max_tokens=8"
             "&temperature=0&layer=0&head=1", sv.port);
    char *dom = dump_dom(url);
    if (!dom) {
        printf("    skipped: no chromium (apt-get install chromium)\n");
        server_stop(&sv), test_rm_rf(dir);
        return;
    }
    char *out = text_of(dom, "out"), *err = text_of(dom, "err");
    CHECKF(strstr(dom, "data-done=\"1\"") && out && !strcmp(out, cli) && err && !*err, "out '%s' (the CLI's '%s'), err '%s'",
           out ? out : "-", cli, err ? err : "-");
    CHECK(post(&sv, "/v1/attention", "{\"model\":\"gpt\",\"input\":\"ab\",\"layer\":0,\"head\":1}", "pg-k3y", &r) == 200);
    cJSON *o = cJSON_Parse(r), *map = cJSON_GetObjectItem(o, "attention");
    CHECKF(strstr(dom, "id=\"att\" data-layer=\"0\" data-head=\"1\" data-n=\"2\""), "no 2x2 heatmap of layer 0, head 1");
    const char *cell = strstr(dom, "<tbody>");
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            cell = cell ? strstr(cell, "data-v=\"") : NULL;
            CHECK(cell);
            cell += 8;
            double want = cJSON_GetArrayItem(cJSON_GetArrayItem(map, i), j)->valuedouble;
            CHECKF(atof(cell) == want, "cell (%d,%d): %g on the page, %g from /v1/attention", i, j, atof(cell), want);
        }
    printf("    Chromium: the page streamed '%s' and drew layer 0, head 1 over 2 tokens\n", out);
    cJSON_Delete(o), free(r), free(out), free(err), free(dom);
    CHECK(server_stop(&sv) == 0);
    test_rm_rf(dir);
}
