#!/usr/bin/env python3
"""GPT-2 encoding throughput, one thread each, in one run: tformer (C),
tiktoken and Hugging Face tokenizers, on all of tinyshakespeare. Prints MB/s
(median of runs) and the ratio tformer / peer. Only ratios mean anything on a
noisy machine.

    python3 bench/tokenizer_bench.py build/bench_tokenizer [RUNS]
"""
import os
import statistics
import subprocess
import sys
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "ref"))
import tokenizer_ref as ref  # noqa: E402


def median_mbps(fn, text, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - t0)
    return len(text.encode("utf-8")) / statistics.median(times) / 1e6


def main():
    binary, runs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 7
    corpus = os.path.join(ref.SHARED, "tinyshakespeare", "input.txt")
    text = open(corpus, encoding="utf-8").read()
    out = subprocess.run(["taskset", "-c", "0", binary, ref.GPT2, corpus, str(runs)], capture_output=True,
                         text=True, check=True).stdout.split()
    cold, warm, n = float(out[0]), float(out[1]), int(out[2])
    os.sched_setaffinity(0, {0})
    tk = ref.tiktoken_gpt2()
    hf = ref.hf_gpt2()
    assert len(tk.encode(text, allowed_special="all")) == n
    tk_mbps = median_mbps(lambda s: tk.encode(s, allowed_special="all"), text, runs)
    hf_mbps = median_mbps(lambda s: hf(s), text, runs)
    print(f"GPT-2 encoding of tinyshakespeare ({len(text) / 1e6:.2f} MB, {n} ids), one core, median of {runs}")
    print(f"{'encoder':<34}{'MB/s':>8}{'tformer cold / it':>20}")
    for name, v in [("tformer (fresh tokenizer)", cold), ("tformer (reused, warm cache)", warm),
                    ("tiktoken " + __import__("tiktoken").__version__, tk_mbps),
                    ("HF tokenizers " + __import__("tokenizers").__version__, hf_mbps)]:
        print(f"{name:<34}{v:>8.2f}{cold / v:>20.2f}")


if __name__ == "__main__":
    main()
