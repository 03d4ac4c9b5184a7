#!/usr/bin/env python3
"""SentencePiece unigram models and sentencepiece's answers, for tests/test_spm.c.

    build/hfvenv/bin/python tests/ref/gen_spm_fixtures.py --out tests/fixtures_spm

Trains (sentencepiece from pip, set_random_generator_seed(1234), one thread)
on the first lines of Multi30k's training set (../shared/data/multi30k; the
text is not copied into the fixtures):

    en_nfkc.spm     5,000 English lines, 800 pieces, every default
                    (nmt_nfkc normalisation, dummy prefix, extra whitespace removed)
    de_user.spm     5,000 German lines, 1,000 pieces, user-defined symbols
                    <sep> <2en> Mädchen ss, byte_fallback, normalisation
                    "identity", remove_extra_whitespaces false
    tiny_rules.spm  300 English lines, 120 pieces, a custom normalisation rule
                    table (a 1 KB charsmap: ß -> ss, ﬁ -> fi, ① -> 1, ①② -> 12!,
                    U+3000 -> space, U+200B deleted, e + U+0301 -> é), no dummy prefix
    tiny_raw.spm    tiny_rules.spm with its normalizer_spec edited: no dummy
                    prefix, extra whitespace kept, spaces not escaped

and writes expected.json: for each model, sentencepiece's ids, pieces and
decode(ids) (in hex where a NUL or invalid UTF-8 appears) for every sentence of SENTENCES (hard cases: accents, ß, ä,
full-width characters, repeated spaces, tabs, leading / trailing spaces,
emoji, characters no piece covers, an empty line, control and zero-width
characters, invalid UTF-8 given as hex, the user-defined symbols) and of
seeded random strings; and decode_pieces() for seeded random piece sequences
(pieces of the model, byte pieces, control and unknown pieces, strings that
are no piece); and for an 800 KB text (150,000 words drawn by a 64-bit LCG
from LONG_WORDS: long enough for sentencepiece to rebase its path scores) the
number of ids and the FNV-1a 64 hash of them written as decimals joined by spaces.
"""
import argparse
import gzip
import json
import os
import random
import tempfile

import sentencepiece as spm
import sentencepiece.sentencepiece_model_pb2 as pb

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "multi30k")

SENTENCES = [
    "A man in a blue shirt is standing on a ladder.",
    "Two dogs play in the snow near a red fence.",
    "Ein Mädchen in einem Karateanzug bricht einen Stock mit einem Tritt.",
    "Straße, Füße, Äpfel, Öl, Übermut und daß",
    "Café naïve résumé façade coöperate Ångström",
    "e\u0301 combining acute vs é, a\u0308 vs ä",
    "ＦＵＬＬ－ＷＩＤＴＨ ａｂｃ １２３ （ｘ） ｶﾀｶﾅ",
    "multiple   spaces    between     words",
    "tabs\tbetween\t\twords\tand\t",
    "   leading and trailing spaces   ",
    " ",
    "\t\t",
    "",
    "emoji 😀 🎉 👩‍👩‍👧 🇩🇪 👍🏽 after",
    "😀😀😀",
    "unknown: 漢字 かな Ελληνικά עברית ♞ ⚙",
    "ﬁne ﬂow ① ①② ½ ™ Ⅻ ㎏ x² ℃",
    "NBSP\u00a0here, zero\u200bwidth, soft\u00adhyphen, ideographic\u3000space, BOM\ufeffx",
    "control\x07bell, unit\x1fseparator, DEL\x7fchar, line\u2028separator",
    "newline\nin the middle\r\nand CR",
    "<unk> </s> <s> written in the text",
    "▁ already escaped ▁▁x▁",
    "<sep> Mädchen<sep>Mädchens <2en>ss Strasse",
    "Mädchen",
    "ssss sss",
    "12345 67,89 3.14 -42 1/2",
    "a",
    ".",
    "!!!???...",
    "Ａ\u3000Ｂ",
    "\u3000\u3000lead ideographic",
    "trailing ideographic\u3000",
    "\ufffd replacement character",
    "\U0001F600\U000E0001\uffff\U0010FFFF",
]
BYTES = [b"invalid \xff byte", b"\xc3 truncated", b"\xe2\x96 half mark", b"\xed\xa0\x80 surrogate", b"\xf4\x90\x80\x80 too big",
         b"ok \xc3\xa4 \x80\x80 stray", b"nul\x00byte"]

RULES = "DF\t73 73\nFB01\t66 69\n2460\t31\n2460 2461\t31 32 21\n3000\t20\n200B\t\n65 301\tE9\n"
POOL = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'\"-()<>/_")
        + [" ", "  ", "\t", "\n", "\u00a0", "\u3000", "\u200b", "\ufeff", "\x07", "\x00", "\x1f"]
        + [chr(c) for c in range(0xFF01, 0xFF5F, 9)] + list("äöüÄÖÜßéèçñøåœ") + ["e\u0301", "\u0308"]
        + list("😀🎉🇩🇪") + list("漢字かなΕλληνικάРусский") + list("ﬁﬂ①②½™Ⅻ㎏²") + ["▁", "<sep>", "<2en>", "Mädchen", "ss"]
        + ["the ", "man ", "dog ", "ein ", "Mann ", "Hund ", "spielt ", "im ", "Schnee"])


