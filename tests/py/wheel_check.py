"""make python-wheel-check: run by a venv that has only the wheel (and numpy) installed, from outside the
repository: `import tformer` must come from the venv's site-packages, and an embed of the committed
sentence-transformers fixture must give its reference embeddings (SentenceTransformer.encode(), to 1e-5).

    python wheel_check.py tests/fixtures_roberta_st/tiny_roberta_st
"""
import json
import os
import sys

import numpy as np

import tformer
from tformer import _safetensors


def main(folder):
    here = os.path.realpath(tformer.__file__)
    if not here.startswith(os.path.realpath(sys.prefix)):
        sys.exit(f"wheel check: tformer was imported from {here}, not from the venv {sys.prefix}")
    with open(os.path.join(folder, "answers.json"), encoding="utf-8") as f:
        texts = [t["text"] for t in json.load(f)["texts"]]
    want = _safetensors.load(os.path.join(folder, "embeddings.safetensors"))["embeddings"]
    got = tformer.load(folder).embed(texts)
    diff = float(np.abs(got - want).max())
    if got.shape != want.shape or diff > 1e-5:
        sys.exit(f"wheel check: embed gave {got.shape}, max |diff| {diff:.3g} against the reference")
    print(f"wheel check: tformer {tformer.__file__}: embed {got.shape} matches the reference (max |diff| {diff:.2g})")


if __name__ == "__main__":
    main(sys.argv[1])
