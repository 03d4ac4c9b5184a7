"""What the Hugging Face fixture scripts share (gen_hf_fixtures.py,
gen_vit_fixtures.py, gen_nystrom_fixtures.py, gen_marian_fixtures.py,
gen_roberta_fixtures.py, ...): the command line, the weights, the text
models' inputs and labels, their float64 reference and their case folders.
The command line:

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


def major_version():
    import transformers
    return int(transformers.__version__.split(".")[0])


def seeded(seed):
    """torch's global seed set (what a model's own initialisation draws) and a generator of the same seed."""
    import torch
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def random_shape(r, archs):
    """A random case's class (of archs), heads (1-4) and length (2-12)."""
    return r.choice(sorted(archs)), r.randint(1, 4), r.randint(2, 12)


def random_head(r, arch, kw):
    """kw with a random case's num_labels (a classifier's) and, for 30% of the MLMs, untied weights."""
    if arch.endswith(("SequenceClassification", "TokenClassification")):
        kw["num_labels"] = r.randint(1 if arch.endswith("SequenceClassification") else 2, 6)
    if arch.endswith("MaskedLM") and r.random() < 0.3:
        kw["tie_word_embeddings"] = False
    return kw


def pad_mask(B, T, side):
    """attention_mask (B,T) int64: row 0 whole, row b > 0 without its last
    (side "right") or first ("left") 1 + (5 b) % (T // 2) tokens."""
    import torch
    mask = torch.ones(B, T, dtype=torch.int64)
    for b in range(1, B):
        n = 1 + (b * 5) % (T // 2)
        if side == "right":
            mask[b, T - n:] = 0
        else:
            mask[b, :n] = 0
    return mask


def class_labels(c, B, g):
    """A sequence classifier's labels: classes below c.num_labels, values N(0, 1) for regression (num_labels 1)."""
    import torch
    return torch.randn(B, generator=g) if c.num_labels == 1 else torch.randint(0, c.num_labels, (B,), generator=g)


def token_labels(n, B, T, g, real=None):
    """(B,T) labels below n, about 30% -100 (and -100 where real is False)."""
    import torch
    lab = torch.randint(0, n, (B, T), generator=g)
    lab[torch.rand(B, T, generator=g) < 0.3] = -100
    if real is not None:
        lab[~real] = -100
    return lab


def clamped_spans(x, B, T, g):
    """A question answerer's start_positions / end_positions, some outside [0,T)
    (clamped to T and ignored), row 0's the whole text (one counted pair at least)."""
    import torch
    x["start_positions"] = torch.randint(-1, T + 2, (B,), generator=g)
    x["end_positions"] = torch.randint(0, T + 3, (B,), generator=g)
    x["start_positions"][0], x["end_positions"][0] = 0, T - 1


def bert_like_inputs(c, arch, spec, g, pad, inside=()):
    """forward()'s arguments for a BERT-like case of arch (spec: B, T; pad
    "right" / "left": `pad` and attention_mask 0 there, "inside": `pad` at
    random places and at (b, t) of inside, attended to; types; positions;
    labels for arch's head; ids_dtype "int32"). `pad` stands nowhere else."""
    import torch
    B, T = spec["B"], spec["T"]
    ids = torch.randint(0, c.vocab_size, (B, T), generator=g)
    ids[ids == pad] = (pad + 1) % c.vocab_size
    x = {"input_ids": ids}
    real = torch.ones(B, T, dtype=torch.bool)
    if spec.get("pad") in ("right", "left"):
        mask = pad_mask(B, T, spec["pad"])
        ids[mask == 0] = pad
        x["attention_mask"] = mask
        real = mask.bool()
    elif spec.get("pad") == "inside":
        ids[torch.rand(B, T, generator=g) < 0.3] = pad
        for b, t in inside:
            ids[b, t] = pad
    if spec.get("types"):
        x["token_type_ids"] = torch.randint(0, c.type_vocab_size, (B, T), generator=g)
    if spec.get("positions"):
        x["position_ids"] = torch.randint(0, c.max_position_embeddings, (B, T), generator=g)
    if spec.get("labels"):
        if arch.endswith("SequenceClassification"):
            x["labels"] = class_labels(c, B, g)
        elif arch.endswith("QuestionAnswering"):
            clamped_spans(x, B, T, g)
        else:
            x["labels"] = token_labels(c.vocab_size if arch.endswith("MaskedLM") else c.num_labels, B, T, g, real)
    if spec.get("ids_dtype") == "int32":
        for k in ("input_ids", "position_ids", "token_type_ids"):
            if k in x:
                x[k] = x[k].to(torch.int32)
    return x


def double_forward(build, model, x, train=False):
    """A float64 copy of model (build(model.config) given its weights) on x
    (floating inputs as float64, integer ones as int64): the outputs, computed
    from the float32 weights for the caller to round once; train: the loss's
    gradients by parameter name instead (dropout must be 0)."""
    import torch
    m = build(model.config)
    m.load_state_dict(model.state_dict())
    m = m.double()
    m.train(train)
    args = {k: (v.double() if v.is_floating_point() else v.long()) for k, v in x.items()}
    with torch.set_grad_enabled(train):
        out = m(**args)
    if train:
        out.loss.backward()
        return {k: p.grad.float().contiguous() for k, p in m.named_parameters() if p.grad is not None}
    return out


def fields(out, names):
    """The output fields named (those present), rounded to float32."""
    return {k: getattr(out, k).float().contiguous() for k in names if getattr(out, k, None) is not None}


def save_case(out, name, model, arch, x, reference, grad=False, drop=("generation_config.json",), shard=None):
    """A text model's case folder out/name: model.save_pretrained (without
    the files in drop, which hf-run does not read; with shard, its
    max_shard_size: model.safetensors.index.json and its shards), input.safetensors (x),
    expected.safetensors (reference(x)) and with grad gradients.safetensors
    (reference(x, train=True))."""
    import shutil
    import transformers
    from safetensors.torch import save_file
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True, **({"max_shard_size": shard} if shard else {}))
    for extra in drop:
        if os.path.exists(os.path.join(d, extra)):
            os.remove(os.path.join(d, extra))
    save_file({k: v.contiguous() for k, v in x.items()}, os.path.join(d, "input.safetensors"))
    save_file(reference(x), os.path.join(d, "expected.safetensors"))
    if grad:
        save_file(reference(x, train=True), os.path.join(d, "gradients.safetensors"))
    print(f"wrote {d} ({arch}, transformers {transformers.__version__}; inputs {', '.join(x)})")


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


def run_by_major(cases, write_case, random_case, archs, reference):
    """run() on the cases (major version, name, *args) of the running
    transformers' major version, random cases named v<major>_random_NN, and
    --expected-for through expected_for(root, archs, reference)."""
    major = major_version()
    run([case[1:] for case in cases if case[0] == major], write_case, random_case,
        expected=lambda root: expected_for(root, archs, reference), random_name=f"v{major}_random_{{:02d}}")
