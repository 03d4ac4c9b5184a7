/* tformer: Tokenizers: characters, sub-word BPE, GPT-2 byte-level BPE, BERT WordPiece, SentencePiece. */
#ifndef TFORMER_TOKENIZER_H
#define TFORMER_TOKENIZER_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- tokenizers */

typedef enum {
    TF_TOKENIZER_CHAR,      /* one id per character of a fixed alphabet (or per byte) */
    TF_TOKENIZER_BPE,       /* sub-word BPE of the lecture decks: characters + word-end marker */
    TF_TOKENIZER_BYTE_BPE,  /* GPT-2 byte-level BPE */
    TF_TOKENIZER_WORDPIECE, /* BERT WordPiece */
    TF_TOKENIZER_SPM        /* SentencePiece unigram model (.spm, .model), alone or as a Marian side with vocab.json */
} tf_tokenizer_kind;

/* A growable id list; zero-initialise, free with tf_ids_free. */
typedef struct {
    int32_t *v;
    size_t n, cap;
} tf_ids;
TF_API int tf_ids_push(tf_ids *ids, int32_t id);
TF_API void tf_ids_free(tf_ids *ids);

typedef struct tf_tokenizer tf_tokenizer;

/* Load from a folder, recognising its files: tokenizer.json (Hugging Face's
 * single-file format: WordPiece + BertNormalizer + BertPreTokenizer, or BPE +
 * ByteLevel; other components are refused with an error naming them), with
 * tokenizer_config.json and special_tokens_map.json beside it when present;
 * encoder.json + vocab.bpe (OpenAI) or vocab.json + merges.txt (Hugging Face)
 * -> byte-level BPE; vocab.txt -> WordPiece; tokenizer.tformer.json -> what
 * it names; source.spm + vocab.json (a Hugging Face Marian folder) -> the
 * source side of MarianTokenizer. A file path ending in vocab.txt is a
 * WordPiece vocabulary, one ending in tokenizer.json a Hugging Face
 * tokenizer, one ending in .spm or .model a SentencePiece unigram model
 * (sentencepiece's ids; source.spm / target.spm with vocab.json beside them:
 * that side of MarianTokenizer, model ids). "char" alone is the 256-byte
 * tokenizer (id = byte value). See docs/tokenizers.md. */
TF_API tf_tokenizer *tf_tokenizer_load(const char *dir);
TF_API void tf_tokenizer_free(tf_tokenizer *t);
TF_API tf_tokenizer_kind tf_tokenizer_kind_of(const tf_tokenizer *t);
TF_API int32_t tf_tokenizer_vocab_size(const tf_tokenizer *t);
/* Id of a vocabulary entry written as in the vocabulary file, or -1. */
TF_API int32_t tf_tokenizer_token_id(const tf_tokenizer *t, const char *token);
/* model_max_length from tokenizer_config.json; 0 when unknown (absent, or
 * transformers' "very large" placeholder, any value >= 1e12). */
TF_API int64_t tf_tokenizer_max_length(const tf_tokenizer *t);
/* The file it was read from, as found ("run/tokenizer.json", "run/vocab.json + merges.txt",
 * "char (the 256 bytes)"): what a verb says it used. Valid while t lives. */
TF_API const char *tf_tokenizer_source(const tf_tokenizer *t);
/* The id of a special token by role: "cls", "sep", "pad", "mask", "unk",
 * "bos", "eos" -- from tokenizer_config.json / special_tokens_map.json (strings
 * or {"content": ...}), else tokenizer.json's BertProcessing, else the usual
 * names ([CLS] [SEP] [PAD] [MASK] [UNK] or <unk>, <|endoftext|> for bos and
 * eos); -1 when absent or the role is unknown. */
TF_API int32_t tf_tokenizer_special_id(const tf_tokenizer *t, const char *role);
/* Append the ids of text (any bytes; see docs/tokenizers.md for invalid UTF-8). Thread-safe (one
 * encoding at a time per tokenizer). */
TF_API int tf_tokenizer_encode(tf_tokenizer *t, const char *text, size_t len, tf_ids *out);
/* The text of ids, malloc'ed and NUL-terminated; an id out of range is an error. */
TF_API int tf_tokenizer_decode(const tf_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len);
/* For reading text in pieces (tformer encode on standard input): the last offset b <= len at which text can be
 * cut so that the ids of text[0,b) followed by those of text[b,...) are the ids of the whole, whatever follows
 * len; 0 when there is none in text. Cuts fall before a line that starts with an ASCII letter or digit; never in a
 * SentencePiece tokenizer (its normaliser joins and strips whitespace, adds a prefix space) or a byte-level BPE that
 * adds a prefix space. */
TF_API size_t tf_tokenizer_encode_cut(const tf_tokenizer *t, const char *text, size_t len);
/* 1 when ids can be decoded in pieces: the text of a ++ b is the text of a followed by what the text of
 * (a's last id ++ b) adds to the text of a's last id (characters, BPE, byte-level BPE, WordPiece); 0 when
 * decoding sees the whole (SentencePiece strips and joins). */
TF_API int tf_tokenizer_decode_concatenates(const tf_tokenizer *t);
/* BERT inputs: [CLS] a [SEP] (b [SEP]) with token type ids 0 / 1, truncated
 * (longest first, as Hugging Face's fast tokenizers: the shorter stays whole when
 * the longer can take the rest, else each keeps half the room and the longer one
 * the odd id) to max_len ids when max_len > 0. WordPiece, or a
 * tokenizer.json whose post_processor is RobertaProcessing: then RoBERTa's
 * <s> a </s> (</s> b </s>) with token type ids all 0. The cls and sep tokens
 * are those of tf_tokenizer_special_id. */
TF_API int tf_tokenizer_encode_pair(tf_tokenizer *t, const char *a, size_t la, const char *b, size_t lb,
                             size_t max_len, tf_ids *ids, tf_ids *type_ids);

typedef struct {
    tf_tokenizer_kind kind; /* BPE, BYTE_BPE or WORDPIECE (CHAR: the corpus' characters) */
    int32_t vocab_size;
    int64_t min_frequency;  /* merges need at least this count (default 0: any) */
} tf_tokenizer_train_opts;

/* Learn a vocabulary from text files and write it to out_dir (created if
 * missing) in the format tf_tokenizer_load reads back. */
TF_API int tf_tokenizer_train(const tf_tokenizer_train_opts *o, const char *const *files, int n_files,
                       const char *out_dir);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_TOKENIZER_H */
