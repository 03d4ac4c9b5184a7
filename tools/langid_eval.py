#!/usr/bin/env python3
"""Online language identification on a stream (docs/continual.md, "A real
stream"): English and German lines in a seeded random order, one running
text (each line followed by a space, as `tformer stream` reads text), labelled
token by token by a continual model trained with `tformer train --arch
continual`; the script scores the labels.

    python3 tools/langid_eval.py --tformer build/tformer --model RUN \\
        --data val.en.gz val.de.gz --names en,de [--seed 1] [--lines 400]

Prints per-step accuracy (steps whose window is full), accuracy by distance
from the last language switch (the window holds a mix there), and steps/s of
step mode against recomputing each window (--recompute), both from the same
run of the same text. The model must be character-level (its tokens are the
text's characters, as `--tokenizer char` trains).
"""
import argparse
import gzip
import random
import subprocess
import sys


def read_lines(path):
    """A text file's non-empty lines, gzip'ed (val.en.gz, as Multi30k ships it) or plain."""
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    with (gzip.open if gz else open)(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\r\n") for line in f if line.strip("\r\n")]


def stream(tformer, model, text, recompute):
    args = [tformer, "stream", "--model", model, "--timing"] + (["--recompute"] if recompute else [])
    p = subprocess.run(args, input=text.encode("utf-8"), capture_output=True, check=True)
    return p.stdout.decode("utf-8").splitlines(), p.stderr.decode("utf-8").strip().splitlines()[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tformer", default="build/tformer")
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", nargs="+", required=True, help="a file per class, in the model's class order")
    ap.add_argument("--names", required=True, help="the classes' names, comma-separated, as the model has them")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lines", type=int, default=400, help="lines of each file (the first ones)")
    ap.add_argument("--window", type=int, required=True, help="the model's window")
    a = ap.parse_args()
    names = a.names.split(",")
    with open(f"{a.model}/chars.txt", encoding="utf-8") as f:  # the model's alphabet
        alphabet = set(f.read())
    lines = [(c, line) for c, path in enumerate(a.data) for line in read_lines(path)[:a.lines]]
    kept = [(c, line) for c, line in lines if set(line) <= alphabet]
    if len(kept) < len(lines):
        print(f"{len(lines) - len(kept)} lines left out: characters outside the model's alphabet")
    lines = kept
    random.Random(a.seed).shuffle(lines)
    text, truth, since = [], [], []
    last, run = None, 0
    for c, line in lines:
        for _ in line + " ":  # one token a character
            run = run + 1 if c == last else 0
            last = c
            truth.append(c)
            since.append(run)
        text.append(line)
    text = "\n".join(text) + "\n"
    out, speed = stream(a.tformer, a.model, text, False)
    out_full, speed_full = stream(a.tformer, a.model, text, True)
    n = a.window
    if len(out) != len(truth) - n + 1:
        sys.exit(f"{len(out)} outputs for {len(truth)} tokens and window {n}: is the model character-level?")
    labels = [line.split("\t")[1] for line in out]
    same = sum(x == y for x, y in zip(out, out_full))
    right = [names.index(lab) == truth[j + n - 1] for j, lab in enumerate(labels)]
    print(f"{len(lines)} lines ({', '.join(a.data)}), {len(truth)} tokens, window {n}, seed {a.seed}")
    print(f"per-step accuracy: {sum(right) / len(right):.4f} ({sum(right)} of {len(right)} steps)")
    print("accuracy by tokens since the last switch (0: the first token of a new line's language):")
    print("| tokens since the switch | steps | accuracy |")
    print("|---|---|---|")
    buckets = [(0, 0), (1, 3), (4, 7), (8, 15), (16, 31), (32, 63), (64, 10**9)]
    for lo, hi in buckets:
        sel = [r for j, r in enumerate(right) if lo <= since[j + n - 1] <= hi]
        if sel:
            span = f"{lo}" if lo == hi else f"{lo}-{hi}" if hi < 10**9 else f"{lo}+"
            print(f"| {span} | {len(sel)} | {sum(sel) / len(sel):.4f} |")
    print(f"step mode: {speed}")
    print(f"recomputing each window: {speed_full}")
    print(f"outputs equal (label and probability as printed): {same} of {len(out)}")


if __name__ == "__main__":
    main()
