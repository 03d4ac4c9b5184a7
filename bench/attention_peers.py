#!/usr/bin/env python3
"""Attention forward + backward beside its peers (issue 14): tformer's full
(flash), BigBird and Nystrom attention against plain PyTorch attention, Hugging
Face's BigBird block-sparse attention and Hugging Face's Nystromformer self-
attention, B=1, H=8, d_head=64 (hidden 512), on the same cores, at T threads.

Run it on a quiet machine only (every point keeps T cores busy for seconds):
    make attention-peers
    build/hfvenv/bin/python bench/attention_peers.py build/bench_attention_kinds \\
        --sizes 1024,4096,16384 --threads 1,2 --repeats 3 --out build/attention_peers
Writes OUT.csv and prints a markdown table with tformer time / peer time per
pair, N and T (the issue's goal: <= 0.33 at 16k). Each point is its own
process, so peak memory (ru_maxrss, KiB) is per point; the Python rows' peak
includes the interpreter and torch (their column base_kib is the peak before
the inputs exist). tformer's rows are bench/bench_attention_kinds (the binary
bench/attention_scaling.py runs), mode op.

The pairs, matched to the C bench's settings:
  full:    tf_sdpa on q, k, v (1,8,N,64)  vs softmax(q k^T / 8) v written out
           in torch 1.13 (no SDPA there); skipped where its (8,N,N) matrices
           would pass --max-full-gib (estimated as 4 of them).
  bigbird: tf_sparse_attention on q, k, v (window 64, 2 global tokens, 3
           random blocks, blocks of 64) vs transformers' BigBirdBlockSparseAttention
           .bigbird_block_sparse_attention on the same q, k, v (block 64, 3 random
           blocks; HF's pattern: 3 window blocks, first and last block global),
           in training mode so the random blocks are drawn as in training.
  sdpa:    tf_sdpa as in full vs PyTorch 2.x's fused
           torch.nn.functional.scaled_dot_product_attention on the same shapes,
           run by --sdpa-python (a venv with PyPI torch 2.x; Debian's 1.13 has no
           SDPA): the pair is left out when that interpreter is not given. At
           the largest N, tformer's local (window 64), BigBird (as above) and
           Nystrom (its layer, as below) against that SDPA time, as rows of
           the table ("local vs PyTorch 2.x SDPA", ...).
  nystrom: tformer's Nystrom attention layer (projections in and out, 64
           landmarks, no convolution) on x (1,N,512) vs transformers'
           NystromformerSelfAttention (64 landmarks, conv_kernel_size None) and
           a Linear(512,512) output projection on the same x.
"""
import argparse
import csv
import math
import os
import resource
import statistics
import subprocess
import sys
import time

H, D, E = 8, 64, 512
PAIRS = ("full", "sdpa", "bigbird", "nystrom")
PEER = {"full": "torch 1.13 full", "sdpa": "PyTorch 2.x SDPA", "bigbird": "HF BigBird",
        "nystrom": "HF Nystromformer"}
# With the sdpa pair, at its largest N: tformer's linear-cost kinds against the same SDPA run
# (docs/long-sequences.md's "12-18x PyTorch 2.x SDPA" at 16k, in one command).
LINEAR = ("local", "bigbird", "nystrom")
PEER.update({f"{k}/sdpa": "PyTorch 2.x SDPA" for k in LINEAR})


def full_gib(n):
    """Estimated peak of the written-out attention: 4 (8,N,N) float matrices."""
    return 4 * H * n * n * 4 / 2**30


