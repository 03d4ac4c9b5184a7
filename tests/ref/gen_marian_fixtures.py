#!/usr/bin/env python3
"""Hugging Face MarianMTModel folders and their outputs, for tests/test_marian.c.

    python tests/ref/gen_marian_fixtures.py --out tests/fixtures_marian
        the committed cases written by the running transformers' major version
        (4.x: CASES; 5.x: CASES_V5, named v5_...)

    python tests/ref/gen_marian_fixtures.py --random 6 --seed 1234 --out build/marian_fresh
        fresh random configurations, inputs and sources (make marian-conformance)

Each case is a folder: config.json and model.safetensors as save_pretrained
writes them, input.safetensors (tensors named as MarianMTModel.forward()'s
arguments) and expected.safetensors (the output fields transformers returns:
logits, loss with labels, encoder_last_hidden_state), computed in float64
from the float32 weights (model.double()) and rounded once; and
generate.json: source sentences and the ids transformers' generate() gives
for them (the float32 model, one sentence at a time) with the options named
there (num_beams, max_length, length_penalty, early_stopping).

Weights (init_weights): LayerNorms N(1, 0.2) and N(0, 0.05), embeddings of
unit size, the rest N(0, 0.6); final_logits_bias N(0, 0.5) with eos raised
(by 3 in the committed cases) so that hypotheses end inside max_length, often
enough that Hugging Face's beam search and tformer's own rule
(TF_BEAM_TFORMER) give different ids on some sources. Sources hold neither
pad nor eos inside (generate() would mask a pad).
Padding: attention_mask pads the source on either side (each row keeps a
token); decoder_attention_mask pads the target on the right only (a target
row whose first keys are padding sees nothing: transformers then averages the
values, tformer gives zeros). generate() is called with forced_eos_token_id
None and no bad_words_ids (MarianConfig's default forces eos at max_length)
except in the runs that name them: forced_eos_token_id "eos" is the config's
eos; bad_words_ids "top" bans the commonest first token of the same run
without it (each such run changes some outputs, or the script stops);
"common" bans the three commonest tokens of its outputs; renormalize_logits true
(LogitNormalization after the processors) must change some outputs too.

transformers 4.36.2 over Debian's torch 1.13 (build/hfvenv); the 5.x cases
with transformers 5.x over PyTorch 2.x.
"""
import json
import os
import shutil

import torch
import transformers
from safetensors.torch import save_file
from transformers import MarianConfig, MarianMTModel

import fixture_cli

