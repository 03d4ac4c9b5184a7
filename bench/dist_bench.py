#!/usr/bin/env python3
"""Data-parallel speed on one machine (docs/distributed.md, "Measured speed").

Trains the same GPT steps four ways on the same cores and prints tokens/s:

  1 process,  1 thread    --accum 2          (one rank's speed)
  1 process,  2 threads   --accum 2          (threads instead of processes)
  2 processes, 1 thread each, --accum 1      (mpirun -np 2 --bind-to core)
  2 processes, 1 thread each, --accum 1 --zero 1

All four write the same bytes (checked: model.safetensors compared), so
only the speed differs. It then checks the scaling model (tools/dist_model.py):
the bytes a process receives a step (the trainer's start-up line) and the
measured step times give the communication time the 2-process run paid,
  t_comm = t_step(2 processes) - t_step(1 process, 1 thread) / 2,
the bandwidth that implies, and with --gbs the model's prediction of the
2-process tokens/s against the measurement.

Run it on a quiet machine with at least 2 free cores: timings taken while
other work runs mean nothing.

    python3 bench/dist_bench.py                      # defaults below
    python3 bench/dist_bench.py --gbs 5 --steps 40   # predict with 5 GB/s between the ranks
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "core", "-np", "2"]


def run(cmd, env_extra, out):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **env_extra)
    p = subprocess.run(cmd + ["--out", out], capture_output=True, text=True, env=env, timeout=3600)
    if p.returncode:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return p.stdout


def tokens_per_s(stdout, steps):
    """The trainer's running tokens/s at the step before the last (the last includes the evaluation)."""
    m = re.search(rf"^step {steps - 1}/{steps} \|.*\| ([0-9.]+)k tok/s", stdout, re.M)
    if not m:
        sys.exit(f"no progress line for step {steps - 1}:\n{stdout}")
    return float(m.group(1)) * 1000


def received_bytes(stdout):
    m = re.search(r"receives at most ([0-9.]+) (B|kB|MB|GB) a step", stdout)
    return float(m.group(1)) * {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(2)] if m else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tformer", default=os.path.join(ROOT, "build", "tformer"))
    p.add_argument("--data", default="/work/shared/data/tinyshakespeare/input.txt")
    p.add_argument("--model", default="--layers 4 --heads 4 --width 256 --context 128",
                   help="the GPT's flags (default about 3.2 M parameters)")
    p.add_argument("--batch", type=int, default=16, help="sequences a step (global)")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--gbs", type=float, help="bandwidth between the two ranks in GB/s, for the model's prediction")
    a = p.parse_args()
    common = [a.tformer, "train", "--data", a.data, "--tokenizer", "char", *a.model.split(), "--batch", str(a.batch),
              "--steps", str(a.steps), "--eval-every", str(a.steps), "--eval-batches", "1", "--checkpoint-every",
              str(a.steps), "--log-every", "1", "--dropout", "0"]
    runs = [("1 process, 1 thread", [], ["--threads", "1", "--accum", "2"]),
            ("1 process, 2 threads", [], ["--threads", "2", "--accum", "2"]),
            ("2 processes x 1 thread", MPIRUN, ["--threads", "1", "--accum", "1"]),
            ("2 processes x 1 thread, --zero 1", MPIRUN, ["--threads", "1", "--accum", "1", "--zero", "1"])]
    tokens_step = None
    rows, models = [], []
    with tempfile.TemporaryDirectory(prefix="dist_bench_") as tmp:
        for i, (name, launcher, flags) in enumerate(runs):
            out = os.path.join(tmp, str(i))
            stdout = run(launcher + common + flags, {}, out)
            tps = tokens_per_s(stdout, a.steps)
            rows.append((name, tps, received_bytes(stdout)))
            with open(os.path.join(out, "model.safetensors"), "rb") as f:
                models.append(f.read())
        tokens_step = a.batch * int(re.search(r"--context (\d+)", a.model).group(1))
    same = all(m == models[0] for m in models)
    print(f"GPT {a.model}, batch {a.batch} x {tokens_step // a.batch} tokens, {a.steps} steps; "
          f"model.safetensors identical in all runs: {'yes' if same else 'NO'}\n")
    print("| run | tokens/s | vs 1 process, 1 thread | bytes received a step |")
    print("|---|---|---|---|")
    for name, tps, nbytes in rows:
        got = f"{nbytes / 1e6:.3g} MB" if nbytes else "-"
        print(f"| {name} | {tps:,.0f} | {tps / rows[0][1]:.2f}x | {got} |")
    t1, t2, nbytes = tokens_step / rows[0][1], tokens_step / rows[2][1], rows[2][2]
    comm = t2 - t1 / 2
    print(f"\nstep: {t1 * 1e3:.1f} ms on 1 process x 1 thread, {t2 * 1e3:.1f} ms on 2 processes: "
          f"{comm * 1e3:.1f} ms a step beyond half the work")
    if comm > 0 and nbytes:
        print(f"implied: {nbytes / comm / 1e9:.3g} GB/s for the {nbytes / 1e6:.3g} MB a process receives a step")
    if a.gbs and nbytes:
        predicted = tokens_step / (t1 / 2 + nbytes / (a.gbs * 1e9))
        print(f"model at {a.gbs:g} GB/s: {predicted:,.0f} tokens/s for 2 processes; measured {rows[2][1]:,.0f} "
              f"({rows[2][1] / predicted:.2f} of the prediction)")
    if not same:
        sys.exit("the runs wrote different models: the equivalence rule is broken")


if __name__ == "__main__":
    main()
