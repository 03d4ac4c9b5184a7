#!/usr/bin/env python3
"""The table of tools/vision_ablation.sh in the layout of the deck's DeiT
ablation (05-attention-lecture-dl1, from Touvron et al. 2021, table 8): one
row per run, a column per ingredient (yes / no), the t10k accuracy as mean ±
standard deviation over the seeds that finished, and the deck's DeiT-B
ImageNet top-1 for the same row beside it.
    python3 tools/vision_ablation_table.py OUT SEEDS [PNG] > OUT/ablation.md
reads OUT/<row>/<seed>/t10k.txt (tformer eval's first line); with PNG, also
draws each row's seeds and mean against the full recipe's (needs Debian's
python3-matplotlib)."""
import os
import re
import statistics
import sys

# The ingredients in the full recipe's order; label smoothing is DeiT's too but not in the deck's table.
COLS = ["optimizer", "RandAugment", "Mixup", "CutMix", "Erasing", "Stoch. depth", "Repeated aug.", "Dropout",
        "EMA", "Label smoothing"]
FULL = {"optimizer": "AdamW", "RandAugment": 1, "Mixup": 1, "CutMix": 1, "Erasing": 1, "Stoch. depth": 1,
        "Repeated aug.": 1, "Dropout": 0, "EMA": 1, "Label smoothing": 1}
# row: (group, what changes from the full recipe, DeiT-B top-1 at 224 in the deck or None)
ROWS = [
    ("full", "none: the full recipe", {}, "81.8 ±0.2"),
    ("sgd-instead-of-adamw", "optimizer", {"optimizer": "SGD"}, "74.5"),
    ("no-randaugment", "data augmentation", {"RandAugment": 0}, "79.6"),
    ("no-mixup", "", {"Mixup": 0}, "78.7"),
    ("no-cutmix", "", {"CutMix": 0}, "80.0"),
    ("no-mixup-cutmix", "", {"Mixup": 0, "CutMix": 0}, "75.8"),
    ("no-erasing", "regularisation", {"Erasing": 0}, "4.3*"),
    ("no-stochastic-depth", "", {"Stoch. depth": 0}, "3.4*"),
    ("no-repeated-augmentation", "", {"Repeated aug.": 0}, "76.5"),
    ("with-dropout-0.1", "", {"Dropout": 1}, "81.3"),
    ("no-ema", "", {"EMA": 0}, "81.8 without, 81.9 with"),  # DeiT-B is trained without; the deck adds it
    ("no-label-smoothing", "", {"Label smoothing": 0}, None),
]


def accuracies(out, name, seeds):
    acc = []
    for s in range(1, seeds + 1):
        p = os.path.join(out, name, str(s), "t10k.txt")
        if os.path.exists(p):
            m = re.search(r"accuracy ([0-9.]+)", open(p).read())
            if m:
                acc.append(100 * float(m.group(1)))
    return acc


def plot(rows, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.8))
    names = [n for n, _ in rows]
    for y, (n, acc) in enumerate(rows):
        ax.scatter(acc, [y] * len(acc), color="tab:blue", s=18, label="one seed" if y == 0 else None)
        ax.scatter([statistics.mean(acc)], [y], color="tab:red", marker="|", s=300,
                   label="mean over seeds" if y == 0 else None)
    full = statistics.mean(rows[0][1])
    ax.axvline(full, color="grey", linestyle="--", linewidth=1, label="full recipe (mean)")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("t10k accuracy (%)")
    ax.set_title("DeiT recipe ablation, ViT on Fashion-MNIST (fixed budget)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main():
    out, seeds = sys.argv[1], int(sys.argv[2])
    drawn = []
    head = ["ablation on", "run"] + COLS + ["t10k accuracy (%)", "seeds", "DeiT-B, ImageNet (deck)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    full = None
    for name, group, change, deit in ROWS:
        acc = accuracies(out, name, seeds)
        if not acc:
            continue
        drawn.append((name, acc))
        mean = statistics.mean(acc)
        full = mean if name == "full" else full
        sd = f" ±{statistics.stdev(acc):.2f}" if len(acc) > 1 else ""
        diff = f" ({mean - full:+.2f})" if full is not None and name != "full" else ""
        cells = []
        for c in COLS:
            v = change.get(c, FULL[c])
            cells.append(v if isinstance(v, str) else ("yes" if v else "no"))
        row = [group, f"`{name}`"] + cells + [f"{mean:.2f}{sd}{diff}", str(len(acc)), deit or "—"]
        lines.append("| " + " | ".join(row) + " |")
    print("\n".join(lines))
    if len(sys.argv) > 3 and drawn:
        plot(drawn, sys.argv[3])


if __name__ == "__main__":
    main()
