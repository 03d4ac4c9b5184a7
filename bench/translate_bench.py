#!/usr/bin/env python3
"""Decoding speed of `tformer translate` against CTranslate2 and transformers'
generate() on the same weights, the same source ids and the same cores.

The tformer folder (tformer train --arch seq2seq) holds Hugging Face Marian
/ BART parameter names; this script builds a MarianMTModel with those
weights (the sinusoidal table tformer computes copied into its position
embeddings, BOS as the decoder start) and converts that model to CTranslate2
with ctranslate2's own BART loader (CTranslate2's Marian loader assumes
Marian's zero-embedding start, which this model does not use). Before timing,
the systems' translations are compared as text, greedy and beam 5 (tformer
with --beam-stop hf-early, CTranslate2's rule: a sentence ends when N
hypotheses have): equal work is checked, not assumed. CTranslate2 runs in a
process of its own (torch's idle threads in this one slowed it 2-6x), with
its threads as intra-op threads (1 x T) and as T translators (T x 1).

    python3 bench/translate_bench.py --model RUN/averaged --src test.en [--n 1000] [--threads 2]
        [--precision bf16,int8 [--ref test.de]]

Prints sentences/s per system, beam 1 and 5, and the ratios tformer / peer.
--precision: then tformer translate --precision P (docs/precision.md) for each P
listed, greedy and beam 5, against CTranslate2 in float and with
compute_type int8 (int8 weights, activations quantised per call), each in its
faster thread layout, each a row of precision P; how many sentences each equals
the f32 translation on is said, and with --ref each precision's BLEU. Each
precision is timed twice: the whole command (process start, model loading and
tokenising included), and, where the Python package is installed in this
interpreter (pip install .), in a process that keeps the model and times each
call, the first left out, as CTranslate2's times are taken.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import bench_record

import numpy as np
import torch
from safetensors.numpy import load_file


def sinusoidal(n, d):
    """tformer's table (src/nn/attention.c): sin at even, cos at odd columns."""
    pe = np.zeros((n, d), dtype=np.float64)
    for c in range(d):
        angle = np.arange(n) / 10000.0 ** ((c - (c & 1)) / d)
        pe[:, c] = np.cos(angle) if c & 1 else np.sin(angle)
    return torch.tensor(pe, dtype=torch.float32)


def marian_model(folder):
    from transformers import MarianConfig, MarianMTModel

    c = json.load(open(os.path.join(folder, "config.json")))
    if c["model_type"] != "tformer-seq2seq" or c["norm_first"] or c["pos"] != "sinusoidal" or not c["tied"] \
            or not c["share_embeddings"] or c["final_logits_bias"]:
        sys.exit("translate_bench: needs a post-LN, sinusoidal, tied, shared-vocabulary tformer-seq2seq folder")
    V = c["tgt_vocab"]
    pad, bos, eos = V - 3, V - 2, V - 1
    cfg = MarianConfig(vocab_size=V, decoder_vocab_size=V, d_model=c["d_model"], encoder_layers=c["n_encoder_layers"],
                       decoder_layers=c["n_decoder_layers"], encoder_attention_heads=c["n_head"],
                       decoder_attention_heads=c["n_head"], encoder_ffn_dim=c["d_ff"], decoder_ffn_dim=c["d_ff"],
                       activation_function=c["activation"], max_position_embeddings=c["context"],
                       scale_embedding=c["scale_embedding"], pad_token_id=pad, eos_token_id=eos,
                       decoder_start_token_id=bos, forced_eos_token_id=None, dropout=0.0, attention_dropout=0.0,
                       activation_dropout=0.0, share_encoder_decoder_embeddings=True, tie_word_embeddings=True)
    model = MarianMTModel(cfg).eval()
    state = {k: torch.from_numpy(v) for k, v in load_file(os.path.join(folder, "model.safetensors")).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if "embed_positions" not in m and m not in (
        "final_logits_bias", "lm_head.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight")]
    if missing or unexpected:
        sys.exit(f"translate_bench: weights do not map: missing {missing[:4]}, unexpected {unexpected[:4]}")
    pe = sinusoidal(c["context"], c["d_model"])
    with torch.no_grad():
        model.model.encoder.embed_positions.weight.copy_(pe)
        model.model.decoder.embed_positions.weight.copy_(pe)
    return model, (pad, bos, eos), c["context"]


