/* The tokenizer front: id lists, loading a folder by the files it holds
 * (tokenizer.json: hf_json.c), special-token roles, dispatch to each kind,
 * and the character tokenizer. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "spm.h"

int tf_ids_push(tf_ids *ids, int32_t id) {
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 256;
        int32_t *v = realloc(ids->v, cap * sizeof *v);
        if (!v) return tf_set_error("tokenizer: out of memory");
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return 0;
}

void tf_ids_free(tf_ids *ids) {
    free(ids->v);
    memset(ids, 0, sizeof *ids);
}

/* Present and not a folder (a FIFO or device in its place is then refused by
 * its reader, naming it, rather than taken for a missing file). */
static int file_exists(const char *dir, const char *name, char *path, size_t n) {
    struct stat st;
    if (tf_path_join(path, n, dir, name)) return 0; /* a name too long for any folder: absent */
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

/* tokenizer.tformer.json: {"type": "bpe" | "char" | ...} written by tf_tokenizer_train. */
static int declared_kind(const char *path, tf_tokenizer_kind *kind) {
    cJSON *root = tf_json_read(path);
    if (!root) return -1;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "type");
    static const char *const names[] = {"char", "bpe", "byte-bpe", "wordpiece"};
    int k = 0;
    while (k < 4 && !(cJSON_IsString(t) && !strcmp(t->valuestring, names[k]))) k++;
    cJSON_Delete(root);
    if (k == 4) return tf_set_error("%s: \"type\" must be one of char, bpe, byte-bpe, wordpiece", path);
    *kind = (tf_tokenizer_kind)k;
    return 0;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

const char *const tf_role_names[TF_N_ROLES] = {"cls", "sep", "pad", "mask", "unk", "bos", "eos"};

/* Roles no settings file gave: the usual token names where present. */
static void default_roles(tf_tokenizer *t) {
    static const char *const names[TF_N_ROLES][2] = {{"[CLS]", NULL}, {"[SEP]", NULL}, {"[PAD]", NULL},
                                                     {"[MASK]", NULL}, {"[UNK]", "<unk>"}, {"<|endoftext|>", NULL},
                                                     {"<|endoftext|>", NULL}};
    if (t->kind == TF_TOKENIZER_CHAR) return;
    for (int r = 0; r < TF_N_ROLES; r++)
        for (int k = 0; k < 2 && t->role[r] < 0 && names[r][k]; k++) t->role[r] = t->vt->token_id(t->impl, names[r][k]);
}

/* A file named directly: a WordPiece *vocab.txt, a Hugging Face *tokenizer.json, a SentencePiece *.spm / *.model. */
static int load_file(tf_tokenizer *t, const char *path) {
    if (ends_with(path, "tokenizer.json")) return tf_hf_tokenizer_load(t, path);
    if (ends_with(path, ".spm") || ends_with(path, ".model")) return tf_spm_tokenizer_load(t, path);
    if (!ends_with(path, "vocab.txt"))
        return tf_set_error("%s: a file; give the tokenizer's folder (or a WordPiece *vocab.txt, a *tokenizer.json, a "
                            "SentencePiece *.spm or *.model)", path);
    t->kind = TF_TOKENIZER_WORDPIECE, t->vt = &tf_wordpiece_vt, t->impl = tf_wordpiece_load(path);
    return t->impl ? 0 : -1;
}

/* Stale files never win: a folder holding two tokenizers is an error naming
 * both. tformer's declaration (tokenizer.tformer.json) names one kind; the
 * files of another kind beside it are another tokenizer. Without it,
 * tokenizer.json is Hugging Face's whole tokenizer and the slow files beside
 * it are the same one; without tokenizer.json, BPE files (vocab.json +
 * merges.txt, or encoder.json + vocab.bpe) and a WordPiece vocab.txt are two. */
static int two_tokenizers(const char *dir, int has_decl, tf_tokenizer_kind declared) {
    char p[4096];
    int hf = file_exists(dir, "tokenizer.json", p, sizeof p), wp = file_exists(dir, "vocab.txt", p, sizeof p);
    int bpe = file_exists(dir, "vocab.json", p, sizeof p) && file_exists(dir, "merges.txt", p, sizeof p);
    int gpt2 = file_exists(dir, "encoder.json", p, sizeof p) && file_exists(dir, "vocab.bpe", p, sizeof p);
    int chars = file_exists(dir, "chars.txt", p, sizeof p);
    static const char *const kind_names[] = {"char", "bpe", "byte-bpe", "wordpiece"};
    const char *one = NULL, *other = NULL;
    char mine[160];
    if (has_decl) {
        const char *files = declared == TF_TOKENIZER_CHAR ? "chars.txt"
                          : declared == TF_TOKENIZER_WORDPIECE ? "vocab.txt" : "vocab.json + merges.txt";
        snprintf(mine, sizeof mine, "%s (%s, as tokenizer.tformer.json declares)", files, kind_names[declared]);
        one = mine;
        if (hf) other = "tokenizer.json (Hugging Face's)";
        else if (declared != TF_TOKENIZER_WORDPIECE && wp) other = "vocab.txt (WordPiece)";
        else if (declared == TF_TOKENIZER_CHAR && (bpe || gpt2)) other = bpe ? "vocab.json + merges.txt (BPE)" : "encoder.json + vocab.bpe (BPE)";
        else if (declared == TF_TOKENIZER_WORDPIECE && (bpe || gpt2 || chars))
            other = bpe ? "vocab.json + merges.txt (BPE)" : gpt2 ? "encoder.json + vocab.bpe (BPE)" : "chars.txt (char)";
        else if ((declared == TF_TOKENIZER_BPE || declared == TF_TOKENIZER_BYTE_BPE) && chars) other = "chars.txt (char)";
        else if ((declared == TF_TOKENIZER_BPE || declared == TF_TOKENIZER_BYTE_BPE) && !bpe)
            return tf_set_error("%s: tokenizer.tformer.json declares a %s tokenizer but vocab.json + merges.txt are "
                                "missing", dir, kind_names[declared]);
    } else if (!hf && wp && (bpe || gpt2)) {
        one = bpe ? "vocab.json + merges.txt (BPE)" : "encoder.json + vocab.bpe (BPE)", other = "vocab.txt (WordPiece)";
    }
    if (!other) return 0;
    return tf_set_error("%s holds two tokenizers: %s and %s; which one counts is ambiguous (a file left by another "
                        "run or tokenizer-train?): remove one (tokenizer-train --overwrite, train --overwrite), or "
                        "name the file to use where a verb takes --tokenizer (DIR/vocab.txt, DIR/tokenizer.json)",
                        dir, one, other);
}

/* used: the file the tokenizer is read from ("DIR/vocab.json + merges.txt" for a pair), for tf_tokenizer_source. */
static int load_dir(tf_tokenizer *t, const char *dir, char *used, size_t cap) {
    char a[4096], b[4096], d[4096];
    tf_tokenizer_kind declared = TF_TOKENIZER_BYTE_BPE;
    int has_decl = strcmp(dir, "char") && file_exists(dir, "tokenizer.tformer.json", d, sizeof d);
    if (has_decl && declared_kind(d, &declared)) return -1;
    if (strcmp(dir, "char") && two_tokenizers(dir, has_decl, declared)) return -1;
    if (!strcmp(dir, "char") || (has_decl && declared == TF_TOKENIZER_CHAR)) {
        /* "char" alone means the 256 bytes; a folder declaring char holds its characters */
        int bytes = !strcmp(dir, "char");
        if (!bytes && !file_exists(dir, "chars.txt", a, sizeof a))
            return tf_set_error("%s: tokenizer.tformer.json declares a char tokenizer but chars.txt is missing", dir);
        t->kind = TF_TOKENIZER_CHAR, t->vt = &tf_chartok_vt;
        t->impl = tf_chartok_load(bytes ? NULL : a);
        snprintf(used, cap, "%s", bytes ? "char (the 256 bytes)" : a);
    } else if (has_decl && declared == TF_TOKENIZER_BPE && file_exists(dir, "vocab.json", a, sizeof a) &&
               file_exists(dir, "merges.txt", b, sizeof b)) {
        t->kind = TF_TOKENIZER_BPE, t->vt = &tf_bpe_vt, t->impl = tf_bpe_load(a, b);
        snprintf(used, cap, "%s + merges.txt", a);
    } else if (file_exists(dir, "tokenizer.json", a, sizeof a)) {
        snprintf(used, cap, "%s", a);
        return tf_hf_tokenizer_load(t, a);
    } else if (file_exists(dir, "source.spm", a, sizeof a) && file_exists(dir, "vocab.json", b, sizeof b)) {
        snprintf(used, cap, "%s", a);
        return tf_spm_tokenizer_load(t, a); /* a Marian folder: its source side */
    } else if (file_exists(dir, "encoder.json", a, sizeof a) && file_exists(dir, "vocab.bpe", b, sizeof b)) {
        t->kind = TF_TOKENIZER_BYTE_BPE, t->vt = &tf_bytebpe_vt, t->impl = tf_bytebpe_load(a, b, 1);
        snprintf(used, cap, "%s + vocab.bpe", a);
    } else if (file_exists(dir, "vocab.json", a, sizeof a) && file_exists(dir, "merges.txt", b, sizeof b)) {
        t->kind = TF_TOKENIZER_BYTE_BPE, t->vt = &tf_bytebpe_vt, t->impl = tf_bytebpe_load(a, b, 0);
        snprintf(used, cap, "%s + merges.txt", a);
    } else if (file_exists(dir, "vocab.txt", a, sizeof a)) {
        t->kind = TF_TOKENIZER_WORDPIECE, t->vt = &tf_wordpiece_vt, t->impl = tf_wordpiece_load(a);
        snprintf(used, cap, "%s", a);
    } else {
        return tf_set_error("%s: no tokenizer files (tokenizer.json, source.spm + vocab.json, encoder.json + vocab.bpe, "
                            "vocab.json + merges.txt, vocab.txt, or tokenizer.tformer.json)", dir);
    }
    return t->impl ? 0 : -1;
}

static void free_tokenizer(tf_tokenizer *t) {
    t->vt->free(t->impl);
    free(t->source);
    free(t);
}

tf_tokenizer *tf_tokenizer_load(const char *dir) {
    tf_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return tf_set_error("tokenizer: out of memory"), NULL;
    for (int r = 0; r < TF_N_ROLES; r++) t->role[r] = -1;
    struct stat st;
    int is_file = stat(dir, &st) == 0 && S_ISREG(st.st_mode);
    char used[8300];
    snprintf(used, sizeof used, "%s", dir);
    if (is_file ? load_file(t, dir) : load_dir(t, dir, used, sizeof used)) {
        if (t->impl) t->vt->free(t->impl);
        free(t);
        return NULL;
    }
    if (!(t->source = strdup(used))) {
        free_tokenizer(t);
        return tf_set_error("tokenizer: out of memory"), NULL;
    }
    default_roles(t); /* roles no settings file gave: the usual token names */
    if (pthread_mutex_init(&t->lock, NULL)) {
        free_tokenizer(t);
        return tf_set_error("tokenizer: cannot make its lock"), NULL;
    }
    return t;
}

void tf_tokenizer_free(tf_tokenizer *t) {
    if (!t) return;
    pthread_mutex_destroy(&t->lock);
    free_tokenizer(t);
}

tf_tokenizer_kind tf_tokenizer_kind_of(const tf_tokenizer *t) { return t->kind; }
int32_t tf_tokenizer_vocab_size(const tf_tokenizer *t) { return t->vt->vocab_size(t->impl); }
int32_t tf_tokenizer_token_id(const tf_tokenizer *t, const char *token) { return t->vt->token_id(t->impl, token); }
int64_t tf_tokenizer_max_length(const tf_tokenizer *t) { return t->max_length; }
const char *tf_tokenizer_source(const tf_tokenizer *t) { return t->source; }

int32_t tf_tokenizer_special_id(const tf_tokenizer *t, const char *role) {
    for (int r = 0; role && r < TF_N_ROLES; r++)
        if (!strcmp(role, tf_role_names[r])) return t->role[r];
    return -1;
}

/* Thread-safe: the tokenizer's lock is held while its model encodes (a BPE's word cache grows). */
int tf_tokenizer_encode(tf_tokenizer *t, const char *text, size_t len, tf_ids *out) {
    pthread_mutex_lock(&t->lock);
    int rc = t->vt->encode(t->impl, text, len, out);
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int tf_tokenizer_decode(const tf_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len) {
    tf_buf b = {0};
    if (t->vt->decode(t->impl, ids, n, &b) || tf_buf_put(&b, "", 0)) {
        free(b.p);
        return -1;
    }
    *text = b.p;
    if (len) *len = b.n;
    return 0;
}

size_t tf_tokenizer_encode_cut(const tf_tokenizer *t, const char *text, size_t len) {
    return t->vt->cut ? t->vt->cut(t->impl, text, len) : 0;
}

int tf_tokenizer_decode_concatenates(const tf_tokenizer *t) { return t->vt->decode_concat; }

/* ---------------------------------------------------------------- characters */

/* Either the 256 bytes (id = byte), or the characters (UTF-8) of chars.txt, one
 * per id in file order; text outside that alphabet is an error naming it. */
typedef struct {
    tf_strmap map; /* character bytes -> id */
    char (*ch)[4];
    uint8_t *ch_len;
    int32_t n;
    int bytes;
} chartok;

static void chartok_free(void *impl) {
    chartok *c = impl;
    if (!c) return;
    tf_strmap_free(&c->map);
    free(c->ch), free(c->ch_len), free(c);
}

void *tf_chartok_load(const char *chars_path) {
    chartok *c = calloc(1, sizeof *c);
    if (!c) return tf_set_error("tokenizer: out of memory"), NULL;
    if (!chars_path) {
        c->bytes = 1, c->n = 256;
        return c;
    }
    size_t len;
    char *text = tf_read_file(chars_path, &len);
    if (!text || tf_strmap_init(&c->map, 256) || !(c->ch = calloc(len + 1, sizeof *c->ch)) ||
        !(c->ch_len = calloc(len + 1, 1)))
        goto fail;
    for (size_t i = 0; i < len;) {
        int used;
        if (tf_utf8_decode((const unsigned char *)text + i, len - i, &used) < 0) {
            tf_set_error("%s: invalid UTF-8 at byte %zu", chars_path, i);
            goto fail;
        }
        if (tf_strmap_get(&c->map, text + i, (size_t)used) >= 0) {
            tf_set_error("%s: character at byte %zu repeats", chars_path, i);
            goto fail;
        }
        memcpy(c->ch[c->n], text + i, (size_t)used);
        c->ch_len[c->n] = (uint8_t)used;
        if (tf_strmap_put(&c->map, text + i, (size_t)used, c->n++)) goto fail;
        i += (size_t)used;
    }
    free(text);
    return c;
fail:
    free(text);
    chartok_free(c);
    return NULL;
}

static int chartok_encode(void *impl, const char *text, size_t len, tf_ids *out) {
    chartok *c = impl;
    for (size_t i = 0; i < len;) {
        int used = 1;
        int32_t id = (unsigned char)text[i];
        if (!c->bytes) {
            if (tf_utf8_decode((const unsigned char *)text + i, len - i, &used) < 0)
                return tf_set_error("encode: invalid UTF-8 at byte %zu", i);
            if ((id = tf_strmap_get(&c->map, text + i, (size_t)used)) < 0) {
                size_t line = 1;
                for (size_t k = 0; k < i; k++) line += text[k] == '\n';
                unsigned char b = (unsigned char)text[i];
                if (b < 0x20 || b == 0x7f) /* a control character (NUL...): its code point, never the raw byte */
                    return tf_set_error("encode: character U+%04X at byte %zu (line %zu) is not in the alphabet", b,
                                        i, line);
                return tf_set_error("encode: character '%.*s' at byte %zu (line %zu) is not in the alphabet", used,
                                    text + i, i, line);
            }
        }
        if (tf_ids_push(out, id)) return -1;
        i += (size_t)used;
    }
    return 0;
}

static int chartok_decode(const void *impl, const int32_t *ids, size_t n, tf_buf *out) {
    const chartok *c = impl;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= c->n)
            return tf_set_error("decode: id %d at position %zu outside the vocabulary [0,%d)", ids[i], i, c->n);
        char byte = (char)ids[i];
        if (tf_buf_put(out, c->bytes ? &byte : c->ch[ids[i]], c->bytes ? 1 : c->ch_len[ids[i]])) return -1;
    }
    return 0;
}

