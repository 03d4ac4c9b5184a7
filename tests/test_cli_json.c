/* --json of the verbs that print results, read by Python's json module (issue 55: keys in
 * docs/json.md), and --tokenizer for a GPT folder without tokenizer files. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test.h"

#define GPT_NO_TOKENIZER "tests/fixtures_gpt2/tiny_gelu_new" /* config.json + model.safetensors, vocab 37 */
#define VIT_28 "tests/fixtures_vit/cls_grey28_p4_labels"
#define ST_MODEL "tests/fixtures_distilbert_st/tiny_distilbert_st" /* sentence-transformers, width 16 */

/* dir/vocab.txt: a WordPiece vocabulary of 37 tokens, the tiny GPT-2's vocab_size. */
static int write_vocab37(const char *dir) {
    char path[256];
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", f);
    for (char c = 'a'; c <= 'z'; c++) fprintf(f, "%c\n", c);
    fputs("the\nhello\nworld\n##s\n.\n,\n", f);
    return fclose(f) ? -1 : 0;
}

/* `tformer CMD --json` (run in the shell: redirections allowed), its standard output read by
 * python3 into d = json.load(...), and into `text` the same command's output without --json
 * (when text is set), then CHECKS (Python statements, asserts); the exit status. */
static int json_check(const char *dir, const char *cmd, int text, const char *checks) {
    char line[4096], py[256];
    snprintf(py, sizeof py, "%s/check.py", dir);
    FILE *f = fopen(py, "w");
    if (!f) return -1;
    fprintf(f, "import json, sys\nd = json.load(open(sys.argv[1]))\ntext = open(sys.argv[2]).read()\n%s\n", checks);
    if (fclose(f)) return -1;
    snprintf(line, sizeof line, "%s %s --json > %s/out.json && %s %s > %s/out.txt && python3 %s %s/out.json %s/out.txt",
             test_tformer_bin(), cmd, dir, text ? test_tformer_bin() : "true", text ? cmd : "", dir, py, dir, dir);
    int st = system(line);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A shell command from fmt; its exit status (said with the command on stderr when not 0). */
static int sh(const char *fmt, ...) {
    static char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd), rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (rc) fprintf(stderr, "    exit %d: %s\n", rc, cmd);
    return rc;
}

static unsigned char stripes(int i, int c, int y, int x) { return (unsigned char)((x * 9 + y * 5 + c * 40 + i) % 256); }