# (name, config, inputs, generate runs)
CASES = [
    # renormalize_logits with bans: a beam's scores shift by the mass its hypotheses lose,
    # which changes few outputs of such a model: 40 sources, so that some change (one
    # short input row for the forward: sensitivity 2.0e-6, where B=2 T=5 gave 9.8e-6)
    ("renormalized_bans",
     dict(vocab_size=60, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
          decoder_attention_heads=2, encoder_ffn_dim=24, decoder_ffn_dim=24, max_position_embeddings=24,
          activation_function="swish", scale_embedding=True, pad_token_id=59, decoder_start_token_id=59,
          eos_token_id=0),
     dict(B=1, T=4, U=3, mask="right", eos_bias=3.0, sources=40),
     [dict(num_beams=4, max_length=12, bad_words_ids="common", renormalize_logits=True),
      dict(num_beams=3, max_length=8, forced_eos_token_id="eos", bad_words_ids="common", renormalize_logits=True,
           length_penalty=0.6)]),
    ("shared_tied_swish_scaled",
     dict(vocab_size=60, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
          decoder_attention_heads=2, encoder_ffn_dim=24, decoder_ffn_dim=24, max_position_embeddings=24,
          activation_function="swish", scale_embedding=True, pad_token_id=59, decoder_start_token_id=59,
          eos_token_id=0),
     dict(B=3, T=7, U=6, mask="right", dec_mask=True, labels=True, eos_bias=3.0),
     [dict(num_beams=1, max_length=12), dict(num_beams=4, max_length=12),
      dict(num_beams=3, max_length=10, length_penalty=0.6, early_stopping=True),
      dict(num_beams=2, max_length=12, length_penalty=2.0, early_stopping=True),
      dict(num_beams=1, max_length=5, forced_eos_token_id="eos", bad_words_ids="top"),
      dict(num_beams=3, max_length=5, forced_eos_token_id="eos", bad_words_ids="top"),
      dict(num_beams=4, max_length=6, forced_eos_token_id="eos", early_stopping=True)]),
    ("separate_untied_gelu_odd_width",
     dict(vocab_size=45, d_model=15, encoder_layers=1, decoder_layers=2, encoder_attention_heads=5,
          decoder_attention_heads=5, encoder_ffn_dim=20, decoder_ffn_dim=20, max_position_embeddings=20,
          activation_function="gelu", scale_embedding=False, share_encoder_decoder_embeddings=False,
          tie_word_embeddings=False, pad_token_id=3, decoder_start_token_id=3, eos_token_id=1),
     dict(B=2, T=8, U=5, mask="left", eos_bias=3.0),
     [dict(num_beams=1, max_length=10), dict(num_beams=4, max_length=10, length_penalty=2.0),
      dict(num_beams=5, max_length=9, early_stopping="never"),
      dict(num_beams=3, max_length=10, length_penalty=-0.5, early_stopping="never"),
      dict(num_beams=2, max_length=4, forced_eos_token_id="eos", bad_words_ids="top"),
      dict(num_beams=1, max_length=10, bad_words_ids="top")]),
    ("shared_untied_relu_labels_only",
     dict(vocab_size=50, d_model=16, encoder_layers=1, decoder_layers=2, encoder_attention_heads=4,
          decoder_attention_heads=4, encoder_ffn_dim=16, decoder_ffn_dim=16, max_position_embeddings=16,
          activation_function="relu", scale_embedding=True, tie_word_embeddings=False, pad_token_id=49,
          decoder_start_token_id=49, eos_token_id=0),
     dict(B=2, T=6, U=7, labels=True, labels_only=True),
     [dict(num_beams=2, max_length=14)]),
    ("separate_tied_gelu_new",
     dict(vocab_size=40, d_model=12, encoder_layers=2, decoder_layers=1, encoder_attention_heads=3,
          decoder_attention_heads=3, encoder_ffn_dim=30, decoder_ffn_dim=30, max_position_embeddings=18,
          activation_function="gelu_new", scale_embedding=True, share_encoder_decoder_embeddings=False,
          pad_token_id=39, decoder_start_token_id=39, eos_token_id=2),
     dict(B=3, T=5, U=8, mask="right", dec_mask=True, eos_bias=3.0),
     [dict(num_beams=1, max_length=15), dict(num_beams=3, max_length=15),
      dict(num_beams=2, max_length=15, length_penalty=2.0, early_stopping=True)]),
    # eos lowered: outputs run to max_length (29 new ids), past tformer's own
    # default budget of 1.5 * source + 10 (at most 20 here), where the forced
    # eos lands (test marian_translate_follows_the_folder_settings)
    ("long_outputs_forced_eos",
     dict(vocab_size=30, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
          decoder_attention_heads=2, encoder_ffn_dim=16, decoder_ffn_dim=16, max_position_embeddings=40,
          activation_function="swish", scale_embedding=True, pad_token_id=29, decoder_start_token_id=29,
          eos_token_id=0),
     dict(B=2, T=6, U=5, mask="right", eos_bias=-1.0),
     [dict(num_beams=1, max_length=30, forced_eos_token_id="eos"),
      dict(num_beams=3, max_length=30, forced_eos_token_id="eos"),
      dict(num_beams=4, max_length=26, length_penalty=2.0, early_stopping=True),
      dict(num_beams=2, max_length=28, length_penalty=0.5, early_stopping="never")]),
]

# transformers 5.x ties the encoder's and decoder's tables to model.shared only
# with tie_word_embeddings: shared embeddings untied run (and save) three tables
# apart, where 4.x's encoder and decoder read model.shared (docs/hf-run.md).
CASES_V5 = [
    ("v5_shared_untied_tables",
     dict(vocab_size=37, d_model=12, encoder_layers=2, decoder_layers=1, encoder_attention_heads=3,
          decoder_attention_heads=3, encoder_ffn_dim=20, decoder_ffn_dim=20, max_position_embeddings=16,
          activation_function="gelu", scale_embedding=False, tie_word_embeddings=False, pad_token_id=36,
          decoder_start_token_id=36, eos_token_id=0),
     dict(B=2, T=7, U=5, mask="right", labels=True),
     []),
]
MAJOR = int(transformers.__version__.split(".")[0])


def padding_mask(g, B, T, side):
    """(B,T) int64, 1 = token: rows of random lengths, one full row, one padded row."""
    mask = torch.zeros(B, T, dtype=torch.int64)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    lengths[0] = T
    lengths[-1] = min(int(lengths[-1]), T - 2)
    for b, n in enumerate(lengths.tolist()):
        if side == "right":
            mask[b, :n] = 1
        else:
            mask[b, T - n:] = 1
    return mask


