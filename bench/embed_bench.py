#!/usr/bin/env python3
"""Sentence embeddings per second: tformer against sentence-transformers
(PyTorch) and ONNX Runtime, same model (all-MiniLM-L6-v2), same texts, same
cores, at each thread count. A shared machine's speed drifts over minutes, so
the contenders take turns: ROUNDS rounds of one process each (the median of
REPS runs, the model loaded once), and each one's median round is reported.

    python bench/embed_bench.py BENCH_EMBED BENCH_MATMUL MODEL_DIR TEXTS [--pt2 PYTHON]
        [--precision f32,bf16,int8] THREADS...

--precision (default f32): tformer in each precision listed (bench_embed under
TFORMER_PRECISION; docs/precision.md), each a row per peer; with int8, ONNX
Runtime's int8 too (onnxruntime.quantization.quantize_dynamic of the same
export: int8 weights, activations quantised per call) as a peer.

Every peer runs in a process of its own, started with its thread count (torch
and ONNX Runtime keep thread pools for the life of a process):
  sent-tr 1.13  sentence-transformers on this interpreter's torch (Debian's);
  sent-tr 2.x   the same on PyPI's PyTorch 2.x (--pt2: a python with torch 2
                and sentence-transformers; left out when not given);
  onnxrt        the BertModel exported with torch.onnx (dynamic batch and
                length), the fast tokenizer, mean pooling and normalisation
                in numpy, batches of 32 sorted by length;
  tformer       bench_embed (tf_bert_embed, batches of 32 sorted by length),
                which prints the thread count it ran on: checked here.
GFLOP/s counts the model's multiply-adds on the real tokens (2 per
multiply-add: the linear layers and the attention products); the fraction is
of bench_matmul's FMA-bound peak on the same threads, which bounds what any
fp32 implementation can reach. Needs build/hfvenv (torch, transformers,
sentence-transformers, onnxruntime)."""
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import bench_record

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never ask the hub
REPS = 3
ROUNDS = 3


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


def peer_st(model, lines, threads):
    import torch
    from sentence_transformers import SentenceTransformer
    torch.set_num_threads(threads)
    st = SentenceTransformer(model, device="cpu")
    st.encode(lines[:64], batch_size=32)
    return median_time(lambda: st.encode(lines, batch_size=32, normalize_embeddings=True), REPS)


def export_onnx(model, path):
    import torch
    from transformers import AutoModel
    m = AutoModel.from_pretrained(model).eval()
    x = torch.ones(2, 8, dtype=torch.long)
    torch.onnx.export(m, (x, x, torch.zeros_like(x)), path, input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state"], opset_version=14,
                      dynamic_axes={k: {0: "b", 1: "t"} for k in ("input_ids", "attention_mask", "token_type_ids",
                                                                  "last_hidden_state")})


def peer_ort(model, lines, threads, onnx_path):
    import numpy as np
    import onnxruntime as ort
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model)
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    lengths = [len(ids) for ids in tok(lines)["input_ids"]]
    order = sorted(range(len(lines)), key=lambda i: -lengths[i])

    def run():
        return ort_embeddings(sess, tok, lines, order)
    run()
    return median_time(run, REPS)