TEST(cli_json_outputs_parse_with_pythons_json_module) {
    char dir[] = "/tmp/tformer_json_XXXXXX", args[2048], png[300];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_vocab37(dir) == 0);
    /* bleu: sacreBLEU's figures, the same numbers as the text */
    snprintf(args, sizeof args, "printf 'a cat sat on the mat .\\nhello world\\n' > %s/ref; printf 'the cat sat on the "
             "mat .\\nhello world !\\n' > %s/hyp", dir, dir);
    CHECK(system(args) == 0);
    snprintf(args, sizeof args, "bleu --ref %s/ref -m bleu chrf < %s/hyp", dir, dir);
    CHECK(json_check(dir, args, 1,
                     "b = d['bleu']\n"
                     "assert text.startswith('BLEU = %.2f ' % b['score']) and len(b['precisions']) == 4, (d, text)\n"
                     "assert ('hyp_len = %d ref_len = %d' % (b['hyp_len'], b['ref_len'])) in text\n"
                     "assert ('chrF2 = %.2f' % d['chrf']['score']) in text and d['sentences'] == 2\n"
                     "assert b['tokenize'] == '13a' and b['lowercase'] is False and d['language_pair'] is None") == 0);
    /* generate: the continuation the text mode writes after the prompt, and its ids */
    snprintf(args, sizeof args, "generate --model " GPT_NO_TOKENIZER " --tokenizer %s --prompt 'hello world' "
             "--max-tokens 4", dir);
    CHECK(json_check(dir, args, 1,
                     "assert d['prompt'] == 'hello world' and d['new_tokens'] == 4 and len(d['ids']) == 4, d\n"
                     "assert text == d['prompt'] + d['text'] + '\\n', (text, d)\n"
                     "assert d['stop'] == 'length' and d['prompt_tokens'] == 2") == 0);
    /* eval of a GPT: loss, perplexity, tokens */
    snprintf(args, sizeof args, "eval --model " GPT_NO_TOKENIZER " --tokenizer %s --data %s/ref", dir, dir);
    CHECK(json_check(dir, args, 1,
                     "import math\n"
                     "assert text == 'loss %.4f perplexity %.3f over %d tokens\\n' % (d['loss'], d['perplexity'], "
                     "d['tokens']), (text, d)\n"
                     "assert abs(math.exp(d['loss']) - d['perplexity']) < 1e-9 * d['perplexity'] and len(d['data']) == 1") == 0);
    /* classify: PNG files' likeliest labels */
    unsigned char pixels[28 * 28];
    for (int k = 0; k < 28 * 28; k++) pixels[k] = stripes(0, 1, k / 28, k % 28);
    snprintf(png, sizeof png, "%s/x.png", dir);
    CHECK(test_write_grey_png(png, pixels, 28, 28) == 0);
    snprintf(args, sizeof args, "classify --model " VIT_28 " --top-k 2 %s %s", png, png);
    CHECK(json_check(dir, args, 1,
                     "rows = [l.split('\\t') for l in text.splitlines()]\n"
                     "assert len(d['images']) == 2 and all(len(i['top']) == 2 for i in d['images']), d\n"
                     "for i, r in zip(d['images'], rows):\n"
                     "    assert r == [i['file']] + [x for t in i['top'] for x in (t['label'], '%.4f' % t['probability'])]\n"
                     "    assert i['top'][0]['probability'] >= i['top'][1]['probability']") == 0);
    /* classify and eval on a labelled idx set: accuracy, loss, per class */
    CHECK(test_write_idx_set(dir, "t10k", 12, 28, 3, stripes) == 0);
    for (int v = 0; v < 2; v++) {
        snprintf(args, sizeof args, "%s --model " VIT_28 " --data-dir %s", v ? "eval" : "classify", dir);
        CHECK(json_check(dir, args, 1,
                         "assert d['total'] == 12 and 0 <= d['correct'] <= 12 and d['accuracy'] == d['correct'] / 12, d\n"
                         "assert text.startswith('accuracy %.4f (%d of 12 images' % (d['accuracy'], d['correct']))\n"
                         "assert ('loss %.4f' % d['loss']) in text and d['hflip_tta'] is False\n"
                         "assert sum(c['total'] for c in d['per_class']) == 12 and len(d['per_class']) == 3") == 0);
    }
    /* inspect and compare */
    CHECK(json_check(dir, "inspect tests/data/all_dtypes.safetensors", 1,
                     "names = [l.split()[0] for l in text.splitlines()]\n"
                     "assert [t['name'] for t in d['tensors']] == names and d['file'].endswith('all_dtypes.safetensors')\n"
                     "assert all(isinstance(t['shape'], list) and t['dtype'] for t in d['tensors'])") == 0);
    snprintf(args, sizeof args, "compare " GPT_NO_TOKENIZER "/model.safetensors " GPT_NO_TOKENIZER "/model.safetensors");
    CHECK(json_check(dir, args, 0,
                     "assert d['problems'] == 0 and d['worst_relative_error'] == 0 and d['compared'] == len(d['tensors'])\n"
                     "assert all(t['relative_error'] == 0 for t in d['tensors']) and d['compared'] > 0, d") == 0);
    /* a problem is an entry with its text, and the exit status stays 1 */
    snprintf(args, sizeof args, "%s compare " GPT_NO_TOKENIZER "/model.safetensors tests/data/all_dtypes.safetensors "
             "--json > %s/c.json 2>/dev/null; test $? = 1 && python3 -c \"import json; d = json.load(open('%s/c.json')); "
             "assert d['problems'] > 0 and any('missing from' in (t.get('problem') or '') for t in d['tensors'])\"",
             test_tformer_bin(), dir, dir);
    CHECKF(system(args) == 0, "%s", args);
    test_rm_rf(dir);
}

TEST(cli_tokenizer_flag_gives_a_gpt_folder_its_tokenizer) {
    char dir[] = "/tmp/tformer_tok_XXXXXX", cmd[1024], out[4096];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_vocab37(dir) == 0);
    /* without --tokenizer: refused, and the message names the flag */
    snprintf(cmd, sizeof cmd, "%s generate --model " GPT_NO_TOKENIZER " --prompt hello 2>&1", test_tformer_bin());
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    size_t k = fread(out, 1, sizeof out - 1, p);
    out[k] = 0;
    int st = pclose(p);
    CHECKF(WEXITSTATUS(st) == 1 && strstr(out, "no tokenizer files") && strstr(out, "give one with --tokenizer"), "%s", out);
    for (int v = 0; v < 2; v++) { /* with it: a folder or the file itself */
        snprintf(cmd, sizeof cmd, "%s %s --model " GPT_NO_TOKENIZER " --tokenizer %s%s %s > /dev/null",
                 test_tformer_bin(), v ? "eval" : "generate", dir, v ? "/vocab.txt" : "",
                 v ? "--data tests/data/seed_bpe.txt" : "--prompt 'hello world' --max-tokens 3");
        CHECKF(system(cmd) == 0, "%s", cmd);
    }
    test_rm_rf(dir);
}

