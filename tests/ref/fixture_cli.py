"""What the Hugging Face fixture scripts share (gen_hf_fixtures.py,
gen_vit_fixtures.py, gen_nystrom_fixtures.py, gen_marian_fixtures.py, ...):

    --out DIR                  the committed cases, each seeded by its name
                               (adding a case leaves the others as they are)
    --random N --seed S        N fresh random cases instead (make *-conformance)
    --expected-for DIR         transformers' outputs for folders tformer wrote
                               (where the script can: round trips)
"""
import argparse
import json
import os
import random
import zlib


def case_seed(name):
    return zlib.crc32(name.encode()) % 100000


def init_bert_like(model, g, wstd, keep=()):
    """LayerNorms N(1, 0.2) and N(0, 0.05), every other tensor N(0, wstd^2):
    transformers' own initialisation (std 0.02) gives nearly constant outputs,
    which would not notice a misplaced weight (gen_nystrom_fixtures.py,
    gen_bigbird_fixtures.py). Parameters whose name holds a string of keep
    stay as they are (and draw nothing from g): RoFormer's sinusoid table."""
    import torch
    with torch.no_grad():
        for name, p in model.named_parameters():
            if any(k in name for k in keep):
                continue
            if "LayerNorm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + (0.2 if name.endswith("weight") else 0.05)
                        * torch.randn(p.shape, generator=g))
            else:
                p.copy_(wstd * torch.randn(p.shape, generator=g))


def expected_for(root, archs, reference, load_kwargs=None):
    """transformers loads each folder under root (as its config.json's
    architecture) and writes its outputs on input.safetensors."""
    import transformers
    from safetensors.torch import load_file, save_file
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        arch = json.load(open(os.path.join(d, "config.json")))["architectures"][0]
        kw = load_kwargs(d, arch) if load_kwargs else {}
        model = archs[arch].from_pretrained(d, **kw).eval()  # fails on a tensor missing or of the wrong shape
        x = load_file(os.path.join(d, "input.safetensors"))
        save_file(reference(model, arch, x), os.path.join(d, "expected.safetensors"))
        print(f"{d}: {arch} loaded by transformers {transformers.__version__}")


def init_weights(model, g, norm, unit):
    """Weights that a misplaced one would change: a parameter whose name holds
    `norm` N(1, 0.2) (weights) or N(0, 0.05) (biases); one whose name ends with
    a suffix in `unit` N(0, 1); every other N(0, 0.4), drawn from g in
    named_parameters() order (transformers' std 0.02 gives nearly constant outputs)."""
    import torch
    with torch.no_grad():
        for name, p in model.named_parameters():
            if norm in name:
                if name.endswith("weight"):
                    p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
                else:
                    p.copy_(0.05 * torch.randn(p.shape, generator=g))
            elif name.endswith(tuple(unit)):
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.4 * torch.randn(p.shape, generator=g))


def double_outputs(cls, model, x, **kw):
    """A float64 copy of model built as cls(config, **kw), in eval mode, run on x's
    pixel_values (and labels when x has them): transformers' outputs computed in
    float64 from the float32 weights, for the caller to round once."""
    import torch
    m = cls(model.config, **kw)
    m.load_state_dict(model.state_dict())
    m = m.double().eval()
    args = {"pixel_values": x["pixel_values"].double()}
    if "labels" in x:
        args["labels"] = x["labels"]
    with torch.no_grad():
        return m(**args)


def save_image_case(d, model, arch, spec, g, reference, gradients):
    """An image model's case folder d: the model (save_pretrained), then
    save_image_inputs with reference(model, arch, x) and gradients(model, x).
    Returns the inputs."""
    import shutil
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    return save_image_inputs(d, model.config, spec, g, lambda x: reference(model, arch, x),
                             lambda x: gradients(model, x))


def save_image_inputs(d, cfg, spec, g, reference, gradients):
    """input.safetensors (spec["B"] images U(0,1) of cfg's channels and size
    from g, and with spec["labels"] labels below num_labels),
    expected.safetensors (reference(x)) and with labels
    gradients.safetensors (gradients(x)) in the case folder d. Returns the inputs."""
    import torch
    from safetensors.torch import save_file
    B, C, S = spec["B"], cfg.num_channels, cfg.image_size
    x = {"pixel_values": torch.rand(B, C, S, S, generator=g)}
    if spec.get("labels"):
        x["labels"] = torch.randint(0, cfg.num_labels, (B,), generator=g)
    save_file(x, os.path.join(d, "input.safetensors"))
    save_file(reference(x), os.path.join(d, "expected.safetensors"))
    if spec.get("labels"):
        save_file(gradients(x), os.path.join(d, "gradients.safetensors"))
    return x


def run(cases, write_case, random_case, expected=None, random_name="random_{:02d}", extra=None, write_random=None):
    """cases: (name, *args) -> write_case(out, name, *args, seed);
    random_case(random.Random) -> args of a fresh case; expected(root): the
    --expected-for action; extra(out): more committed cases (not random);
    write_random: write_case for the random cases (e.g. retrying other weights)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--random", type=int, default=0, help="this many random cases instead of the committed ones")
    ap.add_argument("--seed", type=int, default=0)
    if expected:
        ap.add_argument("--expected-for", help="transformers' outputs for the folders under this one")
    a = ap.parse_args()
    if expected and a.expected_for:
        return expected(a.expected_for)
    if not a.out:
        ap.error("--out is required")
    os.makedirs(a.out, exist_ok=True)
    if a.random:
        r = random.Random(a.seed)
        print(f"seed {a.seed}")
        for i in range(a.random):
            args = random_case(r)
            print(f"case {i}: " + " ".join(x if isinstance(x, str) else json.dumps(x) for x in args))
            (write_random or write_case)(a.out, random_name.format(i), *args, a.seed * 1000 + i)
        return
    for name, *args in cases:
        write_case(a.out, name, *args, case_seed(name))
    if extra:
        extra(a.out)
