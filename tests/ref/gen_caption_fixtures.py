#!/usr/bin/env python3
"""PyTorch reference fixtures for the captioner (tests/test_caption.c).

    /usr/bin/python3 tests/ref/gen_caption_fixtures.py --out tests/fixtures_caption

The same CNN + RNN + additive attention as src/models/caption/caption.c, written in PyTorch
with the same parameter names, on random float32 weights and inputs:

    a      = relu(conv2d(x, W_i, b_i, stride 2, padding 1)) n_conv times   (B,D,G,G) -> (B,N,D)
    h_0    = tanh(init_h(mean_i a_i))            (LSTM: c_0 = tanh(init_c(...)))
    e_ti   = v_a^T tanh(W_a h_{t-1} + U_a a_i)   alpha_t = softmax_i(e_t)   z_t = sum_i alpha_ti a_i
    h_t    = cell(h_{t-1}, [E y_{t-1}; z_t])     logits_t = out([h_t; z_t; E y_{t-1}])
    loss   = cross_entropy(ignore -100) + alpha_c sum_i (1 - sum_t keep_t alpha_ti)^2 / B
    (attention false: no z, no regulariser)

One safetensors file per case: the parameters, pixel_values, input_ids and labels (as F32),
out.logits, out.attentions (attention only), out.loss, and grad.<name> of the loss for
every parameter and pixel_values. Computed in float64 from float32 values, rounded once.
Cases: gru_att (1 channel, GRU, attention), lstm_att (3 channels, LSTM, attention),
gru_base (the baseline without attention), transformer (the Transformer captioner: memory =
proj(a) + encoder.pos, words embed + decoder.pos through 2 pre-LN nn.TransformerDecoderLayer
blocks (checked against the module itself), decoder.norm, decoder.out; out.attentions the
cross-attention averaged over heads and layers; cross-entropy alone).
"""
import argparse
import os

import torch
import torch.nn.functional as F

from torch_st import f32, save_f32

CFG = dict(image_size=8, n_conv=2, cnn_dim=4, vocab=7, emb_dim=3, hidden=5, attn_size=4, alpha_c=0.7)


def params(channels, lstm, att, g):
    c = CFG
    D, E, H, A, V = c["cnn_dim"], c["emb_dim"], c["hidden"], c["attn_size"], c["vocab"]
    G4 = (4 if lstm else 3) * H
    p = {}
    for i in range(c["n_conv"]):
        p[f"encoder.conv.{i}.weight"] = f32((D, channels if i == 0 else D, 3, 3), g, 0.5)
        p[f"encoder.conv.{i}.bias"] = f32((D,), g, 0.1)
    p["decoder.init_h.weight"], p["decoder.init_h.bias"] = f32((H, D), g, 0.5), f32((H,), g, 0.1)
    if lstm:
        p["decoder.init_c.weight"], p["decoder.init_c.bias"] = f32((H, D), g, 0.5), f32((H,), g, 0.1)
    p["decoder.embed.weight"] = f32((V, E), g)
    if att:
        p["decoder.attention.W_a.weight"] = f32((A, H), g, 0.5)
        p["decoder.attention.U_a.weight"] = f32((A, D), g, 0.5)
        p["decoder.attention.v_a.weight"] = f32((1, A), g, 0.5)
    I = E + (D if att else 0)
    p["decoder.cell.weight_ih"], p["decoder.cell.weight_hh"] = f32((G4, I), g, 0.4), f32((G4, H), g, 0.4)
    p["decoder.cell.bias_ih"], p["decoder.cell.bias_hh"] = f32((G4,), g, 0.1), f32((G4,), g, 0.1)
    O = H + (D if att else 0) + E
    p["decoder.out.weight"], p["decoder.out.bias"] = f32((V, O), g, 0.5), f32((V,), g, 0.1)
    return p


