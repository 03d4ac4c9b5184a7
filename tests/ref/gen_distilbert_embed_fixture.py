#!/usr/bin/env python3
"""A tiny DistilBERT sentence-transformers folder and its answers, for `tformer embed`
(tests/test_distilbert.c, distilbert_embed_*), laid out as msmarco-distilbert-* are.

    build/hfvenv/bin/python tests/ref/gen_distilbert_embed_fixture.py --out tests/fixtures_distilbert_st

writes OUT/tiny_distilbert_st: what SentenceTransformer.save() writes for a
DistilBertModel (random weights, 2 layers, width 16, gelu) under mean pooling,
no Normalize, max_seq_length 16 (the model has 20 positions), with a lower-cased
WordPiece vocabulary learned here from the text below (the `tokenizers`
library, 300 tokens, BERT's [PAD] [UNK] [CLS] [SEP] [MASK] at 0-4) saved as
DistilBertTokenizerFast saves it (vocab.txt and tokenizer.json); then
answers.json: for each text the ids transformers' tokenizer gives
(tok(text, truncation=True, max_length=16)), and embeddings.safetensors:
SentenceTransformer.encode() of the texts, computed in float64 from the
float32 weights and rounded once.

And OUT/tiny_distilbert_mlm: a DistilBertForMaskedLM (random weights, 1 layer,
width 8, relu, the decoder tied) with the same tokenizer, and answers.json:
transformers' fill-mask pipeline (top_k 3) on FILL_TEXT, in float64.

Needs sentence-transformers and tokenizers (build/hfvenv: torch 1.13, transformers 4.36).
"""
import json
import os
import shutil

from tokenizers import BertWordPieceTokenizer
from transformers import DistilBertConfig, DistilBertModel, DistilBertTokenizerFast

import st_fixture

CORPUS = """The cat sat on the mat. A dog ran in the park, and the children played football.
Two men are playing guitar on a stage while a woman sings. Don't stop! I'll be there; you're late.
What is the capital of France? Paris is the capital and largest city of France.
How many people live in Berlin? Berlin has about 3.7 million inhabitants.
Café, naïve, über — les enfants jouent. The quick brown fox jumps over the lazy dog.
""" * 3

TEXTS = [
    "The cat sat on the mat.",
    "what is the capital of france?",
    "Paris is the CAPITAL and largest city of France.",
    "  leading space and trailing space  ",
    "Don't stop! I'll be there; you're late.",
    "Café naïve über — 日本語",
    "unseen words: xylophone quizzical zephyr",
    "a [MASK] in the text",
    "",
    "How many people live in Berlin? Berlin has about 3.7 million inhabitants, and the children played football",
    "A",
]
MAX_LEN = 16
FILL_TEXT = "the cat [MASK] on the mat."


def write_mlm(out, tok):
    """The fill-mask folder and the pipeline's answers."""
    from transformers import DistilBertForMaskedLM, pipeline
    d = os.path.join(out, "tiny_distilbert_mlm")
    shutil.rmtree(d, ignore_errors=True)
    cfg = DistilBertConfig(vocab_size=len(tok), dim=8, n_layers=1, n_heads=2, hidden_dim=12, activation="relu",
                           max_position_embeddings=MAX_LEN, dropout=0.0, attention_dropout=0.0)
    model = st_fixture.random_model("tiny_distilbert_mlm", DistilBertForMaskedLM, cfg, 0.5)
    model.save_pretrained(d, safe_serialization=True)
    tok.save_pretrained(d)
    model = model.double()
    fill = pipeline("fill-mask", model=model, tokenizer=tok, top_k=3)
    answers = [{"token": r["token"], "score": r["score"], "token_str": r["token_str"]} for r in fill(FILL_TEXT)]
    with open(os.path.join(d, "answers.json"), "w", encoding="utf-8") as f:
        json.dump({"text": FILL_TEXT, "top": answers}, f, ensure_ascii=False, indent=1)
    print(f"wrote {d}: {answers}")


def main():
    out, d = st_fixture.out_folder("tiny_distilbert_st")
    tmp = st_fixture.learn(BertWordPieceTokenizer(lowercase=True), CORPUS, 300,
                           ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok = DistilBertTokenizerFast(os.path.join(tmp, "vocab.txt"), do_lower_case=True, model_max_length=MAX_LEN)
    cfg = DistilBertConfig(vocab_size=len(tok), dim=16, n_layers=2, n_heads=2, hidden_dim=24,
                           max_position_embeddings=MAX_LEN + 4, dropout=0.0, attention_dropout=0.0)
    model = st_fixture.random_model("tiny_distilbert_st", DistilBertModel, cfg, 0.3)
    st_fixture.save_folder(d, model, tok, MAX_LEN, normalize=False)
    shutil.rmtree(tmp)  # after the tokenizer is saved: its files are there
    tok = st_fixture.save_answers(d, TEXTS, MAX_LEN)
    write_mlm(out, tok)
    print(f"wrote {d}: {len(tok)} tokens, {len(TEXTS)} texts; token_type_ids given: "
          f"{'token_type_ids' in tok('a')}")


if __name__ == "__main__":
    main()
