#!/usr/bin/env python3
"""Hugging Face VisionEncoderDecoderModel fixtures (a ViT encoder and a GPT-2 decoder with
cross-attention, the vit-gpt2 captioners' layout, or a BERT decoder: BertLMHeadModel with
is_decoder and add_cross_attention) for tests/test_caption_hf.c.

    build/hfvenv/bin/python tests/ref/gen_caption_hf_fixtures.py --out tests/fixtures_caption_hf
    build/hfvenv/bin/python tests/ref/gen_caption_hf_fixtures.py --out DIR --random 6 --seed S
    build/hfvenv/bin/python tests/ref/gen_caption_hf_fixtures.py --expected-for DIR   (folders tformer wrote)

Each case is a small randomly initialised model saved with save_pretrained (transformers' own
classes, no downloaded weights), input.safetensors (pixel_values float32, decoder_input_ids
int64, and per case decoder_attention_mask with right padding and labels with -100 there),
expected.safetensors (logits, encoder_last_hidden_state, loss with labels: transformers' forward
in float64 from the float32 weights, rounded once) and, with labels, gradients.safetensors (the
loss's gradient for pixel_values and every parameter, by Hugging Face's name; ViTModel's
pooler's are zero: the decoder reads the last hidden state). An encoder width other
than the decoder's adds enc_to_dec_proj. preprocessor_config.json is ViTImageProcessor's.
"""
import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import BertConfig, GPT2Config, ViTConfig, VisionEncoderDecoderConfig, VisionEncoderDecoderModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_cli  # noqa: E402

# name, encoder (image, patch, channels, width, layers, heads), decoder (vocab, width, layers, heads,
# positions; with model_type "bert" BertConfig's keys), inputs (B, T, pad, labels)
CASES = [
    ("ved_rgb16_p4", dict(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=48),
     dict(vocab_size=40, n_embd=32, n_layer=2, n_head=4, n_positions=12), dict(B=2, T=6, pad=True, labels=True)),
    ("ved_grey12_p3_proj", dict(image_size=12, patch_size=3, num_channels=1, hidden_size=24, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=40),
     dict(vocab_size=33, n_embd=16, n_layer=3, n_head=2, n_positions=10), dict(B=3, T=4, pad=False, labels=True)),
    ("ved_nolabels_one", dict(image_size=8, patch_size=4, num_channels=3, hidden_size=16, num_hidden_layers=1,
                              num_attention_heads=1, intermediate_size=20),
     dict(vocab_size=25, n_embd=16, n_layer=1, n_head=4, n_positions=8), dict(B=1, T=7, pad=False, labels=False)),
    ("ved_bert_rgb16_p4", dict(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=4, intermediate_size=48),
     dict(model_type="bert", vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
          intermediate_size=40, max_position_embeddings=12), dict(B=2, T=6, pad=True, labels=True)),
    ("ved_bert_grey12_p3_proj", dict(image_size=12, patch_size=3, num_channels=1, hidden_size=24, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=40),
     dict(model_type="bert", vocab_size=33, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
          intermediate_size=24, max_position_embeddings=10, hidden_act="relu"), dict(B=3, T=4, pad=False, labels=True)),
]


def decoder_config(dec_kw):
    kw = dict(dec_kw)
    if kw.pop("model_type", "gpt2") == "bert":
        return BertConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, bos_token_id=kw["vocab_size"] - 1,
                          eos_token_id=kw["vocab_size"] - 1, **kw)
    return GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=kw["vocab_size"] - 1,
                      eos_token_id=kw["vocab_size"] - 1, **kw)


def build(enc_kw, dec_kw):
    enc = ViTConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **enc_kw)
    dec = decoder_config(dec_kw)  # from_encoder_decoder_configs sets is_decoder and add_cross_attention
    cfg = VisionEncoderDecoderConfig.from_encoder_decoder_configs(enc, dec)
    cfg.decoder_start_token_id = dec_kw["vocab_size"] - 1
    cfg.pad_token_id = 0
    cfg.eos_token_id = dec_kw["vocab_size"] - 1
    return VisionEncoderDecoderModel(config=cfg).eval()


def inputs(cfg, spec, g):
    B, T = spec["B"], spec["T"]
    e, d = cfg.encoder, cfg.decoder
    x = {"pixel_values": torch.rand(B, e.num_channels, e.image_size, e.image_size, generator=g),
         "decoder_input_ids": torch.randint(0, d.vocab_size, (B, T), generator=g)}
    real = torch.ones(B, T, dtype=torch.bool)
    if spec["pad"]:
        x["decoder_attention_mask"] = fixture_cli.pad_mask(B, T, "right")
        real = x["decoder_attention_mask"].bool()
    if spec["labels"]:
        x["labels"] = fixture_cli.token_labels(d.vocab_size, B, T, g, real)
        x["labels"][0, 0] = x["decoder_input_ids"][0, 0]  # one counted label at least: a loss to differentiate
    return x


def checkpoint_names(model, weights):
    """Each parameter's name in the saved file: transformers 5.x's modules have other names than the
    checkpoint it writes (ViT's "encoder.layers.0.attention.q_proj" for "encoder.encoder.layer.0.attention.
    attention.query"), so a parameter the file lacks by name is found there by its values."""
    saved = load_file(weights)
    names = {}
    for k, p in model.named_parameters():
        if k in saved:
            names[k] = k
            continue
        same = [n for n, t in saved.items() if t.shape == p.shape and torch.equal(t, p.detach())]
        if len(same) != 1:
            raise SystemExit(f"{weights}: parameter {k} matches {len(same)} saved tensors")
        names[k] = same[0]
    return names


