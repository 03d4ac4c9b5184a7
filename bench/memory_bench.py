#!/usr/bin/env python3
"""Peak memory of a GPT-2-124M-shaped training run: tformer against PyTorch.

    python3 bench/memory_bench.py TFORMER BENCH_MEMORY THREADS [PYTHON...]

The run: 12 layers, 12 heads, width 768, GPT-2's vocabulary (50257), context
64, batch 4, AdamW, 10 steps, one checkpoint at the end. Measured:

- `tformer train` on Tiny Shakespeare with GPT-2's tokenizer
  (../shared/data/gpt2), under /usr/bin/time -v: peak RSS ("Maximum resident
  set size") and wall time;
- BENCH_MEMORY (bench/bench_memory.c): the same steps on random ids without
  the tokenizer and data, for the parameter count P, the activations (the step
  context's arena after a step), the peak RSS after each phase, and the seconds
  to write checkpoint.safetensors and model.safetensors;
- each PYTHON with torch (a PyTorch 2.x venv, Debian's 1.13): bench/gpt_bench.py's
  GPT (pre-LN, tanh GELU, tied embeddings, learned positions), the same steps,
  then torch.save of weights + optimizer state and the weights alone (fsync'd
  like tformer's files), under /usr/bin/time -v.

The bound of the issue: peak <= 1.15 x 16 P bytes + activations (16 P:
weights, gradients and AdamW's two moments in float32). Timings of the saves
mean something only on an idle machine: the load average is printed first.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

L, H, C, T, B, V, STEPS = 12, 12, 768, 64, 4, 50257, 10
DATA = "../shared/data/tinyshakespeare/input.txt"
TOKENIZER = "../shared/data/gpt2"


def time_v(cmd, env=None):
    """Run cmd under /usr/bin/time -v: (peak RSS bytes, wall seconds, stdout)."""
    p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) * 1024
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", p.stderr).group(1)
    secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
    return rss, secs, p.stdout


def keyvals(text):
    return {k: float(v) for k, v in (line.split() for line in text.splitlines() if len(line.split()) == 2)}


def tformer_cli(binary, threads):
    out = tempfile.mkdtemp(prefix="tformer_mem_")
    try:
        rss, wall, _ = time_v([binary, "train", "--data", DATA, "--tokenizer", TOKENIZER, "--layers", str(L),
                               "--heads", str(H), "--width", str(C), "--context", str(T), "--batch", str(B),
                               "--steps", str(STEPS), "--eval-every", str(STEPS), "--eval-batches", "1",
                               "--checkpoint-every", str(STEPS), "--threads", str(threads), "--out", out])
        sizes = {f: os.path.getsize(os.path.join(out, f)) for f in ("checkpoint.safetensors", "model.safetensors")}
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return rss, wall, sizes


def tformer_bench(binary, threads):
    out = tempfile.mkdtemp(prefix="tformer_mem_")
    try:
        env = dict(os.environ, TFORMER_THREADS=str(threads))
        rss, wall, text = time_v([binary, *map(str, (L, H, C, T, B, V, STEPS)), out], env)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return rss, keyvals(text)


def torch_child(threads, out):
    """Runs inside the PyTorch interpreter: prints "key value" lines."""
    import resource

    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpt_bench import GPT
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    model = GPT(V, T, L, H, C)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.99), weight_decay=0.1)
    for _ in range(STEPS):
        x, y = torch.randint(0, V, (B, T)), torch.randint(0, V, (B, T))
        opt.zero_grad(set_to_none=True)
        model(x, y).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    with torch.no_grad():  # the trainer's evaluation at the last step
        model(x, y)
    peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"params {sum(p.numel() for p in model.parameters())}\nhwm_steps_bytes {peak()}")

    def save(obj, path):
        t0 = time.perf_counter()
        with open(path, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        return time.perf_counter() - t0
    print(f"save_checkpoint_s {save({'model': model.state_dict(), 'optimizer': opt.state_dict()}, out + '/checkpoint.pt'):.3f}")
    print(f"hwm_checkpoint_bytes {peak()}")
    print(f"save_model_s {save(model.state_dict(), out + '/model.pt'):.3f}\nhwm_model_saved_bytes {peak()}")


def torch_run(python, threads):
    out = tempfile.mkdtemp(prefix="torch_mem_")
    try:
        version = subprocess.run([python, "-c", "import torch; print(torch.__version__.split('+')[0])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        rss, wall, text = time_v([python, os.path.abspath(__file__), "--torch-child", str(threads), out])
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return version, rss, keyvals(text)


def gb(x):
    return f"{x / 1e9:.2f} GB"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-child":
        return torch_child(int(sys.argv[2]), sys.argv[3])
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    tformer, bench, threads, pythons = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    print(f"GPT-2-124M shape ({L} layers, {H} heads, width {C}, vocabulary {V}, context {T}, batch {B}), "
          f"{STEPS} steps + one checkpoint, {threads} threads; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    cli_rss, cli_wall, sizes = tformer_cli(tformer, threads)
    bench_rss, k = tformer_bench(bench, threads)
    P, act = int(k["params"]), int(k["activations_bytes"])
    bound = 1.15 * 16 * P + act
    print(f"P = {P:,}; 16 P = {gb(16 * P)}; activations (step arena) = {act / 1e6:.0f} MB; "
          f"bound 1.15 x 16 P + activations = {gb(bound)}")
    print(f"files: checkpoint.safetensors {gb(sizes['checkpoint.safetensors'])}, "
          f"model.safetensors {gb(sizes['model.safetensors'])}")
    rows = [("tformer train (CLI, tokenizer + data)", cli_rss, None),
            ("tformer bench_memory (same steps, random ids)", bench_rss, k)]
    for py in pythons:
        if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0:
            print(f"{py}: no torch here; skipped")
            continue
        version, rss, tk = torch_run(py, threads)
        rows.append((f"PyTorch {version} ({py})", rss, tk))
    print(f"\n| run | peak RSS | / 16 P | peak before saving | checkpoint write | model write |")
    print("|---|---|---|---|---|---|")
    for name, rss, kv in rows:
        before = gb(kv["hwm_steps_bytes"]) if kv else ""
        ck = f"{kv['save_checkpoint_s']:.2f} s" if kv else ""
        mo = f"{kv['save_model_s']:.2f} s" if kv else ""
        print(f"| {name} | {gb(rss)} | {rss / (16 * P):.2f} | {before} | {ck} | {mo} |")
    print(f"\ntformer peak RSS after: the model {gb(k['hwm_model_bytes'])}, the first step "
          f"{gb(k['hwm_first_step_bytes'])}, {STEPS} steps {gb(k['hwm_steps_bytes'])}, the checkpoint "
          f"{gb(k['hwm_checkpoint_bytes'])}, model.safetensors {gb(k['hwm_model_saved_bytes'])}")
    verdict = "within" if cli_rss <= bound else "ABOVE"
    print(f"tformer train peak {gb(cli_rss)} is {verdict} the bound {gb(bound)} "
          f"({cli_rss / bound:.2f} of it); load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
