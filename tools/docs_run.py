#!/usr/bin/env python3
"""The docs' commands against the built tformer, so that docs and code cannot drift apart (issue 55).

  docs_run.py TFORMER [--no-run]

1. Every `tformer VERB ...` command in a ```sh block of README.md and docs/*.md (not
   docs/results/, which keeps dated runs as they were typed) is parsed by TFORMER with
   TFORMER_CHECK_ARGS=1: its verb, flags, required flags and values (numbers, choices) must
   be accepted, without running it. Synopses ("[--pooling mean|cls]", "--steps N") and commands
   with shell variables ($COMMON) are skipped.
2. Every block marked runnable, by the line `<!-- runnable -->` just above its ```sh fence,
   runs with `sh -e` in a fresh temporary folder holding a link `tests` to the repository's
   tests/ (their data), with TFORMER's folder first on PATH; it must exit 0 within 300 s.
   Runnable blocks are short: tiny models on the test data. --no-run skips this part.
Prints file:line for each failure and exits 1 when there is one."""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCHERS = {"mpirun", "mpiexec", "time", "env", "timeout", "nice", "taskset", "valgrind"}
PLACEHOLDER = re.compile(r"^(N|X|K|DIR|FILE|TEXT|SRC-TGT|[A-Z][A-Z_]*\.\w+|\.\.\.)$")


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


def commands(first, body):
    """(line number, argv after tformer) of each tformer command in a block."""
    joined, start, buf = [], first, ""
    for k, line in enumerate(body):
        if not buf:
            start = first + k
        buf += line
        if buf.endswith("\\"):
            buf = buf[:-1] + " "
            continue
        joined.append((start, buf))
        buf = ""
    for no, line in joined:
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
            if any(w.startswith("[") or "$" in w or PLACEHOLDER.match(w) for w in argv):
                continue  # a synopsis, or words the shell fills in
            yield no, argv


def doc_paths():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def check_commands(tformer):
    env = dict(os.environ, TFORMER_CHECK_ARGS="1")
    bad, n = [], 0
    for path in doc_paths():
        for first, _, body in blocks(path):
            for no, argv in commands(first, body):
                n += 1
                r = subprocess.run([tformer] + argv, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
                if r.returncode:
                    msg = r.stderr.strip().splitlines()[0] if r.stderr.strip() else "exit %d" % r.returncode
                    bad.append("%s:%d: tformer %s: %s" % (os.path.relpath(path, ROOT), no, " ".join(argv), msg))
    return n, bad


def run_blocks(tformer):
    bad, n = [], 0
    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(tformer)) + os.pathsep + os.environ.get("PATH", ""))
    for path in doc_paths():
        for first, runnable, body in blocks(path):
            if not runnable:
                continue
            n += 1
            with tempfile.TemporaryDirectory(prefix="tformer_docs_") as tmp:
                os.symlink(os.path.join(ROOT, "tests"), os.path.join(tmp, "tests"))
                try:
                    r = subprocess.run(["sh", "-e", "-c", "\n".join(body)], cwd=tmp, env=env, capture_output=True,
                                       text=True, timeout=300, stdin=subprocess.DEVNULL)
                    rc, err = r.returncode, (r.stderr.strip().splitlines() or [""])[-1]
                except subprocess.TimeoutExpired:
                    rc, err = -1, "more than 300 s"
            if rc:
                bad.append("%s:%d: the runnable block exits %d: %s" % (os.path.relpath(path, ROOT), first, rc, err))
    return n, bad


def main():
    args = [a for a in sys.argv[1:] if a != "--no-run"]
    if len(args) != 1:
        sys.exit(__doc__)
    n, bad = check_commands(args[0])
    m, bad_runs = (0, []) if "--no-run" in sys.argv else run_blocks(args[0])
    for b in bad + bad_runs:
        print(b)
    print("docs_run: %d commands parsed, %d runnable blocks run; %d failed" % (n, m, len(bad) + len(bad_runs)))
    sys.exit(1 if bad or bad_runs else 0)


if __name__ == "__main__":
    main()