def peer_step(kind, n):
    """A function running one forward + backward of the peer of kind at length n."""
    import torch
    g = torch.Generator().manual_seed(1)
    if kind == "nystrom":
        from transformers import NystromformerConfig
        from transformers.models.nystromformer.modeling_nystromformer import NystromformerSelfAttention
        cfg = NystromformerConfig(hidden_size=E, num_attention_heads=H, num_landmarks=64, conv_kernel_size=None,
                                  attention_probs_dropout_prob=0.0, max_position_embeddings=n + 2)
        att, out = NystromformerSelfAttention(cfg).train(), torch.nn.Linear(E, E)
        x = torch.randn(1, n, E, generator=g, requires_grad=True)

        def run():
            y = out(att(x)[0])
            y.backward(torch.ones_like(y))
        return run
    q, k, v = (torch.randn(1, H, n, D, generator=g, requires_grad=True) for _ in range(3))
    if kind == "sdpa":
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def run():
            y = sdpa(q, k, v)
            y.backward(torch.ones_like(y))
        return run
    if kind == "full":
        def run():
            y = torch.softmax(q @ k.transpose(-1, -2) * D**-0.5, dim=-1) @ v
            y.backward(torch.ones_like(y))
        return run
    from transformers import BigBirdConfig, BigBirdModel
    from transformers.models.big_bird.modeling_big_bird import BigBirdBlockSparseAttention
    cfg = BigBirdConfig(hidden_size=E, num_attention_heads=H, attention_type="block_sparse", block_size=64,
                        num_random_blocks=3, attention_probs_dropout_prob=0.0, max_position_embeddings=n)
    att = BigBirdBlockSparseAttention(cfg, seed=1).train()
    blocked, band, from_mask, to_mask = BigBirdModel.create_masks_for_block_sparse_attn(torch.ones(1, n), 64)
    masks = (band, from_mask, to_mask, blocked, blocked)

    def run():
        y = att.bigbird_block_sparse_attention(q, k, v, *masks, H, 3, D, 64, 64, 1, n, n, seed=1,
                                               plan_from_length=None, plan_num_rand_blocks=None,
                                               output_attentions=False)[0]
        y.backward(torch.ones_like(y))
    return run


def one(kind, n, threads, repeats):
    """Child process: print 'median_seconds peak_kib base_kib' of one peer point."""
    import torch
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run = peer_step(kind, n)
    run()  # warm-up
    t = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        t.append(time.perf_counter() - t0)
    print(f"{statistics.median(t):.6f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} {base}")