/* classify --resize: a PNG of twice the model's size, each pixel repeated 2x2, gives what the
 * model's own size gives (the box filter averages equal pixels); without it, the refusal names
 * the flag; and a labelled set refuses the flag. */
TEST(cli_classify_resize_scales_a_png_to_the_model) {
    char dir[] = "/tmp/tformer_resize_XXXXXX", small[300], big[300], cmd[2048];
    CHECK(mkdtemp(dir) != NULL);
    unsigned char px[28 * 28], px2[56 * 56];
    for (int k = 0; k < 28 * 28; k++) px[k] = stripes(3, 2, k / 28, k % 28);
    for (int k = 0; k < 56 * 56; k++) px2[k] = px[(k / 56 / 2) * 28 + (k % 56) / 2];
    snprintf(small, sizeof small, "%s/small.png", dir);
    snprintf(big, sizeof big, "%s/big.png", dir);
    CHECK(test_write_grey_png(small, px, 28, 28) == 0 && test_write_grey_png(big, px2, 56, 56) == 0);
    snprintf(cmd, sizeof cmd, "%s classify --model " VIT_28 " --top-k 3 %s > %s/a.txt && %s classify --model " VIT_28
             " --top-k 3 --resize %s > %s/b.txt 2> %s/b.err && sed 's/big.png/small.png/' %s/b.txt | cmp - %s/a.txt && "
             "grep -q 'big.png: 56x56 resized to 28x28' %s/b.err", test_tformer_bin(), small, dir, test_tformer_bin(), big,
             dir, dir, dir, dir, dir);
    CHECKF(system(cmd) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "%s classify --model " VIT_28 " %s 2>&1 | grep -q 'big.png: an image of 56x56; the model "
             "takes 28x28 with 1 channel(s) (--resize scales it)'", test_tformer_bin(), big);
    CHECKF(system(cmd) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "%s classify --model " VIT_28 " --data-dir %s --resize 2>&1 | grep -q -e '--resize, --rgb and "
             "--grayscale go with PNG files'", test_tformer_bin(), dir);
    CHECKF(system(cmd) == 0, "%s", cmd);
    test_rm_rf(dir);
}

/* embed --format npy|json|text: numpy reads the .npy (its header written last with the count),
 * the JSON Lines hold the same float32 values, the text the same at its 8 digits; npy to a pipe
 * is refused, and --pooling none is an array of token vectors per text in JSON. */
TEST(cli_embed_formats_npy_json_text_agree) {
    char dir[] = "/tmp/tformer_fmt_XXXXXX";
    const char *m = ST_MODEL, *t = test_tformer_bin();
    CHECK(mkdtemp(dir) != NULL);
    CHECK(sh("printf 'a man runs\\nhello world\\nthe cat\\n' > %s/s.txt && %s embed --model %s --format npy "
             "< %s/s.txt > %s/e.npy && %s embed --model %s --format json < %s/s.txt > %s/e.jsonl && %s embed --model %s "
             "< %s/s.txt > %s/e.txt && %s embed --model %s --format json --pooling none < %s/s.txt > %s/t.jsonl && "
             "python3 -c \"import numpy as np, json; d = '%s'; a = np.load(d + '/e.npy'); "
             "j = np.array([json.loads(l) for l in open(d + '/e.jsonl')], dtype=np.float32); "
             "x = np.loadtxt(d + '/e.txt', dtype=np.float64); "
             "assert a.shape == (3, 16) and a.dtype == np.float32 and np.array_equal(a, j), (a.shape, a.dtype); "
             "assert np.abs(a - x).max() <= 1e-7 * np.abs(a).max(), np.abs(a - x).max(); "
             "tok = [np.array(json.loads(l)) for l in open(d + '/t.jsonl')]; "
             "assert len(tok) == 3 and all(v.ndim == 2 and v.shape[1] == 16 for v in tok)\"",
             dir, t, m, dir, dir, t, m, dir, dir, t, m, dir, dir, t, m, dir, dir, dir) == 0);
    CHECK(sh("echo hi | %s embed --model %s --format npy 2>&1 | grep -q 'format npy writes a file'", t, m) == 0);
    test_rm_rf(dir);
}

/* hf-run --text: the text as input_ids and attention_mask (with [CLS]/[SEP] when the tokenizer has
 * them), so its last_hidden_state is embed --pooling none's token vectors; a folder without
 * tokenizer files takes --tokenizer, and its absence names the flag. */