def ort_embeddings(sess, tok, lines, order):
    """The sentence embeddings (len(lines), 384) of an ONNX Runtime session: batches of 32 in
    `order`, mean pooling over the real tokens and L2 normalisation (sentence-transformers')."""
    import numpy as np
    out = np.zeros((len(lines), 384), np.float32)
    for s in range(0, len(order), 32):
        idx = order[s:s + 32]
        enc = tok([lines[i] for i in idx], padding=True, truncation=True, max_length=256, return_tensors="np")
        h = sess.run(None, {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")})[0]
        m = enc["attention_mask"][..., None].astype(np.float32)
        e = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        out[idx] = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    return out


def peer_main(argv):
    """--peer st|ort MODEL TEXTS THREADS [ONNX]: prints the median seconds."""
    kind, model, texts, threads = argv[0], argv[1], argv[2], int(argv[3])
    lines = open(texts, encoding="utf-8").read().splitlines()
    t = peer_st(model, lines, threads) if kind == "st" else peer_ort(model, lines, threads, argv[4])
    print(json.dumps({"median_s": t}))


def run_peer(python, kind, model, texts, threads, extra=()):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    out = subprocess.run([python, __file__, "--peer", kind, model, texts, str(threads), *extra], env=env,
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"embed_bench: {kind} on {python} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["median_s"]


def bench_tformer(binary, model, texts, threads, precision="f32"):
    env = dict(os.environ, TFORMER_THREADS=str(threads), TFORMER_PRECISION=precision)
    out = subprocess.run([binary, model, texts, str(REPS)], env=env, capture_output=True, text=True, check=True).stdout
    f = out.split()
    ran = int(f[f.index("threads") + 1])
    if ran != threads:
        sys.exit(f"embed_bench: bench_embed ran on {ran} threads, asked for {threads}")
    return float(f[f.index("median_s") + 1])


def model_flops(model, lines):
    """2 x multiply-adds of the encoder on each text's real tokens."""
    from transformers import AutoTokenizer
    cfg = json.load(open(os.path.join(model, "config.json")))
    d, ff, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    tok = AutoTokenizer.from_pretrained(model)
    total = 0
    for ids in tok(lines, truncation=True, max_length=256)["input_ids"]:
        n = len(ids)
        total += layers * (n * (4 * d * d + 2 * d * ff) + 2 * n * n * d)
    return 2.0 * total, sum(len(i) for i in tok(lines)["input_ids"]) / len(lines)


def peak(bench_matmul, threads):
    """The best of 3 (a peak: anything else running only lowers it)."""
    best = 0.0
    for _ in range(3):
        out = subprocess.run([bench_matmul, "peak"], env=dict(os.environ, TFORMER_THREADS=str(threads)),
                             capture_output=True, text=True, check=True).stdout
        best = max(best, float(out.split()[-1]) * 1e9)
    return best


def quantize_onnx(path):
    """ONNX Runtime's dynamic int8 of an export (weights int8, activations quantised per call)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    out = path.replace(".onnx", ".int8.onnx")
    quantize_dynamic(path, out, weight_type=QuantType.QInt8)
    return out


def option(args, name, default):
    """The value of `name VALUE` in args (removed from them), else default."""
    if name not in args:
        return default
    i = args.index(name)
    value = args[i + 1]
    del args[i:i + 2]
    return value


def main():
    args = sys.argv[1:]
    pt2 = option(args, "--pt2", None)
    precisions = option(args, "--precision", "f32").split(",")
    binary, bench_matmul, model, texts = args[0], args[1], os.path.abspath(args[2]), args[3]
    threads = [int(t) for t in args[4:]] or [1, 2]
    lines = open(texts, encoding="utf-8").read().splitlines()
    onnx_path = os.path.join(tempfile.mkdtemp(), "minilm.onnx")
    export_onnx(model, onnx_path)
    flops, mean_tokens = model_flops(model, lines)
    n = len(lines)
    print(f"CPU: {cpu_model()}; {n} texts from {texts} (mean {mean_tokens:.1f} tokens with [CLS] and [SEP], "
          f"{flops / 1e9:.0f} GFLOP); median of {ROUNDS} rounds of {REPS} runs, contenders taking turns")
    print("sentences/s, and GFLOP/s as a fraction of the FMA peak on those threads")
    peers = [("sent-tr 1.13", sys.executable, "st", ())] + ([("sent-tr 2.x", pt2, "st", ())] if pt2 else []) + \
            [("onnxrt", sys.executable, "ort", (onnx_path,))]
    if "int8" in precisions:
        peers.append(("onnxrt int8", sys.executable, "ort", (quantize_onnx(onnx_path),)))
    head = f"{'threads':>7} {'peak':>7}" + "".join(f" {'tformer ' + p:>15}" for p in precisions) + \
        "".join(f" {p[0]:>15}" for p in peers) + f" {'vs best':>8}"
    print(head)
    for th in threads:
        pk = peak(bench_matmul, th)
        rounds = [[bench_tformer(binary, model, texts, th, p) for p in precisions] +
                  [run_peer(py, kind, model, texts, th, extra) for _, py, kind, extra in peers] for _ in range(ROUNDS)]
        med = [sorted(r[i] for r in rounds)[ROUNDS // 2] for i in range(len(precisions) + len(peers))]
        t_mine, ts = med[:len(precisions)], med[len(precisions):]
        cell = lambda t: f"{n / t:7.1f} ({flops / t / pk:4.0%})"
        print(f"{th:>7} {pk / 1e9:7.1f}" + "".join(f" {cell(t):>15}" for t in t_mine + ts) +
              f" {min(ts) / min(t_mine):>7.2f}x", flush=True)
        for p, t_tf in zip(precisions, t_mine):
            for (name, *_), t in zip(peers, ts):
                bench_record.row("embed", f"MiniLM embeddings, {n} texts", th, n / t_tf, name, n / t, "sentences/s",
                                 precision="fp32" if p == "f32" else p, binary=binary, of_peak=flops / t_tf / pk,
                                 peer_of_peak=flops / t / pk)

if __name__ == "__main__":
    if sys.argv[1:2] == ["--peer"]:
        peer_main(sys.argv[2:])
    else:
        main()
