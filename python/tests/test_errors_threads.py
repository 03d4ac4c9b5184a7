"""Bad inputs raise tformer's errors with the library's message; threads run with the GIL released."""
import os
import threading

import numpy as np
import pytest

import tformer
from tformer import _safetensors
from conftest import BERT_DIR, MLM_DIR, ST_DIR, VIT_DIR


def test_a_folder_without_config_json(tmp_path):
    with pytest.raises(tformer.ModelNotFoundError, match="config.json: No such file") as e:
        tformer.load(tmp_path)
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, tformer.Error)
    with pytest.raises(FileNotFoundError, match="no-such-folder"):
        tformer.load(tmp_path / "no-such-folder")


def test_a_model_type_tformer_does_not_read(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    with pytest.raises(tformer.Error, match='model_type "llama" is not one tformer reads'):
        tformer.load(tmp_path)


def test_a_capability_the_model_lacks():
    with pytest.raises(tformer.CapabilityError, match=r"\(vit\) cannot embed; it can: run, classify-image"):
        tformer.load(VIT_DIR).embed(["a text"])
    with pytest.raises(ValueError, match=r"\(bert\) cannot classify-image; it can: run, embed"):
        tformer.load(ST_DIR).classify([np.zeros((28, 28), np.uint8)])


def test_bad_run_inputs_name_the_input():
    m = tformer.load(BERT_DIR)
    inputs = _safetensors.load(os.path.join(BERT_DIR, "input.safetensors"))
    ids = inputs["input_ids"]
    cases = [
        (dict(inputs, input_ids=ids.astype(np.float32)), "input 'input_ids' is F32; expected I64 or I32"),
        (dict(inputs, input_ids=ids + 1000), "input_ids holds 10.. at .*; ids must be below vocab_size"),
        ({k: v for k, v in inputs.items() if k != "input_ids"}, "missing input 'input_ids'"),
        (dict(inputs, pixel_values=np.zeros(3, np.float32)), "input 'pixel_values' is not an argument"),
        (dict(inputs, input_ids=ids[None]), "input 'input_ids' has shape"),
        (dict(inputs, input_ids=ids.astype(np.complex64)), "input 'input_ids' is complex64"),
    ]
    for bad, message in cases:
        with pytest.raises(tformer.InputError, match=message) as e:
            m.run(bad)
        assert "run() inputs" in str(e.value) or "run():" in str(e.value)
    with pytest.raises(tformer.InputError, match="dict"):
        m.run([ids])


def test_bad_images_and_arguments():
    v = tformer.load(VIT_DIR)
    with pytest.raises(tformer.InputError, match=r"images\[0\] is 27x28; the model takes 28x28"):
        v.classify([np.zeros((28, 27), np.uint8)])
    with pytest.raises(tformer.InputError, match=r"images\[1\] has 4 channels|images\[1\] has shape"):
        v.classify([np.zeros((28, 28), np.uint8), np.zeros((28, 28, 4), np.uint8)])
    with pytest.raises(tformer.InputError, match=r"images\[0\] is int64"):
        v.classify([np.zeros((28, 28), np.int64)])
    with pytest.raises(tformer.InputError, match="outside"):
        v.classify([np.full((28, 28), 2.0)])
    with pytest.raises(tformer.InputError, match="missing.png"):
        v.classify(["missing.png"])
    with pytest.raises(tformer.InputError, match="top_k"):
        v.classify([np.zeros((28, 28), np.uint8)], top_k=0)
    m = tformer.load(ST_DIR)
    with pytest.raises(tformer.InputError, match=r"texts\[1\] is int"):
        m.embed(["a", 3])
    with pytest.raises(tformer.InputError, match="pooling"):
        m.embed(["a"], pooling="sum")
    with pytest.raises(tformer.InputError, match="batch_size"):
        m.embed(["a"], batch_size=0)
    with pytest.raises(tformer.InputError, match="NUL"):
        m.embed(["a\0b"])
    with pytest.raises(tformer.InputError, match="threads"):
        tformer.load(ST_DIR, threads=0)


def test_a_closed_model_raises():
    m = tformer.load(ST_DIR)
    m.close()
    with pytest.raises(tformer.Error, match="closed"):
        m.embed(["a"])
    with tformer.load(VIT_DIR) as v:
        assert v.labels()
    with pytest.raises(tformer.Error, match="closed"):
        v.labels()


def many_texts(n):
    return [f"text number {i}: the cat sat on the mat, then {i % 7} dogs ran in the park" for i in range(n)]


def test_two_threads_embedding_at_once_equal_serial():
    m = tformer.load(ST_DIR)
    parts = [many_texts(600), many_texts(900)[300:]]
    serial = [m.embed(p, batch_size=16) for p in parts]
    results = [None, None]

    def work(i):
        results[i] = m.embed(parts[i], batch_size=16)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, serial):
        assert np.array_equal(got, want)


def test_the_gil_is_released_while_embedding():
    """While one thread embeds, the main thread keeps running Python: it loops hundreds of times during the
    call. With the GIL held through the call it would loop once or twice (it waits for the call to end).
    Counted, not timed: on a loaded machine a pause says nothing about the GIL."""
    m = tformer.load(ST_DIR)
    texts = many_texts(6000)
    t = threading.Thread(target=m.embed, args=(texts,))
    ticks = 0
    t.start()
    while t.is_alive():
        ticks += 1
    t.join()
    assert ticks > 100, f"the main thread ran {ticks} times while the other embedded"


def test_fill_mask_refusals():
    m = tformer.load(MLM_DIR)
    with pytest.raises(tformer.InputError, match="holds no mask token"):
        m.fill_mask("no mask here")
    with pytest.raises(tformer.InputError, match="top_k"):
        m.fill_mask("a [MASK]", top_k=0)
    with pytest.raises(tformer.CapabilityError, match=r"cannot fill-mask \(not with this folder's head\); it can: run, embed"):
        tformer.load(ST_DIR).fill_mask("a <mask>")