static int32_t chartok_token_id(const void *impl, const char *token) {
    const chartok *c = impl;
    size_t n = strlen(token);
    if (c->bytes) return n == 1 ? (unsigned char)token[0] : -1;
    return tf_strmap_get(&c->map, token, n);
}

static int32_t chartok_vocab_size(const void *impl) { return ((const chartok *)impl)->n; }

static size_t chartok_cut(const void *impl, const char *s, size_t n) { return tf_cut_before_line(s, n); }

const tf_tok_vtable tf_chartok_vt = {chartok_encode, chartok_decode, chartok_token_id, chartok_vocab_size, chartok_free,
                                     chartok_cut, 1};

/* ---------------------------------------------------------------- BERT pairs */

/* Longest-first truncation, as Hugging Face's tokenizers (the fast tokenizers, tokenizer.json) cut a pair to
 * room = max_len - extra ids: the shorter keeps all its ids when the longer can take the rest; otherwise each is
 * cut to room / 2, the longer (the second on a tie) keeping the odd id. */
static int truncate_pair(tf_ids *x, tf_ids *y, size_t extra, size_t max_len) {
    if (max_len && max_len < extra) return tf_set_error("encode_pair: max_len %zu leaves no room", max_len);
    size_t room = max_len - extra;
    if (!max_len || x->n + y->n <= room) return 0;
    tf_ids *s = x->n > y->n ? y : x, *l = s == x ? y : x;
    size_t ns = s->n, nl = ns > room ? ns : room - ns > ns ? room - ns : ns;
    if (ns + nl > room) ns = room / 2, nl = ns + room % 2;
    if (ns < s->n) s->n = ns;
    if (nl < l->n) l->n = nl;
    return 0;
}

