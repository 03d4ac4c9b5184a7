#!/usr/bin/env python3
"""The table of tools/listops_results.sh: for each run folder (full, bigbird,
nystrom, local) under OUT, the best model's test accuracy (test.txt: tformer eval
--listops), the best and last validation accuracy (losses.csv), steps,
seconds per step (timing.txt), beside LRA's published ListOps figures.

    python3 tools/listops_table.py OUT
"""
import csv
import os
import re
import sys

LRA = {"full": ("Transformer", 36.4), "bigbird": ("BigBird", 36.1), "nystrom": ("Nystromformer (its re-run)", 37.2),
       "local": ("Local Attention", 15.82)}


def validations(run):
    """The evaluated rows of a run's losses.csv: (step, val_loss, val_accuracy)."""
    return [(int(r["step"]), float(r["val_loss"]), float(r["val_accuracy"]))
            for r in csv.DictReader(open(os.path.join(run, "losses.csv"))) if r.get("val_accuracy")]


def main():
    out = sys.argv[1]
    print("| attention | steps | s / step | test accuracy (best/) | best val accuracy | last val accuracy | LRA (test) |")
    print("|---|---|---|---|---|---|---|")
    for kind, (name, lra) in LRA.items():
        run = os.path.join(out, kind)
        timing = os.path.join(run, "timing.txt")
        if not os.path.exists(timing):
            continue
        t = dict(kv.split("=") for kv in open(timing).read().split())
        acc = [a for _, _, a in validations(run)]
        steps, secs = int(t["steps"]), int(t["seconds"])
        pre = int(t.get("pretrain_steps", 0))  # masked-LM steps before the classifier's, in the same seconds
        test = os.path.join(run, "test.txt")
        m = re.search(r"accuracy ([0-9.]+) \((\d+) of (\d+)", open(test).read()) if os.path.exists(test) else None
        tcell = f"{100 * float(m.group(1)):.1f}% ({m.group(2)} of {m.group(3)})" if m else "—"
        print(f"| {kind} | {f'{pre} + ' if pre else ''}{steps} | {secs / (pre + steps):.1f} | {tcell} | {100 * max(acc):.1f}% | {100 * acc[-1]:.1f}% | "
              f"{name} {lra}% |")


if __name__ == "__main__":
    main()
