#!/usr/bin/env python3
"""Hugging Face Swin folders and their outputs, for tests/test_swin.c.

    python tests/ref/gen_swin_fixtures.py --out tests/fixtures_swin
        the committed cases (transformers 4.x)

    python tests/ref/gen_swin_fixtures.py --random 8 --seed 1234 --out build/swin_fresh
        fresh random configurations and inputs (make swin-conformance)

    python tests/ref/gen_swin_fixtures.py --expected-for build/swin_export
        transformers loads each folder tformer wrote and writes expected.safetensors

A case is a folder: config.json and model.safetensors as save_pretrained
writes them, input.safetensors (pixel_values float32 NCHW, labels int64 for
some classifier cases) and expected.safetensors (last_hidden_state and
pooler_output of SwinModel; logits, and loss with labels, of
SwinForImageClassification), computed in float64 from the float32 weights
and rounded once; with labels also gradients.safetensors: the loss's
gradient with respect to pixel_values and every parameter, by name.

The cases cover grey and RGB images, patch sizes 2 and 4, images that are
not a multiple of the patch (zero padding), windows that do and do not
divide the grid (padding of the feature map), shifted and unshifted blocks,
a stage whose grid equals the window (window clamped, no shift), odd grids
at patch merging, 1 to 3 stages, several depths and heads. transformers
4.36.2 fails on a stage whose grid is smaller than window_size (its bias
table is built for the configured window), so no case has one.

A random case whose float32 run in transformers lies more than 3e-6 from its
float64 one (deep stacks of these weights amplify rounding: one such case
was 1.5e-5 off in PyTorch itself) is drawn again with other weights.

Weights: LayerNorms N(1, 0.2) and N(0, 0.05), the relative position bias
tables N(0, 1), every other tensor N(0, 0.4) (transformers' own
initialisation would hide a misplaced weight). Pixels U(0, 1).

transformers 4.36.2 over Debian's torch 1.13 (build/hfvenv).
"""
import os
import shutil

import torch
import transformers
from transformers import SwinConfig, SwinForImageClassification, SwinModel

import fixture_cli

ARCHS = {"SwinModel": SwinModel, "SwinForImageClassification": SwinForImageClassification}

# (name, architecture, config, inputs)
CASES = [
    ("model_grey16_p2_w4", "SwinModel",
     dict(image_size=16, patch_size=2, num_channels=1, embed_dim=8, depths=[2, 2], num_heads=[2, 4], window_size=4),
     dict(B=2)),
    ("cls_grey28_p2_w7_labels", "SwinForImageClassification",
     dict(image_size=28, patch_size=2, num_channels=1, embed_dim=8, depths=[2, 2], num_heads=[2, 4], window_size=7,
          mlp_ratio=2.0, num_labels=10),
     dict(B=3, labels=True)),
    ("cls_rgb15_p2_w3_pad", "SwinForImageClassification",
     dict(image_size=15, patch_size=2, num_channels=3, embed_dim=6, depths=[2, 3], num_heads=[1, 2], window_size=3,
          num_labels=4, hidden_act="gelu_new", id2label={0: "cat", 1: "dog", 2: "bird", 3: "fish"}),
     dict(B=2, labels=True)),
    ("model_grey13_p4_w2_nobias", "SwinModel",
     dict(image_size=13, patch_size=4, num_channels=1, embed_dim=6, depths=[3, 1], num_heads=[3, 3], window_size=2,
          qkv_bias=False, layer_norm_eps=1e-6, hidden_act="relu", mlp_ratio=1.5),
     dict(B=2)),
    ("model_rgb20_p4_w3_oddmerge", "SwinModel",
     dict(image_size=20, patch_size=4, num_channels=3, embed_dim=4, depths=[2, 2], num_heads=[2, 2], window_size=3,
          hidden_act="silu"),
     dict(B=1)),
    ("cls_grey32_p2_w4_3stages", "SwinForImageClassification",
     dict(image_size=32, patch_size=2, num_channels=1, embed_dim=4, depths=[2, 2, 2], num_heads=[1, 2, 4],
          window_size=4, num_labels=3),
     dict(B=2, labels=True)),
]