/* A TemplateProcessing layout: the single one, or the pair one when b is given. */
static int encode_template(tf_tokenizer *t, const char *a, size_t la, const char *b, size_t lb, size_t max_len,
                           tf_ids *ids, tf_ids *type_ids) {
    const tf_template *tp = &t->template[b ? 1 : 0];
    tf_ids seq[2] = {{0}, {0}};
    size_t extra = 0;
    for (int i = 0; i < tp->n; i++) extra += tp->seq[i] < 0;
    int rc = tf_tokenizer_encode(t, a, la, &seq[0]) || (b && tf_tokenizer_encode(t, b, lb, &seq[1])) ||
             truncate_pair(&seq[0], &seq[1], extra, max_len);
    for (int i = 0; !rc && i < tp->n; i++) {
        if (tp->seq[i] < 0) {
            rc = tf_ids_push(ids, tp->id[i]) || tf_ids_push(type_ids, tp->type[i]);
            continue;
        }
        const tf_ids *s = &seq[tp->seq[i]];
        for (size_t k = 0; !rc && k < s->n; k++) rc = tf_ids_push(ids, s->v[k]) || tf_ids_push(type_ids, tp->type[i]);
    }
    tf_ids_free(&seq[0]);
    tf_ids_free(&seq[1]);
    return rc ? -1 : 0;
}

