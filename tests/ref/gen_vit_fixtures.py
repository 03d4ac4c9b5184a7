#!/usr/bin/env python3
"""Hugging Face ViT folders and their outputs, and PyTorch's patch embedding,
for tests/test_vit.c.

    python tests/ref/gen_vit_fixtures.py --out tests/fixtures_vit
        the committed cases (transformers 4.x)

    python tests/ref/gen_vit_fixtures.py --random 8 --seed 1234 --out build/vit_fresh
        fresh random configurations and inputs (make vit-conformance)

    python tests/ref/gen_vit_fixtures.py --expected-for build/vit_export
        transformers loads each folder tformer wrote (config.json,
        model.safetensors, input.safetensors) and writes expected.safetensors

A model case is a folder: config.json and model.safetensors as save_pretrained
writes them, input.safetensors (pixel_values float32 NCHW, labels int64 for
some classifier cases: ViTForImageClassification.forward()'s arguments) and
expected.safetensors (the output fields transformers returns:
last_hidden_state and, with a pooler, pooler_output of ViTModel; logits, and loss with
labels, of ViTForImageClassification), computed in float64 from the float32
weights (model.double()) and rounded once; with labels also
gradients.safetensors: the loss's gradient with respect to pixel_values and
every parameter, by name, the same way.

Weights: LayerNorms N(1, 0.2) and N(0, 0.05), the class token and the
position embeddings N(0, 1), every other tensor N(0, 0.4): transformers' own
initialisation (std 0.02) gives nearly constant outputs, which would not
notice a misplaced weight. Pixels U(0, 1).

A patch-embedding case (patch_embed_*) is a folder holding case.safetensors:
x (B,C,H,W), weight (D,C,P,P), bias (D), r (B,N,D), out =
conv2d(x, weight, bias, stride=P).flatten(2).transpose(1,2) and the gradients
of sum(out * r): grad_x, grad_weight, grad_bias, in float64, rounded once.

transformers 4.36.2 over Debian's torch 1.13 (build/hfvenv).
"""
import os

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import ViTConfig, ViTForImageClassification, ViTModel

import fixture_cli

ARCHS = {"ViTModel": ViTModel, "ViTForImageClassification": ViTForImageClassification}

# (name, architecture, config, inputs)
CASES = [
    ("model_grey28_p7", "ViTModel",
     dict(image_size=28, patch_size=7, num_channels=1, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
          intermediate_size=24),
     dict(B=3, attn=True)),
    ("cls_grey28_p4_labels", "ViTForImageClassification",
     dict(image_size=28, patch_size=4, num_channels=1, hidden_size=12, num_hidden_layers=2, num_attention_heads=3,
          intermediate_size=20, num_labels=10, hidden_act="gelu_new"),
     dict(B=4, labels=True)),
    ("cls_rgb12_p3_noqkvbias", "ViTForImageClassification",
     dict(image_size=12, patch_size=3, num_channels=3, hidden_size=20, num_hidden_layers=3, num_attention_heads=4,
          intermediate_size=16, num_labels=5, qkv_bias=False, layer_norm_eps=1e-6, hidden_act="relu",
          id2label={0: "cat", 1: "dog", 2: "bird", 3: "fish", 4: "frog"}),
     dict(B=2, attn=True)),
    ("model_rgb13_p4_leftover", "ViTModel",
     dict(image_size=13, patch_size=4, num_channels=3, hidden_size=15, num_hidden_layers=1, num_attention_heads=5,
          intermediate_size=30, hidden_act="gelu_pytorch_tanh"),
     dict(B=2)),
    ("cls_grey12_p7_one_patch", "ViTForImageClassification",
     dict(image_size=12, patch_size=7, num_channels=1, hidden_size=8, num_hidden_layers=2, num_attention_heads=1,
          intermediate_size=12, num_labels=3, hidden_act="silu"),
     dict(B=3, labels=True, attn=True)),
    ("model_grey10_p5_nopooler", "ViTModel",
     dict(image_size=10, patch_size=5, num_channels=1, hidden_size=12, num_hidden_layers=2, num_attention_heads=2,
          intermediate_size=8, layer_norm_eps=1e-5),
     dict(B=2, pooler=False)),
]

# (name, B, C, H, W, D, P)
PATCH_CASES = [
    ("patch_embed_rgb_9x11_p4", 2, 3, 9, 11, 5, 4),
    ("patch_embed_grey_28_p7", 2, 1, 28, 28, 6, 7),
    ("patch_embed_p1", 1, 2, 3, 4, 3, 1),
]


def reference(model, arch, x):
    """transformers' outputs in float64 from the float32 weights, rounded once."""
    kw = {"add_pooling_layer": model.pooler is not None} if arch == "ViTModel" else {}
    out = fixture_cli.double_outputs(ARCHS[arch], model, x, **kw)
    if arch == "ViTModel":
        res = {"last_hidden_state": out.last_hidden_state.float()}
        if out.pooler_output is not None:
            res["pooler_output"] = out.pooler_output.float()
        return res
    res = {"logits": out.logits.float()}
    if out.loss is not None:
        res["loss"] = out.loss.float().reshape(())
    return res


