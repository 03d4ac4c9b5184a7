"""safetensors files from and to dicts of numpy arrays (run()'s inputs and outputs).

The format is an 8-byte little-endian header length, a JSON header (dtype, shape, data_offsets per
tensor) and the tensors' bytes; numpy reads and writes it without another dependency.
"""
from __future__ import annotations

import json
import struct
from typing import Any, Dict, Tuple

import numpy as np

from ._tformer import InputError

_TO_ST = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64",
          np.dtype(np.int32): "I32", np.dtype(np.int8): "I8", np.dtype(np.uint8): "U8", np.dtype(np.bool_): "BOOL"}
_FROM_ST = {v: k for k, v in _TO_ST.items()}


def as_input(name: Any, value: Any) -> Tuple[str, np.ndarray]:
    """An input of run(): (its safetensors dtype name, the array C-contiguous and little-endian); an
    unsupported dtype or a non-str name raises InputError."""
    if not isinstance(name, str):
        raise InputError(f"run(): input names are str, got {name!r}")
    a = np.asarray(value)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    key = a.dtype.newbyteorder("=") if a.dtype.byteorder not in ("=", "|") else a.dtype
    if key not in _TO_ST:
        raise InputError(f"run(): input '{name}' is {a.dtype}; inputs are float32, float16, int64, int32, int8, "
                         "uint8 or bool arrays")
    return _TO_ST[key], np.ascontiguousarray(a)


def save(tensors: Dict[str, np.ndarray], path: str) -> None:
    """Writes tensors (name -> array) to path; an unsupported dtype or a non-str name raises InputError."""
    header, blobs, offset = {}, [], 0
    for name, value in tensors.items():
        dtype, a = as_input(name, value)
        data = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def load(path: str) -> Dict[str, np.ndarray]:
    """Reads every tensor of a safetensors file the library wrote (F32, F16, BF16, I64, I32, I8, U8, BOOL)."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    body = memoryview(raw)[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        start, end = e["data_offsets"]
        if e["dtype"] == "BF16":
            bits = np.frombuffer(body[start:end], dtype="<u2").astype(np.uint32) << 16
            a = bits.view(np.float32)
        else:
            a = np.frombuffer(body[start:end], dtype=_FROM_ST[e["dtype"]].newbyteorder("<")).copy()
        out[name] = a.reshape(e["shape"])
    return out
