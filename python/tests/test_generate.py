"""generate() and generate_stream() against `tformer generate` on a tiny GPT trained for the test."""
import subprocess
import threading

import pytest

import tformer
from conftest import ST_DIR, cli_path

SETTINGS = [
    ({"temperature": 0}, ["--temperature", "0"]),
    ({"temperature": 0.9, "top_k": 5, "seed": 7}, ["--temperature", "0.9", "--top-k", "5", "--seed", "7"]),
    ({"top_p": 0.8, "repetition_penalty": 1.3, "seed": 3}, ["--top-p", "0.8", "--repetition-penalty", "1.3",
                                                            "--seed", "3"]),
    ({"beam": 3}, ["--beam", "3"]),
]


@pytest.mark.parametrize("kw,flags", SETTINGS)
def test_generate_equals_the_cli(cli, gpt_dir, kw, flags):
    m = tformer.load(gpt_dir)
    assert m.family == "gpt" and "generate" in m.capabilities
    got = m.generate("ab", max_tokens=12, **kw)
    out = cli(["generate", "--model", gpt_dir, "--prompt", "ab", "--max-tokens", "12", *flags])
    assert out == "ab" + got + "\n"
    assert "".join(m.generate_stream("ab", max_tokens=12, **kw)) == got


def test_stop_and_an_early_close(gpt_dir):
    m = tformer.load(gpt_dir)
    text = m.generate("ab", max_tokens=12, temperature=0)
    if len(text) > 2:
        assert m.generate("ab", max_tokens=12, temperature=0, stop=text[2]) == text[:text.index(text[2])]
    stream = m.generate_stream("ab", max_tokens=200, temperature=0.9, seed=1)
    first = next(stream)
    stream.close()  # the worker stops at the next token
    assert first
    assert m.generate("ab", max_tokens=0) == ""


def test_threads_generate_as_serial(gpt_dir):
    m = tformer.load(gpt_dir)
    serial = [m.generate("ab", max_tokens=40, temperature=0.8, seed=s) for s in (1, 2)]
    got = [None, None]

    def work(i):
        got[i] = m.generate("ab", max_tokens=40, temperature=0.8, seed=i + 1)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == serial


def test_generate_refusals(gpt_dir):
    m = tformer.load(gpt_dir)
    with pytest.raises(tformer.InputError, match="max_tokens -1 is out of range"):
        m.generate("ab", max_tokens=-1)
    with pytest.raises(tformer.InputError, match="temperature must be a number, got nan"):
        m.generate("ab", temperature=float("nan"))
    with pytest.raises(tformer.InputError, match="top_p"):
        m.generate("ab", top_p=0)
    with pytest.raises(tformer.InputError, match="unknown setting 'topk'"):
        m.generate_stream("ab", topk=3)
    with pytest.raises(tformer.InputError, match="generate"):
        m.generate("")  # no prompt id: the library's message
    with pytest.raises(tformer.CapabilityError, match="cannot generate"):
        tformer.load(ST_DIR).generate("a")

    def boom(piece):
        raise RuntimeError("callback failed")

    with pytest.raises(RuntimeError, match="callback failed"):
        m._h.generate("ab", 5, 0.0, 0, 1.0, 1.0, 0, 1, 1.0, None, boom, False)


def cli_bytes(args):
    """The CLI's standard output as bytes decoded as generate() decodes (no newline translation)."""
    r = subprocess.run([cli_path(), *args], capture_output=True, check=True)
    return r.stdout.decode("utf-8", "replace")


def test_quantize_int8_equals_the_cli(cli, gpt_dir):
    """generate(quantize="int8") is `tformer generate --precision int8`'s text, which differs from the float
    weights' on these prompts (the test sees the copies used); None goes back to the float weights."""
    m = tformer.load(gpt_dir)
    float_texts, int8_texts = [], []
    cli = cli_bytes  # 100 sampled characters may hold a carriage return: compared as written
    for seed in (1, 2, 3):
        args = ["generate", "--model", gpt_dir, "--prompt", "ab", "--max-tokens", "100", "--seed", str(seed)]
        int8_texts.append(m.generate("ab", max_tokens=100, seed=seed, quantize="int8"))
        assert cli(args + ["--precision", "int8"]) == "ab" + int8_texts[-1] + "\n"
        assert "".join(m.generate_stream("ab", max_tokens=100, seed=seed, quantize="int8")) == int8_texts[-1]
        float_texts.append(m.generate("ab", max_tokens=100, seed=seed))  # the copies dropped
        assert cli(args) == "ab" + float_texts[-1] + "\n"
        assert m.generate("ab", max_tokens=100, seed=seed, quantize="none") == float_texts[-1]
    assert int8_texts != float_texts
    with pytest.raises(tformer.InputError, match="quantize"):
        m.generate("ab", quantize="int4")


def test_quantize_waits_for_an_idle_model(gpt_dir):
    """Switching the weights while another call runs on the model raises; the running call is not disturbed."""
    m = tformer.load(gpt_dir)
    seen = []

    def on_text(piece):
        try:
            m.generate("ab", max_tokens=3, quantize="int8")
        except tformer.Error as e:
            seen.append(str(e))
        return True

    m._h.generate("ab", 5, 0.0, 0, 1.0, 1.0, 0, 1, 1.0, None, on_text, False)
    assert len(seen) == 1 and "while 1 other call(s) run" in seen[0], seen
    assert m.generate("ab", max_tokens=5, temperature=0) == m.generate("ab", max_tokens=5, temperature=0,
                                                                        quantize="none")
