"""make python-test-sanitize: LeakSanitizer's reports (LSAN_OPTIONS log_path=DIR/lsan: one file per process
that leaked) read after the tests, failing on any leak whose stack passes through tformer's code.

Debian's python3 is built without frame pointers, so a stack that starts in the interpreter (its objects,
which it does not free at exit) ends there after a frame or two; a stack that starts in the library or the
extension (built with -fno-omit-frame-pointer) names them, whatever called them. A suppression file cannot
tell the two apart (a suppression matches any frame, and the library's stacks end in the interpreter's
frames too), hence this check. The interpreter's leaks are counted, not failed.

    python lsan_check.py DIR
"""
import glob
import os
import re
import sys

OURS = re.compile(r"_tformer\.|/tformer/|\btf_[a-z]|\bmodel_[a-z_]+ |\bmodule_[a-z_]+ |\bbuffer_new\b")


def reports(text):
    """The leak reports of one log: lists of stack lines, one list per 'Direct/Indirect leak of' block."""
    blocks, cur = [], None
    for line in text.splitlines():
        if re.match(r"\s*(Direct|Indirect) leak of", line):
            cur = [line.strip()]
            blocks.append(cur)
        elif cur is not None and re.match(r"\s*#\d+ ", line):
            cur.append(line.strip())
        elif cur is not None and not line.strip():
            cur = None
    return blocks


def main(folder):
    logs = sorted(glob.glob(os.path.join(folder, "lsan*")))
    ours, theirs = [], 0
    for path in logs:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if "ERROR: AddressSanitizer" in text or "runtime error:" in text:
            ours.append(f"{path}: a sanitizer error\n{text}")
        for block in reports(text):
            if any(OURS.search(line) for line in block[1:]):
                ours.append(f"{path}:\n  " + "\n  ".join(block))
            else:
                theirs += 1
    print(f"lsan check: {len(logs)} process(es) reported leaks; {theirs} report(s) of the interpreter's own "
          f"objects, {len(ours)} through tformer's code")
    for r in ours:
        print(r)
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