class Vocab:
    """What ctranslate2's loaders ask of a tokenizer: token strings t0 ... t{V-1}."""

    def __init__(self, n, bos, eos):
        self.n, self.bos_token, self.eos_token, self.unk_token = n, f"t{bos}", f"t{eos}", "t0"

    def get_vocab(self):
        return {f"t{i}": i for i in range(self.n)}

    def convert_ids_to_tokens(self, i):
        return f"t{i}"


def ct2_model(model, ids, out):
    from ctranslate2.converters.transformers import BartLoader

    model.config.normalize_before = False  # post-LN, as CTranslate2's Marian loader sets
    model.config.normalize_embedding = False  # Marian: no LayerNorm on the embeddings
    spec = BartLoader()(model, Vocab(model.config.vocab_size, ids[1], ids[2]))
    spec.validate()
    spec.optimize(quantization=None)
    spec.save(out)


def tformer_lines(binary, args, text, threads):
    env = dict(os.environ, TFORMER_THREADS=str(threads))
    r = subprocess.run([binary] + args, input=text.encode(), stdout=subprocess.PIPE, check=True, env=env)
    return r.stdout.decode()


def encode(binary, tok, lines):
    """Source ids as tformer translate makes them: the tokenizer's ids, then EOS (added by the caller)."""
    return [[int(x) for x in tformer_lines(binary, ["encode", "--tokenizer", tok], l, 1).split()] for l in lines]


def decode(binary, tok, ids):
    out = []
    for s in ids:
        t = tformer_lines(binary, ["decode", "--tokenizer", tok], " ".join(map(str, s)), 1) if s else ""
        out.append(t.rstrip(" "))
    return out


def strip(seq, V, special):
    return [i for i in seq if i < V and i not in special]


def run_tformer(binary, folder, lines, beam, threads, batch=32, precision="f32"):
    """The whole command (model loading and tokenisation included), with
    CTranslate2's beam rule (hf-early: N hypotheses ended; equal outputs)."""
    text = "\n".join(lines) + "\n"
    t0 = time.perf_counter()
    out = tformer_lines(binary, ["translate", "--model", folder, "--beam", str(beam), "--batch", str(batch),
                                 "--beam-stop", "hf-early", "--precision", precision], text, threads)
    return time.perf_counter() - t0, out.rstrip("\n").split("\n")


def run_hf(model, src, ids, beam, batch, max_len):
    pad, bos, eos = ids
    hyps, t0 = [], time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(src), batch):
            chunk = src[i:i + batch]
            L = max(len(s) for s in chunk)
            x = torch.full((len(chunk), L), pad, dtype=torch.long)
            m = torch.zeros((len(chunk), L), dtype=torch.long)
            for r, s in enumerate(chunk):
                x[r, :len(s)], m[r, :len(s)] = torch.tensor(s), 1
            y = model.generate(input_ids=x, attention_mask=m, num_beams=beam, max_length=max_len, do_sample=False,
                               decoder_start_token_id=bos, eos_token_id=eos, pad_token_id=pad, early_stopping=True)
            hyps += y.tolist()
    return time.perf_counter() - t0, hyps


