#!/usr/bin/env python3
"""The docs' commands against the built tformer, so that docs and code cannot drift apart (issue 55).

  docs_run.py TFORMER [--no-run] [--self-test]

1. Every `tformer VERB ...` command in a ```sh block of README.md and docs/*.md (not
   docs/results/, which keeps dated runs as they were typed) is parsed by TFORMER with
   TFORMER_CHECK_ARGS=1: its verb, flags, required flags and values (numbers, choices) must
   be accepted, without running it. Synopses ("[--pooling mean|cls]", "--steps N") and commands
   with shell variables ($COMMON) are skipped.
2. README.md's CLI examples (each `tformer ...` line of its ```sh blocks) run, one after the
   other, in one temporary folder, on tiny settings that this file lists in README_CASES: before
   an example, its setup makes what it reads (a small text, a tiny model, a few idx images
   written here); the flags of its `tiny` row are added at the end of each `tformer VERB`
   command line it runs (fewer steps, a smaller model: later flags win), and its `paths` stand in
   for data this machine may lack (/usr/share/datasets/fashion-mnist: 64 + 16 idx images). An
   example with no row fails; one is skipped only with a reason in its row, printed.
3. Every block of docs/*.md marked runnable, by the line `<!-- runnable -->` just above its
   ```sh fence, runs with `sh -e` in a fresh temporary folder the same way, the whole block at
   once, with the row of DOC_CASES whose file and first command match it (none: as written).
Each folder holds links `tests` and `tools` to the repository's (their data and scripts), and
`build/tformer` and, first on PATH, `tformer`: a script that adds the row's tiny flags and runs
TFORMER. Each command must exit 0 within 300 s. --no-run skips 2 and 3. --self-test checks
the runner itself: a README copy with one example's flag renamed (--tokenizer to --tokeniser)
must fail, naming the line. Prints file:line for each failure and exits 1 when there is one."""
import glob
import gzip
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCHERS = {"mpirun", "mpiexec", "time", "env", "timeout", "nice", "taskset", "valgrind"}
PLACEHOLDER = re.compile(r"^(N|X|K|DIR|FILE|TEXT|SRC-TGT|[A-Z][A-Z_]*\.\w+|\.\.\.)$")
TIMEOUT = 300


# ---------------------------------------------------------------- tiny data, written on the fly

