"""Model.classify on texts (a fine-tuned BERT-family folder) and clips (ViViT) against the CLI's predict and
classify: the same labels and the same probabilities, bit for bit (the CLI's --json prints 15 significant
digits, which name one float32: the library's probabilities are floats)."""
import json
import os
import random

import numpy as np
import pytest

import tformer
from conftest import ROOT, png

DISTIL_ST = os.path.join(ROOT, "tests", "fixtures_distilbert_st", "tiny_distilbert_st")
VIVIT_DIR = os.path.join(ROOT, "tests", "fixtures_vivit", "m2_cls_grey12_t2p4_labels")

WORDS = ["good", "great", "fine", "nice", "bad", "awful", "poor", "sad", "the", "a", "movie", "was", "plot"]


def sentences(n, seed):
    """n short sentences of the vocabulary's words (some cut at finetune.json's max_len 12), no tabs or blanks."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14))) for _ in range(n)]


@pytest.fixture(scope="session")
def text_classifier(cli, tmp_path_factory):
    """A DistilBertForSequenceClassification with three labels, `tformer finetune`d from the committed tiny
    DistilBERT (its vocab.txt) for a few steps, max_len 12 (finetune.json)."""
    d = tmp_path_factory.mktemp("textcls")
    rng = random.Random(3)
    lines = []
    for _ in range(48):
        label = rng.choice(["neg", "neu", "pos"])
        word = {"pos": "good", "neg": "bad", "neu": "the"}[label]
        lines.append(f"{label}\tthe movie was {word} {rng.choice(WORDS)}")
    (d / "train.tsv").write_text("\n".join(lines) + "\n")
    cli(["finetune", "--model", DISTIL_ST, "--train", str(d / "train.tsv"), "--valid", str(d / "train.tsv"),
         "--out", str(d / "run"), "--steps", "8", "--batch", "8", "--lr", "5e-2", "--max-len", "12",
         "--threads", "1"])
    return str(d / "run")


def f32(x):
    """x as the float32 it names (a JSON number of the CLI, or a score)."""
    return np.float32(x).tobytes()


def predict_json(cli, model, lines, task="classify"):
    out = cli(["predict", "--model", model, "--task", task, "--json", "--threads", "1"], "\n".join(lines) + "\n")
    return [json.loads(line) for line in out.splitlines()]


def test_classify_texts_equals_predict_bit_for_bit(cli, text_classifier):
    m = tformer.load(text_classifier)
    assert "classify-text" in m.capabilities and m.labels() == ["neg", "neu", "pos"]
    texts = sentences(37, 1)  # 37: three of predict's batches of 16, the last one short
    got = m.classify(texts, top_k=3)
    want = predict_json(cli, text_classifier, texts)
    assert len(got) == len(want) == 37
    for g, w in zip(got, want):
        assert g["label"] == w["label"] and f32(g["score"]) == f32(w["probability"]), (g, w)
        assert g["score"] == float(np.float32(g["score"]))  # a float's value, unrounded
        assert g["top_k"][0] == (g["label"], g["score"]) and len(g["top_k"]) == 3
        assert sorted(name for name, _ in g["top_k"]) == ["neg", "neu", "pos"]
        assert abs(sum(p for _, p in g["top_k"]) - 1) < 1e-6
    assert len({g["score"] for g in got}) > 5  # the scores differ from text to text: a trained head
    assert m.classify(texts[3])[0] == {k: got[3][k] if k != "top_k" else got[3]["top_k"][:1] for k in got[3]}
    assert m.classify([]) == []


def test_classify_pairs_equals_predict_pairs(cli, text_classifier):
    m = tformer.load(text_classifier)
    a, b = sentences(18, 2), sentences(18, 3)
    got = m.classify(list(zip(a, b)), top_k=2)
    want = predict_json(cli, text_classifier, [f"{x}\t{y}" for x, y in zip(a, b)], task="pairs")
    assert [(g["label"], f32(g["score"])) for g in got] == [(w["label"], f32(w["probability"])) for w in want]
    assert [g["score"] for g in got] != [g["score"] for g in m.classify(a)]  # the second text counts
    with pytest.raises(tformer.InputError, match="not both"):
        m.classify([("a", "b"), "c"])
    with pytest.raises(tformer.InputError, match="a pair is"):
        m.classify([("a", "b", "c")])


def clip_frames(rng, n):
    return rng.integers(0, 256, (n, 12, 12), dtype=np.uint8)


def test_classify_clips_equals_the_cli_bit_for_bit(cli, tmp_path):
    m = tformer.load(VIVIT_DIR)
    assert m.capabilities == ["run", "classify-clip"]
    rng = np.random.default_rng(5)
    clips = [clip_frames(rng, 4) for _ in range(5)]
    folders = []
    for i, frames in enumerate(clips):
        folders.append(str(tmp_path / f"clip{i}"))
        os.makedirs(folders[-1])
        for j, f in enumerate(frames):
            png(os.path.join(folders[-1], f"frame{j:02d}.png"), f)
    got = m.classify(folders, top_k=4)
    want = json.loads(cli(["classify", "--model", VIVIT_DIR, "--json", "--threads", "1", *folders]))["clips"]
    assert [(g["label"], f32(g["score"])) for g in got] == [(w["label"], f32(w["probability"])) for w in want]
    assert all(len(g["top_k"]) == 4 and g["top_k"][0][1] >= g["top_k"][3][1] for g in got)
    assert m.classify(clips, top_k=4) == got  # arrays (frames, H, W) uint8
    assert m.classify(np.stack(clips), top_k=4) == got  # one (n, frames, H, W) array
    assert m.classify(np.stack(clips)[..., None].astype(np.float32) / 255, top_k=4) == got
    assert m.classify(folders[2]) == [dict(got[2], top_k=got[2]["top_k"][:1])]


def test_classify_clips_refuses_bad_clips(tmp_path):
    m = tformer.load(VIVIT_DIR)
    rng = np.random.default_rng(6)
    with pytest.raises(tformer.InputError, match="3 frames; the model takes clips of num_frames 4"):
        m.classify([clip_frames(rng, 3)])
    with pytest.raises(tformer.InputError, match="the model takes 12x12"):
        m.classify([np.zeros((4, 10, 10), np.uint8)])
    with pytest.raises(tformer.InputError, match="cannot open the clip folder"):
        m.classify([str(tmp_path / "missing")])
    with pytest.raises(tformer.InputError, match="a clip is"):
        m.classify([np.zeros(12, np.uint8)])


def test_classify_top_matches_the_library_ranking():
    """tformer._tformer.top: ties to the lower label, the probabilities exp(x - max) / sum in double, as float."""
    from tformer._tformer import top
    logits = np.array([[1, 3, 3, -2], [0, 0, 0, 0]], dtype=np.float32)
    rows = top(logits, 9)
    assert [j for j, _ in rows[0]] == [1, 2, 0, 3] and [j for j, _ in rows[1]] == [0, 1, 2, 3]
    x = logits[0].astype(np.float64)
    want = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    assert [p for _, p in rows[0]] == [float(np.float32(want[j])) for j in (1, 2, 0, 3)]


def test_classify_needs_a_classifier():
    with pytest.raises(tformer.CapabilityError, match="cannot classify-image"):
        tformer.load(DISTIL_ST).classify(["a text"])
