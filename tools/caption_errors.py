#!/usr/bin/env python3
"""Where a captioner's object F1 goes (docs/caption.md, "What limits object F1"): each generated caption of
held-out Fashion-MNIST scenes parsed into (garment, cell) pairs and set against the scene's first reference
(which names every item at its absolute cell). Prints precision, recall and F1 over the pairs, the garments
named at a cell that holds another garment (truth -> said, most common first), and the items named at a cell
that holds none. Captions with relations ("above", "left of") are counted as unparsed and score nothing:
use it on the RNN captioners, which say absolute cells.

    python3 tools/caption_errors.py SCENES/captions.tsv GENERATED.tsv

SCENES/captions.tsv: the five references per scene that `tformer train --arch caption --scene-export N`
writes; GENERATED.tsv: `tformer caption --model RUN SCENES/*.png` (path TAB caption).
"""
import collections
import os
import re
import sys


def parse(caption):
    """'a sneaker at the top and a bag on the left' -> [('sneaker', 'top'), ('bag', 'left')], or None."""
    out = []
    for phrase in re.split(r" and | , ", caption.strip()):
        m = re.match(r"an? (\S+) (?:at|on|in) the (.+)$", phrase.strip())
        if not m:
            return None
        out.append((m.group(1), m.group(2)))
    return out


def main(refs_path, generated_path):
    truth = {}
    with open(refs_path, encoding="utf-8") as f:
        for line in f:
            name, caption = line.rstrip("\n").split("\t")
            truth.setdefault(name, parse(caption))
    tp = fp = fn = unparsed = empty_cell = 0
    confusions = collections.Counter()
    with open(generated_path, encoding="utf-8") as f:
        for line in f:
            path, caption = line.rstrip("\n").split("\t")
            t, g = truth[os.path.basename(path)], parse(caption)
            if t is None:
                sys.exit(f"{refs_path}: the first reference of {path} is not in absolute cells")
            if g is None:
                unparsed, g = unparsed + 1, []
            tc, gc = collections.Counter(t), collections.Counter(g)
            hit = sum((tc & gc).values())
            tp, fp, fn = tp + hit, fp + sum(gc.values()) - hit, fn + sum(tc.values()) - hit
            at = {cell: item for item, cell in t}
            for item, cell in g:
                if cell not in at:
                    empty_cell += 1
                elif at[cell] != item:
                    confusions[(at[cell], item)] += 1
    p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    print(f"{tp + fn} items in the references; unparsed captions {unparsed}")
    print(f"precision {p:.3f} recall {r:.3f} F1 {2 * p * r / max(p + r, 1e-12):.3f}")
    print(f"a garment named at a cell holding another: {sum(confusions.values())}; at a cell holding none: {empty_cell}")
    for (want, said), n in confusions.most_common(10):
        print(f"  {want} -> {said}: {n}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