def train(out, seed):
    def lines(lang, n):
        with gzip.open(os.path.join(here, SHARED, f"train.{lang}.gz"), "rt", encoding="utf-8") as f:
            return [next(f).rstrip("\n") for _ in range(n)]
    spm.set_random_generator_seed(seed)
    common = dict(model_type="unigram", num_threads=1, minloglevel=2)
    out = os.path.abspath(out)
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        def run(name, lang, n, **kw):  # in tmp: the model keeps a bare model_prefix, files are reproducible
            os.chdir(tmp)
            try:
                spm.SentencePieceTrainer.train(sentence_iterator=iter(lines(lang, n)), model_prefix=name, **common, **kw)
            finally:
                os.chdir(here)
            os.replace(os.path.join(tmp, name + ".model"), os.path.join(out, name + ".spm"))
        run("en_nfkc", "en", 5000, vocab_size=800)
        run("de_user", "de", 5000, vocab_size=1000, user_defined_symbols=["<sep>", "<2en>", "Mädchen", "ss"],
            byte_fallback=True, normalization_rule_name="identity", remove_extra_whitespaces=False)
        with open(os.path.join(tmp, "rules.tsv"), "w") as f:
            f.write(RULES)
        run("tiny_rules", "en", 300, vocab_size=120, normalization_rule_tsv="rules.tsv", add_dummy_prefix=False)
    m = pb.ModelProto()
    with open(os.path.join(out, "tiny_rules.spm"), "rb") as f:
        m.ParseFromString(f.read())
    m.normalizer_spec.add_dummy_prefix = False
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = False
    with open(os.path.join(out, "tiny_raw.spm"), "wb") as f:
        f.write(m.SerializeToString())


def random_text(rng):
    return "".join(rng.choice(POOL) for _ in range(rng.randint(1, 14)))


def random_pieces(rng, sp):
    extra = ["▁", "▁▁", "▁x", "x▁", "zzq", "▁qqq", "<unk>", "<s>", "</s>", "<0x41>", "<0xC3>", "<0xA4>", "<0xFF>", "<0xE2>"]
    out = []
    for _ in range(rng.randint(0, 8)):
        r = rng.random()
        out.append(sp.id_to_piece(rng.randrange(sp.get_piece_size())) if r < 0.6 else
                   rng.choice(extra) if r < 0.8 else sp.id_to_piece(rng.randrange(min(40, sp.get_piece_size()))))
    return out


LONG_WORDS = ["A ", "man ", "in ", "a ", "blue ", "shirt ", "dogs ", "play ", "snow. ", "Ein ", "Mädchen ", "Mädchen",
              "Karateanzug ", "Straße, ", "Füße ", "ss", "sss ", "s", "<sep>", "Café ", "naïve ", "  ", "\t", "😀 ",
              "漢字 ", "ＦＵＬＬ ", "ﬁne ", "12345 ", "e\u0301", "the ", "Hund ", "spielt ", "im ", "Schnee. "]
LONG_N, LONG_SEED = 150000, 1  # about 800 KB: path scores pass 1e5, where sentencepiece rebases them


def long_text():
    x, out = LONG_SEED, []
    for _ in range(LONG_N):  # 64-bit LCG (Knuth's MMIX constants)
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        out.append(LONG_WORDS[(x >> 33) % len(LONG_WORDS)])
    return "".join(out)


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def expected(out, seed):
    rng = random.Random(seed)
    texts = [s.encode() for s in SENTENCES] + BYTES + [random_text(rng).encode() for _ in range(40)]
    models = {}
    for name in ["en_nfkc.spm", "de_user.spm", "tiny_rules.spm", "tiny_raw.spm"]:
        sp = spm.SentencePieceProcessor(model_file=os.path.join(out, name))
        enc = []
        for t in texts:  # a case with a NUL or invalid UTF-8 anywhere is written in hex
            ids = sp.encode(t)
            pieces, decoded = sp.encode(t, out_type=bytes), sp.decode(ids).encode()
            try:
                if b"\0" in t + decoded + b"".join(pieces):
                    raise UnicodeDecodeError("utf-8", t, 0, 1, "NUL")
                case = {"text": t.decode("utf-8"), "ids": ids, "pieces": [p.decode() for p in pieces],
                        "decoded": decoded.decode()}
            except UnicodeDecodeError:
                case = {"hex": t.hex(), "ids": ids, "pieces_hex": [p.hex() for p in pieces], "decoded_hex": decoded.hex()}
            enc.append(case)
        dec = [{"pieces": p, "text": sp.decode_pieces(p)} for p in (random_pieces(rng, sp) for _ in range(40))]
        ids = sp.encode(long_text())
        long_case = {"words": LONG_WORDS, "n_words": LONG_N, "seed": LONG_SEED, "n_ids": len(ids),
                     "fnv1a64": fnv1a64(" ".join(map(str, ids)))}
        models[name] = {"encode": enc, "decode": dec, "long": long_case}
    def line(x):
        return json.dumps(x, ensure_ascii=False)
    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as f:  # one case per line
        f.write('{"sentencepiece": %s, "models": {\n' % line(spm.__version__))
        for k, (name, m) in enumerate(models.items()):
            f.write('%s: {"encode": [\n%s\n], "decode": [\n%s\n],\n"long": %s}%s\n' % (
                line(name), ",\n".join(map(line, m["encode"])), ",\n".join(map(line, m["decode"])),
                line(m["long"]), "," if k + 1 < len(models) else ""))
        f.write("}}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures_spm")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    train(a.out, a.seed)
    expected(a.out, a.seed)


if __name__ == "__main__":
    main()
