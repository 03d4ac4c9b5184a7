#!/usr/bin/env python3
"""Unigram tokenizer.json files against Hugging Face `tokenizers` and
transformers' XLM-RoBERTa tokenizer (make unigram-conformance).

    build/hfvenv/bin/python tests/ref/unigram_ref.py make DIR
        (transformers 4.x, tokenizers 0.15, sentencepiece) writes into DIR:
        m30k.model      a sentencepiece unigram model trained on Multi30k's
                        training text, English and German (8,000 pieces,
                        nmt_nfkc: its precompiled charsmap is XLM-R's kind)
        xlmr4/          it as XLMRobertaTokenizerFast(vocab_file=...) saves it
                        (Precompiled + Replace, Metaspace, TemplateProcessing)
        trained/        a Unigram learned by tokenizers' UnigramTrainer on the
                        same text (4,000 pieces, XLM-R's special tokens): NFKC,
                        Replace, Strip; WhitespaceSplit + Metaspace
        trained_bf/     it with byte_fallback and the 256 <0xXX> pieces, a
                        Metaspace that prepends to the first piece only and does
                        not split, and decoders Replace, ByteFallback, Fuse, Strip
    build/pt2venv/bin/python tests/ref/unigram_ref.py make5 DIR
        (transformers 5.x; sentencepiece and protobuf on PYTHONPATH) writes
        DIR/xlmr5: m30k.model converted by transformers 5's XLMRobertaConverter
    PYTHON tests/ref/unigram_ref.py check build/tformer DIR
        for every folder in DIR: every line of every Multi30k file (train, val,
        test_2016_flickr; en and de) one at a time, each file as one text,
        and hostile lines (every code point, in runs of 48; the Unicode stress
        text; invalid UTF-8, read by both as bytes.decode("utf-8", "replace");
        long runs of spaces, tabs and U+2581; the special tokens in the text)
        through `tformer encode --lines` and Tokenizer.from_file(...).encode(
        add_special_tokens=False), and, where the folder has its settings, the
        transformers tokenizer (AutoTokenizer); the validation lines' ids and
        the whole files' ids decoded by `tformer decode` and Tokenizer.decode.
        Prints the counts and exits non-zero on any difference.
"""
import glob
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "..", "shared", "data", "multi30k")
FILES = [f"{s}.{l}" for s in ("train", "val", "test_2016_flickr") for l in ("en", "de")]
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def read(name):
    with gzip.open(os.path.join(SHARED, name + ".gz"), "rt", encoding="utf-8") as f:
        return f.read()


def make(out):
    import sentencepiece as spm
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import XLMRobertaTokenizerFast
    os.makedirs(out, exist_ok=True)
    text = os.path.join(out, "train.txt")
    with open(text, "w", encoding="utf-8") as f:
        f.write(read("train.en") + read("train.de"))
    spm.set_random_generator_seed(1234)
    spm.SentencePieceTrainer.train(input=text, model_prefix=os.path.join(out, "m30k"), vocab_size=8000,
                                   model_type="unigram", num_threads=1, minloglevel=2)
    XLMRobertaTokenizerFast(vocab_file=os.path.join(out, "m30k.model")).save_pretrained(os.path.join(out, "xlmr4"))

    t = Tokenizer(models.Unigram())
    t.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " "),
                                         normalizers.Strip(left=False, right=True)])
    t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace()])
    t.decoder = decoders.Metaspace()
    t.train([text], trainers.UnigramTrainer(vocab_size=4000, special_tokens=SPECIALS, unk_token="<unk>",
                                            show_progress=False))
    t.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                     special_tokens=[("<s>", 0), ("</s>", 2)])
    os.makedirs(os.path.join(out, "trained"), exist_ok=True)
    t.save(os.path.join(out, "trained", "tokenizer.json"))
    j = json.loads(t.to_str())
    low = min(s for _, s in j["model"]["vocab"]) - 1.0
    have = {p for p, _ in j["model"]["vocab"]}
    j["model"]["vocab"] += [[f"<0x{b:02X}>", low] for b in range(256) if f"<0x{b:02X}>" not in have]
    j["model"]["byte_fallback"] = True
    j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True, "prepend_scheme": "first"}
    j["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    os.makedirs(os.path.join(out, "trained_bf"), exist_ok=True)
    Tokenizer.from_str(json.dumps(j)).save(os.path.join(out, "trained_bf", "tokenizer.json"))


def make5(out):
    from transformers.convert_slow_tokenizer import XLMRobertaConverter
    from transformers import XLMRobertaTokenizer

    class Slow:  # what the converter reads of a slow tokenizer
        vocab_file = os.path.join(out, "m30k.model")
        add_prefix_space = True
        legacy = True

        def convert_tokens_to_ids(self, t):
            return {"<s>": 0, "</s>": 2}[t]
    tok = XLMRobertaConverter(Slow()).converted()
    os.makedirs(os.path.join(out, "xlmr5"), exist_ok=True)
    tok.save(os.path.join(out, "xlmr5", "tokenizer.json"))
    XLMRobertaTokenizer(tokenizer_file=os.path.join(out, "xlmr5", "tokenizer.json")).save_pretrained(
        os.path.join(out, "xlmr5"))


def hostile_lines():
    """Lines as bytes (no newline inside)."""
    sys.path.insert(0, HERE)
    from tokenizer_ref import stress_text
    lines = [l.encode() for l in stress_text().split("\n")]
    cps = [c for c in range(1, 0x110000) if not (0xD800 <= c <= 0xDFFF) and c not in (10,)]
    for i in range(0, len(cps), 48):
        lines.append("".join(chr(c) for c in cps[i:i + 48]).encode())
    for c in range(0x20, 0x3000):  # each code point between letters, and after a space
        if c != 10:
            lines.append(("a" + chr(c) + "b " + chr(c) + "\u0301 x").encode())
    rng = random.Random(1234)
    lines += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))).replace(b"\n", b" ") for _ in range(3000)]
    lines += [b"\xe2\x96", b"a\xe2\x96\xe2\x96\x81b", b"\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80 x", b"\x80\xbf", b"\xff\xfe",
              b"\xf0\x9f\x98", b"ok \xf0\x9f\x98 ok", b"\xe0\x80\x80", b"\x00a\x00 b"]
    lines += [b" " * 5000, b"a" + b" " * 3000 + b"b", b"\t" * 500 + b"x", "\u2581" .encode() * 300,
              " \u2581 \u2581\u2581  x\u2581y ".encode(), b"   leading", b"trailing   ", b"", b" ", b"\t \t"]
    lines += [s.encode() for s in ["<s>", "a<s>b", " <mask> x", "x <mask>", "<unk><unk>", "</s></s> b", "<pad>",
                                   "Ein <mask> läuft.</s>", "  <s>  "]]
    return lines


