#!/usr/bin/env python3
"""tformer's SentencePiece tokenizers against sentencepiece on whole corpora.

    build/hfvenv/bin/python tests/ref/spm_ref.py check build/tformer

For each model of tests/fixtures_spm: every file of Multi30k (train, val,
test_2016_flickr; English and German) encoded as one text by `tformer
encode --tokenizer MODEL` and by sentencepiece's encode(); then the
validation sentences one line at a time; then decode(ids) of each line's ids
(`tformer decode`). Every id and every decoded text must be equal; the counts
are printed.
"""
import gzip
import os
import subprocess
import sys

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
        print(f"{name}: {n_ids:,} ids of {len(FILES)} whole files and {lines:,} lines one at a time (ids and "
              f"decoded text) {'equal' if not failed else 'NOT equal'}")
    print(f"sentencepiece {spm.__version__}: {'all equal' if not failed else f'{failed} differences'}")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "check":
        sys.exit(__doc__)
    sys.exit(check(sys.argv[2]))
