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
import embed_bench  # noqa: E402  (its export, quantisation and pooling: the benchmark's)


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
        emb = embed_bench.ort_embeddings(sess, AutoTokenizer.from_pretrained(model), lines, list(range(len(lines))))
    np.save(out, emb)


if __name__ == "__main__":
    main(sys.argv[1:])
