#!/usr/bin/env python3
"""sacreBLEU's answers for tformer's BLEU and chrF.

  bleu_ref.py cases OUT.json
      synthetic corpora (made here from a seed: no data from ../shared) with
      their sacreBLEU scores, for tests/test_bleu.c: perturbed sentences,
      punctuation, numbers, HTML entities, <skipped>, Unicode (umlauts,
      Greek sigma, CJK, symbols, odd whitespace), empty lines, several
      references, every tokenisation (zh: Chinese text with and without
      spaces), smoothing and lower-casing.
  bleu_ref.py check TFORMER HYP REF...
      perturbs HYP several ways and compares `tformer bleu` with sacreBLEU's
      command line, line for line as printed (BLEU and chrF).
Needs sacrebleu (2.x) on this python."""
import json
import random
import subprocess
import sys
import tempfile

import sacrebleu
from sacrebleu.metrics import BLEU, CHRF

WORDS = ("the a man woman dog cat runs sits on in under street park red blue two young old Ein Mann "
         "eine Frau läuft über die Straße groß ß Öl Ärger naïve café ΟΔΟΣ ΣΟΦΟΣ σοφός 東京 北京 "
         "3.14 1,000 10-20 2020. U.S.A. e-mail it's \"quoted\" (paren) [br] {cb} a/b a&b &amp; &quot;x&quot; "
         "&lt;tag&gt; <skipped> $5 100% #1 @home ~tilde ^caret `tick` — – … · ¿qué? ¡sí! € ™ © "
         "İstanbul DİNÇ ǅ ﬁ").split()
# for the zh tokeniser (sacreBLEU's -l xx-zh): CJK, full-width forms, CJK punctuation, the
# characters its mistyped Extension B bounds take in (U+2001-U+2A6D: dashes, arrows, math) and the
# ones next to them (U+2000, U+2A6E), Latin words and numbers between
ZH_WORDS = ("我 爱 北京 天安门 今天 天气 很好 不是 吗 中文 翻译 模型 你好 世界 。 ， ？ ！ 、 （ ） 《 》 「 」 "
            "ＡＢＣ １２３ ｶﾀｶﾅ 한국 ㄅㄆ ㈠ ㌀ ⺀ ⼀ ☃ ✂ ︰ ︐ 丽 𠀀 — … → ∑ ≈ ⨀   ⩮ 𪛖 the cat 3.14 "
            "1,000 e-mail U.S.A. (paren) 東京 2020年 5月").split()
SPACES = [" ", " ", " ", "  ", "\t", "\u00a0", "\u2003", "\u3000", " \u200b"]


def sentence(rng, n, words=WORDS, space=None):
    """n words apart (by SPACES; space: always that one, "" for Chinese written without spaces)."""
    return "".join(rng.choice(words) + ((rng.choice(SPACES) if space is None else space) if i < n - 1 else "")
                   for i in range(n))


def perturb(rng, s):
    w = s.split(" ")
    for _ in range(rng.randint(0, 3)):
        op = rng.randint(0, 3)
        if not w:
            break
        i = rng.randrange(len(w))
        if op == 0:
            del w[i]
        elif op == 1:
            w.insert(i, rng.choice(WORDS))
        elif op == 2 and len(w) > 1:
            j = rng.randrange(len(w))
            w[i], w[j] = w[j], w[i]
        else:
            w[i] = w[i].upper() if rng.random() < 0.5 else w[i] + rng.choice(".,!?;:")
    return " ".join(w) + rng.choice(["", "", " ", "\r", " \t"])


def corpus(rng, n, n_refs, words=WORDS, space=None):
    refs = [[] for _ in range(n_refs)]
    hyps = []
    for _ in range(n):
        base = sentence(rng, rng.randint(0, 14), words, space) if rng.random() > 0.05 else ""
        for r in refs:
            r.append(perturb(rng, base) if rng.random() < 0.7 else base)
        hyps.append(perturb(rng, base) if rng.random() > 0.05 else "")
    return hyps, refs


def score_case(hyps, refs, tokenize, lowercase, smooth):
    bleu = BLEU(tokenize=tokenize, lowercase=lowercase, smooth_method=smooth)
    b = bleu.corpus_score(hyps, refs)
    c = CHRF(lowercase=lowercase).corpus_score(hyps, refs)
    return {"bleu": b.score, "precisions": b.precisions, "bp": b.bp, "ratio": b.ratio, "hyp_len": b.sys_len,
            "ref_len": b.ref_len, "line": str(b), "chrf": c.score}