def tformer_lines(tformer, tok, lines):
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(b"\n".join(lines) + b"\n")
    out = subprocess.run([tformer, "encode", "--tokenizer", tok, "--lines"], stdin=open(f.name, "rb"),
                         capture_output=True, check=True).stdout.decode().split("\n")
    os.unlink(f.name)
    return [[int(x) for x in l.split()] for l in out[:len(lines)]]


def tformer_text(tformer, tok, data):
    out = subprocess.run([tformer, "encode", "--tokenizer", tok], input=data, capture_output=True, check=True).stdout
    return [int(x) for x in out.split()]


def tformer_decode(tformer, tok, ids):
    return subprocess.run([tformer, "decode", "--tokenizer", tok], input=" ".join(map(str, ids)).encode(),
                          capture_output=True, check=True).stdout.decode("utf-8", "replace")


def check(tformer, d):
    from tokenizers import Tokenizer
    bad = 0
    for tok in sorted(glob.glob(os.path.join(d, "*", "tokenizer.json"))):
        folder = os.path.dirname(tok)
        ref = Tokenizer.from_file(tok)
        refs = [("tokenizers", lambda s: ref.encode(s, add_special_tokens=False).ids)]
        if os.path.exists(os.path.join(folder, "tokenizer_config.json")):
            from transformers import AutoTokenizer
            auto = AutoTokenizer.from_pretrained(folder)
            refs.append((type(auto).__name__, lambda s, a=auto: a(s, add_special_tokens=False)["input_ids"]))
        groups = [(name, [l.encode() for l in read(name).split("\n")[:-1]]) for name in FILES]
        groups.append(("hostile", hostile_lines()))
        for name, lines in groups:
            got = tformer_lines(tformer, folder, lines)
            texts = [l.decode("utf-8", "replace") for l in lines]
            for rname, enc in refs:
                n_bad = sum(g != enc(t) for g, t in zip(got, texts))
                bad += n_bad
                print(f"{os.path.basename(folder)} {name} lines vs {rname}: {len(lines)} lines, {sum(map(len, got))} ids, "
                      f"{n_bad} differ")
                for i in [i for i, (g, t) in enumerate(zip(got, texts)) if g != enc(t)][:8]:
                    print("   differs:", " ".join(f"{ord(c):04X}" for c in texts[i][:60]))
        for name in FILES + ["val-lines"]:
            if name == "val-lines":  # each validation line's ids decoded
                lines = read("val.de").split("\n")[:300]
                n_bad = sum(tformer_decode(tformer, folder, ref.encode(l).ids) !=
                            ref.decode(ref.encode(l).ids, skip_special_tokens=False) for l in lines)
                print(f"{os.path.basename(folder)} decode 300 val.de lines (with <s> </s>): {n_bad} differ")
                bad += n_bad
                continue
            data = read(name)
            got = tformer_text(tformer, folder, data.encode())
            want = ref.encode(data, add_special_tokens=False).ids
            back = tformer_decode(tformer, folder, got)
            ok = got == want and back == ref.decode(want, skip_special_tokens=False)
            bad += not ok
            print(f"{os.path.basename(folder)} {name} whole: {len(want)} ids, decode {'equal' if ok else 'DIFFERS'}")
    print("unigram-conformance:", "all equal" if not bad else f"{bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2])
    elif cmd == "make5":
        make5(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
