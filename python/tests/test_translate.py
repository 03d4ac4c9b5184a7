"""translate() against transformers' generate() texts and `tformer translate` on a Marian folder."""
import json
import os
import threading

import pytest

import tformer
from conftest import ROOT, ST_DIR


def runs():
    with open(os.path.join(ROOT, "tests", "fixtures_marian_spm", "generate.json"), encoding="utf-8") as f:
        g = json.load(f)
    return g["sentences"], g["runs"]


def test_translate_equals_generate_and_the_cli(cli, marian_dir):
    m = tformer.load(marian_dir)
    assert m.family == "seq2seq" and "translate" in m.capabilities
    sentences, cases = runs()
    for r in cases:
        kw = dict(beam=r["num_beams"], length_penalty=r["length_penalty"], max_len_a=0, max_len_b=r["max_length"] - 1)
        got = m.translate(sentences, **kw)
        assert got == r["texts"]
        assert m.translate(sentences, batch_size=1, **kw) == got
        out = cli(["translate", "--model", marian_dir, "--beam", str(kw["beam"]), "--length-penalty",
                   str(kw["length_penalty"]), "--max-len-a", "0", "--max-len-b", str(kw["max_len_b"])],
                  "\n".join(sentences) + "\n")
        assert out == "".join(t + "\n" for t in got)
    # beam=None: the folder's own settings (greedy here), as the CLI without flags
    text = "\n".join(sentences) + "\n"
    folder = cli(["translate", "--model", marian_dir], text)
    assert "".join(t + "\n" for t in m.translate(sentences, beam=None)) == folder
    assert m.translate([]) == [] and m.translate(sentences[0]) == m.translate(sentences[:1])


def test_translate_searches_a_beam_of_5_by_default(cli, marian_dir):
    """beam=5 is translate()'s default (the issue's signature): the CLI's `--beam 5` with the folder's other
    settings, which differs from the folder's own greedy search on these sentences (the test can tell)."""
    m = tformer.load(marian_dir)
    sentences, _ = runs()
    text = "\n".join(sentences) + "\n"
    beam5 = cli(["translate", "--model", marian_dir, "--beam", "5"], text)
    folder = cli(["translate", "--model", marian_dir], text)
    assert beam5 != folder
    assert "".join(t + "\n" for t in m.translate(sentences)) == beam5
    assert m.translate(sentences) == m.translate(sentences, beam=5)


def test_threads_translate_as_serial(marian_dir):
    m = tformer.load(marian_dir)
    sentences, _ = runs()
    serial = m.translate(sentences * 4, beam=4)
    got = [None, None]

    def work(i):
        got[i] = m.translate(sentences * 4, beam=4)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [serial, serial]


def test_translate_refusals(marian_dir, tmp_path):
    m = tformer.load(marian_dir)
    with pytest.raises(tformer.InputError, match="beam 0 is out of range"):
        m.translate(["a"], beam=0)
    with pytest.raises(tformer.InputError, match="beam_stop"):
        m.translate(["a"], beam_stop="soon")
    with pytest.raises(tformer.InputError, match=r"translate\(\): texts\[0\] is int"):
        m.translate([1])
    with pytest.raises(tformer.CapabilityError, match="cannot translate"):
        tformer.load(ST_DIR).translate(["a"])
    # a Marian folder without its SentencePiece models: loads (run works), translate says why
    for name in os.listdir(marian_dir):
        if not name.endswith(".spm"):
            os.symlink(os.path.join(marian_dir, name), tmp_path / name)
    bare = tformer.load(tmp_path)
    with pytest.raises(tformer.Error, match=str(tmp_path)):
        bare.translate(["a"])


INTERRUPT_SCRIPT = r'''
import _thread, sys, threading, time
import tformer
m = tformer.load(sys.argv[1])
short = m.translate(["the first sentence"])
texts = ["the first sentence of a long text to translate, again and again"] * 200000
t = time.monotonic()
m.translate(texts[:8], batch_size=8)
batch = time.monotonic() - t  # one batch's time: the whole call is 25000 of them
threading.Timer(0.5, _thread.interrupt_main).start()  # Ctrl-C, as the terminal's SIGINT reaches Python
started = time.monotonic()
try:
    m.translate(texts, batch_size=8)
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted after", time.monotonic() - started - 0.5, "s; a batch", batch, "s")
assert m.translate(["the first sentence"]) == short  # the model is still whole
print("usable")
'''


def test_ctrl_c_interrupts_a_long_translate(marian_dir, tmp_path):
    """KeyboardInterrupt reaches a translate() that runs with the GIL released (signals are run between its
    batches), soon, and the model translates as before afterwards."""
    import subprocess
    import sys
    script = tmp_path / "interrupt.py"
    script.write_text(INTERRUPT_SCRIPT)
    r = subprocess.run([sys.executable, str(script), marian_dir], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("interrupted after ") and lines[1] == "usable", r.stdout
    late, batch = float(lines[0].split()[2]), float(lines[0].split()[6])
    assert late < 2 + 100 * batch, r.stdout  # a batch or so after the signal, not the 25000 batches of the call