def reference(model, arch, x):
    """transformers' outputs in float64 from the float32 weights, rounded once."""
    out = fixture_cli.double_outputs(ARCHS[arch], model, x)
    if arch == "SwinModel":
        return {"last_hidden_state": out.last_hidden_state.float(), "pooler_output": out.pooler_output.float()}
    res = {"logits": out.logits.float()}
    if out.loss is not None:
        res["loss"] = out.loss.float().reshape(())
    return res


def gradients(model, x):
    """The loss's gradients with respect to pixel_values and every parameter, float64, rounded once."""
    m = SwinForImageClassification(model.config)
    m.load_state_dict(model.state_dict())
    m = m.double().train()  # dropout and drop path are 0
    pixels = x["pixel_values"].double().requires_grad_(True)
    m(pixel_values=pixels, labels=x["labels"]).loss.backward()
    res = {"pixel_values": pixels.grad.float()}
    res.update({k: p.grad.float().contiguous() for k, p in m.named_parameters()})
    return res


def write_case(out, name, arch, cfg_kw, spec, seed):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    cfg = SwinConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0, **cfg_kw)
    model = ARCHS[arch](cfg).eval()
    fixture_cli.init_weights(model, g, "norm", ("relative_position_bias_table",))
    d = os.path.join(out, name)
    x = fixture_cli.save_image_case(d, model, arch, spec, g, reference, gradients)
    print(f"wrote {d} (transformers {transformers.__version__}; inputs {', '.join(x)})")
    return sensitivity(model, arch, x)


def sensitivity(model, arch, x):
    """How far transformers' own float32 run lies from its float64 one (max |diff|):
    a case past a few 1e-6 is too ill-conditioned to compare float32 at 1e-5."""
    want = reference(model, arch, x)
    args = {k: v for k, v in x.items() if k == "pixel_values"}
    with torch.no_grad():
        out = model.eval()(**args)
    got = {"last_hidden_state": out.last_hidden_state} if arch == "SwinModel" else {"logits": out.logits}
    return max((got[k] - want[k]).abs().max().item() for k in got)


def write_random_case(out, name, arch, cfg_kw, spec, seed):
    for attempt in range(20):  # the same configuration, other weights
        if write_case(out, name, arch, cfg_kw, spec, seed + 100000 * attempt) <= 3e-6:
            return
        shutil.rmtree(os.path.join(out, name))
        print("  too ill-conditioned to compare at 1e-5 (transformers' float32 run off by more than 3e-6): other weights")


def random_case(r):
    """Stages whose grids all hold at least one window (transformers 4.36.2's limit)."""
    stages = r.randint(1, 3)
    window = r.randint(2, 5)
    patch = r.choice([2, 3, 4])
    last = window + r.randint(0, 2)
    grid = last
    for _ in range(stages - 1):
        grid = 2 * grid - r.choice([0, 1])  # ceil(grid / 2) == the next stage's grid
    image = patch * grid - r.choice([0, 0, patch - 1])
    heads = [r.randint(1, 3) * (2 ** min(s, 1)) for s in range(stages)]
    per_head = r.randint(1, 3)
    embed = heads[0] * per_head * 2
    heads = [h if (embed << s) % h == 0 else 1 for s, h in enumerate(heads)]
    cfg = dict(image_size=image, patch_size=patch, num_channels=r.choice([1, 3]), embed_dim=embed,
               depths=[r.randint(1, 3) for _ in range(stages)], num_heads=heads, window_size=window,
               mlp_ratio=r.choice([1.0, 2.0, 4.0]), qkv_bias=r.random() < 0.7,
               hidden_act=r.choice(["gelu", "gelu_new", "relu", "silu"]), layer_norm_eps=r.choice([1e-6, 1e-5]))
    arch = r.choice(list(ARCHS))
    spec = dict(B=r.randint(1, 3))
    if arch == "SwinForImageClassification":
        cfg["num_labels"] = r.randint(2, 10)
        spec["labels"] = r.random() < 0.5
    return arch, cfg, spec


def main():
    fixture_cli.run(CASES, write_case, random_case, write_random=write_random_case,
                    expected=lambda root: fixture_cli.expected_for(root, ARCHS, reference))


if __name__ == "__main__":
    main()