def reference(model, x, train=False, names=None):
    """The outputs (or, with train, the gradients, by the checkpoint's names) in float64 from the float32 weights."""
    m = VisionEncoderDecoderModel(config=model.config)
    m.load_state_dict(model.state_dict())
    m = m.double().train(train)  # dropout is 0
    args = {k: (v.double() if v.is_floating_point() else v.long()) for k, v in x.items()}
    if train:
        args["pixel_values"].requires_grad_(True)
    with torch.set_grad_enabled(train):
        out = m(**args)
    if train:
        out.loss.backward()
        res = {"pixel_values": args["pixel_values"].grad.float()}
        res.update({(names or {}).get(k, k): (p.grad if p.grad is not None else torch.zeros_like(p)).float().contiguous()
                    for k, p in m.named_parameters()})
        return res
    res = {"logits": out.logits.float().contiguous(),
           "encoder_last_hidden_state": out.encoder_last_hidden_state.float().contiguous()}
    if out.loss is not None:
        res["loss"] = out.loss.float().reshape(())
    return res


def write_preprocessor(d, e):
    """ViTImageProcessor's preprocessor_config.json (written out: its class needs PIL to be made)."""
    p = {"do_normalize": True, "do_rescale": True, "do_resize": True, "image_mean": [0.5] * e.num_channels,
         "image_std": [0.5] * e.num_channels, "image_processor_type": "ViTImageProcessor", "resample": 2,
         "rescale_factor": 1 / 255, "size": {"height": e.image_size, "width": e.image_size}}
    with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
        json.dump(p, f, indent=2)


def write_case(out, name, enc_kw, dec_kw, spec, seed):
    g = fixture_cli.seeded(seed)
    model = build(enc_kw, dec_kw)
    fixture_cli.init_weights(model, g, "ln", ("cls_token", "position_embeddings", "wte.weight", "wpe.weight",
                                              "word_embeddings.weight", "position_embeddings.weight",
                                              "token_type_embeddings.weight"))
    with torch.no_grad():  # ViT's norms are "layernorm*", BERT's "LayerNorm": as GPT-2's ln_*
        for k, p in model.named_parameters():
            if "layernorm" in k.lower():
                p.copy_((1.0 if k.endswith("weight") else 0.0) + (0.2 if k.endswith("weight") else 0.05)
                        * torch.randn(p.shape, generator=g))
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    model.save_pretrained(d, safe_serialization=True)
    if os.path.exists(os.path.join(d, "generation_config.json")):
        os.remove(os.path.join(d, "generation_config.json"))
    write_preprocessor(d, model.config.encoder)
    x = inputs(model.config, spec, g)
    save_file({k: v.contiguous() for k, v in x.items()}, os.path.join(d, "input.safetensors"))
    save_file(reference(model, x), os.path.join(d, "expected.safetensors"))
    if spec["labels"]:
        names = checkpoint_names(model, os.path.join(d, "model.safetensors"))
        save_file(reference(model, x, train=True, names=names), os.path.join(d, "gradients.safetensors"))
    print(f"wrote {d} (transformers {__import__('transformers').__version__}; inputs {', '.join(x)})")


def random_case(r):
    heads = r.choice([1, 2, 4])
    C, P = r.choice([1, 3]), r.choice([2, 3, 4])
    S = P * r.randint(2, 4)
    # 4 features a head at least: a LayerNorm over 2 or 3 features is so ill-conditioned that float32's
    # gradients differ from float64's by 1e-3 (a width of 2 gave 4e-3 on seed 7, every forward within 1e-6)
    ew = heads * r.randint(4, 6)
    dw = ew if r.random() < 0.6 else heads * r.randint(4, 6)
    enc = dict(image_size=S, patch_size=P, num_channels=C, hidden_size=ew, num_hidden_layers=r.randint(1, 2),
               num_attention_heads=heads, intermediate_size=r.randint(8, 40))
    dec = dict(vocab_size=r.randint(10, 60), n_embd=dw, n_layer=r.randint(1, 3), n_head=heads,
               n_positions=r.randint(8, 16))
    if r.random() < 0.4:  # a BERT decoder: 8 features at least, its post-LN norms over 4 (one head of 4) are so
        # ill-conditioned that the portable kernels' float32 gradients differed from float64's by 1.1e-4 (seed 2026,
        # transformers 5.24, random_01; 1.4e-5 with the AVX2 kernels, the forward within 5e-7)
        dec = dict(model_type="bert", vocab_size=dec["vocab_size"], hidden_size=max(dw, 8), num_hidden_layers=dec["n_layer"],
                   num_attention_heads=heads, intermediate_size=r.randint(8, 40),
                   max_position_embeddings=dec["n_positions"], hidden_act=r.choice(["gelu", "relu"]))
    spec = dict(B=r.randint(1, 3), T=r.randint(2, 7), pad=r.random() < 0.5, labels=True)
    return enc, dec, spec


def expected_for(root):
    """transformers loads each folder tformer wrote and writes its outputs on input.safetensors."""
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        model = VisionEncoderDecoderModel.from_pretrained(d).eval()
        x = load_file(os.path.join(d, "input.safetensors"))
        save_file(reference(model, x), os.path.join(d, "expected.safetensors"))
        print(f"{d}: VisionEncoderDecoderModel loaded by transformers {__import__('transformers').__version__}")


if __name__ == "__main__":
    fixture_cli.run(CASES, write_case, random_case, expected=expected_for)
