#!/usr/bin/env python3
"""The baselines of docs/bert.md on the sets tools/bert_data.py writes, with
the metrics tformer finetune prints:

    python tools/bert_baselines.py DATA_DIR [OUT.json]

  fortunes (classification): scikit-learn LogisticRegression on bag-of-words
      counts (CountVectorizer), accuracy and macro-F1 on the valid split
  nsp (pairs): the same on the words of a and of b as separate features
  punct (tagging): the most frequent tag of each word in train (unknown words:
      the most frequent tag), token accuracy, per-tag F1 and macro-F1
"""
import collections
import json
import sys

from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.pipeline import make_pipeline


def read_tsv(path):
    rows = [l.rstrip("\n").split("\t") for l in open(path, encoding="utf-8") if l.strip()]
    return [r[0] for r in rows], [r[1:] for r in rows]


def classify(d, name, join):
    ytr, xtr = read_tsv(f"{d}/{name}_train.tsv")
    yva, xva = read_tsv(f"{d}/{name}_valid.tsv")
    model = make_pipeline(CountVectorizer(), LogisticRegression(max_iter=2000))
    model.fit([join(x) for x in xtr], ytr)
    p = model.predict([join(x) for x in xva])
    return {"accuracy": accuracy_score(yva, p), "macro_f1": f1_score(yva, p, average="macro"), "n_valid": len(yva)}


def pair_words(x):
    return " ".join(["a_" + w for w in x[0].lower().split()] + ["b_" + w for w in x[1].lower().split()])


def read_conll(path):
    sents, cur = [], []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line:
            if cur:
                sents.append(cur)
            cur = []
        else:
            cur.append(tuple(line.split("\t")))
    if cur:
        sents.append(cur)
    return sents


def tagging(d):
    train, valid = read_conll(f"{d}/punct_train.conll"), read_conll(f"{d}/punct_valid.conll")
    counts = collections.defaultdict(collections.Counter)
    overall = collections.Counter()
    for s in train:
        for w, t in s:
            counts[w][t] += 1
            overall[t] += 1
    default = overall.most_common(1)[0][0]
    gold = [t for s in valid for _, t in s]
    pred = [counts[w].most_common(1)[0][0] if w in counts else default for s in valid for w, _ in s]
    tags = sorted(set(gold) | set(pred))
    per_tag = dict(zip(tags, f1_score(gold, pred, labels=tags, average=None, zero_division=0)))
    return {"token_accuracy": accuracy_score(gold, pred),
            "macro_f1": f1_score(gold, pred, labels=sorted(set(gold)), average="macro", zero_division=0),
            "per_tag_f1": per_tag, "n_valid_words": len(gold)}


def main():
    d = sys.argv[1]
    res = {"fortunes": classify(d, "fortunes", lambda x: x[0]), "nsp": classify(d, "nsp", pair_words),
           "punct": tagging(d)}
    print(json.dumps(res, indent=1))
    if len(sys.argv) > 2:
        json.dump(res, open(sys.argv[2], "w"), indent=1)


if __name__ == "__main__":
    main()
