#!/usr/bin/env python3
"""A tiny XLM-RoBERTa sentence-transformers folder and its answers, for `tformer embed`
(tests/test_roberta.c, xlmr_embed_*), laid out as paraphrase-multilingual-* are.

    build/hfvenv/bin/python tests/ref/gen_xlmr_embed_fixture.py --out tests/fixtures_xlmr_st

writes OUT/tiny_xlmr_st: what SentenceTransformer.save() writes for an
XLMRobertaModel (random weights, 2 layers, width 16) under mean pooling, no
Normalize, max_seq_length 16, with the Unigram tokenizer of
tests/fixtures_unigram/xlmr_tiny (tiny_rules.spm as XLMRobertaTokenizerFast
saves it: Precompiled charsmap, Replace " {2,}", Metaspace, <s> A </s>;
122 pieces) saved again as XLMRobertaTokenizerFast saves it; then
answers.json: for each text the ids transformers' tokenizer gives
(tok(text, truncation=True, max_length=16)), and embeddings.safetensors:
SentenceTransformer.encode() of the texts, computed in float64 from the
float32 weights and rounded once.

Needs sentence-transformers (build/hfvenv: torch 1.13, transformers 4.36).
"""
import argparse
import json
import os
import shutil
import tempfile

import torch
from safetensors.torch import save_file
from sentence_transformers import SentenceTransformer, models
from transformers import AutoTokenizer, XLMRobertaConfig, XLMRobertaModel

import fixture_cli

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
MAX_LEN = 16


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    d = os.path.join(a.out, "tiny_xlmr_st")
    shutil.rmtree(d, ignore_errors=True)
    tmp = tempfile.mkdtemp()
    tok = AutoTokenizer.from_pretrained(TOKENIZER, model_max_length=MAX_LEN)
    seed = fixture_cli.case_seed("tiny_xlmr_st")
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    cfg = XLMRobertaConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=24, max_position_embeddings=MAX_LEN + 2, type_vocab_size=1,
                           hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, layer_norm_eps=1e-5)
    model = XLMRobertaModel(cfg).eval()
    fixture_cli.init_bert_like(model, g, 0.3)
    hf_dir = os.path.join(tmp, "hf")
    model.save_pretrained(hf_dir, safe_serialization=True)
    tok.save_pretrained(hf_dir)
    word = models.Transformer(hf_dir, max_seq_length=MAX_LEN)
    st = SentenceTransformer(modules=[word, models.Pooling(16, pooling_mode="mean")], device="cpu")
    st.save(d, safe_serialization=True)
    shutil.rmtree(tmp)
    for extra in ("README.md", "config_sentence_transformers.json", "sentencepiece.bpe.model"):
        if os.path.exists(os.path.join(d, extra)):
            os.remove(os.path.join(d, extra))  # tformer reads tokenizer.json
    st = SentenceTransformer(d, device="cpu").double()
    emb = torch.tensor(st.encode(TEXTS, batch_size=4, convert_to_numpy=True))
    save_file({"embeddings": emb.float().contiguous()}, os.path.join(d, "embeddings.safetensors"))
    tok = st.tokenizer
    answers = {"texts": [{"text": t, "ids": tok(t, truncation=True, max_length=MAX_LEN)["input_ids"]} for t in TEXTS]}
    with open(os.path.join(d, "answers.json"), "w", encoding="utf-8") as f:
        json.dump(answers, f, ensure_ascii=False, indent=1)
    print(f"wrote {d}: {type(tok).__name__}, {len(tok)} tokens, {len(TEXTS)} texts")


if __name__ == "__main__":
    main()