CT2_CHILD = r"""
import json, sys, time
import ctranslate2
a = json.load(open(sys.argv[1]))
tr = ctranslate2.Translator(a["model"], device="cpu", inter_threads=a["inter"], intra_threads=a["intra"],
                            compute_type=a["compute_type"])
toks = [[f"t{i}" for i in s] for s in a["src"]]
times, hyps = [], None
for _ in range(a["repeat"]):
    t0 = time.perf_counter()
    res = tr.translate_batch(toks, beam_size=a["beam"], max_batch_size=a["batch"], max_decoding_length=a["max_len"])
    times.append(time.perf_counter() - t0)
    hyps = [[int(t[1:]) for t in r.hypotheses[0]] for r in res]
json.dump({"times": times, "hyps": hyps}, open(sys.argv[1], "w"))
"""


TF_CHILD = r"""
import json, sys, time
import tformer
a = json.load(open(sys.argv[1]))
m = tformer.load(a["model"], threads=a["threads"], precision=a["precision"])
times, hyps = [], None
for _ in range(a["repeat"] + 1):  # the first call warms the model's copies and memory, as CTranslate2's load does
    t0 = time.perf_counter()
    hyps = m.translate(a["lines"], beam=a["beam"], batch_size=a["batch"], beam_stop="hf-early")
    times.append(time.perf_counter() - t0)
json.dump({"times": times[1:], "hyps": hyps}, open(sys.argv[1], "w"))
"""


def run_tformer_py(folder, lines, beam, threads, repeat, precision, batch=32):
    """tformer through its Python package (pip install .) in a process of its own, as CTranslate2 runs: the
    model loaded once, each call timed alone (the first left out); None when the package is not installed."""
    if subprocess.run([sys.executable, "-c", "import tformer"], capture_output=True).returncode:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"model": folder, "lines": lines, "beam": beam, "threads": threads, "repeat": repeat,
                   "precision": precision, "batch": batch}, f)
    subprocess.run([sys.executable, "-c", TF_CHILD, f.name], check=True)
    r = json.load(open(f.name))
    os.unlink(f.name)
    return r["times"], r["hyps"]


