"""The real all-MiniLM-L6-v2 against sentence-transformers, tformer.SentenceTransformer as a drop-in, and
tformer.Tokenizer against Hugging Face's tokenizers (transformers / tokenizers) on the same texts."""
import os

import numpy as np
import pytest

import tformer
from conftest import ROOT, SENTENCES, ST_DIR, reference

# Issue 56's bound: every sentence's cosine with sentence-transformers' embedding at least this (and, as
# tests/ref/embed_ref.py checks the CLI, no component further than 1e-4).
COSINE = 0.99999
MAX_DIFF = 1e-4


def _close(got, want):
    got, want = np.atleast_2d(np.asarray(got, dtype=np.float64)), np.atleast_2d(np.asarray(want, dtype=np.float64))
    assert got.shape == want.shape
    cos = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    assert cos.min() >= COSINE, f"smallest cosine {cos.min():.8f} (sentence {int(cos.argmin())})"
    assert np.abs(got - want).max() <= MAX_DIFF, np.abs(got - want).max()


@pytest.fixture(scope="module")
def st_minilm(minilm_dir):
    st = reference("sentence_transformers")
    return st.SentenceTransformer(minilm_dir, device="cpu")


def test_minilm_embed_matches_sentence_transformers(minilm_dir, st_minilm):
    m = tformer.load(minilm_dir)
    assert m.family == "bert" and "embed" in m.capabilities
    want = st_minilm.encode(SENTENCES, batch_size=32)
    got = m.embed(SENTENCES)
    assert got.shape == (len(SENTENCES), 384) and got.dtype == np.float32
    _close(got, want)
    _close(m.embed(SENTENCES, batch_size=1), want)  # one at a time: no padding
    _close(m.embed(SENTENCES, normalize=True), st_minilm.encode(SENTENCES, normalize_embeddings=True))


def test_sentence_transformer_drop_in(minilm_dir, st_minilm):
    import torch
    ours = tformer.SentenceTransformer(minilm_dir, device="cpu")
    assert ours.get_sentence_embedding_dimension() == st_minilm.get_sentence_embedding_dimension() == 384
    assert ours.max_seq_length == st_minilm.max_seq_length == 256
    for kw in ({}, {"batch_size": 4}, {"normalize_embeddings": True}, {"batch_size": 64, "convert_to_numpy": True},
               {"show_progress_bar": False}):
        want, got = st_minilm.encode(SENTENCES, **kw), ours.encode(SENTENCES, **kw)
        assert type(got) is type(want) and got.dtype == want.dtype, kw
        _close(got, want)
    one_w, one_g = st_minilm.encode(SENTENCES[0]), ours.encode(SENTENCES[0])
    assert one_g.shape == one_w.shape == (384,)
    _close(one_g, one_w)
    tw, tg = st_minilm.encode(SENTENCES[:5], convert_to_tensor=True), ours.encode(SENTENCES[:5], convert_to_tensor=True)
    assert isinstance(tg, torch.Tensor) and tg.shape == tw.shape and tg.dtype == tw.dtype
    _close(tg.numpy(), tw.numpy())
    lw, lg = st_minilm.encode(SENTENCES[:3], convert_to_numpy=False), ours.encode(SENTENCES[:3], convert_to_numpy=False)
    assert isinstance(lg, list) and len(lg) == len(lw) and all(isinstance(x, torch.Tensor) for x in lg)
    _close(torch.stack(lg).numpy(), torch.stack(lw).numpy())
    _close(ours.encode(SENTENCES[:4], prompt="query: "), st_minilm.encode(SENTENCES[:4], prompt="query: "))
    ours.max_seq_length = st_minilm.max_seq_length = 16  # the cut, changed on both
    _close(ours.encode(SENTENCES), st_minilm.encode(SENTENCES))
    assert ours.encode([]).shape == (0, 384)
    with pytest.raises(tformer.InputError, match="output_value"):
        ours.encode(SENTENCES[:1], output_value="token_embeddings")
    with pytest.raises(tformer.ModelNotFoundError, match="hub"):
        tformer.SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")


def test_sentence_transformer_on_the_fixture():
    st = reference("sentence_transformers")
    texts = ["The cat sat on the mat.", "A dog ran in the park.", "Hello"]
    _close(tformer.SentenceTransformer(ST_DIR).encode(texts), st.SentenceTransformer(ST_DIR, device="cpu").encode(texts))


