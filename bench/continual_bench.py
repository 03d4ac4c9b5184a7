#!/usr/bin/env python3
"""Continual encoder: per-step multiply-adds (regular / continual) against
measured steps/s of bench_continual (step mode vs recomputing each window).

    make bench-continual                      # or:
    python3 bench/continual_bench.py build/bench_continual [--flops-only] [--png out.png]

Run it on a quiet machine: the figures are timings. --flops-only prints the
FLOP table alone (no timing), as quoted in docs/continual.md.
"""
import argparse
import subprocess


def regular_block(m, d, f):
    """A regular block on m rows: q, k, v and out projections, QK^T and AV, the feed-forward."""
    return 4 * m * d * d + 2 * m * m * d + 2 * m * d * f


def single_output_block(m, d, f):
    """Only the last of m rows queries; k, v projected for all m rows (they changed)."""
    return 2 * m * d * d + 2 * d * d + 2 * m * d + 2 * d * f


def cosi_block(n, d, f):
    """CoSiAtt block: q, k, v, out of one step; one row over n cached keys; one feed-forward."""
    return 4 * d * d + 2 * n * d + 2 * d * f


def core_block(n, d, f):
    """CoReAtt block: q, k, v of one step; n-1 rows lose a key and gain one (2 scores, 2 AV
    updates each); the new row; the output projection and the feed-forward of all n rows."""
    return 3 * d * d + 4 * (n - 1) * d + 2 * n * d + n * d * d + 2 * n * d * f


def flops(L, n, d, f):
    """(regular, as run, continual) multiply-adds per step of an L-block encoder with window n:
    the paper's regular network (every block on all n rows), tformer's regular network as
    bench_continual runs it (tf_continual_forward: the last block queries only the last row), and
    step mode."""
    regular = L * regular_block(n, d, f)
    as_run = (L - 1) * regular_block(n, d, f) + single_output_block(n, d, f)
    if L == 1:
        return regular, as_run, cosi_block(n, d, f)
    return regular, as_run, core_block(n, d, f) + (L - 2) * regular_block(n, d, f) + single_output_block(n, d, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench", nargs="?", default="build/bench_continual")
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=128)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=1, help="runs per row; the median speed-up's run is printed")
    ap.add_argument("--flops-only", action="store_true")
    ap.add_argument("--png", default="")
    ap.add_argument("--from-table", help="draw --png from the table an earlier run printed (no measuring)")
    a = ap.parse_args()
    if a.from_table:
        with open(a.from_table) as f:
            rows = [(int(w[0]), int(w[1]), float(w[6]), float(w[9])) for w in (line.split() for line in f)
                    if len(w) == 10 and w[0].isdigit()]
        return plot(rows, a.png)
    windows = [16, 32, 64, 128, 256, 512, 1024]
    rows = []
    print(f"d_model {a.d}, d_ff {a.ff}; multiply-adds per step (M = 1e6)")
    print("ratio: regular / continual multiply-adds; 'as run': against the regular network measured here")
    print("L     n   regular M   as run M  continual M  ratio  as run" +
          ("" if a.flops_only else "   step/s  window/s  speed-up"))
    for L in (1, 2, 3):
        for n in windows:
            reg, run, co = flops(L, n, a.d, a.ff)
            line = f"{L} {n:5d} {reg / 1e6:11.3f} {run / 1e6:10.3f} {co / 1e6:12.3f} {reg / co:6.1f} {run / co:7.1f}"
            if not a.flops_only:
                runs = []
                for _ in range(max(1, a.repeat)):  # machines are noisy: the run of the median speed-up
                    out = subprocess.run([a.bench, str(a.d), str(a.heads), str(a.ff), str(L), str(n), str(a.steps)],
                                         check=True, capture_output=True, text=True).stdout.split()
                    runs.append((float(out[0]) / float(out[1]), float(out[0]), float(out[1])))
                _, step, window = sorted(runs)[len(runs) // 2]
                line += f" {step:8.1f} {window:9.1f} {step / window:9.1f}"
                rows.append((L, n, run / co, step / window))
            print(line)
    if a.png and rows:
        plot(rows, a.png)


def plot(rows, png):
    """rows (L, n, FLOP ratio against the network as run, measured speed-up) as a log-log PNG."""
    if png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        for L in (1, 2, 3):
            r = [x for x in rows if x[0] == L]
            c = {1: "C0", 2: "C1", 3: "C2"}[L]
            plt.loglog([x[1] for x in r], [x[2] for x in r], "--", color=c, label=f"L={L} FLOP ratio (as run)")
            plt.loglog([x[1] for x in r], [x[3] for x in r], "o-", color=c, label=f"L={L} measured")
        plt.xlabel("window n")
        plt.ylabel("speed-up of step mode over recomputing the window")
        plt.title("Continual encoder, d_model 64: FLOP ratio and measured speed-up")
        plt.legend()
        plt.savefig(png, dpi=100)


if __name__ == "__main__":
    main()
