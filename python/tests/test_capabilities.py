"""The capabilities from Python against the CLI and the committed reference outputs."""
import json
import os
import struct
import zlib

import numpy as np
import pytest

import tformer
from tformer import _safetensors
from conftest import BERT_DIR, MLM_DIR, RUN_TOL, ST_DIR, VIT_DIR


def fixture_texts():
    """The texts of the sentence-transformers fixture (answers.json), in order."""
    with open(os.path.join(ST_DIR, "answers.json"), encoding="utf-8") as f:
        return [t["text"] for t in json.load(f)["texts"]]


def test_load_reports_family_capabilities_config():
    m = tformer.load(ST_DIR)
    assert m.family == "bert" and m.capabilities == ["run", "embed"]
    assert m.config["model_type"] == "roberta" and m.architecture == "RobertaModel"
    v = tformer.load(VIT_DIR)
    assert v.family == "vit" and v.capabilities == ["run", "classify-image"]
    assert "tformer.Model(" in repr(v)


def test_embed_equals_the_cli(cli):
    texts = fixture_texts()
    got = tformer.load(ST_DIR).embed(texts)
    out = cli(["embed", "--model", ST_DIR], "\n".join(texts) + "\n")
    want = np.array([[float(x) for x in line.split()] for line in out.splitlines()])
    assert got.shape == want.shape == (len(texts), 16) and got.dtype == np.float32
    # The CLI prints %.8g: equal to within the printing's rounding (5e-8 relative).
    assert np.all(np.abs(got - want) <= 6e-8 * np.abs(want) + 1e-12), np.abs(got - want).max()


def test_embed_matches_sentence_transformers_fixture():
    """embeddings.safetensors: SentenceTransformer.encode() of the fixture's texts (tests/ref)."""
    want = _safetensors.load(os.path.join(ST_DIR, "embeddings.safetensors"))["embeddings"]
    got = tformer.load(ST_DIR).embed(fixture_texts())
    assert np.abs(got - want).max() <= 1e-5


def test_embed_matches_sentence_transformers_live():
    st = pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    texts = fixture_texts()
    want = st.SentenceTransformer(ST_DIR, device="cpu").encode(texts, convert_to_numpy=True)
    got = tformer.load(ST_DIR).embed(texts)
    assert np.abs(got - want).max() <= 1e-5


def test_embed_in_reduced_precision_equals_the_cli(cli):
    """load(precision=...) is the CLI's --precision: the same vectors, within 0.999 cosine of f32's."""
    texts = fixture_texts()
    f32 = tformer.load(ST_DIR).embed(texts)
    for p in ("bf16", "int8"):
        got = tformer.load(ST_DIR, precision=p).embed(texts)
        out = cli(["embed", "--model", ST_DIR, "--precision", p], "\n".join(texts) + "\n")
        want = np.array([[float(x) for x in line.split()] for line in out.splitlines()])
        assert np.all(np.abs(got - want) <= 6e-8 * np.abs(want) + 1e-12), (p, np.abs(got - want).max())
        cos = np.sum(got * f32, 1) / np.linalg.norm(got, axis=1) / np.linalg.norm(f32, axis=1)
        assert cos.min() >= 0.999, (p, cos.min())
    with pytest.raises(tformer.InputError, match="precision must be f32, bf16 or int8"):
        tformer.load(ST_DIR, precision="fp16")


