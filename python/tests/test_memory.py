"""No growth of the C heap over 1,000 rounds of calls (glibc's mallinfo2 counts the bytes in use)."""
import ctypes
import ctypes.util
import os

import numpy as np
import pytest

import tformer
from tformer import _safetensors
from conftest import MLM_DIR, ST_DIR, VIT_DIR, SENTENCES


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]


def heap_in_use():
    """Bytes malloc has handed out and not had back (every arena, mmap'd blocks too)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("the C library has no mallinfo2 (glibc 2.33 or later)")
    libc.mallinfo2.restype = _MallInfo2
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd


def test_calls_and_loads_do_not_grow_the_heap():
    st, vit, mlm = tformer.load(ST_DIR), tformer.load(VIT_DIR), tformer.load(MLM_DIR)
    inputs = _safetensors.load(os.path.join(VIT_DIR, "input.safetensors"))

    def round_of_calls():
        st.embed(["a cat sat on the mat", "two dogs"])
        vit.classify(inputs["pixel_values"][:, 0], top_k=2)
        vit.run(inputs)
        mlm.fill_mask("the [MASK] sat")
        with pytest.raises(tformer.CapabilityError):
            st.classify([np.zeros((28, 28))])
        with pytest.raises(tformer.InputError):
            vit.run({"pixel_values": inputs["pixel_values"], "extra": np.zeros(1, np.float32)})

    def load_and_close():
        tformer.load(VIT_DIR).close()
        tformer.load(MLM_DIR)  # freed when collected

    for _ in range(50):
        round_of_calls(), load_and_close()
    before = heap_in_use()
    for i in range(1000):
        round_of_calls()
        if i % 10 == 0:
            load_and_close()
    grown = heap_in_use() - before
    assert grown < 64 * 1024, f"the heap grew {grown} bytes over 1,000 rounds"


def test_tokenizers_streams_captions_do_not_grow_the_heap(continual, captioner):
    tok_dir, vec_dir = continual
    cap, st = tformer.load(captioner), tformer.SentenceTransformer(ST_DIR)
    x = np.random.default_rng(1).standard_normal((6, 16)).astype(np.float32)
    img = np.zeros((24, 24), np.uint8)
    img[4:12, 6:14] = 255

    def round_of_calls():
        tok = tformer.Tokenizer.load(ST_DIR)
        ids = tok.encode_batch(SENTENCES[:4], add_special_tokens=True)
        tok.decode_batch(ids)
        with pytest.raises(tformer.InputError):
            tok.decode([10 ** 9])
        st.encode(SENTENCES[:2])
        s = tformer.load(vec_dir).stream()
        s.feed(x), s.feed(x[:2])
        tformer.load(tok_dir).stream("the cat sat ")
        cap.caption([img], attention=True)
        cap.caption([img], beam=2)

    for _ in range(20):
        round_of_calls()
    before = heap_in_use()
    for _ in range(300):
        round_of_calls()
    grown = heap_in_use() - before
    assert grown < 64 * 1024, f"the heap grew {grown} bytes over 300 rounds"
