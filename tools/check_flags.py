#!/usr/bin/env python3
"""Every flag that tformer's messages and docs name is a real flag (issue 55).

  check_flags.py TFORMER

The real flags: every verb's --help (train's once per --arch, whose tables
differ), with the aliases the help lists ("also --max-new-tokens, -lc").
Checked against them:
  - each "--flag" inside a C string literal of cli/ and src/ (the error and
    hint messages, the help texts);
  - each "--flag" of README.md and docs/*.md (not docs/results/, which keeps
    dated runs as they were typed) on a line or code span that runs tformer,
    and each code span that is a flag alone (`--max-len`).
Flags of other programs in those places are listed in OTHER_TOOLS below.
Prints file:line for each unknown flag and exits 1 when there is one."""
import glob
import os
import re
import subprocess
import sys

# Flags of other programs that tformer's docs and messages name (pip, mpirun, python, make, ...).
OTHER_TOOLS = {
    "--system-site-packages", "--user", "--np", "--oversubscribe", "--bind-to", "--map-by", "--static", "--libs",
    "--cflags", "--no-print-directory", "--version", "--upgrade", "--index-url", "--no-build-isolation",
    "--break-system-packages", "--allow-run-as-root", "--host", "--report-bindings", "--mca", "--fixtures",
    "--diff", "--change", "--base", "--tags", "--depth", "--recursive", "--prefix", "--quiet",
    # tools/ and tests/ref/ scripts the docs describe
    "--png", "--from-table", "--compare", "--gbs", "--from-csv", "--max-full-gib", "--sdpa-python",
    "--random-sizes", "--check", "--kinds", "--random",
    # the docs' words for a flag in general, and a flag named as refused
    "--flag", "--flags", "--chrf-lowercase",
}

FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?![\w-])")
STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def real_flags(tformer):
    def help_of(args):
        return subprocess.run([tformer] + args + ["--help"], capture_output=True, text=True).stdout

    verbs = re.findall(r"^  ([a-z][a-z-]*) ", help_of([]), re.M)
    flags = {"--help"}
    texts = [help_of([v]) for v in verbs]
    arch = re.search(r"--arch ([a-z0-9|]+)", texts[verbs.index("train")])
    texts += [help_of(["train", "--arch", a]) for a in arch.group(1).split("|")]
    for t in texts:
        for line in t.splitlines():
            m = re.match(r"  (--[a-z0-9-]+)", line)
            if m:
                flags.add(m.group(1))
            also = re.search(r"; also ([^)]*)\)$", line)
            if also:
                flags.update(w.strip() for w in also.group(1).split(","))
    return verbs, flags


def source_flags(root):
    for path in sorted(glob.glob(os.path.join(root, "cli", "*.c")) + glob.glob(os.path.join(root, "src", "**", "*.c"),
                                                                                 recursive=True)):
        for no, line in enumerate(open(path, encoding="utf-8"), 1):
            for lit in STRING.findall(line):
                for f in FLAG.findall(lit):
                    yield os.path.relpath(path, root), no, "--" + f


def doc_flags(root, verbs):
    runs = re.compile(r"\btformer (%s)\b" % "|".join(re.escape(v) for v in verbs))
    paths = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    for path in paths:
        in_block = False
        for no, line in enumerate(open(path, encoding="utf-8"), 1):
            if line.lstrip().startswith("```"):
                in_block = not in_block
                continue
            spans = [line] if in_block and runs.search(line) else []
            if not in_block:
                for span in re.findall(r"`([^`]+)`", line):
                    if runs.search(span) or re.fullmatch(r"--[a-z0-9-]+(?:[ =][^ ]*)?", span):
                        spans.append(span)
            for s in spans:
                for f in FLAG.findall(s):
                    yield os.path.relpath(path, root), no, "--" + f


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    verbs, flags = real_flags(sys.argv[1])
    known = flags | OTHER_TOOLS
    bad = [(p, n, f) for p, n, f in list(source_flags(root)) + list(doc_flags(root, verbs)) if f not in known]
    for p, n, f in bad:
        print("%s:%d: %s is no flag of any tformer verb" % (p, n, f))
    named = len(list(source_flags(root))) + len(list(doc_flags(root, verbs)))
    print("check_flags: %d real flags; %d named in sources and docs, %d unknown" % (len(flags), named, len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