def test_embed_normalizes_by_default_as_the_cli(cli):
    """normalize=True is embed()'s default (the issue's signature), also for a folder without a Normalize module
    (the DistilBERT MLM: mean pooling, no modules.json): `tformer embed --normalize`'s rows; normalize=None is the
    folder's setting, the CLI without the flag (not unit rows here)."""
    m, texts = tformer.load(MLM_DIR), fixture_texts()[:4]
    for kw, flags in (({}, ["--normalize"]), ({"normalize": True}, ["--normalize"]), ({"normalize": None}, [])):
        got = m.embed(texts, **kw)
        out = cli(["embed", "--model", MLM_DIR, *flags], "\n".join(texts) + "\n")
        want = np.array([[float(x) for x in line.split()] for line in out.splitlines()])
        assert got.shape == want.shape and np.all(np.abs(got - want) <= 6e-8 * np.abs(want) + 1e-12), (kw, flags)
    assert np.allclose(np.linalg.norm(m.embed(texts), axis=1), 1, atol=1e-6)
    raw = np.linalg.norm(m.embed(texts, normalize=None), axis=1)
    assert np.all(np.abs(raw - 1) > 1e-3), raw  # the folder's own setting does not normalise: the test can tell
    assert np.array_equal(m.embed(texts, normalize=False), m.embed(texts, normalize=None))


def test_embed_options_and_ownership():
    m = tformer.load(ST_DIR)
    texts = fixture_texts()[:3]
    e = m.embed(texts)
    assert np.allclose(np.linalg.norm(e, axis=1), 1, atol=1e-6)  # the folder's Normalize module
    raw = m.embed(texts, normalize=False)
    assert np.allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), e, atol=1e-6)
    assert not np.allclose(m.embed(texts, pooling="cls"), e)
    assert np.allclose(m.embed(texts, batch_size=1), e, atol=1e-6)
    assert m.embed("The cat sat on the mat.").shape == (1, 16)
    assert m.embed([]).shape == (0, 16)
    assert not e.flags["OWNDATA"] and e.flags["WRITEABLE"] and e.flags["C_CONTIGUOUS"]
    if hasattr(np, "from_dlpack"):  # numpy's DLPack export (torch.from_dlpack reads the same), no copy
        assert np.shares_memory(np.from_dlpack(e), e)
    e[0, 0] = 42  # the caller's array: writable, freed with it
    del e


def test_run_matches_transformers_fixtures():
    for d in (VIT_DIR, BERT_DIR):
        m = tformer.load(d)
        inputs = _safetensors.load(os.path.join(d, "input.safetensors"))
        want = _safetensors.load(os.path.join(d, "expected.safetensors"))
        got = m.run(inputs)
        assert sorted(got) == sorted(want), d
        for k in want:
            assert got[k].shape == want[k].shape and got[k].dtype == want[k].dtype, (d, k)
            assert np.abs(got[k] - want[k]).max() <= RUN_TOL, (d, k)


