#!/usr/bin/env python3
"""Attention forward + backward: tformer's fused op against PyTorch on the same
threads (scaled_dot_product_attention where the installed PyTorch has it, else
softmax(Q K^T) V), B=4 H=8 d=64, causal, N = 256 ... 4096; then tformer's peak
memory for N up to 16384 (B=1 H=1), which must grow linearly.

    python3 bench/attention_bench.py build/bench_attention [THREADS]
"""
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F


def torch_attention(B, H, D, N, runs):
    times = []
    for _ in range(runs):
        q, k, v = (torch.randn(B, H, N, D, requires_grad=True) for _ in range(3))
        g = torch.randn(B, H, N, D)
        t0 = time.perf_counter()
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q @ k.transpose(-2, -1)) / math.sqrt(D)
            s = s.masked_fill(torch.triu(torch.ones(N, N, dtype=torch.bool), 1), float("-inf"))
            y = s.softmax(-1) @ v
        y.backward(g)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    binary, threads = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2
    torch.set_num_threads(threads)
    env = dict(os.environ, TFORMER_THREADS=str(threads))
    ours = lambda *a: [float(x) for x in subprocess.run([binary, *map(str, a)], capture_output=True, text=True,
                                                          check=True, env=env).stdout.split()]
    sdpa = "scaled_dot_product_attention" if hasattr(F, "scaled_dot_product_attention") else "softmax(QK^T)V"
    peak_bin = os.path.join(os.path.dirname(binary), "bench_matmul")
    peak = float(subprocess.run([peak_bin, "peak"], capture_output=True, text=True, check=True, env=env).stdout) \
        if os.path.exists(peak_bin) else float("nan")
    print(f"causal attention fwd+bwd, B=4 H=8 d=64, {threads} threads, PyTorch {torch.__version__} ({sdpa}), "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(default)')}, peak {peak:.0f} GFLOP/s")
    print(f"{'N':>6}{'tformer s':>12}{'PyTorch s':>12}{'ratio':>8}{'GFLOP/s':>10}{'of peak':>9}")
    for N in (256, 512, 1024, 2048, 4096):
        runs = 7 if N <= 512 else 3
        t, _ = ours(4, 8, 64, N, runs, 1)
        flops = 4 * 8 * (N * N / 2) * 64 * 2 * 5  # causal half; QK, PV forward, three products + QK again backward
        fused = hasattr(F, "scaled_dot_product_attention")  # the naive path needs N^2 scores (8 GB at 4096)
        p = torch_attention(4, 8, 64, N, runs) if N <= 2048 or fused else float("nan")
        print(f"{N:>6}{t:>12.4f}{p:>12.4f}{p / t:>8.2f}{flops / t / 1e9:>10.1f}{flops / t / 1e9 / peak:>9.2f}")
    print("tformer peak memory (B=1 H=1 d=64, fwd+bwd; q, k, v, output, gradients: 7 x N x 64 floats):")
    for N in (2048, 4096, 8192, 16384):
        t, kib = ours(1, 1, 64, N, 1, 1)
        print(f"  N={N:>6}: {kib / 1024:8.1f} MiB peak ({7 * N * 64 * 4 / 2**20:.1f} MiB of tensors), {t:.3f} s")


if __name__ == "__main__":
    main()
