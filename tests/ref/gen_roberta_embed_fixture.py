#!/usr/bin/env python3
"""A tiny RoBERTa sentence-transformers folder and its answers, for `tformer embed`
and the tokenizer.json reader (tests/test_roberta.c, roberta_embed_*).

    build/hfvenv/bin/python tests/ref/gen_roberta_embed_fixture.py --out tests/fixtures_roberta_st

writes OUT/tiny_roberta_st: what SentenceTransformer.save() writes for a
RobertaModel (random weights, 2 layers, width 16) under mean pooling and
Normalize, max_seq_length 16, with a byte-level BPE tokenizer learned here
from the text below (the `tokenizers` library, 320 tokens with RoBERTa's
<s> <pad> </s> <unk> <mask> at 0-4) and saved as RobertaTokenizerFast saves it
(tokenizer.json: ByteLevel pre-tokenizer, RobertaProcessing post-processor);
then answers.json: for each text the ids transformers' tokenizer gives
(tok(text, truncation=True, max_length=16)), for pairs tok(a, b) (and cut to
max_length 10), and embeddings.safetensors: SentenceTransformer.encode() of the
texts, computed in float64 from the float32 weights and rounded once.

Needs sentence-transformers and tokenizers (build/hfvenv: torch 1.13, transformers 4.36).
"""
import os
import shutil

from tokenizers import ByteLevelBPETokenizer
from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

import st_fixture

CORPUS = """The cat sat on the mat. A dog ran in the park, and the children played football.
Two men are playing guitar on a stage while a woman sings. Don't stop! I'll be there; you're late.
A group of people stand in front of an old building. 12 boats sail across the lake at 3:45 pm.
Café, naïve, über — les enfants jouent. 日本語のテキスト。 Emoji: 🙂 🚲.
   Several   spaces   and\ttabs. The quick brown fox jumps over the lazy dog.
""" * 3

TEXTS = [
    "The cat sat on the mat.",
    "A dog ran in the park, and the children played football.",
    " leading space and trailing space ",
    "Several   spaces   between\twords",
    "Don't stop! I'll be there; you're late.",
    "Café naïve über — 日本語 🙂🚲",
    "unseen words: xylophone quizzical zephyr",
    "a <mask> in the text, and </s> too",
    "",
    "12 boats sail across the lake at 3:45 pm, then 1000000 more boats sail across the lake and the sea",
    "A",
]
PAIRS = [("The cat sat on the mat.", "A dog ran in the park."),
         ("Two men are playing guitar", "a woman sings"),
         ("Several   spaces", " and a leading one")]
PAIR_CUT = [("The quick brown fox jumps over the lazy dog", "Two men are playing guitar on a stage", 10)]
MAX_LEN = 16
# RobertaConfig's settings but vocab_size (gen_xlmr_embed_fixture.py's too)
CONFIG = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
              max_position_embeddings=MAX_LEN + 2, type_vocab_size=1, hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, layer_norm_eps=1e-5)


def main():
    _, d = st_fixture.out_folder("tiny_roberta_st")
    tmp = st_fixture.learn(ByteLevelBPETokenizer(add_prefix_space=False), CORPUS, 320,
                           ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok = RobertaTokenizerFast(os.path.join(tmp, "vocab.json"), os.path.join(tmp, "merges.txt"),
                               model_max_length=MAX_LEN)
    model = st_fixture.random_model("tiny_roberta_st", RobertaModel, RobertaConfig(vocab_size=len(tok), **CONFIG), 0.3)
    st_fixture.save_folder(d, model, tok, MAX_LEN, normalize=True, drop=("vocab.json", "merges.txt"))
    shutil.rmtree(tmp)  # after the tokenizer is saved: its files are there
    pairs = lambda tok: {"pairs": [{"a": x, "b": y, "ids": tok(x, y)["input_ids"]} for x, y in PAIRS] +
                         [{"a": x, "b": y, "max_len": n, "ids": tok(x, y, truncation=True, max_length=n)["input_ids"]}
                          for x, y, n in PAIR_CUT]}
    tok = st_fixture.save_answers(d, TEXTS, MAX_LEN, pairs)
    print(f"wrote {d}: {len(tok)} tokens, {len(TEXTS)} texts")


if __name__ == "__main__":
    main()
