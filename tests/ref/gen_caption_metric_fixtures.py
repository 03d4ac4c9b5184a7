#!/usr/bin/env python3
"""Caption metric fixtures for tests/test_caption_metrics.c: synthetic corpora scored by
pycocoevalcap (PyPI) -- CIDEr-D (its Cider) and BLEU-4 (its Bleu(4), "closest" reference length).

    build/hfvenv/bin/python tests/ref/gen_caption_metric_fixtures.py --out tests/fixtures_caption_metrics/corpora.json
    build/hfvenv/bin/python tests/ref/gen_caption_metric_fixtures.py --out FILE --seed S --random 40

Each corpus: images with one hypothesis and 1 to 6 references (5 in most, as COCO's), words from
a small vocabulary so that n-grams repeat across images (document frequencies above 1), lengths 1
to 14 (a one-word caption has no bigram: CIDEr-D's length 0), plus fixed corner cases: one image, a
hypothesis equal to its references, no shared word, repeated words, an empty hypothesis (length 0, where a
sentence of n words has n - 1: the length is its bigrams). Pre-tokenised text: words
joined by single spaces (pycocoevalcap's scorers split at whitespace). BLEU-4 is written only
where every order has a match in the corpus (pycocoevalcap's 1e-9 guards decide the rest).
"""
import argparse
import contextlib
import io
import json
import random

from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.bleu.bleu_scorer import BleuScorer
from pycocoevalcap.cider.cider import Cider

WORDS = ["a", "the", "shirt", "bag", "sneaker", "dress", "above", "left", "right", "of", "and", "dark", "coat",
         "boot", "on", "below"]


def sentence(r, vocab, lo=1, hi=14):
    return " ".join(r.choice(vocab) for _ in range(r.randint(lo, hi)))


def random_corpus(r):
    vocab = WORDS[: r.randint(4, len(WORDS))]
    n = r.randint(1, 25)
    hyps, refs = [], []
    for _ in range(n):
        k = 5 if r.random() < 0.7 else r.randint(1, 6)
        rs = [sentence(r, vocab) for _ in range(k)]
        h = r.choice(rs) if r.random() < 0.2 else sentence(r, vocab)
        hyps.append(h)
        refs.append(rs)
    return hyps, refs


def fixed_corpora():
    return [
        (["a shirt above a bag"], [["a shirt above a bag", "a bag below a shirt"]]),
        (["a dark coat on the left"], [["a dark coat on the left"] * 5]),
        (["boot boot boot boot", "a dress"], [["a sneaker and a bag", "the dress"], ["a dress", "dress", "a dress a dress"]]),
        (["shirt", "bag", "a bag"], [["shirt"], ["a bag on the right", "bag"], ["the bag", "a bag"]]),
        (["", "a coat on the left of the bag"], [["a bag", "the bag on the right"], ["a coat left of a bag"] * 5]),
        (["x y z w v", "the coat"], [["a b c d e"], ["the coat is dark", "a coat", "the dark coat", "coat", "the coat"]]),
    ]


def score(hyps, refs):
    gts = {i: rs for i, rs in enumerate(refs)}
    res = {i: [h] for i, h in enumerate(hyps)}
    cider, per = Cider().compute_score(gts, res)
    out = {"hyps": hyps, "refs": refs, "cider": float(cider), "cider_scores": [float(x) for x in per]}
    with contextlib.redirect_stdout(io.StringIO()):
        b, _ = Bleu(4).compute_score(gts, res)
    # BLEU-4 only where each order matched somewhere (else pycocoevalcap's guards, not the counts, decide)
    s = BleuScorer(n=4)
    for i in range(len(hyps)):
        s += (hyps[i], refs[i])
    if all(sum(t["correct"][k] for t in s.ctest) > 0 for k in range(4)):
        out["bleu4"] = float(b[3])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=58)
    ap.add_argument("--random", type=int, default=30)
    a = ap.parse_args()
    r = random.Random(a.seed)
    corpora = [score(h, rs) for h, rs in fixed_corpora()]
    corpora += [score(*random_corpus(r)) for _ in range(a.random)]
    with open(a.out, "w") as f:
        json.dump({"seed": a.seed, "corpora": corpora}, f, indent=1)
    print(f"wrote {a.out}: {len(corpora)} corpora, {sum('bleu4' in c for c in corpora)} with BLEU-4")


if __name__ == "__main__":
    main()
