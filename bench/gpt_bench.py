#!/usr/bin/env python3
"""GPT training and generation throughput: tformer against PyTorch on the same
cores with the same thread count, measured in one run. Prints tokens/s and the
ratio tformer / PyTorch (only ratios mean anything on a noisy machine).

    python3 bench/gpt_bench.py build/bench_gpt [THREADS]

Training: nanoGPT's character-level configuration (4 layers, 4 heads, width
128, context 64, batch 12, vocabulary 65) and a GPT-2-small-shaped stack
(12 layers, 12 heads, width 768, context 64 and 128, batch 4, vocabulary 50257),
forward + backward + AdamW. PyTorch runs an equivalent GPT written here
(pre-LN, tanh GELU, tied embeddings, scaled_dot_product_attention when present).
Both also with bf16 matrix products: tformer's --precision bf16 against
torch.autocast("cpu", dtype=torch.bfloat16) (PyTorch 2.x; skipped where the
CPU has no AVX512-BF16).
Generation: greedy decoding of 200 tokens with a KV cache, against Hugging Face
transformers' generate() when transformers is importable.
"""
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import bench_record


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
            att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf")).softmax(-1)
            y = att @ v
        x = x + self.c_proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V, T, L, H, C):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.h = nn.ModuleList(Block(C, H) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def torch_train(L, H, C, T, B, V, steps, bf16=False):
    model = GPT(V, T, L, H, C)
    cast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    times = []
    for s in range(steps + 3):
        x, y = torch.randint(0, V, (B, T)), torch.randint(0, V, (B, T))
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with cast:
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if s >= 3:
            times.append(time.perf_counter() - t0)
    return B * T / statistics.median(times)


def hf_generate(L, H, C, T, V, new):
    from transformers import GPT2Config, GPT2LMHeadModel
    m = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_positions=T, n_embd=C, n_layer=L, n_head=H, bos_token_id=0,
                                   eos_token_id=None)).eval()
    ids = torch.tensor([[1]])
    times = []
    with torch.no_grad():
        for _ in range(5):
            t0 = time.perf_counter()
            m.generate(ids, max_new_tokens=new, do_sample=False, pad_token_id=0, eos_token_id=None)
            times.append(time.perf_counter() - t0)
    return new / statistics.median(times)


def train_flops_per_token(L, H, C, T, B, V):
    """Forward + backward (3x the forward) of the matrix products: 12 L C^2
    weights and the V x C head, plus causal attention's QK^T and PV (half of
    2 T C multiply-adds per layer)."""
    return 6 * (12 * L * C * C + V * C) + 6 * L * T * C