def measure(cmd, env):
    """(seconds, peak_kib, base_kib) from a child printing them, or the child's error."""
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        return (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    f = r.stdout.split()
    return float(f[0]), int(f[1]), int(f[2]) if len(f) > 2 else 0


def ints(text):
    """A comma-separated list of positive integers (argparse type)."""
    try:
        v = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of integers")
    if any(x < 1 for x in v):
        raise argparse.ArgumentTypeError(f"'{text}': every value must be at least 1")
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", nargs="?", help="build/bench_attention_kinds")
    ap.add_argument("--sizes", type=ints, default="1024,4096,16384")
    ap.add_argument("--threads", type=ints, default="1,2")
    ap.add_argument("--pairs", help="default: full,bigbird,nystrom, and sdpa with --sdpa-python")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs after one warm-up (median kept)")
    ap.add_argument("--max-full-gib", type=float, default=20.0)
    ap.add_argument("--sdpa-python", help="a Python with PyTorch 2.x for the sdpa pair (e.g. /tmp/pt2/bin/python)")
    ap.add_argument("--out", default="build/attention_peers")
    ap.add_argument("--one", nargs=4, metavar=("KIND", "N", "THREADS", "REPEATS"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        return one(a.one[0], int(a.one[1]), int(a.one[2]), int(a.one[3]))
    if not a.binary:
        ap.error("give the bench binary (build/bench_attention_kinds)")
    if not os.access(a.binary, os.X_OK):
        ap.error(f"{a.binary}: not an executable (make build/bench_attention_kinds)")
    if a.repeats < 1:
        ap.error(f"--repeats: {a.repeats} must be at least 1")
    sizes, threads = a.sizes, a.threads
    pairs = a.pairs.split(",") if a.pairs else [p for p in PAIRS if p != "sdpa" or a.sdpa_python]
    for p in pairs:
        if p not in PAIRS:
            ap.error(f"--pairs: unknown pair '{p}' (full, sdpa, bigbird, nystrom)")
    if "sdpa" in pairs and not a.sdpa_python:
        ap.error("--pairs sdpa needs --sdpa-python (a Python with PyTorch 2.x)")
    if a.sdpa_python and not os.access(a.sdpa_python, os.X_OK):
        ap.error(f"--sdpa-python: {a.sdpa_python} is not an executable")
    for n in sizes:
        if n % 64 or n < 768:
            ap.error(f"--sizes: {n} is not a multiple of 64 of at least 768 (HF BigBird's block-sparse minimum)")
    rows = []
    for t in threads:
        env = dict(os.environ, TFORMER_THREADS=str(t), OMP_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t))
        for p in pairs:
            for n in sizes:
                ours = measure([a.binary, "full" if p == "sdpa" else p, "op", str(n), str(a.repeats)], env)
                python = a.sdpa_python if p == "sdpa" else sys.executable
                if p == "full" and full_gib(n) > a.max_full_gib:
                    peer = f"skipped: about {full_gib(n):.0f} GiB > --max-full-gib {a.max_full_gib:g}"
                else:
                    peer = measure([python, __file__, "--one", p, str(n), str(t), str(a.repeats)], env)
                rows.append((p, t, n, ours, peer))
                print(f"{p:8} T={t} N={n:6}  tformer {fmt(ours)}  {PEER[p]} {fmt(peer)}", file=sys.stderr, flush=True)
            if p == "sdpa":  # the same SDPA at the largest N against the kinds that do not compute N^2 scores
                n, peer = rows[-1][2], rows[-1][4]
                for k in LINEAR:
                    ours = measure([a.binary, k, "op", str(n), str(a.repeats)], env)
                    rows.append((f"{k}/sdpa", t, n, ours, peer))
                    print(f"{k:8} T={t} N={n:6}  tformer {fmt(ours)}  {PEER[p]} (above)", file=sys.stderr, flush=True)
    write_csv(a.out + ".csv", rows)
    print_table(rows, a.repeats)


def fmt(m):
    return m if isinstance(m, str) else f"{m[0]:.4f} s {m[1] / 1024:.0f} MiB"


def write_csv(path, rows):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["pair", "peer", "threads", "N", "tformer_seconds", "tformer_peak_kib", "peer_seconds",
                    "peer_peak_kib", "peer_base_kib", "ratio", "note"])
        for p, t, n, ours, peer in rows:
            o = ours if not isinstance(ours, str) else (math.nan, 0, 0)
            q = peer if not isinstance(peer, str) else (math.nan, 0, 0)
            note = "; ".join(m for m in (ours, peer) if isinstance(m, str))
            w.writerow([p, PEER[p], t, n, o[0], o[1], q[0], q[1], q[2], o[0] / q[0], note])
    os.replace(tmp, path)
    print(f"wrote {path}", file=sys.stderr)


def print_table(rows, repeats):
    print(f"\n| forward + backward, B=1 H=8 d=64 | threads | N | tformer | peer | tformer / peer | peer / tformer "
          f"| tformer peak | peer peak |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p, t, n, ours, peer in rows:
        bad = isinstance(ours, str) or isinstance(peer, str)
        ratio = "— | —" if bad else f"{ours[0] / peer[0]:.2f} | {peer[0] / ours[0]:.1f}"
        cell = lambda m, i: "—" if isinstance(m, str) else (f"{m[0]:.3f} s" if i == 0 else f"{m[1] / 1024:.0f} MiB")
        print(f"| {p.split('/')[0]} vs {PEER[p]} | {t} | {n} | {cell(ours, 0)} | {cell(peer, 0)} | {ratio} | {cell(ours, 1)} "
              f"| {cell(peer, 1)} |")
    notes = [f"{p} T={t} N={n}: {m}" for p, t, n, ours, peer in rows for m in (ours, peer) if isinstance(m, str)]
    print(f"\nmedian of {repeats} runs (the peers after one warm-up run); peer peak includes Python and torch.")
    for m in notes:
        print(f"- {m}")


if __name__ == "__main__":
    main()
