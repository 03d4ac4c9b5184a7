#!/usr/bin/env python3
"""tformer's SentencePiece tokenizers against sentencepiece on whole corpora.

    build/hfvenv/bin/python tests/ref/spm_ref.py check build/tformer

For each model of tests/fixtures_spm: every file of Multi30k (train, val,
test_2016_flickr; English and German) encoded as one text by `tformer
encode --tokenizer MODEL` and by sentencepiece's encode(); then the
validation sentences one line at a time; then decode(ids) of each line's ids
(`tformer decode`). Then the normalisation swept: every code point between
two letters ("x" + c + "y ", all of them joined into one text) and, for the
models with a precompiled charsmap, every key of its trie in five contexts
(alone, between letters, twice, between spaces, before a combining accent),
again one text.

Then Marian: a folder of tests/fixtures_marian_spm's vocab.json and settings
with the fixture models as source.spm / target.spm, against transformers'
MarianTokenizer: every Multi30k file as one text through the source side
(`--tokenizer DIR`) and the target side (`--tokenizer DIR/target.spm`),
input_ids without the final </s>; the validation lines one at a time, their
target ids decoded by both (batch_decode(skip_special_tokens=True)).

Every id and every decoded text must be equal; the counts are printed.
"""
import gzip
import os
import struct
import subprocess
import sys

import shutil
import tempfile
import warnings

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "..", "shared", "data", "multi30k")
FIXTURES = os.path.join(HERE, "..", "fixtures_spm")
MODELS = ["en_nfkc.spm", "de_user.spm", "tiny_rules.spm", "tiny_raw.spm"]
FILES = [f"{s}.{l}.gz" for s in ("train", "val", "test_2016_flickr") for l in ("en", "de")]


def run(tformer, verb, model, data):
    r = subprocess.run([tformer, verb, "--tokenizer", model], input=data, capture_output=True)
    if r.returncode:
        sys.exit(f"tformer {verb} failed: {r.stderr.decode()}")
    return r.stdout


def charsmap_keys(model):
    """Every key of the precompiled charsmap's double array (darts-clone), as bytes."""
    import sentencepiece.sentencepiece_model_pb2 as pb
    m = pb.ModelProto()
    with open(model, "rb") as f:
        m.ParseFromString(f.read())
    blob = m.normalizer_spec.precompiled_charsmap
    if not blob:
        return []
    n = struct.unpack("<I", blob[:4])[0]
    units = struct.unpack("<%dI" % (n // 4), blob[4:4 + n])
    offset = lambda u: (u >> 10) << ((u & (1 << 9)) >> 6)
    keys, stack = [], [(offset(units[0]), b"")]
    while stack:
        s, k = stack.pop()
        for b in range(1, 256):
            p = s ^ b
            if (units[p] & ((1 << 31) | 0xFF)) != b:
                continue
            if (units[p] >> 8) & 1:
                keys.append(k + bytes([b]))
            stack.append((p ^ offset(units[p]), k + bytes([b])))
    return keys


def sweep(tformer, model, sp):
    """Every code point, and every charsmap key in five contexts, each joined into one text: ids compared."""
    cps = b"".join(b"x" + chr(c).encode() + b"y " for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000)
    keys = charsmap_keys(model)
    ctx = b"".join(k + b" a" + k + b"b " + k + k + b"  " + k + b"  " + k + b"\xcc\x81 " for k in keys)
    n, bad = 0, 0
    for text in (cps, ctx) if keys else (cps,):
        want = sp.encode(text)
        n += len(want)
        bad += [int(x) for x in run(tformer, "encode", model, text).split()] != want
    return n, len(keys), bad


def check_marian(tformer):
    from transformers import MarianTokenizer
    fx = os.path.join(HERE, "..", "fixtures_marian_spm")
    failed, n_ids, n_lines = 0, 0, 0
    with tempfile.TemporaryDirectory() as d:
        for f in ("vocab.json", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(os.path.join(fx, f), d)
        shutil.copy(os.path.join(FIXTURES, "en_nfkc.spm"), os.path.join(d, "source.spm"))
        shutil.copy(os.path.join(FIXTURES, "de_user.spm"), os.path.join(d, "target.spm"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = MarianTokenizer.from_pretrained(d)
        tgt = os.path.join(d, "target.spm")
        for f in FILES:
            with gzip.open(os.path.join(SHARED, f), "rb") as fh:
                data = fh.read()
            for side, want in ((d, tok(data.decode()).input_ids[:-1]), (tgt, tok(text_target=data.decode()).input_ids[:-1])):
                got = [int(x) for x in run(tformer, "encode", side, data).split()]
                n_ids += len(want)
                if got != want:
                    failed += 1
                    print(f"Marian {side} {f}: ids differ")
        for f in ("val.en.gz", "val.de.gz"):
            with gzip.open(os.path.join(SHARED, f), "rt", encoding="utf-8") as fh:
                for line in fh.read().split("\n"):
                    ids = tok(text_target=line).input_ids
                    got = [int(x) for x in run(tformer, "encode", tgt, line.encode()).split()]
                    text = run(tformer, "decode", tgt, " ".join(map(str, ids)).encode()).decode()
                    n_lines += 1
                    if got != ids[:-1] or text != tok.batch_decode([ids], skip_special_tokens=True)[0]:
                        failed += 1
                        print(f"Marian {f}: line {line[:60]!r} differs")
    print(f"Marian (MarianTokenizer, transformers {__import__('transformers').__version__}): {n_ids:,} ids of "
          f"{len(FILES)} whole files on both sides, {n_lines:,} lines one at a time (target ids and decoded text): "
          f"{'equal' if not failed else 'NOT equal'}")
    return failed


def check(tformer):
    failed = 0
    for name in MODELS:
        model = os.path.join(FIXTURES, name)
        sp = spm.SentencePieceProcessor(model_file=model)
        n_ids = 0
        for f in FILES:  # whole files
            with gzip.open(os.path.join(SHARED, f), "rb") as fh:
                data = fh.read()
            want = sp.encode(data)
            got = [int(x) for x in run(tformer, "encode", model, data).split()]
            n_ids += len(want)
            if got != want:
                failed += 1
                k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                print(f"{name} {f}: ids differ at {k} (got {len(got)}, sentencepiece {len(want)})")
        lines = 0
        for f in ("val.en.gz", "val.de.gz"):  # one line at a time, and back
            with gzip.open(os.path.join(SHARED, f), "rb") as fh:
                for line in fh.read().split(b"\n"):
                    ids = sp.encode(line)
                    got = [int(x) for x in run(tformer, "encode", model, line).split()]
                    text = run(tformer, "decode", model, " ".join(map(str, ids)).encode())
                    lines += 1
                    if got != ids or text != sp.decode(ids).encode():
                        failed += 1
                        print(f"{name} {f}: line {line[:60]!r} differs")
        n_sweep, n_keys, bad = sweep(tformer, model, sp)
        failed += bad
        print(f"{name}: {n_ids:,} ids of {len(FILES)} whole files, {lines:,} lines one at a time (ids and decoded "
              f"text), {n_sweep:,} ids of every code point and {n_keys:,} charsmap keys in context: "
              f"{'equal' if not failed else 'NOT equal'}")
    failed += check_marian(tformer)
    print(f"sentencepiece {spm.__version__}: {'all equal' if not failed else f'{failed} differences'}")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "check":
        sys.exit(__doc__)
    sys.exit(check(sys.argv[2]))