def run_ct2(model_dir, src, beam, batch, max_len, inter, intra, repeat, compute_type="default"):
    """CTranslate2 in a process of its own: torch's OpenMP threads, idle but
    spinning in this one, took 2-6x of its speed when it ran here."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"model": model_dir, "src": src, "beam": beam, "batch": batch, "max_len": max_len, "inter": inter,
                   "intra": intra, "repeat": repeat, "compute_type": compute_type}, f)
    subprocess.run([sys.executable, "-c", CT2_CHILD, f.name], check=True)
    r = json.load(open(f.name))
    os.unlink(f.name)
    return r["times"], r["hyps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check", type=int, default=1000, help="sentences whose outputs are compared (greedy and beam 5)")
    ap.add_argument("--tformer", default="build/tformer")
    ap.add_argument("--hf-n", type=int, default=200, help="sentences for transformers' generate (it is slow)")
    ap.add_argument("--precision", default="", help="tformer's reduced precisions to add: bf16,int8 (rows of each)")
    ap.add_argument("--ref", default="", help="with --precision: the references of --src, for each precision's BLEU")
    ap.add_argument("--precision-only", action="store_true", help="the --precision rows alone (no f32 table)")
    a = ap.parse_args()
    import ctranslate2

    torch.set_num_threads(a.threads)
    lines = [l.rstrip("\n") for l in open(a.src, encoding="utf-8")][:a.n]
    model, ids, context = marian_model(a.model)
    V = model.config.vocab_size - 3
    src = [s + [ids[2]] for s in encode(a.tformer, a.model, lines)]
    work = tempfile.mkdtemp(prefix="tformer_ct2_")
    ct2_model(model, ids, work)
    max_len = context  # tformer: 1.5 * source + 10 tokens, within the context
    print(f"model {a.model}: {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters; "
          f"{len(lines)} sentences; {a.threads} threads; torch {torch.__version__}, ctranslate2 {ctranslate2.__version__}")

    if a.precision_only:
        return bench_precisions(a, lines, src, work, max_len)
    k = min(a.check, len(lines))
    special = set(ids)
    for beam in (1, 5):
        _, ref = run_tformer(a.tformer, a.model, lines[:k], beam, a.threads)
        _, c2 = run_ct2(work, src[:k], beam, 32, max_len, 1, a.threads, 1)
        peers = [("ctranslate2", c2)]
        if beam == 1:
            _, hf = run_hf(model, src[:min(k, a.hf_n)], ids, 1, 32, max_len)
            peers.append(("transformers", hf))
        for name, hyp in peers:
            text = decode(a.tformer, a.model, [strip(h, V, special) for h in hyp])
            same = sum(x == y for x, y in zip(text, ref))
            print(f"beam {beam} check: {name} equals tformer on {same}/{len(text)} sentences", flush=True)

    # tformer's times are the whole command's: its start-up (process, model, float copies) measured apart
    startup = statistics.median([run_tformer(a.tformer, a.model, lines[:1], 1, a.threads)[0] for _ in range(5)])
    print(f"tformer start-up (one line translated): {startup * 1e3:.0f} ms; 'decoding' rows below leave it out "
          f"(CTranslate2's times leave out its model loading)")
    rows = []
    inter = [("ctranslate2 (batch 32, %d x 1 thread)" % a.threads, a.threads, 1)] if a.threads > 1 else []
    for beam in (1, 5):
        runs = [("tformer (batch 32)", lambda: [run_tformer(a.tformer, a.model, lines, beam, a.threads)[0]
                                                for _ in range(a.repeat)]),
                ("tformer (batch 1)", lambda: [run_tformer(a.tformer, a.model, lines, beam, a.threads, 1)[0]
                                               for _ in range(a.repeat)])]
        for name, i, j in inter + [("ctranslate2 (batch 32, 1 x %d threads)" % a.threads, 1, a.threads),
                                   ("ctranslate2 (batch 1)", 1, a.threads)]:
            b = 1 if "batch 1)" in name else 32
            runs.append((name, lambda i=i, j=j, b=b: run_ct2(work, src, beam, b, max_len, i, j, a.repeat)[0]))
        for t in sorted({a.threads, 1}, reverse=True):  # torch 1.13 on 2 threads is 2.5x slower than on 1 here
            def hf(t=t):
                torch.set_num_threads(t)
                return [run_hf(model, src[:a.hf_n], ids, beam, 32, max_len)[0] for _ in range(a.repeat)]
            runs.append((f"transformers generate (batch 32, {t} thr)", hf))
        for name, fn in runs:
            n = min(a.hf_n, len(lines)) if name.startswith("transformers") else len(lines)
            t = statistics.median(fn())
            rows.append((beam, name, n / t))
            print(f"beam {beam}  {name:40s} {rows[-1][2]:8.1f} sentences/s (median of {a.repeat})", flush=True)
            if name.startswith("tformer"):
                rows.append((beam, name + ", decoding", n / (t - startup)))
                print(f"beam {beam}  {name + ', decoding':40s} {rows[-1][2]:8.1f} sentences/s", flush=True)
    print("\nratios (tformer batch 32 / the other, sentences/s; > 1: tformer faster)")
    for beam in (1, 5):
        for mine in ("tformer (batch 32)", "tformer (batch 32), decoding"):
            base = next(r[2] for r in rows if r[0] == beam and r[1] == mine)
            for r in rows:
                if r[0] == beam and not r[1].startswith("tformer"):
                    print(f"beam {beam}  {mine:30s} vs {r[1]:40s} {base / r[2]:6.2f}x")
                    bench_record.row("translate", f"Multi30k beam {beam}, {mine}", a.threads, base, r[1], r[2],
                                     "sentences/s", binary=a.tformer)
    if a.precision:
        bench_precisions(a, lines, src, work, max_len)


def bleu(binary, hyp, ref_path):
    """Corpus BLEU of hyp (lines) against ref_path's first len(hyp) lines, as sacreBLEU (`tformer bleu`)."""
    with tempfile.NamedTemporaryFile("w", suffix=".de", encoding="utf-8", delete=False) as f:
        f.writelines(l.rstrip("\n") + "\n" for l in open(ref_path, encoding="utf-8").readlines()[:len(hyp)])
    try:
        out = subprocess.run([binary, "bleu", "--ref", f.name], input="".join(h + "\n" for h in hyp), text=True,
                             capture_output=True, check=True).stdout
    finally:
        os.unlink(f.name)
    return float(out.split()[2])  # "BLEU = 37.48 ..."


