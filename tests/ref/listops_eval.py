#!/usr/bin/env python3
"""An independent evaluator of ListOps expressions (the text tformer's
generator writes: tools/listops_dump.c, src/data/listops.c).

    build/listops_dump 1 0 3000 | python3 tests/ref/listops_eval.py --check
        parses each "label<TAB>expression" line, evaluates the expression as the
        Long Range Arena's to_value does (MIN, MAX, MED = int(median), SM = sum
        mod 10), and counts the lines whose label differs (exit 1 if any); prints
        the length and label distributions

    build/listops_dump 5 2 40 20 200 6 5 | python3 tests/ref/listops_eval.py --write tests/fixtures_listops/seed5_test.tsv
        the lines with the evaluator's own label (the committed fixture)

Written from the description of the task (Nangia & Bowman 2018; LRA's
lra_benchmarks/data/listops.py), not from tformer's code: a stack parser over
the space-separated tokens.
"""
import argparse
import collections
import statistics
import sys

OPS = {
    "[MIN": min,
    "[MAX": max,
    "[MED": lambda v: int(statistics.median(v)),  # numpy's median, then int(): the middle two's mean, truncated
    "[SM": lambda v: sum(v) % 10,
}


def evaluate(tokens):
    stack = [[None, []]]  # [operator, arguments]
    for t in tokens:
        if t in OPS:
            stack.append([t, []])
        elif t == "]":
            if len(stack) < 2:
                raise ValueError("']' without an operator")
            op, args = stack.pop()
            if len(args) < 2:
                raise ValueError(f"{op} with {len(args)} argument(s)")
            stack[-1][1].append(OPS[op](args))
        elif len(t) == 1 and t.isdigit():
            stack[-1][1].append(int(t))
        else:
            raise ValueError(f"unknown token {t!r}")
    if len(stack) != 1 or len(stack[0][1]) != 1:
        raise ValueError("unbalanced expression")
    return stack[0][1][0]


def depth(tokens):
    d = best = 0
    for t in tokens:
        d += t in OPS
        d -= t == "]"
        best = max(best, d)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--write")
    a = ap.parse_args()
    lines = [l.rstrip("\n") for l in sys.stdin if l.strip()]
    bad, lengths, labels, depths, out = 0, [], collections.Counter(), [], []
    for i, line in enumerate(lines):
        label, expr = line.split("\t")
        tokens = expr.split(" ")
        value = evaluate(tokens)
        if a.check and int(label) != value:
            bad += 1
            if bad <= 5:
                print(f"line {i + 1}: label {label}, the expression gives {value}", file=sys.stderr)
        lengths.append(len(tokens))
        labels[value] += 1
        depths.append(depth(tokens))
        out.append(f"{value}\t{expr}")
    if a.write:
        with open(a.write, "w") as f:
            f.write("\n".join(out) + "\n")
    n = len(lines)
    print(f"{n} expressions, {bad} answers differ from the evaluator's; "
          f"lengths {min(lengths)}..{max(lengths)} (mean {sum(lengths) / n:.0f}), "
          f"depth {min(depths)}..{max(depths)}; classes " +
          " ".join(f"{k}:{labels[k] / n:.3f}" for k in range(10)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