def main():
    binary = sys.argv[1]
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    torch.set_num_threads(threads)
    # PyTorch keeps subnormal floats by default; its GPT-2-sized backward makes
    # them, and on Intel cores each costs a microcode assist: 26 instead of ~130
    # tokens/s (Emerald Rapids, 2 threads). Flushed, as a tuned user would
    # (tformer's speed is the same either way, measured with FTZ/DAZ preloaded).
    flushed = torch.set_flush_denormal(True)
    env = {"TFORMER_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin"}
    if "OPENBLAS_CORETYPE" in os.environ:  # the same OpenBLAS kernels as PyTorch's in this process
        env["OPENBLAS_CORETYPE"] = os.environ["OPENBLAS_CORETYPE"]
    for k in ("TFORMER_BLAS", "TFORMER_MKL"):  # another CBLAS, or MKL by path, for tformer (docs/performance.md)
        if k in os.environ:
            env[k] = os.environ[k]
    run = lambda *a, b=binary: float(subprocess.run([b, *map(str, a)], capture_output=True, text=True, check=True,
                                                    env=env).stdout)
    peak_bin = os.path.join(os.path.dirname(binary), "bench_matmul")
    peak = run("peak", b=peak_bin) if os.path.exists(peak_bin) else float("nan")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"CPU: {cpu}, {os.cpu_count()} cores")
    print(f"GPT throughput, {threads} threads, PyTorch {torch.__version__}, "
          f"OPENBLAS_CORETYPE={env.get('OPENBLAS_CORETYPE', '(default)')}, peak {peak:.0f} GFLOP/s, "
          f"PyTorch's subnormals {'flushed' if flushed else 'kept (no FTZ on this CPU)'}")
    info = subprocess.run([binary, "info"], capture_output=True, text=True, env=env).stdout.strip()
    print(f"tformer's products: {info or '?'}")
    bf16 = "avx512_bf16" in open("/proc/cpuinfo").read() and torch.__version__ >= "2"
    print(f"{'workload':<52}{'tformer':>11}{'PyTorch':>11}{'ratio':>8}{'GFLOP/s':>9}{'of peak':>9}")
    for name, cfg, steps in [("train nanoGPT char (4L 4H 128C T64 B12 V65)", (4, 4, 128, 64, 12, 65), 20),
                             ("train GPT-2-small stack (12L 12H 768C T64 B4)", (12, 12, 768, 64, 4, 50257), 5),
                             ("train GPT-2-small stack (12L 12H 768C T128 B4)", (12, 12, 768, 128, 4, 50257), 5)]:
        ours = run("train", *cfg, steps)
        theirs = torch_train(*cfg, steps)
        gf = ours * train_flops_per_token(*cfg) / 1e9
        print(f"{name:<52}{ours:>9.0f}/s{theirs:>9.0f}/s{ours / theirs:>8.2f}{gf:>9.1f}{gf / peak:>9.2f}")
        bench_record.row("gpt", name, threads, ours, f"PyTorch {torch.__version__}", theirs, "tokens/s",
                         binary=binary, gflops=gf, of_peak=gf / peak, products=info)
        if bf16:
            env["TFORMER_PRECISION"] = "bf16"
            ours16 = run("train", *cfg, steps)
            del env["TFORMER_PRECISION"]
            theirs16 = torch_train(*cfg, steps, bf16=True)
            print(f"{'  bf16 (autocast beside)':<52}{ours16:>9.0f}/s{theirs16:>9.0f}/s{ours16 / theirs16:>8.2f}"
                  f"  (bf16 / f32: tformer {ours16 / ours:.2f}, PyTorch {theirs16 / theirs:.2f})")
            bench_record.row("gpt", name, threads, ours16, f"PyTorch {torch.__version__} autocast", theirs16,
                             "tokens/s", precision="bf16", binary=binary, products=info)
    try:
        gen_cfg = (4, 4, 128, 256, 65)
        ours = run("generate", *gen_cfg, 200)
        theirs = hf_generate(*gen_cfg, 200)
        print(f"{'generate 200 tokens greedy (4L 4H 128C V65)':<52}{ours:>9.0f}/s{theirs:>9.0f}/s{ours / theirs:>8.2f}")
        bench_record.row("gpt", "generate 200 tokens greedy (4L 4H 128C V65)", threads, ours, "transformers generate",
                         theirs, "tokens/s", binary=binary, products=info)
    except ImportError:
        print("generation: transformers not importable here; skipped")
    # GPT-2-124M's shape (random weights), greedy from a one-token prompt: float
    # weights against int8 ones (tf_params_quantize), both tformer.
    gen124 = (12, 12, 768, 1024, 50257)
    f32 = run("generate", *gen124, 64)
    env["TFORMER_QUANTIZE"] = "int8"
    i8 = run("generate", *gen124, 64)
    del env["TFORMER_QUANTIZE"]
    print(f"{'generate 64 tokens greedy GPT-2-124M: F32 | int8':<52}{f32:>9.1f}/s{i8:>9.1f}/s{i8 / f32:>8.2f}"
          "  (int8 / F32, both tformer)")
    bench_record.row("gpt", "generate 64 tokens greedy GPT-2-124M", threads, i8, "tformer fp32", f32, "tokens/s",
                     precision="int8", binary=binary, products=info)


if __name__ == "__main__":
    main()