def bench_precisions(a, lines, src, work, max_len):
    """tformer in each of a.precision's precisions against CTranslate2 in float and in int8 (batch 32), each
    CTranslate2 precision in its faster layout on these threads (T translators of 1 thread, or 1 of T); with
    --ref, each precision's BLEU beside f32's."""
    layouts = [(a.threads, 1), (1, a.threads)] if a.threads > 1 else [(1, 1)]
    for beam in (1, 5):
        _, ref = run_tformer(a.tformer, a.model, lines, beam, a.threads)
        base_bleu = bleu(a.tformer, ref, a.ref) if a.ref else None
        if a.ref:
            print(f"beam {beam}  tformer f32 BLEU {base_bleu:.2f} on the {len(ref)} references")
        ct_rate = {}
        for ct in ("default", "int8"):
            best = None
            for i, j in layouts:
                rate = len(lines) / statistics.median(run_ct2(work, src, beam, 32, max_len, i, j, a.repeat, ct)[0])
                print(f"beam {beam}  ctranslate2 {ct} (batch 32, {i} x {j} thread(s)) {rate:8.1f} sentences/s",
                      flush=True)
                if not best or rate > best[1]:
                    best = (f"ctranslate2 {ct} (batch 32, {i} x {j} thread(s))", rate)
            ct_rate[best[0]] = best[1]
        for p in a.precision.split(","):
            runs = [run_tformer(a.tformer, a.model, lines, beam, a.threads, 32, p) for _ in range(a.repeat)]
            same = sum(x == y for x, y in zip(runs[0][1], ref))
            mine = len(lines) / statistics.median(r[0] for r in runs)
            score = f"; BLEU {bleu(a.tformer, runs[0][1], a.ref):.2f} (f32 {base_bleu:.2f})" if a.ref else ""
            print(f"beam {beam}  tformer --precision {p:5s} {mine:8.1f} sentences/s; equals f32 on {same}/{len(ref)}"
                  f"{score}")
            for name, rate in ct_rate.items():
                print(f"beam {beam}  tformer {p} vs {name:40s} {mine / rate:6.2f}x", flush=True)
                bench_record.row("translate", f"Multi30k beam {beam}, tformer (batch 32) --precision {p}", a.threads,
                                 mine, name, rate, "sentences/s", precision=p, binary=a.tformer,
                                 same_as_f32=same / len(ref))
            # in a process that keeps the model, as CTranslate2's times are taken: the like-for-like row
            py = run_tformer_py(a.model, lines, beam, a.threads, a.repeat, p)
            if py is None:
                print(f"beam {beam}  tformer {p} in-process: the Python package is not installed (pip install .)")
                continue
            inproc = len(lines) / statistics.median(py[0])
            same_cli = sum(x == y for x, y in zip(py[1], runs[0][1]))
            print(f"beam {beam}  tformer {p} in-process (python, batch 32) {inproc:8.1f} sentences/s; equals the "
                  f"command's on {same_cli}/{len(lines)}")
            for name, rate in ct_rate.items():
                print(f"beam {beam}  tformer {p} in-process vs {name:40s} {inproc / rate:6.2f}x", flush=True)
                bench_record.row("translate", f"Multi30k beam {beam}, tformer in-process (python, batch 32) "
                                 f"--precision {p}", a.threads, inproc, name, rate, "sentences/s", precision=p,
                                 binary=a.tformer, same_as_f32=same / len(ref))


if __name__ == "__main__":
    main()