def test_tokenizer_matches_transformers_wordpiece(minilm_dir, tmp_path):
    transformers = reference("transformers")
    hf = transformers.AutoTokenizer.from_pretrained(minilm_dir)
    tok = tformer.Tokenizer.load(minilm_dir)
    assert tok.kind == "wordpiece" and tok.vocab_size == hf.vocab_size == len(tok)
    assert tok.special_ids["cls"] == hf.cls_token_id and tok.special_ids["mask"] == hf.mask_token_id
    assert tok.token_to_id("[SEP]") == hf.sep_token_id and tok.token_to_id("no-such-token") is None
    texts = SENTENCES + ["unaffable", "ThIs Is \t a\u00a0TeSt\u200b", "你好世界"]
    assert tok.encode_batch(texts) == [hf(t, add_special_tokens=False)["input_ids"] for t in texts]
    for t in texts:
        assert tok.encode(t) == hf.encode(t, add_special_tokens=False)
        assert tok.encode(t, add_special_tokens=True) == hf(t)["input_ids"]
    a, b = SENTENCES[10], SENTENCES[11]
    want = hf(a, b, truncation=True, max_length=20)
    assert tok.encode_with_types(a, b, max_length=20) == (want["input_ids"], want["token_type_ids"])
    for a, b in ((SENTENCES[10], SENTENCES[11]), (SENTENCES[11], SENTENCES[10]), (SENTENCES[0], SENTENCES[0])):
        for n in (9, 10, 20):  # both outgrow half the room: the longer keeps the odd id (tokenizers' rule)
            want = hf(a, b, truncation=True, max_length=n)
            assert tok.encode_with_types(a, b, max_length=n) == (want["input_ids"], want["token_type_ids"])
    # decode: BertTokenizerFast's text (its decoder's and, by default, transformers' clean-up of " ." " ," ...)
    ids = tok.encode_batch(texts, add_special_tokens=True)
    for clean in (True, False):
        assert tok.decode_batch(ids, clean_up_tokenization_spaces=clean) == \
            [hf.decode(x, clean_up_tokenization_spaces=clean) for x in ids]
    assert tok.decode_batch(ids) == tok.decode_batch(ids, clean_up_tokenization_spaces=True)
    assert tok.decode_batch(ids, skip_special_tokens=True) == \
        [hf.decode(x, skip_special_tokens=True, clean_up_tokenization_spaces=True) for x in ids]
    # the library's text, `tformer decode`'s: BertTokenizer's (transformers' Python WordPiece) without clean-up
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(t + "\n" for t, _ in sorted(hf.get_vocab().items(), key=lambda x: x[1])), encoding="utf-8")
    slow = transformers.BertTokenizer(str(vocab))
    assert tok._h.decode(tuple(ids)) == [slow.decode(x, clean_up_tokenization_spaces=False) for x in ids]


WORDPIECE_CASES = ["Hello, world! It's unaffable.", "the quick brown fox jumps over the lazy dog.", "café, Café !",
                   "hello world , hello ! ! the dog's fox", "jumping jumped , unaffable . . .", "a [MASK] fox", "",
                   "don't you're i'm we've ' s"]


@pytest.mark.parametrize("folder", ["tests/data/hf_wordpiece", "tests/fixtures_distilbert_st/tiny_distilbert_st"])
def test_wordpiece_decode_equals_bert_tokenizer_fast(folder):
    """The committed WordPiece vocabularies: decode() is BertTokenizerFast.decode() (its default clean-up), with
    and without the special tokens; an id list of pieces ([UNK], ## pieces first) too."""
    transformers = reference("transformers")
    d = os.path.join(ROOT, folder)
    hf = transformers.BertTokenizerFast(os.path.join(d, "vocab.txt"))
    tok = tformer.Tokenizer.load(d)
    assert tok.kind == "wordpiece"
    every = list(range(len(hf)))
    for text in WORDPIECE_CASES + [every, every[::-1]]:
        ids = text if isinstance(text, list) else hf(text)["input_ids"]
        assert isinstance(text, list) or tok.encode(text, add_special_tokens=True) == ids, text
        for skip in (False, True):
            for clean in (False, True):
                want = hf.decode(ids, skip_special_tokens=skip, clean_up_tokenization_spaces=clean)
                assert tok.decode(ids, skip_special_tokens=skip, clean_up_tokenization_spaces=clean) == want, text
    assert tok.decode(hf("Hello, it's a dog.")["input_ids"]) == hf.decode(hf("Hello, it's a dog.")["input_ids"],
                                                                         clean_up_tokenization_spaces=True)


def test_tokenizer_matches_tokenizers_bpe_and_unigram():
    tokenizers = reference("tokenizers")
    for d in (ST_DIR, os.path.join(ROOT, "tests", "fixtures_unigram", "xlmr_tiny")):
        hf = tokenizers.Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        tok = tformer.Tokenizer.load(d)
        assert tok.vocab_size == hf.get_vocab_size()
        texts = SENTENCES[:24] + ["  two  spaces", "tabs\tand\nnewlines", "\u00e9\u0301 combining"]
        want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
        assert tok.encode_batch(texts) == want, d
        assert tok.decode_batch(want) == [hf.decode(x, skip_special_tokens=False) for x in want], d
        assert tok.encode(texts[0], add_special_tokens=True) == hf.encode(texts[0]).ids, d


def test_tokenizer_errors():
    with pytest.raises(tformer.Error, match="no-such"):
        tformer.Tokenizer.load("/no-such-folder")
    tok = tformer.Tokenizer.load(ST_DIR)
    with pytest.raises(tformer.InputError, match="ids\\[0\\]"):
        tok.decode([0, 10 ** 9])
    with pytest.raises(tformer.InputError, match="int32"):
        tok.decode([0, "x"])
    with pytest.raises(tformer.InputError):
        tok.encode(["a list"])
    with pytest.raises(tformer.InputError, match="NUL"):
        tok.encode("a\0b")
    with pytest.raises(tformer.InputError, match="max_length"):
        tok.encode("a", max_length=0)
    assert tok.encode("") == [] and tok.decode([]) == "" and tok.encode_batch([]) == []
    assert tformer.load(ST_DIR).tokenizer.encode("The cat") == tok.encode("The cat")


def test_dlpack_to_torch_without_a_copy():
    torch = reference("torch")
    e = tformer.load(ST_DIR).embed(["The cat sat on the mat.", "A dog ran in the park."])
    t = torch.from_dlpack(e)
    assert t.shape == (2, 16) and t.dtype == torch.float32
    t[1, 3] = 42.0  # the same memory: the library's buffer, seen by numpy and torch
    assert e[1, 3] == 42.0
    del e
    assert float(t[1, 3]) == 42.0  # torch's view keeps the buffer alive
