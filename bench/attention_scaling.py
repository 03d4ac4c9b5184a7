#!/usr/bin/env python3
"""Attention scaling (issue 14): time and peak memory of forward + backward
against N = 1k ... 64k for full (the flash kernel), local and BigBird (the
block-sparse kernel) and Nystrom attention, B=1, H=8, d=64; the same for a
whole pre-LN encoder layer (d_model 512). Writes OUT.csv and, when matplotlib
is importable, OUT.png (log-log, with least-squares slopes in the legend:
about 1 for the sparse kinds and Nystrom, about 2 for full).

Run it on a quiet machine only (it keeps every core busy for minutes):
    make bench-attention-scaling BENCH_THREADS=16
    python3 bench/attention_scaling.py build/bench_attention_kinds --threads 16 --out build/attention_scaling
Each point is its own process (peak memory is per process). Options:
--kinds, --modes, --min-n, --max-n, --max-n-full (full attention's time grows
as N^2: cap it), --runs.
"""
import argparse
import csv
import math
import os
import subprocess
import sys


def slope(points):
    """Least-squares slope of log(y) on log(x)."""
    if len(points) < 2:
        return float("nan")
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", nargs="?", help="build/bench_attention_kinds (not needed with --from-csv)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kinds", default="full,local,bigbird,nystrom")
    ap.add_argument("--modes", default="op,layer")
    ap.add_argument("--min-n", type=int, default=1024)
    ap.add_argument("--max-n", type=int, default=65536)
    ap.add_argument("--max-n-full", type=int, default=65536)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default="attention_scaling")
    ap.add_argument("--from-csv", help="redraw the slopes and the PNG from an earlier run's CSV (no measuring)")
    a = ap.parse_args()
    if a.from_csv:
        return report(a, read_csv(a.from_csv), write=False)
    if not a.binary:
        ap.error("give the bench binary (or --from-csv)")
    env = dict(os.environ, TFORMER_THREADS=str(a.threads))
    rows, ns = [], []
    n = a.min_n
    while n <= a.max_n:
        ns.append(n)
        n *= 2
    for mode in a.modes.split(","):
        for kind in a.kinds.split(","):
            for n in ns:
                if kind == "full" and n > a.max_n_full:
                    continue
                r = subprocess.run([a.binary, kind, mode, str(n), str(a.runs)], capture_output=True, text=True,
                                   env=env)
                if r.returncode:
                    print(f"{kind} {mode} N={n}: {r.stderr.strip()}", file=sys.stderr)
                    break
                sec, kib = r.stdout.split()
                rows.append((mode, kind, n, float(sec), int(kib)))
                print(f"{mode:5} {kind:8} N={n:6}  {float(sec):9.4f} s  {int(kib) / 1024:9.1f} MiB", flush=True)
    report(a, rows, write=True)


def read_csv(path):
    with open(path, newline="") as f:
        return [(r["mode"], r["kind"], int(r["N"]), float(r["seconds"]), int(r["peak_kib"])) for r in csv.DictReader(f)]


def report(a, rows, write):
    """The CSV (write), the fitted slopes and the PNG of rows (mode, kind, N, seconds, peak KiB)."""
    series = {}
    for mode, kind, n, sec, kib in rows:
        series.setdefault((mode, kind), []).append((n, sec, kib))
    if write:
        with open(a.out + ".csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["mode", "kind", "N", "seconds", "peak_kib"])
            w.writerows(rows)
    print(f"\nslopes of log(time) and log(peak memory) on log(N), {a.threads} threads:")
    for (mode, kind), pts in series.items():
        st, sm = slope([(n, s) for n, s, _ in pts]), slope([(n, k) for n, _, k in pts])
        print(f"  {mode:5} {kind:8} time {st:5.2f}  memory {sm:5.2f}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not importable: no PNG", file=sys.stderr)
        return
    modes = a.modes.split(",")
    fig, axes = plt.subplots(2, len(modes), figsize=(6 * len(modes), 9), squeeze=False)
    for c, mode in enumerate(modes):
        for kind in a.kinds.split(","):
            pts = series.get((mode, kind), [])
            if not pts:
                continue
            n = [p[0] for p in pts]
            axes[0][c].loglog(n, [p[1] for p in pts], "o-", label=f"{kind} (slope {slope([(p[0], p[1]) for p in pts]):.2f})")
            axes[1][c].loglog(n, [p[2] / 1024 for p in pts], "o-",
                              label=f"{kind} (slope {slope([(p[0], p[2]) for p in pts]):.2f})")
        what = "attention op, B=1 H=8 d=64" if mode == "op" else "pre-LN encoder layer, d_model 512"
        axes[0][c].set_title(f"{what}: forward + backward, {a.threads} threads", fontsize=10)
        axes[0][c].set_ylabel("seconds")
        axes[1][c].set_ylabel("peak resident MiB")
        for r in range(2):
            axes[r][c].set_xlabel("N")
            axes[r][c].legend()
            axes[r][c].grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=100)
    print(f"wrote {a.out}.png" + ("" if not write else f" and {a.out}.csv"))


if __name__ == "__main__":
    main()
