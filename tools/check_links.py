#!/usr/bin/env python3
"""Check the links of README.md and docs/ (python3 tools/check_links.py [FILE.md ...]).

Every Markdown link or image whose target is a relative path must name a file or folder that
exists, and a `#anchor` (alone, or after a .md path) must be one of the headings of that page as
GitHub names them: lower-cased, punctuation other than '-' and '_' dropped, spaces made '-', a
repeated heading given -1, -2, ... Links to http(s), mailto and other schemes are not fetched.
Text in fenced code blocks, indented code blocks and `code spans` is skipped.

Prints one line per broken link (FILE:LINE: target: why) and exits 1 when there is one; else
prints how many links it checked and exits 0. Python's standard library only.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target "title") and ![alt](target); text may hold one level of brackets
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODESPAN = re.compile(r"(`+)(.+?)\1")


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def lines_outside_code(path):
    """(line number, text) of each line outside fenced and indented code blocks."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fence = None
    prev_blank = True
    in_indented = False
    for n, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            prev_blank = False
            continue
        if m:
            fence = m.group(1)
            continue
        blank = not line.strip()
        if (line.startswith("    ") or line.startswith("\t")) and (prev_blank or in_indented):
            if not line.lstrip().startswith(("-", "*", "|")) or in_indented:
                in_indented = True
                prev_blank = blank
                continue
        if not blank:
            in_indented = False
        prev_blank = blank
        yield n, line


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen = {}
        result = set()
        for _, line in lines_outside_code(path):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            k = seen.get(base, 0)
            seen[base] = k + 1
            result.add(base if k == 0 else "%s-%d" % (base, k))
            result.update(re.findall(r'<a\s+(?:name|id)="([^"]+)"', line))
        _anchors[path] = result
    return _anchors[path]


def targets(path):
    last = 0
    for n, line in lines_outside_code(path):
        starts_block = n != last + 1 or not prev.strip() if last else True
        last, prev = n, line
        line = CODESPAN.sub("", line)
        for m in LINK.finditer(line):
            yield n, m.group(1)
        m = REFDEF.match(line)
        if m and starts_block:  # a definition cannot interrupt a paragraph
            yield n, m.group(1)


def check(path, problems):
    count = 0
    here = os.path.dirname(path)
    for n, target in targets(path):
        if not target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            continue  # http:, https:, mailto:, ...
        count += 1
        file_part, _, anchor = target.partition("#")
        dest = path if not file_part else os.path.normpath(os.path.join(here, file_part))
        where = "%s:%d: %s" % (os.path.relpath(path, ROOT), n, target)
        if file_part.startswith("/"):
            problems.append(where + ": an absolute path")
            continue
        if not os.path.exists(dest):
            problems.append(where + ": no such file")
            continue
        if anchor and dest.endswith(".md") and os.path.isfile(dest):
            if anchor not in anchors(dest):
                problems.append(where + ": no heading #%s in %s" % (anchor, os.path.relpath(dest, ROOT)))
    return count


def main(argv):
    if argv:
        files = [os.path.abspath(a) for a in argv]
    else:
        files = [os.path.join(ROOT, "README.md")]
        for d, _, names in sorted(os.walk(os.path.join(ROOT, "docs"))):
            files += [os.path.join(d, x) for x in sorted(names) if x.endswith(".md")]
    problems = []
    count = sum(check(f, problems) for f in files)
    for p in problems:
        print(p)
    if problems:
        print("%d broken of %d links in %d files" % (len(problems), count, len(files)))
        return 1
    print("%d links in %d files: all resolve" % (count, len(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
