#!/usr/bin/env python3
"""The curves of tools/listops_results.sh: validation accuracy and loss
against the training step for each run folder (full, bigbird, nystrom, local) under
OUT, read from their losses.csv, beside LRA's published test accuracies and
the most frequent answer's share of the validation set (a model that ignores
its input scores that). Needs matplotlib (Debian: python3-matplotlib).

    python3 tools/listops_plot.py OUT PNG
    python3 tools/listops_plot.py --runs PNG LABEL=RUN_DIR ...   # any run folders, side by side

(the second form: runs of one kind with other settings or seeds, LABEL in the
legend, RUN_DIR a folder with losses.csv, e.g. OUT/full.)
"""
import os
import sys

from listops_table import LRA, validations  # (tools/ is this script's folder)

NAMES = {"full": "full attention", "bigbird": "BigBird", "nystrom": "Nyström", "local": "local attention"}


def curves(out, runs):
    """(label, run folder, LRA's figure or None) for each curve: the kinds under
    out, or the LABEL=RUN_DIR pairs of --runs."""
    if runs is not None:
        return [(label, run, None) for label, run in (r.split("=", 1) for r in runs)]
    return [(name, os.path.join(out, kind), LRA[kind][1]) for kind, name in NAMES.items()]


def main():
    if len(sys.argv) < 3 or (sys.argv[1] == "--runs" and len(sys.argv) < 4):
        sys.exit(__doc__.strip().split("\n\n")[1])
    runs = sys.argv[3:] if sys.argv[1] == "--runs" else None
    bad = [r for r in runs or [] if "=" not in r or not r.split("=", 1)[1]]
    if bad:
        sys.exit(f"listops_plot: --runs {bad[0]!r}: each run is LABEL=RUN_DIR")
    out, png = (None, sys.argv[2]) if runs is not None else (sys.argv[1], sys.argv[2])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_acc, ax_loss) = plt.subplots(1, 2, figsize=(11, 4.2))
    top = []
    for i, (name, run, lra) in enumerate(curves(out, runs)):
        if not os.path.exists(os.path.join(run, "losses.csv")):
            if runs is not None:
                sys.exit(f"listops_plot: {run}: no losses.csv")
            continue
        steps, loss, acc = zip(*validations(run))
        acc = [100 * a for a in acc]
        top.extend(acc)
        color = f"C{i}"
        ax_acc.plot(steps, acc, "o-", color=color, ms=3, label=f"{name} (tformer, validation)")
        if lra is not None:
            ax_acc.axhline(lra, color=color, ls=":", lw=1, label=f"{name}: LRA's published test figure ({lra}%)")
        ax_loss.plot(steps, loss, "o-", color=color, ms=3, label=name)
    ax_acc.axhline(16.5, color="grey", ls="--", lw=1, label="most frequent answer (16.5%)")
    if runs is not None:
        ax_acc.axhline(37.0, color="black", ls=":", lw=1, label="issue 14's goal, test accuracy (37%)")
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
