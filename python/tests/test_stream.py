"""Model.stream against `tformer stream`: a continual classifier of tokens trained here by tformer.train, and a
model of feature vectors made from it (its embedding and head taken away)."""
import numpy as np
import pytest

import tformer
from conftest import ST_DIR

LINES = ["the cat sat on the mat", "and the dog ran far away", "one two three four"]


def test_stream_of_tokens_equals_the_cli(cli, continual):
    tok_dir, _ = continual
    m = tformer.load(tok_dir)
    assert "stream" in m.capabilities
    want = [line.split("\t") for line in cli(["stream", "--model", tok_dir], "\n".join(LINES) + "\n").splitlines()]
    s = m.stream()
    assert s.labels == ["a.txt", "b.txt"] and s.window == 4 and s.vocab_size > 0
    got = []
    for line in LINES:  # the CLI reads a line at a time and puts a space after it
        got += s.classify(s.feed(line + " "))
    assert len(got) == len(want) == s.steps - s.window + 1
    assert [g["label"] for g in got] == [w[1] for w in want]
    assert [f"{g['score']:.4f}" for g in got] == [w[2] for w in want]
    ids = sum((s.ids(line + " ") for line in LINES), [])
    whole = m.stream(np.array(ids))
    assert whole.shape == (len(want), 2) and whole.dtype == np.float32
    assert np.array_equal(whole, m.stream(" ".join(LINES) + " "))


def test_stream_of_vectors_equals_the_cli(cli, continual):
    _, vec_dir = continual
    x = np.random.default_rng(3).standard_normal((9, 16)).astype(np.float32)
    text = "\n".join(" ".join(f"{v:.9g}" for v in row) for row in x) + "\n"
    m = tformer.load(vec_dir)
    for window in (None, 2):
        args = ["stream", "--model", vec_dir] + ([] if window is None else ["--window", str(window)])
        want = np.array([[float(v) for v in line.split()] for line in cli(args, text).splitlines()])
        got = m.stream(x, window=window)
        assert got.shape == want.shape == (9 - (window or 4) + 1, 16)
        assert np.all(np.abs(got - want) <= 1e-6 * np.abs(want) + 1e-30)  # the CLI prints %.7g
    s = m.stream()
    parts = [s.feed(x[:2]), s.feed(x[2]), s.feed(x[3:7]), s.feed(x[7:])]
    assert [len(p) for p in parts] == [0, 0, 4, 2] and s.steps == 9
    assert np.array_equal(np.concatenate(parts), m.stream(x))  # a state kept between calls


def test_stream_errors(continual):
    tok_dir, vec_dir = continual
    with pytest.raises(tformer.InputError, match=r"\(n, 16\)"):
        tformer.load(vec_dir).stream(np.zeros((3, 15), np.float32))
    with pytest.raises(tformer.InputError, match="text"):
        tformer.load(vec_dir).stream("words")
    with pytest.raises(tformer.InputError, match="step 1 "):
        tformer.load(vec_dir).stream(np.array([[0] * 16, [np.nan] * 16], np.float32))
    m = tformer.load(tok_dir)
    with pytest.raises(tformer.InputError, match="outside the vocabulary"):
        m.stream([1, 2, 10 ** 6])
    with pytest.raises(tformer.InputError, match="ids"):
        m.stream(np.zeros(4, np.float32))
    with pytest.raises(tformer.InputError, match="window"):
        m.stream([1], window=0)
    with pytest.raises(tformer.CapabilityError, match="stream"):
        tformer.load(ST_DIR).stream(np.zeros((1, 16), np.float32))
