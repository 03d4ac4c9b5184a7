#!/usr/bin/env python3
"""Nystrom attention's relative error against exact attention as the landmarks
grow (bench/nystrom_error.c), as a CSV, a markdown table and a log-log PNG.

    python3 bench/nystrom_error.py build/nystrom_error --csv build/nystrom_error.csv \
        --png docs/img/nystrom_error.png [--n 1024 4096]
    python3 bench/nystrom_error.py --from-csv build/nystrom_error.csv --png docs/img/nystrom_error.png

Not a timing: it may run on a busy machine (TFORMER_THREADS=1 is enough).
"""
import argparse
import collections
import csv
import io
import subprocess
import sys

KIND_LABEL = {"random": "random q, k, v (i.i.d. N(0,1))", "lowrank": "rank 8 + noise, peaked scores",
              "smooth": "rank 8 + noise, smooth along the sequence"}


def read_rows(text):
    return [dict(r, N=int(r["N"]), L=int(r["L"]), rel_error=float(r["rel_error"]))
            for r in csv.DictReader(io.StringIO(text))]


def summarise(rows):
    """(kind, N) -> [(L, mean, min, max)] over the seeds."""
    by = collections.defaultdict(list)
    for r in rows:
        by[(r["kind"], r["N"], r["L"])].append(r["rel_error"])
    out = collections.defaultdict(list)
    for (kind, n, L), v in sorted(by.items()):
        out[(kind, n)].append((L, sum(v) / len(v), min(v), max(v)))
    return out


def table(s):
    Ls = sorted({L for series in s.values() for L, *_ in series})
    lines = ["| data | N | " + " | ".join(f"L = {L}" for L in Ls) + " |", "|---|---|" + "---|" * len(Ls)]
    for (kind, n), series in sorted(s.items(), key=lambda kv: (list(KIND_LABEL).index(kv[0][0]), kv[0][1])):
        vals = {L: m for L, m, *_ in series}
        lines.append(f"| {kind} | {n} | " + " | ".join(f"{vals[L]:.3f}" if L in vals else "" for L in Ls) + " |")
    return "\n".join(lines)


def plot(s, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 5))
    colours = {"random": "tab:red", "lowrank": "tab:blue", "smooth": "tab:green"}
    for (kind, n), series in sorted(s.items()):
        L = [x[0] for x in series]
        m = [x[1] for x in series]
        lo = [x[1] - x[2] for x in series]
        hi = [x[3] - x[1] for x in series]
        ax.errorbar(L, m, yerr=[lo, hi], marker="o" if n <= 1024 else "s", linestyle="-" if n <= 1024 else "--",
                    color=colours.get(kind), capsize=3, label=f"{KIND_LABEL.get(kind, kind)}, N = {n}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("landmarks L")
    ax.set_ylabel("relative error ||Y_Nystrom - Y_exact|| / ||Y_exact||")
    ax.set_title("Nystrom attention vs exact softmax attention (H = 4, d = 64; mean of 3 seeds, min-max bars)")
    ax.title.set_fontsize(9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?")
    ap.add_argument("--n", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--csv")
    ap.add_argument("--from-csv")
    ap.add_argument("--png")
    a = ap.parse_args()
    if a.from_csv:
        text = open(a.from_csv).read()
    else:
        if not a.binary:
            ap.error("the nystrom_error binary or --from-csv is required")
        text = subprocess.run([a.binary] + [str(n) for n in a.n], check=True, capture_output=True, text=True).stdout
        if a.csv:
            open(a.csv, "w").write(text)
    s = summarise(read_rows(text))
    print(table(s))
    if a.png:
        plot(s, a.png)
        print(f"wrote {a.png}", file=sys.stderr)


if __name__ == "__main__":
    main()