def gradients(model, x):
    """The gradients of the loss with respect to pixel_values and every parameter
    (Hugging Face's names), float64 from the float32 weights, rounded once."""
    m = ViTForImageClassification(model.config)
    m.load_state_dict(model.state_dict())
    m = m.double().train()  # dropout is 0
    pixels = x["pixel_values"].double().requires_grad_(True)
    m(pixel_values=pixels, labels=x["labels"]).loss.backward()
    res = {"pixel_values": pixels.grad.float()}
    res.update({k: p.grad.float().contiguous() for k, p in m.named_parameters()})
    return res


def attentions(model, arch, x):
    """output_attentions=True: each layer's probabilities (B,H,N+1,N+1) as
    "attentions.<layer>", and from them, in float64, the attention rollout
    (Abnar & Zuidema 2020, as jacobgil/vit-explain computes it with mean head
    fusion and no discarding): R = I; per layer R = ((mean_h A + I) / 2,
    rows renormalised) @ R; "rollout" = R[:, 0, 1:] (B,N); "heads" = the last
    layer's class-token rows over the patches (B,H,N)."""
    kw = {"add_pooling_layer": model.pooler is not None} if arch == "ViTModel" else {}
    m = ARCHS[arch](model.config, **kw)
    m.load_state_dict(model.state_dict())
    m = m.double().eval()
    with torch.no_grad():
        att = m(pixel_values=x["pixel_values"].double(), output_attentions=True).attentions
    T = att[0].shape[-1]
    eye = torch.eye(T, dtype=torch.float64)
    r = eye.expand(att[0].shape[0], T, T)
    for a in att:
        f = (a.mean(dim=1) + eye) / 2
        r = (f / f.sum(dim=-1, keepdim=True)) @ r
    res = {f"attentions.{i}": a.float().contiguous() for i, a in enumerate(att)}
    res["rollout"] = r[:, 0, 1:].float().contiguous()
    res["heads"] = att[-1][:, :, 0, 1:].float().contiguous()
    return res


def write_case(out, name, arch, cfg_kw, spec, seed):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    cfg = ViTConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **cfg_kw)
    kw = {"add_pooling_layer": spec.get("pooler", True)} if arch == "ViTModel" else {}
    model = ARCHS[arch](cfg, **kw).eval()
    fixture_cli.init_weights(model, g, "layernorm", ("cls_token", "position_embeddings"))
    d = os.path.join(out, name)
    x = fixture_cli.save_image_case(d, model, arch, spec, g, reference, gradients)
    if spec.get("attn"):
        save_file(attentions(model, arch, x), os.path.join(d, "attentions.safetensors"))
    print(f"wrote {d} (transformers {transformers.__version__}; inputs {', '.join(x)})")


def write_patch_case(out, name, B, C, H, W, D, P, seed):
    g = torch.Generator().manual_seed(seed)
    t = {"x": torch.randn(B, C, H, W, generator=g), "weight": torch.randn(D, C, P, P, generator=g),
         "bias": torch.randn(D, generator=g)}
    N = (H // P) * (W // P)
    t["r"] = torch.randn(B, N, D, generator=g)
    leaves = {k: v.double().requires_grad_(k != "r") for k, v in t.items()}
    y = torch.nn.functional.conv2d(leaves["x"], leaves["weight"], leaves["bias"], stride=P).flatten(2).transpose(1, 2)
    (y * leaves["r"]).sum().backward()
    res = dict(t, out=y.detach().float().contiguous())
    for k in ("x", "weight", "bias"):
        res["grad_" + k] = leaves[k].grad.float()
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    save_file({k: v.contiguous() for k, v in res.items()}, os.path.join(d, "case.safetensors"))
    print(f"wrote {d}")


def random_case(r):
    n_head = r.randint(1, 4)
    patch = r.choice([2, 3, 4, 5, 7])
    image = patch * r.randint(1, 5) + r.choice([0, 0, 1, patch - 1])
    cfg = dict(image_size=image, patch_size=patch, num_channels=r.choice([1, 3]),
               hidden_size=n_head * r.randint(max(2, -(-8 // n_head)), 8), num_hidden_layers=r.randint(1, 3),
               num_attention_heads=n_head, intermediate_size=r.randint(4, 32),
               hidden_act=r.choice(["gelu", "gelu_new", "relu", "silu", "gelu_pytorch_tanh"]),
               qkv_bias=r.random() < 0.7, layer_norm_eps=r.choice([1e-12, 1e-6, 1e-5]))
    arch = r.choice(list(ARCHS))
    spec = dict(B=r.randint(1, 4), pooler=r.random() < 0.7)
    if arch == "ViTForImageClassification":
        cfg["num_labels"] = r.randint(2, 12)
        spec["labels"] = r.random() < 0.5
    return arch, cfg, spec


def expected_for(root):
    """transformers loads each folder tformer wrote and computes its outputs."""
    from safetensors.torch import load_file

    def kwargs(d, arch):  # config.json cannot say add_pooling_layer: the folder's tensors do
        pooled = arch != "ViTModel" or "pooler.dense.weight" in load_file(os.path.join(d, "model.safetensors"))
        return {} if pooled else {"add_pooling_layer": False}
    fixture_cli.expected_for(root, ARCHS, reference, kwargs)


def main():
    def patch_cases(out):
        for name, *shape in PATCH_CASES:
            write_patch_case(out, name, *shape, fixture_cli.case_seed(name))
    fixture_cli.run(CASES, write_case, random_case, expected=expected_for, extra=patch_cases)

if __name__ == "__main__":
    main()