def make_inputs(g, cfg, spec):
    B, T, U = spec["B"], spec["T"], spec["U"]
    V = cfg.vocab_size  # the decoder's too: tformer reads folders with one vocabulary
    x = {"input_ids": torch.randint(0, V, (B, T), generator=g)}
    if spec.get("mask"):
        x["attention_mask"] = padding_mask(g, B, T, spec["mask"])
    if not spec.get("labels_only"):
        x["decoder_input_ids"] = torch.randint(0, V, (B, U), generator=g)
        x["decoder_input_ids"][:, 0] = cfg.decoder_start_token_id
    if spec.get("dec_mask"):
        x["decoder_attention_mask"] = padding_mask(g, B, U, "right")
    if spec.get("labels"):
        labels = torch.randint(0, V, (B, U), generator=g)
        labels[torch.rand(B, U, generator=g) < 0.25] = -100
        x["labels"] = labels
    return x


def reference(model, x):
    """transformers' outputs in float64 from the float32 weights, rounded once."""
    m = MarianMTModel(model.config)
    m.load_state_dict(model.state_dict())
    m = m.double().eval()
    torch.set_default_dtype(torch.float64)  # 4.36's causal mask is torch.full of finfo(float64).min, default dtype
    try:
        with torch.no_grad():
            out = m(**x)
    finally:
        torch.set_default_dtype(torch.float32)
    res = {"logits": out.logits.float(), "encoder_last_hidden_state": out.encoder_last_hidden_state.float()}
    if "labels" in x:
        res["loss"] = out.loss.float().reshape(())
    return res


def sensitivity(model, x):
    """How far the float64 logits move when every weight moves by a relative 1e-7
    (float32's rounding): a case past ~2e-6 is too ill-conditioned to compare
    float32 answers at 1e-5 (random weights sometimes make one)."""
    m = MarianMTModel(model.config)
    m.load_state_dict(model.state_dict())
    m = m.double().eval()
    g = torch.Generator().manual_seed(0)
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            a = m(**x).logits
            state = {k: v.clone() for k, v in m.state_dict().items()}
            worst = 0.0
            for _ in range(3):  # the largest of three draws
                for p in m.parameters():
                    p.mul_(1 + 1e-7 * torch.randn(p.shape, generator=g, dtype=p.dtype))
                worst = max(worst, float((m(**x).logits - a).abs().max()))
                m.load_state_dict(state)
    finally:
        torch.set_default_dtype(torch.float32)
    return worst


def generate_runs(model, g, runs, n_sources):
    """Each run's options and generate()'s ids for n_sources random sources (without padding)."""
    cfg = model.config
    sources = []
    for _ in range(n_sources):
        n = int(torch.randint(2, 7, (1,), generator=g))
        src = torch.randint(0, cfg.vocab_size, (n,), generator=g)
        plain = min(set(range(5)) - {cfg.eos_token_id, cfg.pad_token_id})
        src[(src == cfg.eos_token_id) | (src == cfg.pad_token_id)] = plain  # generate() masks a pad in the source
        sources.append(src.tolist() + [cfg.eos_token_id])  # Marian's sources end with eos
    def generate(opts):
        kw = {"forced_eos_token_id": None, "bad_words_ids": None, "num_return_sequences": 1, **opts}
        with torch.no_grad():
            return [model.generate(torch.tensor([src]), do_sample=False, **kw)[0].tolist() for src in sources]

    out = []
    for run in runs:
        opts = {"num_beams": 1, "length_penalty": 1.0, "early_stopping": False, **run}
        if opts.get("forced_eos_token_id") == "eos":
            opts["forced_eos_token_id"] = cfg.eos_token_id
        if opts.get("bad_words_ids") == "top":  # the commonest first token of the run without it
            plain = generate({k: v for k, v in opts.items() if k != "bad_words_ids"})
            firsts = [ids[1] for ids in plain if len(ids) > 1 and ids[1] != cfg.eos_token_id]
            opts["bad_words_ids"] = [[max(set(firsts), key=lambda t: (firsts.count(t), -t))]]
        if opts.get("bad_words_ids") == "common":  # the three commonest tokens of the run without them
            plain = generate({k: v for k, v in opts.items() if k != "bad_words_ids"})
            toks = [t for ids in plain for t in ids[1:] if t != cfg.eos_token_id]
            opts["bad_words_ids"] = [[t] for t in sorted(set(toks), key=lambda t: (-toks.count(t), t))[:3]]
        ids = generate(opts)
        if opts.get("renormalize_logits"):  # the test must be able to fail: the log-softmax changes some outputs
            changed = sum(a != b for a, b in zip(ids, generate(dict(opts, renormalize_logits=False))))
            print(f"  {run}: {changed} of {len(ids)} outputs change with renormalize_logits")
            assert changed > 0
        if "forced_eos_token_id" in opts or "bad_words_ids" in opts:  # the test must be able to fail
            bare = {k: v for k, v in opts.items() if k not in ("forced_eos_token_id", "bad_words_ids")}
            changed = sum(a != b for a, b in zip(ids, generate(bare)))
            print(f"  {run}: {changed} of {len(ids)} outputs change with the logits processors")
            assert changed > 0
        out.append(dict(opts, outputs=ids))
    return {"sources": sources, "runs": out}


