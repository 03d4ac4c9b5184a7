"""Model.tag and Model.answer against `tformer predict --json` on folders fine-tuned here (tag and span heads
on the committed tiny DistilBERT): the same labels word for word, the same answers with their byte offsets turned into
character offsets of the context; bad inputs and the wrong head refused."""
import json

import pytest

import tformer

from conftest import ROOT

BASE = f"{ROOT}/tests/fixtures_distilbert_st/tiny_distilbert_mlm"


@pytest.fixture(scope="module")
def heads(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("heads")
    (d / "tag.txt").write_text("the\tO\ncat\tB\nsat\tO\n\nthe\tO\ndog\tB\nran\tO\n\n")
    span = {"context": "paris is the capital of france", "question": "what is the capital",
            "answer_start": 0, "answer": "paris"}
    (d / "span.jsonl").write_text(json.dumps(span) + "\n")
    cli(["finetune", "--model", BASE, "--task", "tag", "--train", str(d / "tag.txt"), "--valid", str(d / "tag.txt"),
         "--out", str(d / "tag"), "--steps", "2", "--threads", "1"])
    cli(["finetune", "--model", BASE, "--task", "span", "--train", str(d / "span.jsonl"), "--valid",
         str(d / "span.jsonl"), "--out", str(d / "span"), "--steps", "2", "--threads", "1"])
    return d


def test_tag_equals_the_cli(cli, heads):
    texts = ["the cat sat on the mat", "a  dog\tran", "", "the " * 40]
    m = tformer.load(heads / "tag")
    assert "tag" in m.capabilities and "classify-text" not in m.capabilities
    got = m.tag(texts)
    lines = [" ".join(t.split()) for t in texts if t.split()]
    want = [json.loads(x)["tags"] for x in cli(["predict", "--model", str(heads / "tag"), "--json"],
                                                "\n".join(lines) + "\n").splitlines()]
    assert [[w for w, _ in g] for g in got] == [t.split() for t in texts]
    assert [[lab for _, lab in g] for g in got if g] == want
    assert None in [lab for _, lab in got[3]]  # 40 words past the tiny model's 12 ids
    assert m.tag(texts[1]) == got[1]  # a str: its one list
    with pytest.raises(tformer.InputError, match=r"texts\[1\] is int"):
        m.tag(["a", 3])
    with pytest.raises(tformer.CapabilityError, match=r"cannot answer"):
        m.answer("q", "c")


def test_answer_equals_the_cli(cli, heads):
    qs = ["what is the capital", "où est le café"]
    cs = ["paris is the capital of france", "le café est à paris, près du café"]
    m = tformer.load(heads / "span")
    got = m.answer(qs, cs)
    out = cli(["predict", "--model", str(heads / "span"), "--json"],
              "".join(json.dumps({"question": q, "context": c}) + "\n" for q, c in zip(qs, cs)))
    for g, line, c in zip(got, out.splitlines(), cs):
        want = json.loads(line)
        b = c.encode("utf-8")
        assert g["answer"] == want["answer"] == c[g["start"]:g["end"]]
        assert b[want["start"]:want["end"]].decode("utf-8") == want["answer"]
        assert len(b[:want["start"]].decode("utf-8")) == g["start"]
    assert m.answer(qs[1], cs[1]) == got[1]
    with pytest.raises(tformer.InputError, match=r"2 questions and 1 contexts"):
        m.answer(qs, cs[:1])
    with pytest.raises(tformer.CapabilityError, match=r"cannot tag"):
        m.tag("a b")


def test_answer_offsets_count_characters(heads):
    """The library's byte span (6, 2) of "café au lait" is "au": characters 5 to 7 (the é is two bytes)."""
    m = tformer.load(heads / "span")

    class Spans:
        def __init__(self, h):
            self.h = h

        def predict(self, task, text):
            assert task == "span" and json.loads(text.decode("utf-8"))["context"] == "café au lait"
            return [(6, 2)]

    m._h = Spans(m._h)
    assert m.answer("what", "café au lait") == {"answer": "au", "start": 5, "end": 7}