def write_idx(folder, n_train=64, n_test=16, side=28):
    """Fashion-MNIST's four files in folder, gzip'ed: n images of side x side, 10 classes (a band per class)."""
    os.makedirs(folder, exist_ok=True)
    for split, n in (("train", n_train), ("t10k", n_test)):
        labels = [i % 10 for i in range(n)]
        pixels = bytearray()
        for i, c in enumerate(labels):
            for y in range(side):
                for x in range(side):
                    band = (y * 10 // side) == c
                    pixels.append((200 if band else 20) + (x * 7 + y * 3 + i) % 31)
        with gzip.open(os.path.join(folder, "%s-images-idx3-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, side, side) + bytes(pixels))
        with gzip.open(os.path.join(folder, "%s-labels-idx1-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">II", 0x801, n) + bytes(labels))


def write_digits(path, n=40):
    """scikit-learn's digits.csv, gzip'ed: 64 pixels 0..16 and a label a line."""
    rows = [",".join(str((i * 5 + k * (i % 10 + 1)) % 17) for k in range(64)) + ",%d" % (i % 10) for i in range(n)]
    with gzip.open(path, "wt") as f:
        f.write("\n".join(rows) + "\n")


EN = ["A man rides a horse.", "Two dogs run in the park.", "A woman reads a book.", "The cat sleeps on the mat.",
      "Children play in the snow.", "A boy kicks a ball."]
DE = ["Ein Mann reitet ein Pferd.", "Zwei Hunde rennen im Park.", "Eine Frau liest ein Buch.",
      "Die Katze schläft auf der Matte.", "Kinder spielen im Schnee.", "Ein Junge kickt einen Ball."]


def write(path, lines, gz=False, repeat=1):
    text = ("\n".join(lines) + "\n") * repeat
    with (gzip.open(path, "wt", encoding="utf-8") if gz else open(path, "w", encoding="utf-8")) as f:
        f.write(text)


def parallel(tmp, names, gz=False, repeat=1):
    """Line-aligned English and German sentences under names ("train.en", "train.de", ...), repeat times."""
    for name in names:
        write(os.path.join(tmp, name), EN if name.endswith(".en") or name.endswith(".en.gz") else DE, gz, repeat)


# ---------------------------------------------------------------- what each example needs

class Case:
    """How a README example or a runnable doc block runs: setup (Python callables of the folder, then shell
    lines run with $TFORMER the real binary), tiny ({verb: flags added at the end of each such command}),
    paths ({a path in the text: what stands in for it}), skip (a reason: not run)."""

    def __init__(self, match, setup=(), tiny=None, paths=None, skip=None):
        self.match, self.setup, self.tiny, self.paths, self.skip = match, setup, tiny or {}, paths or {}, skip

    def said(self):
        parts = ["%s +%s" % (v, f) for v, f in self.tiny.items()]
        parts += ["%s -> %s" % (a, b) for a, b in self.paths.items()]
        return "; ".join(parts)


FMNIST = "/usr/share/datasets/fashion-mnist"
TINY_GPT = "--steps 20 --n-layer 1 --n-head 2 --d-model 32 --context 32 --batch 8 --eval-every 10 --eval-batches 2 --log-every 10"
TINY_VIT = "--steps 3 --n-layer 1 --n-head 2 --d-model 16 --batch 8 --eval-every 3 --eval-batches 1 --log-every 1"
TINY_S2S_FLAGS = ("--steps 4 --d-model 16 --n-head 2 --d-ff 32 --n-encoder-layers 1 --n-decoder-layers 1 --context 64 "
                  "--max-len 64 --batch-tokens 512 --eval-every 2 --checkpoint-every 2 --val-bleu 2 --warmup 1 "
                  "--log-every 2")


def tiny_s2s_run(out):
    """A seq2seq run folder at out/ (out/best), on the sentences above, for translate."""
    return ('rm -rf %s && "$TFORMER" train --arch seq2seq --src test.en --tgt test.de --valid-src test.en '
            "--valid-tgt test.de --out %s %s 2>/dev/null" % (out, out, TINY_S2S_FLAGS))


TINY_S2S_RUN = tiny_s2s_run("run")
ST = "$ROOT/tests/fixtures_distilbert_st/tiny_distilbert_st"

# README.md's examples in order, each matched by the start of its command line.
README_CASES = [
    Case("tformer train --data input.txt",
         setup=['cp "$ROOT/tests/data/unicode_stress.txt" input.txt'], tiny={"train": TINY_GPT}),
    Case("tformer generate --model run/"),
    Case("tformer embed --model all-MiniLM-L6-v2/",  # the PyPI package's folder may be absent: a tiny one
         setup=['ln -s "%s" all-MiniLM-L6-v2' % ST, 'printf "A man rides a bike.\\nTwo dogs run.\\n" > sentences.txt']),
    Case("tformer translate --model mt_run/best",
         setup=[lambda tmp: parallel(tmp, ["test.en", "test.de"]), tiny_s2s_run("mt_run")]),
    Case("tformer train --arch vit --data-dir " + FMNIST, setup=[lambda tmp: write_idx(os.path.join(tmp, "fmnist"))],
         tiny={"train": TINY_VIT}, paths={FMNIST: "fmnist"}),
    Case("tformer classify --model vit_run/ --data-dir " + FMNIST, paths={FMNIST: "fmnist"}),
    Case("tformer hf-run --model gpt2/",
         setup=['ln -s "$ROOT/tests/fixtures_gpt2/tiny_gelu_new" gpt2', 'printf "1 2 3\\n4 5 6\\n" > ids.txt',
                '"$TFORMER" convert ids.txt I.safetensors --name input_ids 2>/dev/null']),
]

# images a classifier reads: 28x28 grey PNGs made from the idx images
PNGS = ['for f in shoe coat photo ankle_boot; do "$TFORMER" convert fmnist/t10k-images-idx3-ubyte.gz $f.png '
        '--index 1 2>/dev/null; done']
VISION = [lambda tmp: write_idx(os.path.join(tmp, "fmnist")), lambda tmp: write_digits(os.path.join(tmp, "digits.csv.gz"))]
TINY_VIT_RUN = '"$TFORMER" train --arch vit --data-dir fmnist --out vit_run ' + TINY_VIT + " 2>/dev/null"

# docs/*.md's runnable blocks that need more than the repository's files, by file and the start of the first command.
DOC_CASES = [
    Case(("docs/vision.md", "tformer train --arch vit --data-dir " + FMNIST + " --out vit_run/"),
         setup=VISION + PNGS, tiny={"train": TINY_VIT}, paths={FMNIST: "fmnist"}),
    Case(("docs/vision.md", "tformer train --arch vit --stem conv"), setup=VISION, tiny={"train": TINY_VIT},
         paths={FMNIST: "fmnist"}),
    Case(("docs/vision.md", "tformer classify --model vit_run/ --top-k 3"), setup=VISION + PNGS + [TINY_VIT_RUN]),
    Case(("docs/bert.md", "tformer finetune --model bert-folder/"),
         setup=['ln -s "$ROOT/tests/fixtures_distilbert_st/tiny_distilbert_mlm" bert-folder',
                'printf "a fine film\\tpos\\na dull film\\tneg\\ngood\\tpos\\nbad\\tneg\\n" > train.tsv',
                "cp train.tsv valid.tsv", 'printf "a fine film\\nbad\\n" > texts.txt'],
         tiny={"finetune": "--steps 2 --batch 2 --eval-every 2 --eval-batches 1"}),
    Case(("docs/translation.md", "tformer tokenizer-train --type byte-bpe --vocab-size 8000"),
         setup=[lambda tmp: parallel(tmp, ["train.en.gz", "train.de.gz", "val.en.gz", "val.de.gz"], gz=True),
                lambda tmp: parallel(tmp, ["test.en", "test.de"])],
         tiny={"train": TINY_S2S_FLAGS + " --keep-checkpoints 2 --average-last 2", "tokenizer-train": "--vocab-size 300"}),
    Case(("docs/translation.md", "tformer translate --model run --beam 5 --attention-png"),
         setup=[lambda tmp: parallel(tmp, ["test.en", "test.de"]), TINY_S2S_RUN]),
    Case(("docs/translation.md", "tformer bleu --ref test.de"),
         setup=[lambda tmp: parallel(tmp, ["test.de", "ref1.de", "ref2.de", "hyp.de"])]),
    Case(("docs/continual.md", "tformer train --arch continual"),
         setup=[lambda tmp: parallel(tmp, ["train.en.gz", "train.de.gz", "val.en.gz", "val.de.gz"], gz=True, repeat=4)],
         tiny={"train": "--steps 3 --d-model 16 --n-head 2 --d-ff 32 --n-layer 1 --batch 4 --warmup 1"}),
]


# ---------------------------------------------------------------- the docs' blocks and commands

def blocks(path):
    """(first line number, runnable, [lines]) of each ```sh block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if re.match(r"^\s*```(sh|bash|shell)\s*$", lines[i]):
            runnable = i > 0 and lines[i - 1].strip() == "<!-- runnable -->"
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            yield i + 2, runnable, lines[i + 1:j]
            i = j
        i += 1


def joined(first, body):
    """(line number, text) of each command line of a block, continuation lines joined."""
    out, start, buf = [], first, ""
    for k, line in enumerate(body):
        if not buf:
            start = first + k
        buf += line
        if buf.endswith("\\"):
            buf = buf[:-1] + " "
            continue
        out.append((start, buf))
        buf = ""
    return out


def commands(first, body, synopses=False):
    """(line number, argv after tformer) of each tformer command in a block (synopses: those with placeholders
    or shell variables too)."""
    for no, line in joined(first, body):
        line = re.sub(r"\s\d*(>>?|<)&?\s*\S+", " ", " " + line)  # redirections
        for part in re.split(r"\s(?:\|\|?|&&|;)\s", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                continue
            at = next((i for i, w in enumerate(words) if w == "tformer" or w.endswith("/tformer")), None)
            if at is None or at + 1 >= len(words):
                continue
            # the command itself, not a script given tformer's path: only VAR=value or a launcher before it
            if at and not (all("=" in w for w in words[:at]) or words[0] in LAUNCHERS):
                continue
            argv = words[at + 1:]
            if not synopses and any(w.startswith("[") or "$" in w or PLACEHOLDER.match(w) for w in argv):
                continue  # a synopsis, or words the shell fills in
            yield no, argv


def doc_paths(root):
    return [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))


def check_commands(tformer, root):
    env = dict(os.environ, TFORMER_CHECK_ARGS="1")
    bad, n = [], 0
    for path in doc_paths(root):
        for first, _, body in blocks(path):
            for no, argv in commands(first, body):
                n += 1
                r = subprocess.run([tformer] + argv, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
                if r.returncode:
                    msg = r.stderr.strip().splitlines()[0] if r.stderr.strip() else "exit %d" % r.returncode
                    bad.append("%s:%d: tformer %s: %s" % (os.path.relpath(path, root), no, " ".join(argv), msg))
    return n, bad


# ---------------------------------------------------------------- running them

def wrapper(tmp, tformer, tiny):
    """tmp/.bin/tformer and tmp/build/tformer: the real binary with the tiny flags of the command's verb at the end."""
    cases = "".join('%s) set -- "$@" %s ;;\n' % (verb, flags) for verb, flags in tiny.items())
    text = '#!/bin/sh\ncase "$1" in\n%s*) ;;\nesac\nexec %s "$@"\n' % (cases, shlex.quote(tformer))
    for d in (".bin", "build"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
        p = os.path.join(tmp, d, "tformer")
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, 0o755)


def sh(script, tmp, env):
    """Exit status and what stderr said last of `sh -e -c script` in tmp: its last line from tformer ("tformer
    VERB: ...", not the usage line after it), else its last line."""
    try:
        r = subprocess.run(["sh", "-e", "-c", script], cwd=tmp, env=env, capture_output=True, text=True,
                           timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        lines = r.stderr.strip().splitlines() or [""]
        return r.returncode, next((x for x in reversed(lines) if x.startswith("tformer ")), lines[-1])
    except subprocess.TimeoutExpired:
        return -1, "more than %d s" % TIMEOUT


def prepare(case, tmp, tformer, env):
    """The case's setup in tmp and its wrapper; (status, message) of a setup step that failed, else (0, "")."""
    wrapper(tmp, tformer, case.tiny if case else {})
    for step in case.setup if case else ():
        if callable(step):
            step(tmp)
            continue
        rc, err = sh(step, tmp, env)
        if rc:
            return rc, "its setup (%s) exits %d: %s" % (step, rc, err)
    return 0, ""


def folder(prefix):
    tmp = tempfile.mkdtemp(prefix=prefix)
    for name in ("tests", "tools"):
        os.symlink(os.path.join(ROOT, name), os.path.join(tmp, name))
    return tmp


def run_env(tmp, tformer):
    path = os.path.join(tmp, ".bin") + os.pathsep + os.environ.get("PATH", "")
    return dict(os.environ, PATH=path, TFORMER=os.path.abspath(tformer), ROOT=ROOT)


def text_of(case, script):
    for a, b in (case.paths.items() if case else ()):
        script = script.replace(a, b)
    return script


def readme_examples(tformer, root, log, only=None):
    """README.md's CLI examples in order (only: the one of that line), each with its README_CASES row; (run,
    skipped, failures)."""
    path = os.path.join(root, "README.md")
    examples = [(no, line) for first, _, body in blocks(path) for no, line in joined(first, body)
                if any(True for _ in commands(no, [line], synopses=True))]
    bad, n, skipped = [], 0, []
    tmp = folder("tformer_docs_readme_")
    try:
        env = run_env(tmp, tformer)
        for no, line in examples:
            if only and no != only:
                continue
            where = "README.md:%d" % no
            case = next((c for c in README_CASES if line.strip().startswith(c.match)), None)
            if not case:
                bad.append("%s: a CLI example without a row in tools/docs_run.py's README_CASES (what it needs to "
                           "run on tiny settings): %s" % (where, line.strip()))
                continue
            if case.skip:
                skipped.append("%s: skipped: %s" % (where, case.skip))
                continue
            rc, err = prepare(case, tmp, tformer, env)
            if not rc:
                rc, err = sh(text_of(case, line), tmp, env)
                err = "exits %d: %s" % (rc, err) if rc else ""
            n += 1
            log("  %s %s%s" % (where, case.match, " [%s]" % case.said() if case.said() else ""))
            if rc:
                bad.append("%s: the README example `%s` %s" % (where, line.split("#")[0].strip(), err))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return n, skipped, bad


def doc_case(rel, body):
    first = next((line.strip() for line in body if line.strip() and not line.strip().startswith("#")), "")
    return next((c for c in DOC_CASES if c.match[0] == rel and first.startswith(c.match[1])), None)


def run_blocks(tformer, root, log):
    bad, n, used = [], 0, set()
    for path in doc_paths(root)[1:]:
        rel = os.path.relpath(path, root)
        for first, runnable, body in blocks(path):
            if not runnable:
                continue
            n += 1
            case = doc_case(rel, body)
            used.add(id(case))
            tmp = folder("tformer_docs_")
            try:
                env = run_env(tmp, tformer)
                rc, err = prepare(case, tmp, tformer, env)
                if not rc:
                    rc, err = sh(text_of(case, "\n".join(body)), tmp, env)
                    err = "exits %d: %s" % (rc, err) if rc else ""
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            log("  %s:%d runnable%s" % (rel, first, " [%s]" % case.said() if case and case.said() else ""))
            if rc:
                bad.append("%s:%d: the runnable block %s" % (rel, first, err))
    bad += ["tools/docs_run.py: the DOC_CASES row %s matches no runnable block (unmarked, or its first command "
            "changed)" % (c.match,) for c in DOC_CASES if id(c) not in used]
    return n, bad


def self_test(tformer):
    """A README copy with --tokenizer renamed in its first example must fail, naming that line."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    at = text.find("tformer train --data input.txt --tokenizer char")
    if at < 0:
        return ["self-test: README.md has no `tformer train --data input.txt --tokenizer char` to rename a flag of"]
    no = text.count("\n", 0, at) + 1
    root = tempfile.mkdtemp(prefix="tformer_docs_self_")
    try:
        with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as f:
            f.write(text.replace("--tokenizer char", "--tokeniser char", 1))
        _, _, bad = readme_examples(tformer, root, lambda s: None, only=no)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    want = "README.md:%d: the README example `tformer train --data input.txt --tokeniser char" % no
    if not any(b.startswith(want) and "unknown option '--tokeniser'" in b for b in bad):
        return ["self-test: a README example with a renamed flag did not fail as it should; the failures: %s" % bad]
    return []


def main():
    args = [a for a in sys.argv[1:] if a not in ("--no-run", "--self-test")]
    if len(args) != 1:
        sys.exit(__doc__)
    tformer = os.path.abspath(args[0])
    if "--self-test" in sys.argv:
        bad = self_test(tformer)
        print("\n".join(bad + ["docs_run --self-test: %s" % ("failed" if bad else "a renamed flag in a README "
                                                                "example fails, naming its line")]))
        sys.exit(1 if bad else 0)
    n, bad = check_commands(tformer, ROOT)
    skipped, m, k = [], 0, 0
    if "--no-run" not in sys.argv:
        m, skipped, more = readme_examples(tformer, ROOT, print)
        k, even_more = run_blocks(tformer, ROOT, print)
        bad += more + even_more
    for line in skipped + bad:
        print(line)
    print("docs_run: %d commands parsed, %d README examples and %d runnable blocks run on tiny settings (%d skipped); "
          "%d failed" % (n, m, k, len(skipped), len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
