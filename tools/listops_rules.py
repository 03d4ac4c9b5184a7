#!/usr/bin/env python3
"""What ListOps answers a rule can give without evaluating the nested lists:
each rule maps an expression to a key (its root operator, and what the
root's own digit arguments say), learns the most frequent answer of each key
on training expressions and is scored on the test expressions.

    build/listops_dump 1 0 20000 > train.tsv     # seed 1, the training subset
    build/listops_dump 1 2 2000 > test.tsv       # the 2,000 test expressions
    python3 tools/listops_rules.py train.tsv test.tsv

(listops_dump writes "answer<TAB>expression" lines: tools/listops_dump.c.)
A model that reads only the root operator can at best match the first rows;
one that also finds which digits sit directly under the root (their bracket
depth is 1) can reach the last. docs/long-sequences.md puts the trained
models beside them.
"""
import collections
import sys


def root_view(tokens):
    """(root operator, the root's own digit arguments, its nested operators,
    its arguments in order: a digit, or "L" for a nested list, every digit of
    the expression in order)."""
    depth, root, digits, nested, args = 0, None, [], [], []
    for t in tokens:
        if t.startswith("["):
            depth += 1
            if depth == 1:
                root = t[1:]
            elif depth == 2:
                nested.append(t[1:])
                args.append("L")
        elif t == "]":
            depth -= 1
        elif depth == 1:
            digits.append(int(t))
            args.append(int(t))
    return root, digits, nested, args, [int(t) for t in tokens if t.isdigit()]


def by_operator(view):
    """The root, and the operator applied to its own digits only (a guess at the answer)."""
    root, d, nested = view[:3]
    if not d:
        return (root, None)
    if root == "MAX":
        return (root, max(d))
    if root == "MIN":
        return (root, min(d))
    if root == "SM":
        return (root, sum(d) % 10, len(nested))
    return (root, sorted(d)[len(d) // 2], len(d), len(nested))  # MED


RULES = [
    ("the most frequent answer", lambda v: None),
    ("the root operator", lambda v: v[0]),
    ("the root operator, the largest of its own digits", lambda v: (v[0], max(v[1], default=None))),
    ("the root operator, the smallest of its own digits", lambda v: (v[0], min(v[1], default=None))),
    # The root's first argument follows its opening token and its last one
    # precedes the final "]": each is read at a fixed place, no depth counted.
    ("the root operator, its first argument (a digit or a list)", lambda v: (v[0], v[3][0] if v[3] else None)),
    ("the root operator, its last argument (a digit or a list)", lambda v: (v[0], v[3][-1] if v[3] else None)),
    # LRA's inputs have no "]" (its tokenizer keeps alphanumeric tokens only):
    # the expression's last token is a digit, the root's last argument when
    # that is a digit, else the last digit of a nested list.
    ("the root operator, the expression's last digit (LRA's last token)", lambda v: (v[0], v[4][-1])),
    ("the root operator, the expression's first and last digits", lambda v: (v[0], v[4][0], v[4][-1])),
    ("the root operator applied to its own digits (+ their counts for SM, MED)", by_operator),
]


def load(path):
    rows = []
    for n, line in enumerate(open(path), 1):
        try:
            answer, expr = line.rstrip("\n").split("\t")
            rows.append((int(answer), root_view(expr.split())))
        except ValueError:
            sys.exit(f"{path}:{n}: not an 'answer<TAB>expression' line")
    return rows


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    train, test = load(sys.argv[1]), load(sys.argv[2])
    overall = collections.Counter(a for a, _ in train).most_common(1)[0][0]
    print(f"| rule (fitted on {len(train)} training expressions) | keys | test accuracy ({len(test)}) |")
    print("|---|---|---|")
    for name, key in RULES:
        seen = collections.defaultdict(collections.Counter)
        for a, v in train:
            seen[key(v)][a] += 1
        hits = sum(a == (seen[key(v)].most_common(1)[0][0] if key(v) in seen else overall) for a, v in test)
        print(f"| {name} | {len(seen)} | {100.0 * hits / len(test):.1f}% |")


if __name__ == "__main__":
    main()
