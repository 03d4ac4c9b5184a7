#!/usr/bin/env python3
"""The BERT results table (markdown) from a `make bert-results` folder:
baselines.json and each fine-tuning run's metrics.json, and the pre-training's
last validation MLM / NSP accuracy from its losses.csv.

    python3 tools/bert_table.py OUT_DIR
"""
import csv
import json
import os
import sys


def load(path):
    return json.load(open(path)) if os.path.exists(path) else None


def fmt(x):
    return "—" if x is None else f"{100 * x:.1f}"


def main():
    out = sys.argv[1]
    base = load(os.path.join(out, "baselines.json")) or {}
    rows = [("fortunes", "category of a fortune (8 classes)", "accuracy", "macro_f1", "LogisticRegression, bag of words"),
            ("nsp", "is B the next line (Shakespeare)", "accuracy", "macro_f1", "LogisticRegression, bag of words of A and B"),
            ("punct", "capitals + punctuation per word (Multi30k)", "token_accuracy", "macro_f1",
             "most frequent tag per word")]
    print("| task | metric | baseline | BERT from scratch (ours) | all-MiniLM-L6-v2 fine-tuned |")
    print("|---|---|---|---|---|")
    for key, what, m1, m2, bname in rows:
        b = base.get(key, {})
        s = load(os.path.join(out, f"ft_scratch_{key}", "metrics.json")) or {}
        m = load(os.path.join(out, f"ft_minilm_{key}", "metrics.json")) or {}
        for metric in (m1, m2):
            print(f"| {what} | {metric.replace('_', ' ')} | {fmt(b.get(metric))} ({bname}) | {fmt(s.get(metric))} | "
                  f"{fmt(m.get(metric))} |")
    p = os.path.join(out, "pretrain", "losses.csv")
    if os.path.exists(p):
        last = [r for r in csv.DictReader(open(p)) if r.get("val_loss")][-1]
        print(f"\nPre-training from scratch: step {last['step']}, validation MLM loss+NSP loss {float(last['val_loss']):.3f}, "
              f"MLM accuracy {fmt(float(last['val_mlm_accuracy']))}%, NSP accuracy {fmt(float(last['val_nsp_accuracy']))}%.")


if __name__ == "__main__":
    main()
