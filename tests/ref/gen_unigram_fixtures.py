#!/usr/bin/env python3
"""Unigram tokenizer.json fixtures and their answers, for tests/test_unigram.c.

    build/hfvenv/bin/python tests/ref/gen_unigram_fixtures.py --out tests/fixtures_unigram

(transformers 4.36, tokenizers 0.15, sentencepiece 0.2, protobuf) writes:

    xlmr_tiny/   tests/fixtures_spm/tiny_rules.spm (120 pieces, a 7-rule
                 charsmap: ß -> ss, ﬁ -> fi, ① -> 1, ①② -> 12!, U+3000 -> space,
                 U+200B deleted, e + U+0301 -> é) as XLMRobertaTokenizerFast
                 saves it: Precompiled + Replace " {2,}", Metaspace,
                 TemplateProcessing <s> $A </s> (</s> $B </s>), the settings files
    trained_bf/  a Unigram learned by tokenizers' UnigramTrainer on the first
                 2,000 English and German lines of Multi30k (300 pieces, XLM-R's
                 special tokens) with NFKC, Replace, Strip; Metaspace prepending
                 to the first span only; byte_fallback with the 256 <0xXX>
                 pieces; decoders Replace, ByteFallback, Fuse, Strip
    expected.json  per folder: for each text (hex: invalid UTF-8 among them,
                 read by the references as bytes.decode("utf-8", "replace")) the
                 ids of Tokenizer.encode(add_special_tokens=False) and the text
                 Tokenizer.decode(ids) gives back (special tokens kept); for
                 xlmr_tiny also XLMRobertaTokenizerFast's input_ids of single
                 texts and pairs, whole and truncated (max_length).
"""
import argparse
import gzip
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def spm_texts():
    """gen_spm_fixtures.py's SENTENCES and BYTES (read from its source: importing it needs protobuf 5)."""
    import ast
    tree = ast.parse(open(os.path.join(HERE, "gen_spm_fixtures.py"), encoding="utf-8").read())
    found = {n.targets[0].id: ast.literal_eval(n.value) for n in tree.body
             if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") in ("SENTENCES", "BYTES")}
    return found["SENTENCES"], found["BYTES"]


SHARED = os.path.join(HERE, "..", "..", "..", "shared", "data", "multi30k")
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
EXTRA = [" <mask> läuft", "a<s>b</s>c", "<unk><unk> x", "ß ﬁ ①② \u3000x\u200by e\u0301 Ａ\u0301", " " * 40 + "x" + " " * 9,
         "\u2581\u2581 \u2581x", "\r\n\t", "x\u0085y"]
PAIRS = [("A man in a blue shirt.", "Ein Mann."), ("", "x"), ("Two dogs play in the snow near a red fence.", "ß ①②")]


def train_bf(out):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    lines = []
    for lang in ("en", "de"):
        with gzip.open(os.path.join(SHARED, f"train.{lang}.gz"), "rt", encoding="utf-8") as f:
            lines += [next(f).rstrip("\n") for _ in range(2000)]
    t = Tokenizer(models.Unigram())
    t.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " "),
                                         normalizers.Strip(left=False, right=True)])
    t.pre_tokenizer = pre_tokenizers.Metaspace()
    t.train_from_iterator(lines, trainers.UnigramTrainer(vocab_size=300, special_tokens=SPECIALS, unk_token="<unk>",
                                                         show_progress=False))
    t.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                     special_tokens=[("<s>", 0), ("</s>", 2)])
    j = json.loads(t.to_str())
    low = min(s for _, s in j["model"]["vocab"]) - 1.0
    have = {p for p, _ in j["model"]["vocab"]}
    j["model"]["vocab"] += [[f"<0x{b:02X}>", low] for b in range(256) if f"<0x{b:02X}>" not in have]
    j["model"]["byte_fallback"] = True
    j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True,
                          "prepend_scheme": "first"}
    j["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    os.makedirs(out, exist_ok=True)
    Tokenizer.from_str(json.dumps(j)).save(os.path.join(out, "tokenizer.json"))


def answers(folder, with_auto):
    from tokenizers import Tokenizer
    t = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    sentences, raw = spm_texts()
    texts = [s.encode() for s in sentences + EXTRA] + raw
    rows = []
    for b in texts:
        s = b.decode("utf-8", "replace")
        ids = t.encode(s, add_special_tokens=False).ids
        rows.append({"hex": b.hex(), "ids": ids, "decoded": t.decode(ids, skip_special_tokens=False),
                     "decoded_special": t.decode(t.encode(s).ids, skip_special_tokens=False)})
    out = {"texts": rows}
    if with_auto:
        from transformers import AutoTokenizer
        a = AutoTokenizer.from_pretrained(folder)
        out["auto"] = type(a).__name__
        out["singles"] = [{"hex": r["hex"], "ids": a(bytes.fromhex(r["hex"]).decode("utf-8", "replace"))["input_ids"]}
                          for r in rows]
        out["pairs"] = [{"a": x, "b": y, "max_length": m,
                         "ids": a(x, y, **({"truncation": True, "max_length": m} if m else {}))["input_ids"]}
                        for x, y in PAIRS for m in (0, 12)]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    from transformers import XLMRobertaTokenizerFast
    tiny = os.path.join(out, "xlmr_tiny")
    XLMRobertaTokenizerFast(vocab_file=os.path.join(HERE, "..", "fixtures_spm", "tiny_rules.spm")).save_pretrained(tiny)
    os.remove(os.path.join(tiny, "sentencepiece.bpe.model"))  # tformer reads tokenizer.json; keep the fixture small
    train_bf(os.path.join(out, "trained_bf"))
    exp = {"xlmr_tiny": answers(tiny, True), "trained_bf": answers(os.path.join(out, "trained_bf"), False)}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(exp, f, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
