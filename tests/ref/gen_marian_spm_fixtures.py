#!/usr/bin/env python3
"""A Marian folder around the SentencePiece fixtures, and what transformers does with it.

    build/hfvenv/bin/python tests/ref/gen_marian_spm_fixtures.py --out tests/fixtures_marian_spm

Source side tests/fixtures_spm/en_nfkc.spm, target side de_user.spm (user-defined
symbols, byte fallback); vocab.json joins their pieces as Marian's joint
vocabularies do ("</s>" 0, "<unk>" 1, the source's pieces, the target's new
ones, two language codes, "<pad>" last) but leaves out every 17th piece, so
that some pieces map to the unk id. MarianTokenizer(source.spm, target.spm,
vocab.json) is saved with save_pretrained (tokenizer_config.json,
special_tokens_map.json, vocab.json; the .spm copies are not kept: the tests
copy them from tests/fixtures_spm). tokenizer_cases.json records (transformers
4.36, sentencepiece from pip):

    source   input_ids of tokenizer(text) for each of SOURCES (hard cases,
             special tokens and language codes written in the text)
    target   input_ids of tokenizer(text_target=text) for each of TARGETS
    decode   ids (seeded: pieces of both sides, byte pieces, the special ids,
             ids of pieces the target model lacks) and
             batch_decode(skip_special_tokens=True), with the target model and
             with use_source_tokenizer=True
"""
import argparse
import json
import os
import random
import shutil
import tempfile
import warnings

import sentencepiece as spm
import torch
import transformers
from transformers import MarianConfig, MarianMTModel, MarianTokenizer

from gen_marian_fixtures import init_weights

HERE = os.path.dirname(os.path.abspath(__file__))
SPM = os.path.join(HERE, "..", "fixtures_spm")

SOURCES = [
    "A man in a blue shirt is standing on a ladder.",
    "Two young, White males are outside near many bushes.",
    "Café naïve résumé — ＦＵＬＬ－ＷＩＤＴＨ ａｂｃ",
    "multiple   spaces\tand\ttabs  ",
    "   leading and trailing   ",
    "",
    " ",
    "emoji 😀 🎉 and unknown 漢字",
    ">>de<< A dog runs through the snow.",
    ">>fr<< hi <<x",
    "x >>de<< y",
    "  >>de<<a",
    ">>xx<<",
    "Hello </s> world",
    "a</s>b<unk>c<pad>d",
    "<pad> <s> x",
    "</s>>>de<< after eos",
    "It's a dog's life, isn't it?",
    "ﬁne ① ½ ™",
    "NBSP\u00a0and zero\u200bwidth",
]
TARGETS = [
    "Ein Mann in einem blauen Hemd steht auf einer Leiter.",
    "Ein Mädchen<sep>Mädchens spielt Fußball.",
    "Straße, Füße, Äpfel — 😀 漢字",
    "  zwei  Leerzeichen\tund Tab ",
    "",
    "<2en> ss sss",
    "Hallo </s> Welt",
]


SENTENCES = [
    "A man in a blue shirt is standing on a ladder.",
    "Two dogs play in the snow.",
    "A little girl climbing into a wooden playhouse.",
    "Café naïve — ＦＵＬＬ ａｂｃ 😀",
    ">>de<< A girl climbs a tree.",
    "It's a dog's life, isn't it?",
    "   spaces   everywhere   ",
    "",
]
RUNS = [dict(num_beams=1, max_length=16), dict(num_beams=4, max_length=16),
        dict(num_beams=3, max_length=14, length_penalty=2.0)]


def build_vocab(src, tgt):
    vocab = {"</s>": 0, "<unk>": 1}
    k = 0
    for sp in (src, tgt):
        for i in range(sp.get_piece_size()):
            p = sp.id_to_piece(i)
            if sp.is_control(i) or sp.is_unknown(i) or p in vocab:
                continue
            k += 1
            if k % 17 == 0:
                continue  # left out: such pieces are the unk id
            vocab[p] = len(vocab)
    for p in (">>de<<", ">>fr<<", "<pad>"):
        vocab[p] = len(vocab)
    return vocab


def decode_cases(tok, vocab, rng):
    ids_all = list(range(len(vocab)))
    byte_ids = [i for p, i in vocab.items() if p.startswith("<0x")]
    punct = [vocab[p] for p in ("▁.", ".", "▁,", ",", "▁?", "?", "▁!", "▁'", "'", "s", "▁s", "t", "▁n") if p in vocab]
    specials = [0, 1, vocab["<pad>"]]
    cases = []
    for _ in range(55):
        ids = []
        for _ in range(rng.randint(0, 14)):
            r = rng.random()
            ids.append(rng.choice(ids_all) if r < 0.5 else rng.choice(byte_ids) if r < 0.65 else
                       rng.choice(punct) if r < 0.85 else rng.choice(specials))
        cases.append(ids)
    # spaces before punctuation and contractions, for transformers' clean-up
    for words in (["▁ein", "▁Hund", "▁", ".", "▁", ","], ["▁Hund", "▁", "'", "▁", "s"], ["n", "▁", "'", "t", "▁", "'", "▁", "re"],
                  ["▁", "'", "m", "▁", ".", "▁", "▁", "."], ["▁", "<0x3F>", "▁", "<0x21>", "▁", "'", "ve"]):
        cases.append([vocab.get(w, 1) for w in words])
    out = []
    for ids in cases:
        out.append({"ids": ids, "text": tok.batch_decode([ids], skip_special_tokens=True)[0],
                    "source_text": tok.batch_decode([ids], skip_special_tokens=True, use_source_tokenizer=True)[0]})
    return out


