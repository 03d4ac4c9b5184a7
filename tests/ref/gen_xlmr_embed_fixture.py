#!/usr/bin/env python3
"""A tiny XLM-RoBERTa sentence-transformers folder and its answers, for `tformer embed`
(tests/test_roberta.c, xlmr_embed_*), laid out as paraphrase-multilingual-* are.

    build/hfvenv/bin/python tests/ref/gen_xlmr_embed_fixture.py --out tests/fixtures_xlmr_st

writes OUT/tiny_xlmr_st: what SentenceTransformer.save() writes for an
XLMRobertaModel (random weights, 2 layers, width 16) under mean pooling, no
Normalize, max_seq_length 16 (RoBERTa's settings of gen_roberta_embed_fixture.py), with the Unigram tokenizer of
tests/fixtures_unigram/xlmr_tiny (tiny_rules.spm as XLMRobertaTokenizerFast
saves it: Precompiled charsmap, Replace " {2,}", Metaspace, <s> A </s>;
122 pieces) saved again as XLMRobertaTokenizerFast saves it; then
answers.json: for each text the ids transformers' tokenizer gives
(tok(text, truncation=True, max_length=16)), and embeddings.safetensors:
SentenceTransformer.encode() of the texts, computed in float64 from the
float32 weights and rounded once.

Needs sentence-transformers (build/hfvenv: torch 1.13, transformers 4.36).
"""
import os

from transformers import AutoTokenizer, XLMRobertaConfig, XLMRobertaModel

import st_fixture
from gen_roberta_embed_fixture import CONFIG, MAX_LEN

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER = os.path.join(HERE, "..", "fixtures_unigram", "xlmr_tiny")

TEXTS = [
    "A man in a blue shirt is standing on a ladder.",
    "Two young girls play with a black dog near the beach.",
    "  the black dog  ",
    "\u3000a red ball\u3000",
    "multiple   spaces    between     words",
    "Straße: ﬁne ①② the man walks",
    "unseen: 漢字 ♞ zebra",
    "a <mask> in the street, and </s> too",
    "",
    "A little boy in a red shirt jumps over the ball while a woman walks through the snow on the grass",
    "A",
]


def main():
    _, d = st_fixture.out_folder("tiny_xlmr_st")
    tok = AutoTokenizer.from_pretrained(TOKENIZER, model_max_length=MAX_LEN)
    cfg = XLMRobertaConfig(vocab_size=len(tok), **CONFIG)
    model = st_fixture.random_model("tiny_xlmr_st", XLMRobertaModel, cfg, 0.3)
    st_fixture.save_folder(d, model, tok, MAX_LEN, normalize=False, drop=("sentencepiece.bpe.model",))
    tok = st_fixture.save_answers(d, TEXTS, MAX_LEN)
    print(f"wrote {d}: {type(tok).__name__}, {len(tok)} tokens, {len(TEXTS)} texts")


if __name__ == "__main__":
    main()
