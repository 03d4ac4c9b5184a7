"""The fixture of serve's text endpoints (tests/test_serve_text.c): a tiny
BertForSequenceClassification (random weights, 3 named labels) over the
WordPiece vocabulary of tests/fixtures_distilbert_st/tiny_distilbert_st, and
transformers' answers for a few texts: the softmax probabilities of the
classifier on each text alone (the tokenizer's [CLS] text [SEP], truncated to
max_position_embeddings), and the attention probabilities of every layer and
head (output_attentions) on one text.

    python3 tests/ref/gen_serve_textcls_fixture.py   (written with torch 1.13, transformers 4.36.2)
"""
import json
import os
import shutil

import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "fixtures_distilbert_st", "tiny_distilbert_st")
OUT = os.path.join(HERE, "..", "fixtures_serve_textcls", "tiny_bert_cls")
TEXTS = ["the cat sat on the mat", "a dog ran!", "what a day, it was, it was", "x"]

torch.manual_seed(5)
os.makedirs(OUT, exist_ok=True)
for f in ["vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]:
    shutil.copy(os.path.join(SRC, f), os.path.join(OUT, f))
tok = BertTokenizerFast.from_pretrained(OUT)
cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=24, max_position_embeddings=12, hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0, num_labels=3,
                 id2label={0: "negative", 1: "neutral", 2: "positive"},
                 label2id={"negative": 0, "neutral": 1, "positive": 2})
cfg._attn_implementation = "eager"
model = BertForSequenceClassification(cfg).eval()
with torch.no_grad():  # a livelier classifier than the 0.02 init
    for p in model.parameters():
        p.mul_(8.0)
model.save_pretrained(OUT, safe_serialization=True)

expected = {"texts": [], "attention": None}
with torch.no_grad():
    for t in TEXTS:
        enc = tok(t, truncation=True, max_length=cfg.max_position_embeddings, return_tensors="pt")
        out = model(**enc, output_attentions=True)
        probs = torch.softmax(out.logits[0].double(), -1).tolist()
        expected["texts"].append({"text": t, "ids": enc["input_ids"][0].tolist(), "probs": probs})
        if t == TEXTS[0]:
            expected["attention"] = {"text": t, "layers": [a[0].tolist() for a in out.attentions]}
with open(os.path.join(OUT, "expected.json"), "w") as f:
    json.dump(expected, f)
print("wrote", OUT)