def forward(p, x, ids, labels, lstm, att):
    a = x
    for i in range(CFG["n_conv"]):
        a = F.relu(F.conv2d(a, p[f"encoder.conv.{i}.weight"], p[f"encoder.conv.{i}.bias"], stride=2, padding=1))
    B, D, G, _ = a.shape
    a = a.reshape(B, D, G * G).transpose(1, 2)
    abar = a.mean(1)
    h = torch.tanh(F.linear(abar, p["decoder.init_h.weight"], p["decoder.init_h.bias"]))
    c = torch.tanh(F.linear(abar, p["decoder.init_c.weight"], p["decoder.init_c.bias"])) if lstm else None
    ey_all = p["decoder.embed.weight"][ids]
    keys = F.linear(a, p["decoder.attention.U_a.weight"]) if att else None
    w = [p["decoder.cell." + k] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    os_, alphas = [], []
    for t in range(ids.shape[1]):
        ey = ey_all[:, t]
        if att:
            e = F.linear(torch.tanh(F.linear(h, p["decoder.attention.W_a.weight"])[:, None, :] + keys),
                         p["decoder.attention.v_a.weight"])[..., 0]
            alpha = torch.softmax(e, 1)
            z = (alpha[:, :, None] * a).sum(1)
            inp = torch.cat([ey, z], 1)
            alphas.append(alpha)
        else:
            inp = ey
        if lstm:
            h, c = torch._VF.lstm_cell(inp, (h, c), *w)
        else:
            h = torch._VF.gru_cell(inp, h, *w)
        os_.append(torch.cat([h, z, ey], 1) if att else torch.cat([h, ey], 1))
    o = torch.stack(os_, 1)
    logits = F.linear(o, p["decoder.out.weight"], p["decoder.out.bias"])
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
    A = torch.stack(alphas, 1) if att else None
    if att:
        keep = (labels != -100).to(torch.float64)[:, :, None]
        s = (A * keep).sum(1)
        loss = loss + CFG["alpha_c"] * ((1 - s) ** 2).sum() / B
    return logits, A, loss


TCFG = dict(hidden=8, n_head=2, d_ff=12, n_layer=2, context=8)


def transformer_case(name, seed, out):
    import torch.nn as nn
    g = torch.Generator().manual_seed(seed)
    c, H, V, D, N = CFG, TCFG["hidden"], CFG["vocab"], CFG["cnn_dim"], 4
    p = {}
    for i in range(c["n_conv"]):
        p[f"encoder.conv.{i}.weight"] = f32((D, 1 if i == 0 else D, 3, 3), g, 0.5)
        p[f"encoder.conv.{i}.bias"] = f32((D,), g, 0.1)
    p["decoder.embed.weight"] = f32((V, H), g)
    p["encoder.proj.weight"], p["encoder.proj.bias"] = f32((H, D), g, 0.5), f32((H,), g, 0.1)
    p["encoder.pos"], p["decoder.pos"] = f32((N, H), g, 0.3), f32((TCFG["context"], H), g, 0.3)
    layers = []
    for i in range(TCFG["n_layer"]):
        layer = nn.TransformerDecoderLayer(H, TCFG["n_head"], TCFG["d_ff"], dropout=0.0, batch_first=True,
                                           norm_first=True).double()
        with torch.no_grad():
            for k, v in layer.state_dict().items():
                v.copy_(f32(v.shape, g, 0.4) + (1.0 if k.startswith("norm") and k.endswith("weight") else 0.0))
        layers.append(layer)
        for k, v in layer.named_parameters():
            p[f"decoder.layers.{i}.{k}"] = v
    p["decoder.norm.weight"], p["decoder.norm.bias"] = 1 + f32((H,), g, 0.1), f32((H,), g, 0.1)
    p["decoder.out.weight"], p["decoder.out.bias"] = f32((V, H), g, 0.5), f32((V,), g, 0.1)
    for k in p:
        if not p[k].requires_grad:
            p[k].requires_grad_(True)
    x = torch.rand((2, 1, 8, 8), generator=g).to(torch.float32).to(torch.float64).requires_grad_(True)
    ids = torch.tensor([[5, 1, 2, 3], [5, 4, 0, 6]])
    labels = torch.tensor([[1, 2, 3, 6], [4, 6, -100, -100]])
    a = x
    for i in range(c["n_conv"]):
        a = F.relu(F.conv2d(a, p[f"encoder.conv.{i}.weight"], p[f"encoder.conv.{i}.bias"], stride=2, padding=1))
    B = a.shape[0]
    a = a.reshape(B, D, N).transpose(1, 2)
    mem = F.linear(a, p["encoder.proj.weight"], p["encoder.proj.bias"]) + p["encoder.pos"]
    T = ids.shape[1]
    h = p["decoder.embed.weight"][ids] + p["decoder.pos"][:T]
    causal = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), 1)
    maps = []
    for layer in layers:
        want = layer(h, mem, tgt_mask=causal)
        y = layer.norm1(h)
        h = h + layer.self_attn(y, y, y, attn_mask=causal, need_weights=False)[0]
        y = layer.norm2(h)
        cross, w = layer.multihead_attn(y, mem, mem, need_weights=True, average_attn_weights=True)
        h = h + cross
        h = h + layer.linear2(F.relu(layer.linear1(layer.norm3(h))))
        assert torch.allclose(h, want, atol=1e-12), "the written-out layer differs from nn.TransformerDecoderLayer"
        maps.append(w)
    h = F.layer_norm(h, (H,), p["decoder.norm.weight"], p["decoder.norm.bias"], 1e-5)
    logits = F.linear(h, p["decoder.out.weight"], p["decoder.out.bias"])
    loss = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), ignore_index=-100)
    loss.backward()
    t = dict(p)
    t.update({"pixel_values": x, "input_ids": ids.double(), "labels": labels.double(), "out.logits": logits,
              "out.loss": loss.reshape(1), "out.attentions": sum(maps) / len(maps)})
    for k, v in p.items():
        t["grad." + k] = v.grad
    t["grad.pixel_values"] = x.grad
    save_f32(os.path.join(out, name + ".safetensors"), t)


def case(name, channels, lstm, att, seed, out):
    g = torch.Generator().manual_seed(seed)
    p = {k: v.requires_grad_(True) for k, v in params(channels, lstm, att, g).items()}
    S, V = CFG["image_size"], CFG["vocab"]
    x = torch.rand((2, channels, S, S), generator=g).to(torch.float32).to(torch.float64).requires_grad_(True)
    ids = torch.tensor([[5, 1, 2, 3], [5, 4, 0, 6]])
    labels = torch.tensor([[1, 2, 3, 6], [4, 6, -100, -100]])
    logits, A, loss = forward(p, x, ids, labels, lstm, att)
    loss.backward()
    t = dict(p)
    t.update({"pixel_values": x, "input_ids": ids.double(), "labels": labels.double(),
              "out.logits": logits, "out.loss": loss.reshape(1)})
    if att:
        t["out.attentions"] = A
    for k, v in p.items():
        t["grad." + k] = v.grad
    t["grad.pixel_values"] = x.grad
    save_f32(os.path.join(out, name + ".safetensors"), t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures_caption")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    case("gru_att", 1, False, True, 1, a.out)
    case("lstm_att", 3, True, True, 2, a.out)
    case("gru_base", 1, False, False, 3, a.out)
    transformer_case("transformer", 4, a.out)


if __name__ == "__main__":
    main()