def write_png(path, grey):
    """An 8-bit grey PNG of grey (H, W) uint8."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    h, w = grey.shape
    rows = b"".join(b"\0" + grey[y].tobytes() for y in range(h))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_classify_equals_the_cli_on_pngs(cli, tmp_path):
    pixels = _safetensors.load(os.path.join(VIT_DIR, "input.safetensors"))["pixel_values"]
    grey = np.round(pixels[:, 0] * 255).astype(np.uint8)
    paths = []
    for i, g in enumerate(grey):
        paths.append(str(tmp_path / f"img{i}.png"))
        write_png(paths[-1], g)
    m = tformer.load(VIT_DIR)
    from_paths, from_arrays = m.classify(paths, top_k=3), m.classify(list(grey), top_k=3)
    assert from_paths == from_arrays
    assert m.classify(grey, top_k=3) == from_arrays  # an (n, H, W) array
    assert m.classify(grey.astype(np.float32) / 255, top_k=3) == from_arrays
    out = cli(["classify", "--model", VIT_DIR, "--top-k", "3", *paths]).splitlines()
    for line, r, p in zip(out, from_paths, paths):
        fields = line.split("\t")
        assert fields[0] == p
        assert fields[1::2] == [lab for lab, _ in r["top_k"]]
        assert fields[2::2] == [f"{s:.4f}" for _, s in r["top_k"]]
        assert r["label"] == r["top_k"][0][0] and r["score"] == r["top_k"][0][1]
    assert len(out) == len(paths)


def test_image_logits_equal_run_logits():
    m = tformer.load(VIT_DIR)
    inputs = _safetensors.load(os.path.join(VIT_DIR, "input.safetensors"))
    logits = m.image_logits(inputs["pixel_values"][:, 0])
    assert np.abs(logits - m.run({"pixel_values": inputs["pixel_values"]})["logits"]).max() <= 1e-6
    assert len(m.labels()) == logits.shape[1]


def test_fill_mask_matches_the_pipeline_and_the_cli(cli):
    with open(os.path.join(MLM_DIR, "answers.json"), encoding="utf-8") as f:
        want = json.load(f)
    m = tformer.load(MLM_DIR)
    assert "fill-mask" in m.capabilities
    got = m.fill_mask(want["text"], top_k=3)
    assert len(got) == 1 and [c["token_id"] for c in got[0]] == [t["token"] for t in want["top"]]
    assert max(abs(c["score"] - t["score"]) for c, t in zip(got[0], want["top"])) <= 1e-6
    text = "the cat [MASK] on the [MASK]."
    got = m.fill_mask(text, top_k=4)
    out = cli(["fill-mask", "--model", MLM_DIR, "--text", text, "--top-k", "4"]).splitlines()
    rows = [line.split() for line in out if not line.startswith("[MASK]")]
    assert len(got) == 2 and [c["position"] for c in got[0]] == [3] * 4
    assert rows == [[f"{c['score']:.6f}", c["token"], "(id", f"{c['token_id']})"] for m_ in got for c in m_]


RGB_VIT_DIR = os.path.join(os.path.dirname(VIT_DIR), "cls_rgb12_p3_noqkvbias")


def write_rgb_png(path, rgb):
    """An 8-bit RGB PNG of rgb (H, W, 3) uint8."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    h, w, _ = rgb.shape
    rows = b"".join(b"\0" + rgb[y].tobytes() for y in range(h))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_classify_color_forces_the_conversion_as_the_cli(cli, tmp_path):
    """color="grayscale" / "rgb" are the CLI's --grayscale / --rgb: the same labels and probabilities for PNG paths
    (grey first moves them by far more than the 1e-6 allowed); arrays made grey first as well; "rgb" refused by a grey
    model."""
    rng = np.random.default_rng(5)
    imgs = rng.integers(0, 256, (3, 12, 12, 3), dtype=np.uint8)
    paths = [str(tmp_path / f"rgb{i}.png") for i in range(3)]
    for p, img in zip(paths, imgs):
        write_rgb_png(p, img)
    m = tformer.load(RGB_VIT_DIR)
    for color, flags in ((None, []), ("grayscale", ["--grayscale"]), ("rgb", ["--rgb"])):
        got = m.classify(paths, top_k=3, color=color)
        want = json.loads(cli(["classify", "--model", RGB_VIT_DIR, "--json", "--top-k", "3", *flags, *paths]))
        for g, w in zip(got, want["images"]):  # one batch here, one per file there: the last bits may differ
            assert [lab for lab, _ in g["top_k"]] == [t["label"] for t in w["top"]], (color, g, w)
            assert max(abs(s - t["probability"]) for (_, s), t in zip(g["top_k"], w["top"])) <= 1e-6, (color, g, w)
    grey = m.classify(paths, top_k=3, color="grayscale")
    assert max(abs(g["score"] - a["score"]) for g, a in zip(grey, m.classify(paths, top_k=3))) > 1e-3  # it counts
    assert m.classify(imgs, top_k=3, color="rgb") == m.classify(imgs, top_k=3)
    arrays = m.image_logits(imgs, color="grayscale")
    assert np.abs(arrays - m.image_logits(paths, color="grayscale")).max() <= 1e-2  # PIL's integer L vs floats
    assert np.abs(arrays - m.image_logits(imgs)).max() > 1e-3
    with pytest.raises(tformer.InputError, match='color must be None, "rgb" or "grayscale"'):
        m.classify(paths, color="grey")
    with pytest.raises(tformer.InputError, match="the model takes grey images"):
        tformer.load(VIT_DIR).classify(np.zeros((28, 28), np.uint8), color="rgb")
