"""Every method that returns arrays returns numpy arrays that DLPack exports (issue 56: "support DLPack
(torch.from_dlpack works)"): numpy.from_dlpack and torch.from_dlpack give the same memory, not a copy, and that
memory stays alive and unchanged after the array they came from is gone and the library has made (and freed)
new buffers of the same size, which reuse memory freed too early. The arrays over the library's own buffers
(embed, image_logits, caption's attention, stream) are checked to be those buffers (no copy on the way)."""
import gc

import numpy as np
import pytest

import tformer
from conftest import BERT_DIR, ST_DIR, VIT_DIR, reference

TEXTS = ["The cat sat on the mat.", "A dog ran in the park.", "Rain again."]


def exported(make, library_buffer=True):
    """Calls make() (-> one array) and checks its DLPack exports; returns the number of values checked."""
    torch = reference("torch")
    a = make()
    assert type(a) is np.ndarray and a.flags.c_contiguous and a.flags.writeable, (type(a), a.flags)
    if library_buffer:  # the library's malloc'd rows themselves, not a copy
        base = a
        while isinstance(base, (np.ndarray, memoryview)):  # numpy holds the exporter through a memoryview
            base = base.base if isinstance(base, np.ndarray) else base.obj
        assert type(base).__name__ == "Buffer", type(base)
    want = a.copy()
    n, t = np.from_dlpack(a), torch.from_dlpack(a)
    assert n.dtype == a.dtype and n.shape == a.shape and tuple(t.shape) == a.shape
    assert str(t.dtype) == f"torch.{a.dtype}"
    if a.size:
        assert np.shares_memory(n, a)
        assert t.data_ptr() == a.__array_interface__["data"][0]
    del a
    gc.collect()
    for _ in range(3):  # new buffers of the same size: the freed memory would be handed out again
        make()
    np.testing.assert_array_equal(n, want)
    np.testing.assert_array_equal(t.numpy(), want)
    return want.size


@pytest.fixture(scope="module")
def st():
    return tformer.load(ST_DIR)


@pytest.fixture(scope="module")
def vit():
    return tformer.load(VIT_DIR)


def test_embed(st):
    assert exported(lambda: st.embed(TEXTS)) == 3 * 16
    assert exported(lambda: st.embed("one text", normalize=True)) == 16
    assert exported(lambda: st.embed([])) == 0  # an empty (0, d) array exports too


def test_image_logits_and_run(vit):
    pixels = np.random.default_rng(1).random((2, 1, 28, 28), dtype=np.float32)
    assert exported(lambda: vit.image_logits(pixels[:, 0])) == 2 * 10  # images (n, H, W)
    outputs = vit.run({"pixel_values": pixels})
    assert outputs
    for name in outputs:  # run()'s arrays are the library's buffers (tf_model_run), handed over without a copy
        assert exported(lambda: vit.run({"pixel_values": pixels})[name])


def test_run_of_a_text_model():
    m = tformer.load(BERT_DIR)
    ids = np.array([[2, 5, 7, 9, 3]], dtype=np.int64)
    outputs = m.run({"input_ids": ids})
    for name in outputs:
        assert exported(lambda: m.run({"input_ids": ids})[name])


def test_caption_attention(captioner):
    cap = tformer.load(captioner)
    img = np.random.default_rng(2).integers(0, 256, (24, 24), dtype=np.uint8)
    assert cap.caption([img], attention=True)[0]["attention"] is not None
    assert exported(lambda: cap.caption([img], attention=True)[0]["attention"])


def test_stream_and_stream_feed(continual):
    tok, vec = continual
    m = tformer.load(tok)
    assert exported(lambda: m.stream("the cat sat on the mat ")) > 0
    assert exported(lambda: m.stream(np.array([1], dtype=np.int64))) == 0  # no window completed yet: (0, labels)
    s = m.stream()
    s.feed("the cat ")
    assert exported(lambda: s.feed("sat on the mat "))
    v = tformer.load(vec)
    d = v.stream().d_model
    steps = np.random.default_rng(3).standard_normal((9, d)).astype(np.float32)
    assert exported(lambda: v.stream(steps)) > 0


def test_sentence_transformer_encode(st):
    torch = reference("torch")
    model = tformer.SentenceTransformer(ST_DIR)
    assert exported(lambda: model.encode(TEXTS)) == 3 * 16
    assert exported(lambda: model.encode("one text", normalize_embeddings=True)) == 16
    a = model.encode(TEXTS)
    assert exported(lambda: model.similarity(a, a), library_buffer=False) == 9
    t = model.encode(TEXTS, convert_to_tensor=True)  # already a torch tensor over the library's buffer
    assert isinstance(t, torch.Tensor) and t.shape == (3, 16)
    np.testing.assert_array_equal(np.from_dlpack(t), a)
