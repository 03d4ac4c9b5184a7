#!/usr/bin/env python3
"""BLEU the way tokenised-BLEU anchors report it, next to sacreBLEU's default.

fairseq-generate and multi-bleu.perl score Moses-tokenised text as it is (and Multi30k set-ups
often lower-case it first); sacreBLEU's default detokenised, cased 13a figure is not comparable
one to one. This scores one hypothesis file against its reference five ways, so a tokenised
anchor (fairseq's transformer_tiny: 41.0 on Multi30k en-de) can be read against our figure:

    python3 tools/tokenised_bleu.py HYP REF [--lang de]

Needs sacrebleu and sacremoses (PyPI). Prints one line per way: sacreBLEU's default, lower-cased,
Moses-tokenised (cased), Moses-tokenised lower-cased, and that with words split at dashes (as
fairseq's compound_split_bleu.sh), each with --tokenize none after Moses.
"""
import argparse
import sys

try:
    import sacrebleu
    from sacremoses import MosesTokenizer
except ImportError as e:
    sys.exit(f"tokenised_bleu: {e.name} is missing (python3 -m pip install sacrebleu sacremoses)")


def read_lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]
    except (OSError, UnicodeDecodeError) as e:
        sys.exit(f"tokenised_bleu: {path}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hyp")
    ap.add_argument("ref")
    ap.add_argument("--lang", default="de", help="Moses tokeniser language (default de)")
    a = ap.parse_args()
    hyp, ref = read_lines(a.hyp), read_lines(a.ref)
    if len(hyp) != len(ref):
        sys.exit(f"tokenised_bleu: {a.hyp} has {len(hyp)} lines, {a.ref} has {len(ref)}")
    mt = MosesTokenizer(lang=a.lang)

    def tok(lines, dashes=False):
        return [mt.tokenize(s, escape=False, return_str=True, aggressive_dash_splits=dashes) for s in lines]

    thyp, tref = tok(hyp), tok(ref)
    dhyp, dref = tok(hyp, True), tok(ref, True)
    rows = [
        ("sacreBLEU default (cased, detokenised, 13a)", sacrebleu.corpus_bleu(hyp, [ref])),
        ("sacreBLEU lower-cased (13a)", sacrebleu.corpus_bleu(hyp, [ref], lowercase=True)),
        ("Moses-tokenised, cased (as fairseq-generate)", sacrebleu.corpus_bleu(thyp, [tref], tokenize="none", force=True)),
        ("Moses-tokenised, lower-cased", sacrebleu.corpus_bleu(thyp, [tref], tokenize="none", lowercase=True, force=True)),
        ("... and compounds split at dashes, lower-cased", sacrebleu.corpus_bleu(dhyp, [dref], tokenize="none", lowercase=True, force=True)),
    ]
    for name, b in rows:
        print(f"{name:46s} {b.score:6.2f}  {'/'.join(f'{p:.1f}' for p in b.precisions)} BP {b.bp:.3f}"
              f" hyp/ref {b.sys_len}/{b.ref_len}")


if __name__ == "__main__":
    main()
