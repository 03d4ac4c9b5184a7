#!/usr/bin/env python3
"""The curves of tools/listops_results.sh: validation accuracy and loss
against the training step for each run folder (full, bigbird, nystrom) under
OUT, read from their losses.csv, beside LRA's published test accuracies and
the most frequent answer's share of the validation set (a model that ignores
its input scores that). Needs matplotlib (Debian: python3-matplotlib).

    python3 tools/listops_plot.py OUT PNG
"""
import csv
import os
import sys

KINDS = {"full": ("full attention", 36.4), "bigbird": ("BigBird", 36.1), "nystrom": ("Nyström", 37.2)}


def curves(run):
    steps, acc, loss = [], [], []
    for r in csv.DictReader(open(os.path.join(run, "losses.csv"))):
        if r.get("val_accuracy"):
            steps.append(int(r["step"]))
            acc.append(100 * float(r["val_accuracy"]))
            loss.append(float(r["val_loss"]))
    return steps, acc, loss


def main():
    out, png = sys.argv[1], sys.argv[2]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_acc, ax_loss) = plt.subplots(1, 2, figsize=(11, 4.2))
    top = []
    for i, (kind, (name, lra)) in enumerate(KINDS.items()):
        run = os.path.join(out, kind)
        if not os.path.exists(os.path.join(run, "losses.csv")):
            continue
        steps, acc, loss = curves(run)
        top.extend(acc)
        color = f"C{i}"
        ax_acc.plot(steps, acc, "o-", color=color, ms=3, label=f"{name} (tformer, validation)")
        ax_acc.axhline(lra, color=color, ls=":", lw=1, label=f"{name}: LRA's published test figure ({lra}%)")
        ax_loss.plot(steps, loss, "o-", color=color, ms=3, label=name)
    ax_acc.axhline(16.5, color="grey", ls="--", lw=1, label="most frequent answer (16.5%)")
    ax_acc.set_xlabel("training step (batches of 32)")
    ax_acc.set_ylabel("validation accuracy (%), 1,984 expressions")
    ax_acc.set_title("ListOps (LRA settings, lengths 500-2,000)")
    ax_acc.set_ylim(14, max([54] + [a + 12 for a in top]))
    ax_acc.legend(fontsize=7, loc="upper left")
    ax_acc.grid(alpha=0.3)
    ax_loss.set_xlabel("training step (batches of 32)")
    ax_loss.set_ylabel("validation cross-entropy")
    ax_loss.set_title("validation loss (ln 10 = 2.30 at the start)")
    ax_loss.legend(fontsize=8)
    ax_loss.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png + ".tmp.png", dpi=110)
    os.replace(png + ".tmp.png", png)


if __name__ == "__main__":
    main()