int tf_tokenizer_encode_pair(tf_tokenizer *t, const char *a, size_t la, const char *b, size_t lb,
                             size_t max_len, tf_ids *ids, tf_ids *type_ids) {
    if (t->has_template && t->kind != TF_TOKENIZER_WORDPIECE)
        return encode_template(t, a, la, b, lb, max_len, ids, type_ids);
    int roberta = t->roberta_pairs && t->kind != TF_TOKENIZER_WORDPIECE;
    if (t->kind != TF_TOKENIZER_WORDPIECE && !roberta)
        return tf_set_error("encode_pair: WordPiece tokenizers, or a tokenizer.json whose post_processor is "
                            "RobertaProcessing or TemplateProcessing, only");
    int32_t cls = t->role[TF_ROLE_CLS], sep = t->role[TF_ROLE_SEP];
    if (cls < 0 || sep < 0) return tf_set_error("encode_pair: the tokenizer has no %s token", cls < 0 ? "cls" : "sep");
    tf_ids x = {0}, y = {0};
    int rc = tf_tokenizer_encode(t, a, la, &x) || (b && tf_tokenizer_encode(t, b, lb, &y));
    size_t extra = b ? 3 + (size_t)roberta : 2; /* RoBERTa: </s></s> between the two */
    if (!rc) rc = truncate_pair(&x, &y, extra, max_len);
    for (int part = 0; !rc && part < (b ? 2 : 1); part++) {
        const tf_ids *s = part ? &y : &x;
        int type = roberta ? 0 : part; /* RoBERTa's token types are all 0 (type_vocab_size 1) */
        if (!part || roberta) rc = tf_ids_push(ids, part ? sep : cls) || tf_ids_push(type_ids, 0);
        for (size_t i = 0; !rc && i < s->n; i++) rc = tf_ids_push(ids, s->v[i]) || tf_ids_push(type_ids, type);
        if (!rc) rc = tf_ids_push(ids, sep) || tf_ids_push(type_ids, type);
    }
    tf_ids_free(&x);
    tf_ids_free(&y);
    return rc ? -1 : 0;
}