def cases(out):
    rng = random.Random(2026)
    result = []
    settings = [("13a", False, "exp"), ("13a", True, "exp"), ("intl", False, "exp"), ("none", False, "exp"),
                ("13a", False, "none"), ("13a", False, "floor"), ("13a", False, "add-k"), ("intl", True, "exp")]
    for k in range(24):
        n, n_refs = rng.choice([1, 2, 3, 5, 20, 60]), rng.choice([1, 1, 1, 2, 3])
        hyps, refs = corpus(rng, n, n_refs)
        tok, low, smooth = settings[k % len(settings)]
        result.append({"tokenize": tok, "lowercase": low, "smooth": smooth, "hyps": hyps, "refs": refs,
                       **score_case(hyps, refs, tok, low, smooth)})
    # edge cases: nothing matches, all empty, a hypothesis longer than every reference
    for hyps, refs in [(["x y z"], [["a b c"]]), ([""], [[""]]), (["a b c d e f"], [["a b", "a b c"][:1]]),
                       (["a a a a"], [["a"], ["a a"]]), (["Σ ΟΔΟΣ. ΟΔΟΣ'Σ"], [["σ οδος. οδος'σ"]])]:
        for low in (False, True):
            result.append({"tokenize": "13a", "lowercase": low, "smooth": "exp", "hyps": hyps, "refs": refs,
                           **score_case(hyps, refs, "13a", low, "exp")})
    # sacreBLEU's zh tokeniser, as -l xx-zh picks it
    zh = random.Random(55)
    for k in range(8):
        n, n_refs = zh.choice([1, 3, 20]), zh.choice([1, 2])
        hyps, refs = corpus(zh, n, n_refs, ZH_WORDS, zh.choice(["", " "]))
        low, smooth = (k % 2 == 1), ("exp", "floor")[k % 3 == 2]
        result.append({"tokenize": "zh", "lowercase": low, "smooth": smooth, "hyps": hyps, "refs": refs,
                       **score_case(hyps, refs, "zh", low, smooth)})
    json.dump({"sacrebleu": sacrebleu.__version__, "cases": result}, open(out, "w", encoding="utf-8"),
              ensure_ascii=False, indent=0)
    print(f"{len(result)} cases -> {out}")


def check(tformer, hyp_file, ref_files):
    """tformer bleu against the sacrebleu command line on perturbed copies of HYP."""
    lines = open(hyp_file, encoding="utf-8", newline="\n").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rng = random.Random(7)
    worst = 0.0
    variants = {"as is": lines, "perturbed": [perturb(rng, s) for s in lines],
                "lowered, dropped": [s.lower() if i % 3 else "" for i, s in enumerate(lines)],
                "reversed words": [" ".join(reversed(s.split())) for s in lines]}
    for name, hyps in variants.items():
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False, newline="\n") as f:
            f.write("\n".join(hyps) + "\n")
        for extra in ([], ["--lowercase"], ["--tokenize", "intl"]):
            ours = subprocess.run([tformer, "bleu", "--ref", *ref_files, "--metrics", "bleu", "chrf", *extra],
                                  stdin=open(f.name, "rb"), capture_output=True, text=True)
            if ours.returncode:
                sys.exit(f"tformer bleu failed: {ours.stderr}")
            sb_args = ["-m", "bleu", "chrf", "-f", "text", "-w", "2"]
            if extra == ["--lowercase"]:
                sb_args += ["-lc", "--chrf-lowercase"]  # sacreBLEU lower-cases chrF on its own flag
            if extra[:1] == ["--tokenize"]:
                sb_args += ["-tok", extra[1]]
            sb = subprocess.run([sys.executable, "-m", "sacrebleu", *ref_files, "-i", f.name, *sb_args],
                                capture_output=True, text=True, check=True).stdout.strip().splitlines()
            theirs_bleu = sb[0].split(" = ", 1)[1]
            theirs_chrf = float(sb[1].split(" = ", 1)[1])
            ob, oc = ours.stdout.strip().splitlines()
            ours_bleu = ob.split(" = ", 1)[1]
            ok = ours_bleu == theirs_bleu and abs(float(oc.split(" = ")[1]) - theirs_chrf) < 0.005
            print(f"{name:>18} {' '.join(extra) or 'default':>15}: tformer {ob} | chrF2 {oc.split(' = ')[1]}"
                  f"{'' if ok else '   <-- sacreBLEU: BLEU = ' + theirs_bleu + f' chrF2 = {theirs_chrf}'}")
            if not ok:
                worst = 1
    if worst:
        sys.exit("tformer bleu differs from sacreBLEU")
    print(f"{len(variants) * 3} comparisons with sacreBLEU {sacrebleu.__version__}: every printed figure equal")


if __name__ == "__main__":
    if sys.argv[1] == "cases":
        cases(sys.argv[2])
    elif sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        sys.exit(__doc__)
