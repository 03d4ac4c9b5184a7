#!/usr/bin/env python3
"""ONNX Runtime's sentence embeddings of a text file as .npy (mean pooling and
normalisation as sentence-transformers), in float or with quantize_dynamic's
int8 (the peer of bench/embed_bench.py), for bench/precision_agreement.py: how
close a peer's own int8 stays to float, beside tformer's (docs/performance.md,
"Reduced precision for inference: agreement"). Figures only: nothing is timed.

    python bench/ort_embed.py MODEL_DIR TEXTS OUT.npy [--int8]
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import embed_bench  # noqa: E402  (its export and quantisation, the same as the benchmark's)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    model, texts, out = argv[0], argv[1], argv[2]
    import onnxruntime as ort
    from transformers import AutoTokenizer
    lines = open(texts, encoding="utf-8").read().splitlines()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "minilm.onnx")
        embed_bench.export_onnx(model, path)
        if "--int8" in argv:
            path = embed_bench.quantize_onnx(path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        tok = AutoTokenizer.from_pretrained(model)
        emb = np.zeros((len(lines), 384), np.float32)
        for s in range(0, len(lines), 32):
            enc = tok(lines[s:s + 32], padding=True, truncation=True, max_length=256, return_tensors="np")
            h = sess.run(None, {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")})[0]
            m = enc["attention_mask"][..., None].astype(np.float32)
            e = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
            emb[s:s + 32] = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    np.save(out, emb)


if __name__ == "__main__":
    main(sys.argv[1:])