def tokenizer_fixture(out, seed):
    src = spm.SentencePieceProcessor(model_file=os.path.join(SPM, "en_nfkc.spm"))
    tgt = spm.SentencePieceProcessor(model_file=os.path.join(SPM, "de_user.spm"))
    vocab = build_vocab(src, tgt)
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(os.path.join(SPM, "en_nfkc.spm"), os.path.join(tmp, "source.spm"))
        shutil.copy(os.path.join(SPM, "de_user.spm"), os.path.join(tmp, "target.spm"))
        with open(os.path.join(tmp, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = MarianTokenizer(os.path.join(tmp, "source.spm"), os.path.join(tmp, "target.spm"),
                                  os.path.join(tmp, "vocab.json"))
            tok.save_pretrained(out)
    for f in ("source.spm", "target.spm"):
        os.remove(os.path.join(out, f))
    rng = random.Random(seed)
    cases = {
        "transformers": transformers.__version__, "sentencepiece": spm.__version__,
        "source": [{"text": t, "ids": tok(t).input_ids} for t in SOURCES],
        "target": [{"text": t, "ids": tok(text_target=t).input_ids} for t in TARGETS],
        "decode": decode_cases(tok, vocab, rng),
    }
    with open(os.path.join(out, "tokenizer_cases.json"), "w", encoding="utf-8") as f:
        f.write("{\n" + ",\n".join('"%s": %s' % (k, json.dumps(v, ensure_ascii=False)) for k, v in cases.items()) + "\n}\n")
    return tok


def greedy_margin(model, ids, max_length):
    """The smallest gap between the two best logits over the greedy steps."""
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), do_sample=False, num_beams=1, max_length=max_length,
                             forced_eos_token_id=None, bad_words_ids=None, output_scores=True,
                             return_dict_in_generate=True)
    return min(float(s[0].topk(2).values[0] - s[0].topk(2).values[1]) for s in out.scores)


def model_fixture(out, tok, seed):
    pad = tok.pad_token_id
    cfg = MarianConfig(vocab_size=tok.vocab_size, d_model=16, encoder_layers=1, decoder_layers=1,
                       encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                       max_position_embeddings=64, activation_function="swish", scale_embedding=True,
                       share_encoder_decoder_embeddings=True, tie_word_embeddings=True, pad_token_id=pad,
                       decoder_start_token_id=pad, eos_token_id=tok.eos_token_id, dropout=0.0, attention_dropout=0.0,
                       activation_dropout=0.0)
    sources = [tok(t).input_ids for t in SENTENCES]
    for attempt in range(50):
        torch.manual_seed(seed + attempt)
        model = MarianMTModel(cfg).eval()
        init_weights(model, 6.0)
        margin = min(greedy_margin(model, ids, 16) for ids in sources)
        if margin > 1e-3:
            break
        print(f"seed {seed + attempt}: a greedy step's two best logits {margin:.1e} apart: other weights")
    model.save_pretrained(out, safe_serialization=True)
    if os.path.exists(os.path.join(out, "generation_config.json")):  # the options go to generate() explicitly
        os.remove(os.path.join(out, "generation_config.json"))
    runs = []
    for run in RUNS:
        opts = {"length_penalty": 1.0, "early_stopping": False, **run}
        ids, texts = [], []
        for src in sources:
            with torch.no_grad():
                seq = model.generate(torch.tensor([src]), do_sample=False, forced_eos_token_id=None,
                                     bad_words_ids=None, **opts)
            ids.append(seq[0].tolist())
            texts.append(tok.batch_decode(seq, skip_special_tokens=True)[0])
        runs.append(dict(opts, ids=ids, texts=texts))
    with open(os.path.join(out, "generate.json"), "w", encoding="utf-8") as f:
        json.dump({"seed": seed + attempt, "smallest_greedy_margin": margin, "sentences": SENTENCES,
                   "sources": sources, "runs": runs}, f, ensure_ascii=False, indent=1)
    print(f"model seed {seed + attempt}, smallest greedy margin {margin:.3f}; texts: {runs[0]['texts']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures_marian_spm")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tok = tokenizer_fixture(a.out, a.seed)
    model_fixture(a.out, tok, a.seed)


if __name__ == "__main__":
    main()
