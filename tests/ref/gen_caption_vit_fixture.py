#!/usr/bin/env python3
"""tests/fixtures_caption_hf/captioner_vit_shapes: tformer's ViT captioner (tformer train --arch caption
--encoder vit) trained a few steps on the shapes scenes, its run folder as tformer writes it (a
VisionEncoderDecoderModel: config.json, model.safetensors, preprocessor_config.json, tokenizer.json,
tokenizer_config.json), one of its held-out scenes (scene.png), and transformers' view of the folder:

    input.safetensors, expected.safetensors   the scene and a mirrored copy with decoder ids and labels,
                                              and VisionEncoderDecoderModel.from_pretrained's outputs on
                                              them (float64 from the float32 weights, as
                                              gen_caption_hf_fixtures.py's), which hf-run must match
                                              (tests/test_caption_hf.c, caption_hf_run_matches_transformers)
    captions.txt                              "scene.png<TAB>caption": transformers' greedy generate() on the
                                              scene as ViTImageProcessor's arithmetic gives it, decoded by the
                                              folder's tokenizer (AutoTokenizer), which tformer caption must
                                              print (tests/test_caption_vit.c)

    build/hfvenv/bin/python tests/ref/gen_caption_vit_fixture.py [--tformer build/tformer] [--out DIR]

FLAGS are tests/test_caption_vit.c's TRAIN_FLAGS: its training run must write the same config.json,
image processor and tokenizer files and the same tensors (the weights differ with the kernel set).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
from PIL import Image
from safetensors.torch import save_file
from transformers import AutoTokenizer, VisionEncoderDecoderModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_caption_hf_fixtures import reference  # noqa: E402

FLAGS = ("--encoder vit --decoder transformer --patch-size 8 --cnn-dim 24 --hidden 32 --n-head 4 --n-layer 2 --d-ff 48 "
         "--scene-items 1 --steps 40 --batch 8 --lr 3e-3 --warmup 5 --eval-every 40 --eval-batches 1 --scene-valid 8 "
         "--scene-export 2 --weight-decay 0 --log-every 40 --seed 5")
FILES = ["config.json", "model.safetensors", "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json"]


def pixels(path, pre):
    """The PNG as ViTImageProcessor computes it at its own size: bytes / 255, then (x - mean) / std (float32)."""
    x = np.asarray(Image.open(path).convert("L"), dtype=np.float32) / np.float32(255)
    x = (x - np.float32(pre["image_mean"][0])) / np.float32(pre["image_std"][0])
    return torch.from_numpy(x)[None, None]


def write_reference(d):
    model = VisionEncoderDecoderModel.from_pretrained(d).eval()
    tok = AutoTokenizer.from_pretrained(d)
    with open(os.path.join(d, "preprocessor_config.json")) as f:
        pre = json.load(f)
    cfg = model.config
    x = pixels(os.path.join(d, "scene.png"), pre)
    with torch.no_grad():
        ids = model.generate(pixel_values=x, max_length=cfg.decoder.n_positions, num_beams=1, do_sample=False)[0].tolist()
    words = ids[1:]
    if cfg.eos_token_id in words:
        words = words[:words.index(cfg.eos_token_id)]
    text = tok.decode(words, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    with open(os.path.join(d, "captions.txt"), "w") as f:
        f.write(f"scene.png\t{text}\n")
    T, V = len(words) + 1, cfg.decoder.vocab_size
    g = torch.Generator().manual_seed(58)
    inp = {"pixel_values": torch.cat([x, x.flip(-1)]).contiguous(),
           "decoder_input_ids": torch.tensor([[cfg.decoder_start_token_id] + words,
                                              torch.randint(0, V, (T,), generator=g).tolist()], dtype=torch.int64),
           "labels": torch.tensor([words + [cfg.eos_token_id], torch.randint(0, V, (T,), generator=g).tolist()],
                                  dtype=torch.int64)}
    save_file(inp, os.path.join(d, "input.safetensors"))
    save_file(reference(model, inp), os.path.join(d, "expected.safetensors"))
    print(f"{d}: \"{text}\" (transformers {__import__('transformers').__version__})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tformer", default="build/tformer")
    ap.add_argument("--out", default="tests/fixtures_caption_hf/captioner_vit_shapes")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "run")
        subprocess.run([a.tformer, "train", "--arch", "caption", "--out", run, *FLAGS.split(), "--threads", "1"],
                       check=True)
        os.makedirs(a.out, exist_ok=True)
        for f in FILES:
            shutil.copy(os.path.join(run, f), a.out)
        shutil.copy(os.path.join(run, "scenes", "00.png"), os.path.join(a.out, "scene.png"))
    write_reference(a.out)


if __name__ == "__main__":
    main()
