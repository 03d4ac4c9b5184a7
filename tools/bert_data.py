#!/usr/bin/env python3
"""The real-data sets of docs/bert.md, written from ../shared/data and Debian's
fortunes (nothing downloaded, nothing committed):

    python3 tools/bert_data.py OUT_DIR

  fortunes_{train,valid}.tsv   label<TAB>text: the category of a fortune (8
                               categories of /usr/share/games/fortunes), split
                               by a hash of the text (md5: 80% / 20%)
  punct_{train,valid}.conll    word<TAB>tag per line, a blank line between
                               sentences: Multi30k English (train / val)
                               lower-cased, punctuation removed; the tag says
                               whether the word was capitalised (C / l) and the
                               punctuation after it (_ , . ? ! : ; or none)
  nsp_{train,valid}.tsv        label<TAB>a<TAB>b: is b the line after a (next)
                               or a line of another speech (random), from
                               tinyshakespeare's speeches split by a hash
  pretrain.txt                 text for pre-training from scratch (documents
                               separated by blank lines, a sentence a line):
                               the training speeches of tinyshakespeare, the
                               training fortunes of every category file (the
                               fortune files' other categories too). Nothing
                               from a validation split.
"""
import gzip
import hashlib
import os
import random
import re
import sys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")
FORTUNES = "/usr/share/games/fortunes"
CATEGORIES = ["computers", "food", "law", "love", "medicine", "science", "sports", "startrek"]
PUNCT = ",.?!:;"


def bucket(text):
    """0..99 from the md5 of the text: the split does not depend on file order."""
    return int(hashlib.md5(text.encode("utf-8")).hexdigest()[:8], 16) % 100


def read_fortunes(name):
    raw = open(os.path.join(FORTUNES, name), encoding="utf-8", errors="replace").read()
    entries = []
    for block in raw.split("\n%\n"):
        lines = [l.rstrip() for l in block.strip("\n%").split("\n") if l.strip()]
        if lines:
            entries.append(lines)
    return entries


def one_line(lines):
    return re.sub(r"\s+", " ", " ".join(lines)).strip()


def fortunes(out, pre):
    seen = set()
    rows = {"train": [], "valid": []}
    for cat in CATEGORIES:
        for lines in read_fortunes(cat):
            text = one_line(lines)
            if text in seen or len(text) < 3:
                continue
            seen.add(text)
            split = "valid" if bucket(text) >= 80 else "train"
            rows[split].append(f"{cat}\t{text}")
            if split == "train":
                pre.append(lines)
    others = [n for n in sorted(os.listdir(FORTUNES)) if "." not in n and n not in CATEGORIES]
    for name in others:  # more text for pre-training, none of the held-out fortunes
        for lines in read_fortunes(name):
            text = one_line(lines)
            if text not in seen and bucket(text) < 80 and len(lines) < 40:
                pre.append(lines)
    for split, r in rows.items():
        random.Random(0).shuffle(r)
        write(out, f"fortunes_{split}.tsv", "\n".join(r) + "\n")
    return {k: len(v) for k, v in rows.items()}


def punct_sentence(line):
    """(word, tag) pairs of one caption."""
    pairs = []
    for tok in line.split():
        core = tok.rstrip(PUNCT + "\"'")
        after = tok[len(core):]
        core = core.lstrip("\"'(")
        if not re.search(r"\w", core):
            if pairs and after:  # a lone punctuation mark: attach it to the previous word
                w, t = pairs[-1]
                pairs[-1] = (w, t[0] + next((c for c in after if c in PUNCT), "_"))
            continue
        p = next((c for c in after if c in PUNCT), "_")
        pairs.append((core.lower(), ("C" if core[0].isupper() else "l") + p))
    return pairs


def punct(out):
    sizes = {}
    for split, name in (("train", "train"), ("valid", "val")):
        lines = gzip.open(os.path.join(DATA, "multi30k", f"{name}.en.gz"), "rt", encoding="utf-8").read().splitlines()
        blocks = []
        for line in lines:
            pairs = punct_sentence(line)
            if pairs:
                blocks.append("\n".join(f"{w}\t{t}" for w, t in pairs))
        write(out, f"punct_{split}.conll", "\n\n".join(blocks) + "\n")
        sizes[split] = len(blocks)
    return sizes


def speeches():
    text = open(os.path.join(DATA, "tinyshakespeare", "input.txt"), encoding="utf-8").read()
    docs = []
    for block in text.split("\n\n"):
        lines = [l.strip() for l in block.split("\n") if l.strip()]
        if len(lines) >= 2 and lines[0].endswith(":"):
            lines = lines[1:]  # the speaker's name
        if lines:
            docs.append(lines)
    return docs


def nsp(out, pre):
    docs = speeches()
    split = {"train": [], "valid": []}
    for d in docs:
        split["valid" if bucket("\n".join(d)) >= 80 else "train"].append(d)
    pre.extend(split["train"])
    sizes = {}
    for name, ds in split.items():
        r = random.Random(1 if name == "train" else 2)
        rows = []
        for i, d in enumerate(ds):
            for k in range(len(d) - 1):
                if r.random() < 0.5:
                    rows.append(f"next\t{d[k]}\t{d[k + 1]}")
                else:
                    j = r.randrange(len(ds) - 1)
                    other = ds[j if j < i else j + 1]
                    rows.append(f"random\t{d[k]}\t{r.choice(other)}")
        r.shuffle(rows)
        write(out, f"nsp_{name}.tsv", "\n".join(rows) + "\n")
        sizes[name] = len(rows)
    return sizes


def write(out, name, text):
    with open(os.path.join(out, name), "w", encoding="utf-8") as f:
        f.write(text)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    pre = []
    print("fortunes", fortunes(out, pre))
    print("punctuation", punct(out))
    print("nsp", nsp(out, pre))
    write(out, "pretrain.txt", "\n\n".join("\n".join(d) for d in pre) + "\n")
    print("pretrain.txt", len(pre), "documents,", sum(len(d) for d in pre), "lines")


if __name__ == "__main__":
    main()
