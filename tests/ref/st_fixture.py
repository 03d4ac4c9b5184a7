"""What the sentence-transformers fixture scripts share (gen_roberta_embed_fixture.py,
gen_distilbert_embed_fixture.py, gen_xlmr_embed_fixture.py): the folder
SentenceTransformer.save() writes for a tiny random model and its tokenizer,
and the answers tformer's tests compare with: transformers' ids of each text
and SentenceTransformer.encode() in float64.

Needs sentence-transformers (build/hfvenv: torch 1.13, transformers 4.36).
"""
import argparse
import json
import os
import shutil
import tempfile

import fixture_cli


def out_folder(name):
    """--out OUT: the folder OUT/name, emptied; (OUT, OUT/name)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    return out, d


def learn(tokenizer, corpus, vocab_size, specials):
    """tokenizer (a `tokenizers` implementation) learnt from corpus, with the
    special tokens first, and saved into a new temporary folder: that folder."""
    tmp = tempfile.mkdtemp()
    tokenizer.train_from_iterator([corpus], vocab_size=vocab_size, min_frequency=1, special_tokens=specials,
                                  show_progress=False)
    tokenizer.save_model(tmp)
    return tmp


def random_model(name, cls, config, wstd):
    """cls(config) in eval mode, weights drawn as fixture_cli.init_bert_like(wstd)
    does, torch and the generator seeded by name."""
    import torch
    seed = fixture_cli.case_seed(name)
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    model = cls(config).eval()
    fixture_cli.init_bert_like(model, g, wstd)
    return model


def save_folder(d, model, tok, max_len, normalize, drop=()):
    """What SentenceTransformer.save() writes for model and tok (saved as a
    Hugging Face folder first) under mean pooling, and Normalize when
    normalize, with max_seq_length max_len; less README.md,
    config_sentence_transformers.json and the files in drop (tformer reads
    tokenizer.json)."""
    from sentence_transformers import SentenceTransformer, models
    tmp = tempfile.mkdtemp()
    hf_dir = os.path.join(tmp, "hf")
    model.save_pretrained(hf_dir, safe_serialization=True)
    tok.save_pretrained(hf_dir)
    word = models.Transformer(hf_dir, max_seq_length=max_len)
    modules = [word, models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")]
    st = SentenceTransformer(modules=modules + ([models.Normalize()] if normalize else []), device="cpu")
    st.save(d, safe_serialization=True)
    shutil.rmtree(tmp)
    for extra in ("README.md", "config_sentence_transformers.json") + tuple(drop):
        if os.path.exists(os.path.join(d, extra)):
            os.remove(os.path.join(d, extra))


def save_answers(d, texts, max_len, more=None):
    """d/embeddings.safetensors: SentenceTransformer(d).encode(texts), computed
    in float64 from the float32 weights and rounded once; d/answers.json: for
    each text the ids of the folder's tokenizer (tok(text, truncation=True,
    max_length=max_len)), and more(tok)'s entries. Returns the tokenizer."""
    import torch
    from safetensors.torch import save_file
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(d, device="cpu").double()
    emb = torch.tensor(st.encode(texts, batch_size=4, convert_to_numpy=True))
    save_file({"embeddings": emb.float().contiguous()}, os.path.join(d, "embeddings.safetensors"))
    tok = st.tokenizer
    answers = {"texts": [{"text": t, "ids": tok(t, truncation=True, max_length=max_len)["input_ids"]} for t in texts]}
    if more:
        answers.update(more(tok))
    with open(os.path.join(d, "answers.json"), "w", encoding="utf-8") as f:
        json.dump(answers, f, ensure_ascii=False, indent=1)
    return tok
