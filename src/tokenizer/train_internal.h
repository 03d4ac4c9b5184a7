/* Private: the BPE learner shared by the sub-word, byte-level and WordPiece trainers. */
#ifndef TF_TOKENIZER_TRAIN_INTERNAL_H
#define TF_TOKENIZER_TRAIN_INTERNAL_H

#include "tok_internal.h"

typedef struct {
    int32_t *sym; /* current symbols (token ids) */
    int32_t len;
    int64_t count; /* occurrences in the corpus */
} tr_word;

typedef struct {
    int32_t a, b;
    int64_t count;
    int32_t *where; /* words that may hold the pair */
    int32_t nw, capw;
    int64_t touched; /* merge step that last raised the count */
} tr_pair;

typedef struct {
    int64_t count;
    int32_t idx;
} tr_heap;

typedef struct {
    const char *cont_prefix; /* "##" for WordPiece, "" otherwise */
    tf_arena *tok_arena;
    tf_strmap tok_map;       /* token text -> id */
    const char **tok;
    uint32_t *tok_len;
    int32_t n_tok, cap_tok;
    tf_strmap word_map;      /* word text -> index */
    tr_word *words;
    size_t n_words, cap_words;
    tf_pairmap pairs;        /* (a,b) -> index into pair */
    tr_pair *pair;
    size_t n_pairs, cap_pairs;
    tr_heap *heap;
    size_t hn, hcap;
    tf_ids merges;           /* a0 b0 a1 b1 ... in merge order */
    tf_ids touched;          /* pairs raised during the current step */
    int64_t step;
} tf_trainer;

int tr_init(tf_trainer *t, const char *cont_prefix);
void tr_free(tf_trainer *t);
/* Id of a token, added when new. */
int tr_token(tf_trainer *t, const char *s, size_t n);
/* Count one occurrence of a word (its text is the key; symbols are set later). */
int tr_count_word(tf_trainer *t, const char *w, size_t n);
/* Merge until vocab_size tokens exist or no pair occurs min_frequency times. */
int tr_learn(tf_trainer *t, int32_t vocab_size, int64_t min_frequency);

#endif
