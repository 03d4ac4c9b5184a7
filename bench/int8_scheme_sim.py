"""What limits `--precision int8`'s agreement on a BERT (docs/precision.md, "What
limits int8"): a numpy forward of a sentence-transformers BERT folder (mean
pooling, normalised: all-MiniLM-L6-v2's), whose dense products can quantise
their input and weight rows the way src/ops/quant.c does (absmax / 127, round
to nearest even), with one scale per row (tformer's scheme until 2026-12-03)
or one per block of B values of a row (B = 32 on both sides: tformer's since),
per kind of product (qkv, o: attention's output,
up, down: the feed-forward's). Each scheme's cosine with the float forward,
smallest and mean, over the texts given as token ids (`tformer encode --lines`,
without [CLS]/[SEP]: added here). Figures only: nothing is timed.

    tformer encode --tokenizer build/minilm --lines < texts.txt > ids.txt
    python3 bench/int8_scheme_sim.py build/minilm ids.txt [N] [--worst f32.npy int8.npy]

--worst: the N texts whose tformer int8 embedding (int8.npy) is furthest
from its f32 one (f32.npy) instead of the first N. Float64 accumulation
stands for the kernels' exact integer sums; GELU is erf's (an approximation
within 1.5e-7), the rest as BERT's.
"""
import json
import struct
import sys

import numpy as np


def load(folder):
    path = folder + "/model.safetensors"
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    w = {}
    for k, v in head.items():
        if k == "__metadata__" or v["dtype"] != "F32":
            continue
        a, b = v["data_offsets"]
        w[k.removeprefix("bert.")] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).reshape(v["shape"])
    return w, json.load(open(folder + "/config.json"))


def quant(x, block):
    """x (M,K) quantised and back: one absmax scale per row, or per block of a row."""
    m, k = x.shape
    block = block or k
    pad = -k % block
    xb = np.pad(x, ((0, 0), (0, pad))).reshape(m, -1, block)
    s = np.abs(xb).max(2, keepdims=True) / 127.0
    s = np.where(s > 0, s, 1.0)
    return (np.clip(np.rint(xb / s), -127, 127) * s).reshape(m, -1)[:, :k]


def gelu(x):
    z = np.abs(x) / np.sqrt(2.0)
    t = 1 / (1 + 0.3275911 * z)
    erf = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-z * z)
    return 0.5 * x * (1 + np.sign(x) * erf)


def norm(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * g + b


class Model:
    def __init__(self, folder):
        self.w, self.cfg = load(folder)
        self.scheme = {}

    def dense(self, x, name, kind):
        w, b = self.w[name + ".weight"], self.w[name + ".bias"]
        sc = self.scheme.get(kind, self.scheme.get("*"))
        if sc is None:
            return x @ w.T + b
        xb, wb = sc
        return (quant(x, xb).astype(np.float64) @ quant(w, wb).T.astype(np.float64)).astype(np.float32) + b

    def embed(self, batch):
        W, c = self.w, self.cfg
        B, T = len(batch), max(len(i) for i in batch)
        mask, ids = np.zeros((B, T), bool), np.zeros((B, T), int)
        for j, i in enumerate(batch):
            ids[j, :len(i)], mask[j, :len(i)] = i, True
        eps, H = c.get("layer_norm_eps", 1e-12), c["num_attention_heads"]
        x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.position_embeddings.weight"][:T][None] + \
            W["embeddings.token_type_embeddings.weight"][0]
        x = norm(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
        live = mask.reshape(-1)

        def d(v, name, kind):
            out = np.zeros(v.shape[:-1] + (W[name + ".weight"].shape[0],), np.float32)
            out.reshape(B * T, -1)[live] = self.dense(v.reshape(B * T, -1)[live], name, kind)
            return out

        neg = np.where(mask, 0, -1e30)[:, None, None, :]
        for lay in range(c["num_hidden_layers"]):
            p = f"encoder.layer.{lay}."
            dh = x.shape[-1] // H
            q, k, v = (d(x, p + "attention.self." + n, "qkv").reshape(B, T, H, dh).transpose(0, 2, 1, 3)
                       for n in ("query", "key", "value"))
            s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh) + neg
            e = np.exp(s - s.max(-1, keepdims=True))
            o = (e / e.sum(-1, keepdims=True) @ v).transpose(0, 2, 1, 3).reshape(B, T, -1)
            x = norm(x + d(o, p + "attention.output.dense", "o"), W[p + "attention.output.LayerNorm.weight"],
                     W[p + "attention.output.LayerNorm.bias"], eps)
            h = gelu(d(x, p + "intermediate.dense", "up"))
            x = norm(x + d(h, p + "output.dense", "down"), W[p + "output.LayerNorm.weight"],
                     W[p + "output.LayerNorm.bias"], eps)
        m = mask[:, :, None].astype(np.float32)
        e = (x * m).sum(1) / m.sum(1)
        return e / np.linalg.norm(e, axis=1, keepdims=True)

    def run(self, ids):
        return np.concatenate([self.embed(ids[i:i + 64]) for i in range(0, len(ids), 64)])


# (name, {kind or "*": (input block, weight block)}; None: one scale per row; no entry: float)
SCHEMES = [
    ("per row, per token (tformer before 2026-12-03)", {"*": (None, None)}),
    ("only qkv int8", {"qkv": (None, None)}),
    ("only o int8", {"o": (None, None)}),
    ("only up int8", {"up": (None, None)}),
    ("only down int8", {"down": (None, None)}),
    ("down in float", {"qkv": (None, None), "o": (None, None), "up": (None, None)}),
    ("input blocks of 32, weight rows", {"*": (32, None)}),
    ("input rows, weight blocks of 32", {"*": (None, 32)}),
    ("blocks of 64, both", {"*": (64, 64)}),
    ("blocks of 32, both (tformer since 2026-12-03)", {"*": (32, 32)}),
]


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    model = Model(argv[0])
    ids = [[101] + [int(t) for t in line.split()] + [102] for line in open(argv[1])]
    n = int(argv[2]) if len(argv) > 2 and argv[2].isdigit() else 200
    if "--worst" in argv:
        i = argv.index("--worst")
        f, q = (np.load(p).astype(np.float64) for p in argv[i + 1:i + 3])
        cos = (f * q).sum(1) / np.linalg.norm(f, axis=1) / np.linalg.norm(q, axis=1)
        ids = [ids[j] for j in np.argsort(cos)[:n]]
    else:
        ids = ids[:n]
    model.scheme = {}
    ref = model.run(ids)
    for name, sc in SCHEMES:
        model.scheme = sc
        c = (model.run(ids) * ref).sum(1)
        print(f"{name}: cosine with float smallest {c.min():.6f} mean {c.mean():.6f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
