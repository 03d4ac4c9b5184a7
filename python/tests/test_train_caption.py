"""tformer.train against `tformer train` (the same bytes), its progress callback, KeyboardInterrupt and resume;
Model.caption against `tformer caption` on a captioner trained here."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import tformer
from conftest import ROOT, png

DATA = os.path.join(ROOT, "tests", "data", "unicode_stress.txt")
GPT = dict(steps=6, layers=1, heads=2, width=16, context=16, batch=4, eval_every=3, eval_batches=2)
GPT_FLAGS = ["--steps", "6", "--layers", "1", "--heads", "2", "--width", "16", "--context", "16", "--batch", "4",
             "--eval-every", "3", "--eval-batches", "2"]


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def test_train_equals_the_cli(cli, tmp_path):
    cli(["train", "--data", DATA, "--tokenizer", "char", "--out", str(tmp_path / "cli"), *GPT_FLAGS])
    reports = []
    r = tformer.train("gpt", tmp_path / "py", data=DATA, tokenizer="char", progress=reports.append, **GPT)
    for name in ("model.safetensors", "config.json", "losses.csv", "checkpoint.safetensors"):
        assert _read(tmp_path / "py" / name) == _read(tmp_path / "cli" / name), name
    assert [x["step"] for x in reports] == list(range(1, 7)) and all(x["steps"] == 6 for x in reports)
    assert all(np.isfinite(x["loss"]) for x in reports) and np.isfinite(reports[2]["val_loss"])
    assert r["steps"] == 6 and not r["stopped"] and r["run_dir"] == str(tmp_path / "py")
    assert r["last"]["train_loss"] == pytest.approx(reports[-1]["loss"], rel=1e-6)
    assert len(r["history"]["train_loss"]) == 6
    assert tformer.load(tmp_path / "py").family == "gpt"


def test_train_interrupted_then_resumed_equals_one_run(tmp_path):
    whole = tformer.train("gpt", tmp_path / "whole", data=DATA, progress=None, **GPT)

    def stop_at_3(r):
        if r["step"] == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tformer.train("gpt", tmp_path / "cut", data=DATA, progress=stop_at_3, **GPT)
    assert os.path.exists(tmp_path / "cut" / "checkpoint.safetensors")
    r = tformer.train("gpt", tmp_path / "cut", data=DATA, progress=None, resume=True, **GPT)
    assert r["steps"] == whole["steps"] == 6
    assert _read(tmp_path / "cut" / "model.safetensors") == _read(tmp_path / "whole" / "model.safetensors")


@pytest.mark.parametrize("callback", [True, False])
def test_train_stops_on_ctrl_c(tmp_path, callback):
    """A real SIGINT while the library trains (the GIL released): KeyboardInterrupt, the checkpoint written; with a
    Python callback (its frame runs the handler) and without one (the report runs Python's signal handlers)."""
    out = tmp_path / "run"
    code = (f"import sys, time, tformer\n"
            f"def tick(r):\n    print(r['step'], flush=True)\n"
            f"print('start', flush=True)\n"
            f"tformer.train('gpt', {str(out)!r}, data={DATA!r}, steps=100000, layers=1, heads=2, width=16, context=16,"
            f" batch=4, eval_every=100000, eval_batches=1, checkpoint_every=100000,"
            f" progress={'tick' if callback else 'None'})\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "start"
        if callback:
            assert p.stdout.readline().strip() == "1"
        else:
            time.sleep(1.5)  # in the library by then: making the task takes milliseconds
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode != 0 and "KeyboardInterrupt" in err, err
    assert _read(out / "checkpoint.safetensors")[:8]  # written whole (tf_train writes it atomically)
    with open(out / "losses.csv", encoding="utf-8") as f:
        steps = int(f.read().splitlines()[-1].split(",")[0])
    assert 1 <= steps < 100000  # stopped early, not at the end of the run


def test_train_errors(tmp_path):
    with pytest.raises(tformer.InputError, match="arch must be"):
        tformer.train("nope", tmp_path / "a", data=DATA)
    with pytest.raises(tformer.InputError, match="no_such_setting"):
        tformer.train("gpt", tmp_path / "a", data=DATA, no_such_setting=3)
    with pytest.raises(tformer.InputError, match="steps"):
        tformer.train("gpt", tmp_path / "a", data=DATA, steps="many")
    with pytest.raises(tformer.InputError, match="missing data"):
        tformer.train("gpt", tmp_path / "a")
    with pytest.raises(tformer.InputError, match="src"):
        tformer.train("seq2seq", tmp_path / "a", data=DATA)
    with pytest.raises(tformer.InputError, match="out="):
        tformer.train("gpt", data=DATA)
    tformer.train("gpt", tmp_path / "b", data=DATA, progress=None, **GPT)
    with pytest.raises(tformer.Error, match="overwrite"):
        tformer.train("gpt", tmp_path / "b", data=DATA, progress=None, **GPT)
    with pytest.raises(ValueError):  # a callback's own exception stops the run and propagates
        tformer.train("gpt", tmp_path / "b", data=DATA, overwrite=True, progress=lambda r: int("x"), **GPT)


def test_train_makes_the_run_folders_parents(tmp_path, monkeypatch):
    """out="runs/gpt/a": its parents are made, as `tformer train --out` makes them (they were not: "runs/gpt/a:
    cannot create: No such file or directory"); a parent that cannot be made raises naming it."""
    monkeypatch.chdir(tmp_path)
    r = tformer.train("gpt", os.path.join("runs", "gpt", "a"), data=DATA, tokenizer="char", progress=None, **GPT)
    assert r["steps"] == GPT["steps"] and os.path.isfile(os.path.join("runs", "gpt", "a", "model.safetensors"))
    (tmp_path / "file").write_text("")
    with pytest.raises(tformer.Error, match="out file/x/run: cannot create file/x"):
        tformer.train("gpt", os.path.join("file", "x", "run"), data=DATA, progress=None, **GPT)


def test_caption_equals_the_cli(cli, captioner, tmp_path):
    m = tformer.load(captioner)
    assert "caption" in m.capabilities
    rng = np.random.default_rng(5)
    imgs = [np.zeros((24, 24), np.uint8) for _ in range(4)]
    for i, img in enumerate(imgs):
        for _ in range(i + 1):
            y, x, s = rng.integers(0, 16, 3)
            img[y:y + 4 + s % 6, x:x + 4 + s % 5] = 255
    paths = [str(tmp_path / f"s{i}.png") for i in range(len(imgs))]
    for p, img in zip(paths, imgs):
        png(p, img)
    for beam in (1, 3):
        lines = cli(["caption", "--model", captioner, "--beam", str(beam), *paths]).splitlines()
        want = [line.split("\t", 1)[1] for line in lines]
        assert m.caption(paths, beam=beam) == want
        assert m.caption(imgs, beam=beam) == want
        assert m.caption(np.stack(imgs), beam=beam) == want
    r = m.caption(imgs[:2], attention=True)
    for x in r:
        assert x["text"] == " ".join(x["words"]) and x["attention"].shape == (len(x["words"]) + 1, 3, 3)
        assert np.allclose(x["attention"].sum(axis=(1, 2)), 1, atol=1e-5)
    short = cli(["caption", "--model", captioner, "--max-tokens", "2", paths[0]]).split("\t", 1)[1].strip("\n")
    assert m.caption(paths[0], max_tokens=2) == [short]


def test_caption_errors(captioner):
    m = tformer.load(captioner)
    with pytest.raises(tformer.InputError, match="caption\\(\\): images\\[0\\] is 20x24"):
        m.caption([np.zeros((24, 20), np.uint8)])
    with pytest.raises(tformer.InputError, match="beam"):
        m.caption([np.zeros((24, 24), np.uint8)], beam=0)
    with pytest.raises(tformer.CapabilityError, match="caption"):
        tformer.load(os.path.join(ROOT, "tests", "fixtures_roberta_st", "tiny_roberta_st")).caption(
            [np.zeros((24, 24), np.uint8)])
