#!/usr/bin/env python3
"""Sentence embeddings per second: tformer against sentence-transformers
(PyTorch) and ONNX Runtime, same model (all-MiniLM-L6-v2), same texts, same
cores, at each thread count; the median of REPS runs, the model loaded once.

    python bench/embed_bench.py BENCH_EMBED MODEL_DIR TEXTS THREADS...

sentence-transformers: encode(batch_size=32, normalize_embeddings=True).
ONNX Runtime: the BertModel exported with torch.onnx (dynamic batch and
length), the fast tokenizer, mean pooling and normalisation in numpy, batches
of 32 sorted by length as sentence-transformers does. tformer: bench_embed
(tf_bert_embed, batches of 32 sorted by length). Needs build/hfvenv
(torch, transformers, sentence-transformers, onnxruntime)."""
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never ask the hub


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def median_time(fn, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]


def bench_st(model, lines, threads, reps):
    import torch
    from sentence_transformers import SentenceTransformer
    torch.set_num_threads(threads)
    st = SentenceTransformer(model, device="cpu")
    st.encode(lines[:64], batch_size=32)
    return median_time(lambda: st.encode(lines, batch_size=32, normalize_embeddings=True), reps)


def export_onnx(model, path):
    import torch
    from transformers import AutoModel
    m = AutoModel.from_pretrained(model).eval()
    x = torch.ones(2, 8, dtype=torch.long)
    torch.onnx.export(m, (x, x, torch.zeros_like(x)), path, input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state"], opset_version=14,
                      dynamic_axes={k: {0: "b", 1: "t"} for k in ("input_ids", "attention_mask", "token_type_ids",
                                                                  "last_hidden_state")})


def bench_ort(model, onnx_path, lines, threads, reps):
    import onnxruntime as ort
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model)
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    order = sorted(range(len(lines)), key=lambda i: -len(lines[i]))

    def run():
        out = np.zeros((len(lines), 384), np.float32)
        for s in range(0, len(order), 32):
            idx = order[s:s + 32]
            enc = tok([lines[i] for i in idx], padding=True, truncation=True, max_length=256, return_tensors="np")
            h = sess.run(None, {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")})[0]
            m = enc["attention_mask"][..., None].astype(np.float32)
            e = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
            out[idx] = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
        return out
    run()
    return median_time(run, reps)


def bench_tformer(binary, model, texts, threads, reps):
    env = dict(os.environ, TFORMER_THREADS=str(threads))
    out = subprocess.run([binary, model, texts, str(reps)], env=env, capture_output=True, text=True, check=True).stdout
    f = out.split()
    return float(f[f.index("median_s") + 1]), float(f[f.index("tokens_mean") + 1])


def main():
    binary, model, texts = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    threads = [int(t) for t in sys.argv[4:]] or [1, 2]
    reps = 5
    lines = open(texts, encoding="utf-8").read().splitlines()
    onnx_path = os.path.join(tempfile.mkdtemp(), "minilm.onnx")
    export_onnx(model, onnx_path)
    print(f"CPU: {cpu_model()}; {len(lines)} texts from {texts}; median of {reps} runs; sentences/s")
    print(f"{'threads':>7} {'tformer':>9} {'sent-tr':>9} {'onnxrt':>9} {'vs best':>8}")
    for th in threads:
        t_tf, mean_tokens = bench_tformer(binary, model, texts, th, reps)
        t_st = bench_st(model, lines, th, reps)
        t_ort = bench_ort(model, onnx_path, lines, th, reps)
        n = len(lines)
        best = min(t_st, t_ort)
        print(f"{th:>7} {n / t_tf:>9.1f} {n / t_st:>9.1f} {n / t_ort:>9.1f} {best / t_tf:>7.2f}x")
    print(f"(mean {mean_tokens:.1f} tokens per text with [CLS] and [SEP])")


if __name__ == "__main__":
    main()
