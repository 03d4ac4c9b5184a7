#!/usr/bin/env python3
"""The curves of tools/listops_results.sh: validation accuracy and loss
against the training step for each run folder (full, bigbird, nystrom, local) under
OUT, read from their losses.csv, beside LRA's published test accuracies and
the most frequent answer's share of the validation set (a model that ignores
its input scores that). Needs matplotlib (Debian: python3-matplotlib).

    python3 tools/listops_plot.py OUT PNG
"""
import os
import sys

from listops_table import LRA, validations  # (tools/ is this script's folder)

NAMES = {"full": "full attention", "bigbird": "BigBird", "nystrom": "Nyström", "local": "local attention"}


def main():
    out, png = sys.argv[1], sys.argv[2]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_acc, ax_loss) = plt.subplots(1, 2, figsize=(11, 4.2))
    top = []
    for i, (kind, name) in enumerate(NAMES.items()):
        run, lra = os.path.join(out, kind), LRA[kind][1]
        if not os.path.exists(os.path.join(run, "losses.csv")):
            continue
        steps, loss, acc = zip(*validations(run))
        acc = [100 * a for a in acc]
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