def init_weights(model, eos_bias):
    """Random weights under which generate() depends on the source and ends at
    various lengths (transformers' own init repeats one token whatever the source)."""
    cfg = model.config
    emb = 0.3 if cfg.scale_embedding else 1.0  # the embedded tokens of unit size either way
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name:  # a parameter too, but save_pretrained leaves it out: the sinusoids stay
                continue
            if "layer_norm" in name:
                p.normal_(1.0 if name.endswith("weight") else 0.0, 0.2 if name.endswith("weight") else 0.05)
            elif "embed_tokens" in name or "shared" in name:
                p.normal_(0.0, emb)
            else:
                p.normal_(0.0, 0.6)
        model.final_logits_bias.normal_(0.0, 0.5)
        model.final_logits_bias[0, cfg.eos_token_id] += eos_bias


def write_case(out, name, cfg_kw, spec, runs, seed):
    torch.manual_seed(seed)
    cfg = MarianConfig(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, **cfg_kw)
    model = MarianMTModel(cfg).eval()
    init_weights(model, spec.get("eos_bias", 1.0))
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    if os.path.exists(os.path.join(d, "generation_config.json")):  # options go explicitly to generate()
        os.remove(os.path.join(d, "generation_config.json"))
    g = torch.Generator().manual_seed(seed + 1)
    x = make_inputs(g, cfg, spec)
    save_file(x, os.path.join(d, "input.safetensors"))
    save_file(reference(model, x), os.path.join(d, "expected.safetensors"))
    sens = sensitivity(model, x)
    if runs:
        with open(os.path.join(d, "generate.json"), "w") as f:
            json.dump(generate_runs(model, g, runs, spec.get("sources", 6)), f, indent=1)
    print(f"wrote {d} (transformers {transformers.__version__}; inputs {', '.join(x)}; sensitivity {sens:.1e})")
    return sens


def random_case(r):
    n_head = r.randint(1, 4)
    V = r.randint(20, 70)
    pad = r.choice([V - 1, r.randint(1, V - 1)])
    width = n_head * r.randint(max(4, -(-8 // n_head)), 8)  # 8 to 32: narrower LayerNorms round past 1e-5
    cfg = dict(vocab_size=V, d_model=width, encoder_layers=r.randint(1, 3), decoder_layers=r.randint(1, 3), encoder_attention_heads=n_head, decoder_attention_heads=n_head,
               max_position_embeddings=r.randint(16, 24),
               activation_function=r.choice(["swish", "silu", "gelu", "gelu_new", "relu"]),
               scale_embedding=r.random() < 0.5, share_encoder_decoder_embeddings=r.random() < 0.6,
               tie_word_embeddings=r.random() < 0.6, pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0)
    cfg["encoder_ffn_dim"] = cfg["decoder_ffn_dim"] = r.randint(4, 32)
    spec = dict(B=r.randint(2, 4), T=r.randint(3, 10), U=r.randint(3, 10), mask=r.choice([None, "right", "left"]),
                dec_mask=r.random() < 0.5, labels=r.random() < 0.5)
    spec["eos_bias"] = r.choice([1.0, 2.0, 3.0])
    runs = [dict(num_beams=1, max_length=12),
            dict(num_beams=r.randint(2, 5), max_length=r.randint(6, 14),
                 length_penalty=r.choice([1.0, 0.6, 2.0, -0.5]), early_stopping=r.choice([False, True, "never"]))]
    return cfg, spec, runs


def write_random_case(out, name, cfg, spec, runs, seed):
    for attempt in range(20):  # the same configuration, other weights
        if write_case(out, name, cfg, spec, runs, seed + 100000 * attempt) <= 3e-6:
            return
        shutil.rmtree(os.path.join(out, name))
        print("  too ill-conditioned to compare at 1e-5 (sensitivity above 3e-6): other weights")


def main():
    fixture_cli.run(CASES if MAJOR == 4 else CASES_V5, write_case, random_case, write_random=write_random_case)

if __name__ == "__main__":
    main()
