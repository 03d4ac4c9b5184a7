"""What the PyTorch fixture scripts share (gen_torch_fixtures.py, gen_rnn_fixtures.py,
gen_caption_fixtures.py): safetensors files written by hand in the standard layout (the
C reader is checked against the safetensors library itself by gen_safetensors_fixtures.py),
and float32 random draws held in float64 for the exact reference.

Needs torch (Debian's python3-torch or pip).
"""
import json
import struct

import torch

DTYPES = {torch.float32: "F32", torch.bool: "BOOL", torch.int64: "I64"}


def save_safetensors(path, tensors, as_f32=False):
    """tensors (name -> tensor, in that order) into the safetensors file path: each of its
    own dtype (F32, BOOL as bytes, I64), or with as_f32 each rounded to F32."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        t = t.detach()
        t = (t.to(torch.float32) if as_f32 else t).contiguous().cpu()
        raw = (t.to(torch.uint8) if t.dtype == torch.bool else t).numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def save_f32(path, tensors):
    """save_safetensors with every tensor rounded to F32 (the references computed in float64)."""
    save_safetensors(path, tensors, as_f32=True)


def f32(shape, g, scale=1.0):
    """A float32 random tensor N(0, scale^2) from generator g, returned in float64 (exactly representable)."""
    return (scale * torch.randn(shape, generator=g)).to(torch.float32).to(torch.float64)
