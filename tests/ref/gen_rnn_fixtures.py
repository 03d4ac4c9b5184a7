#!/usr/bin/env python3
"""PyTorch reference fixtures for the RNN baseline (tests/test_rnn.c).

    /usr/bin/python3 tests/ref/gen_rnn_fixtures.py --out tests/fixtures_rnn

One safetensors file per case, each holding the parameters under PyTorch's
names, the inputs, grad_output.<name> for every output, and the expected
out.<name> and grad.<name> (the gradient of sum_o sum(o * grad_output.o)
with respect to every float input and parameter):

    gru_cell, lstm_cell  torch.nn.GRUCell / LSTMCell run over T steps from h0
                         (and c0): out.h (T,B,H) (and out.c), so the backward
                         goes through time
    gru_bi, lstm_bi      nn.GRU / nn.LSTM(bidirectional=True, batch_first=True)
                         on a packed batch of unequal lengths (pad (B,T), 1 =
                         padding, trailing): out.y (B,T,2H) from
                         pad_packed_sequence, out.h_n (2,B,H) (and out.c_n)
    bahdanau             additive attention e_j = v_a^T tanh(W_a s + U_a h_j),
                         alpha = softmax over the unpadded j, context = sum_j
                         alpha_j h_j: out.context (B,He), out.alpha (B,S)

Weights and inputs are float32; the expected values are computed in float64
from them and rounded once (the exact answer, as tests/ref/gen_torch_fixtures.py
does). Needs only torch (Debian's python3-torch): the files are written with
the standard safetensors layout by hand.
"""
import argparse
import os

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from torch_st import f32, save_f32


def randomize_(module, g, scale):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(f32(p.shape, g, scale))


def run_case(module, inputs, forward, g):
    """inputs: name -> float64 leaf; forward() -> {output: tensor}. Returns the file's tensors."""
    leaves = {k: v.clone().requires_grad_(True) for k, v in inputs.items()}
    outs = forward(leaves)
    grad_out = {k: f32(v.shape, g) for k, v in outs.items()}
    loss = sum((o * grad_out[k]).sum() for k, o in outs.items())
    params = dict(module.named_parameters())
    grads = torch.autograd.grad(loss, list(leaves.values()) + list(params.values()))
    res = {k: v.detach() for k, v in params.items()}
    res.update({k: v for k, v in inputs.items()})
    res.update({"grad_output." + k: v for k, v in grad_out.items()})
    res.update({"out." + k: v for k, v in outs.items()})
    for name, gr in zip(list(leaves) + list(params), grads):
        res["grad." + name] = gr
    return res


def cell_case(kind, g, B=3, T=4, I=5, H=7):
    cell = (nn.GRUCell if kind == "gru" else nn.LSTMCell)(I, H).double()
    randomize_(cell, g, 0.4)
    inputs = {"x": f32((T, B, I), g), "h0": f32((B, H), g, 0.5)}
    if kind == "lstm":
        inputs["c0"] = f32((B, H), g, 0.5)

    def forward(v):
        h, c, hs, cs = v["h0"], v.get("c0"), [], []
        for t in range(T):
            if kind == "gru":
                h = cell(v["x"][t], h)
            else:
                h, c = cell(v["x"][t], (h, c))
                cs.append(c)
            hs.append(h)
        out = {"h": torch.stack(hs)}
        if kind == "lstm":
            out["c"] = torch.stack(cs)
        return out

    return run_case(cell, inputs, forward, g)


def bi_case(kind, g, lengths=(5, 3, 1, 4), I=6, H=5):
    B, T = len(lengths), max(lengths)
    rnn = (nn.GRU if kind == "gru" else nn.LSTM)(I, H, batch_first=True, bidirectional=True).double()
    randomize_(rnn, g, 0.4)
    pad = torch.zeros(B, T, dtype=torch.float64)
    for b, n in enumerate(lengths):
        pad[b, n:] = 1
    inputs = {"x": f32((B, T, I), g)}  # padded positions hold random values: they must not matter

    def forward(v):
        packed = pack_padded_sequence(v["x"], torch.tensor(lengths), batch_first=True, enforce_sorted=False)
        y, state = rnn(packed)
        y, _ = pad_packed_sequence(y, batch_first=True, total_length=T)
        if kind == "gru":
            return {"y": y, "h_n": state}
        return {"y": y, "h_n": state[0], "c_n": state[1]}

    res = run_case(rnn, inputs, forward, g)
    res["pad"] = pad
    return res


class Bahdanau(nn.Module):
    """e_j = v_a^T tanh(W_a s + U_a h_j), as the decks write it (W_a and U_a with biases here)."""

    def __init__(self, Hd, He, A):
        super().__init__()
        self.W_a, self.U_a, self.v_a = nn.Linear(Hd, A), nn.Linear(He, A), nn.Linear(A, 1, bias=False)

    def forward(self, s, h, pad):
        e = self.v_a(torch.tanh(self.W_a(s).unsqueeze(1) + self.U_a(h))).squeeze(-1)  # (B,S)
        alpha = torch.softmax(e.masked_fill(pad.bool(), float("-inf")), dim=-1)
        return torch.bmm(alpha.unsqueeze(1), h).squeeze(1), alpha


def bahdanau_case(g, lengths=(6, 4, 2), Hd=7, He=10, A=8):
    B, S = len(lengths), max(lengths)
    att = Bahdanau(Hd, He, A).double()
    randomize_(att, g, 0.4)
    pad = torch.zeros(B, S, dtype=torch.float64)
    for b, n in enumerate(lengths):
        pad[b, n:] = 1
    inputs = {"s": f32((B, Hd), g), "h": f32((B, S, He), g)}

    def forward(v):
        ctx, alpha = att(v["s"], v["h"], pad)
        return {"context": ctx, "alpha": alpha}

    res = run_case(att, inputs, forward, g)
    res["pad"] = pad
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/fixtures_rnn")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    g = torch.Generator().manual_seed(args.seed)
    cases = {"gru_cell": cell_case("gru", g), "lstm_cell": cell_case("lstm", g), "gru_bi": bi_case("gru", g),
             "lstm_bi": bi_case("lstm", g), "bahdanau": bahdanau_case(g)}
    for name, tensors in cases.items():
        save_f32(os.path.join(args.out, name + ".safetensors"), tensors)
        print(name, len(tensors), "tensors")


if __name__ == "__main__":
    main()
