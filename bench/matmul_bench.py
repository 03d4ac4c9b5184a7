#!/usr/bin/env python3
"""Matrix-heavy layers against the bare BLAS, and this CPU's peak, in one run.

    python3 bench/matmul_bench.py build/bench_matmul [build/bench_sgemm_blis] [THREADS]

Peak: an FMA-bound loop (16 independent AVX-512 accumulators, or AVX2) on every
thread. For each shape M x K -> N (M tokens), the three products of a linear
layer (forward, input gradient, weight gradient: 6 M K N flops) as bare sgemm
calls — OpenBLAS (the library tformer loaded, its own threads) and BLIS (Debian's
serial build, one thread only) — against tformer's Linear forward + backward
(bias included, through the autodiff tape). The two alternate over three rounds
and each reports its median, so a noisy moment hits both alike. Where the CPU
has AVX512-BF16: the same Linear with bf16 products (--precision bf16) against
the float one, and the peak of the bf16 kernel's instruction (AMX's tdpbf16ps
where the tiles are granted, else vdpbf16ps).
"""
import os
import statistics
import subprocess
import sys


def run(binary, *args, threads):
    env = dict(os.environ, TFORMER_THREADS=str(threads))
    out = subprocess.run([binary, *map(str, args)], capture_output=True, text=True, check=True, env=env)
    return float(out.stdout)


def medians(binary, mode_a, mode_b, M, K, N, t):
    """Medians of 3 alternated runs of two modes on one shape (GFLOP/s)."""
    pairs = [(run(binary, mode_a, M, K, N, threads=t), run(binary, mode_b, M, K, N, threads=t)) for _ in range(3)]
    return (statistics.median(x) for x in zip(*pairs))


def main():
    binary = sys.argv[1]
    blis = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
    threads = int(sys.argv[-1]) if sys.argv[-1].isdigit() else 2
    core = os.environ.get("OPENBLAS_CORETYPE", "(OpenBLAS's own choice)")
    for t in sorted({1, threads}):
        peak = run(binary, "peak", threads=t)
        print(f"matrix products, {t} thread(s): peak {peak:.0f} GFLOP/s (FMA loop); OPENBLAS_CORETYPE={core}")
        print(f"{'M x K -> N':<22}{'OpenBLAS':>10}{'BLIS':>8}{'tformer':>9}{'vs OpenBLAS':>13}{'of peak':>9}")
        for M, K, N in [(512, 768, 3072), (512, 3072, 768), (512, 768, 768), (768, 128, 512)]:
            ob, ours = medians(binary, "sgemm", "linear", M, K, N, t)
            bl = run(blis, "sgemm", M, K, N, threads=1) if blis and t == 1 else float("nan")
            print(f"{f'{M} x {K} -> {N}':<22}{ob:>10.1f}{bl:>8.1f}{ours:>9.1f}{ours / ob:>13.2f}{ours / peak:>9.2f}")
        print("(GFLOP/s; Linear = forward + backward, bias included)")
        if "avx512_bf16" not in open("/proc/cpuinfo").read():
            continue
        # tformer's bf16 kernel is AMX's where the tiles are granted (TFORMER_AMX=0: vdpbf16ps's)
        peak16, loop = None, "vdpbf16ps loop"
        if os.environ.get("TFORMER_AMX") != "0":
            try:
                peak16, loop = run(binary, "peak-amx", threads=t), "tdpbf16ps (AMX) loop"
            except subprocess.CalledProcessError:
                pass  # no tiles granted: vdpbf16ps
        if peak16 is None:
            peak16 = run(binary, "peak-bf16", threads=t)
        print(f"bf16 products, {t} thread(s): peak {peak16:.0f} GFLOP/s ({loop})")
        print(f"{'M x K -> N':<22}{'f32':>9}{'bf16':>9}{'bf16/f32':>10}{'of bf16 peak':>14}")
        for M, K, N in [(512, 768, 3072), (512, 3072, 768), (256, 768, 50257), (768, 128, 512)]:
            f32, b16 = medians(binary, "linear", "linear-bf16", M, K, N, t)
            print(f"{f'{M} x {K} -> {N}':<22}{f32:>9.1f}{b16:>9.1f}{b16 / f32:>10.2f}{b16 / peak16:>14.2f}")


if __name__ == "__main__":
    main()