TEST(cli_hf_run_text_and_tokenizer) {
    char dir[] = "/tmp/tformer_hftext_XXXXXX";
    CHECK(mkdtemp(dir) != NULL && write_vocab37(dir) == 0);
    const char *t = test_tformer_bin();
    CHECK(sh("%s hf-run --model %s --text 'a man runs' --output %s/o.safetensors 2> %s/err && "
             "echo 'a man runs' | %s embed --model %s --pooling none --format json > %s/e.jsonl && "
             "grep -q -- '--text as 8 tokens' %s/err && python3 -c \"import json, struct, numpy as np; d = '%s'; "
             "b = open(d + '/o.safetensors', 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; "
             "h = json.loads(b[8:8 + n]); e = h['last_hidden_state']; s, t = e['data_offsets']; "
             "x = np.frombuffer(b[8 + n + s:8 + n + t], dtype=np.float32).reshape(e['shape']); "
             "y = np.array(json.loads(open(d + '/e.jsonl').readline()), dtype=np.float32); "
             "assert x.shape == (1,) + y.shape and np.array_equal(x[0], y), (x.shape, y.shape, np.abs(x[0] - y).max())\"",
             t, ST_MODEL, dir, dir, t, ST_MODEL, dir, dir, dir) == 0);
    CHECK(sh("%s hf-run --model " GPT_NO_TOKENIZER " --text hello --output %s/o2.safetensors 2>&1 | "
             "grep -q 'give one with --tokenizer' && %s hf-run --model " GPT_NO_TOKENIZER " --text 'hello world' "
             "--tokenizer %s --output %s/o2.safetensors 2>/dev/null && %s inspect %s/o2.safetensors | grep -q '(1,4,37)'",
             t, dir, t, dir, dir, t, dir) == 0);
    test_rm_rf(dir);
}

/* tformer convert: an idx image to the PNG classify reads (the same pixels), a safetensors tensor
 * to .npy and JSON (numpy and json read the same values), a text of ids to the safetensors file
 * hf-run takes; rows of different lengths are refused naming the line. */
TEST(cli_convert_idx_safetensors_and_ids) {
    char dir[] = "/tmp/tformer_conv_XXXXXX", path[300];
    const char *t = test_tformer_bin();
    CHECK(mkdtemp(dir) != NULL);
    CHECK(test_write_idx_set(dir, "t10k", 3, 28, 3, stripes) == 0);
    CHECK(sh("%s convert %s/t10k-images-idx3-ubyte %s/one.png --index 1 2>/dev/null", t, dir, dir) == 0);
    snprintf(path, sizeof path, "%s/one.png", dir);
    tf_images im;
    CHECK(tf_images_read_png(path, 1, &im) == 0 && im.width == 28 && im.height == 28);
    int same = 1;
    for (int k = 0; k < 28 * 28; k++) same &= im.pixels[k] == stripes(1, 1, k / 28, k % 28) / 255.0f;
    tf_images_free(&im);
    CHECK(same);
    CHECK(sh("%s convert " GPT_NO_TOKENIZER "/model.safetensors %s/w.npy --tensor transformer.wpe.weight 2>/dev/null && "
             "%s convert " GPT_NO_TOKENIZER "/model.safetensors %s/all.json 2>/dev/null && python3 -c \"import json, "
             "numpy as np; d = '%s'; a = np.load(d + '/w.npy'); j = json.load(open(d + '/all.json')); "
             "w = j['transformer.wpe.weight']; b = np.array(w['values'], dtype=np.float32).reshape(w['shape']); "
             "assert a.dtype == np.float32 and a.shape == (16, 12) and np.array_equal(a, b) and w['dtype'] == 'F32'; "
             "assert len(j) > 10\"", t, dir, t, dir, dir) == 0);
    CHECK(sh("printf '1 2 3\\n4 5 6\\n' > %s/ids.txt && %s convert %s/ids.txt %s/in.safetensors 2>/dev/null && %s hf-run "
             "--model " GPT_NO_TOKENIZER " --input %s/in.safetensors --output %s/out.safetensors && %s inspect "
             "%s/out.safetensors | grep -q '(2,3,37)'", dir, t, dir, dir, t, dir, dir, t, dir) == 0);
    CHECK(sh("printf '1 2 3\\n4 5\\n' > %s/bad.txt && %s convert %s/bad.txt %s/x.safetensors 2>&1 | grep -q 'bad.txt line "
             "2: 2 ids, the lines before 3'", dir, t, dir, dir) == 0);
    test_rm_rf(dir);
}
