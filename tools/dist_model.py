#!/usr/bin/env python3
"""The scaling model of docs/distributed.md: compute time per optimizer step
against the time of its collectives (ring algorithms), and the efficiency
that predicts for N machines, printed as a Markdown table.

    python3 tools/dist_model.py                      # GPT-2-124M, the docs' table
    python3 tools/dist_model.py --flops 1.7e14       # a GPU-class machine (llm.c's A100s)
    python3 tools/dist_model.py --params 809856 --batch-tokens 12288 --micro-tokens 3072

A step of G = batch_tokens / micro_tokens micro-batches on N machines is
A = G / N rounds. Compute: 6 * params * batch_tokens / N floating-point
operations (forward 2, backward 4 a parameter and token; attention left out)
at --flops per machine. Collectives, for S bytes over N machines in a ring,
each of the N - 1 hops costing the latency a plus its bytes over the link:

    reduce-scatter = all-gather = (N - 1) * a + (N - 1) / N * S / bandwidth
    all-reduce = reduce-scatter + all-gather

tformer (ordered sum, so the bits of one process): one reduce-scatter each
round plus one all-gather a step, with --zero 1 or without (ZeRO gathers the
weights instead of the gradient, and 8 bytes a norm chunk, left out: ~16 kB
for GPT-2). "one all-reduce": the usual data-parallel step (local
accumulation, then one all-reduce a step), for comparison. Neither overlaps
communication with compute. Efficiency = compute / (compute + communication):
the speed-up over one machine is N times that.
"""
import argparse

GPT2_124M = 124_439_808


def ring(n, nbytes, bandwidth, latency):
    """Seconds of one reduce-scatter (or all-gather) of nbytes over n machines."""
    return (n - 1) * latency + (n - 1) / n * nbytes / bandwidth


def step(n, args, gbits):
    """(rounds, compute s, tformer comm s, all-reduce comm s) for n machines."""
    micro = args.batch_tokens // args.micro_tokens
    rounds = max(1, micro // n)
    compute = 6.0 * args.params * args.batch_tokens / n / args.flops
    nbytes, bw = args.params * args.bytes, gbits * 1e9 / 8
    t_rs = ring(n, nbytes, bw, args.latency)
    return rounds, compute, rounds * t_rs + t_rs, 2 * t_rs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", type=int, default=GPT2_124M, help="parameters (default GPT-2-124M)")
    p.add_argument("--batch-tokens", type=int, default=524_288, help="tokens a step over every machine (2^19, GPT-2/llm.c)")
    p.add_argument("--micro-tokens", type=int, default=8_192, help="tokens of one micro-batch (8 x 1024)")
    p.add_argument("--flops", type=float, default=1e12, help="achieved FLOP/s of one machine (default 1e12: a CPU server)")
    p.add_argument("--bytes", type=int, default=4, help="bytes a gradient value (tformer: 4, float32)")
    p.add_argument("--latency", type=float, default=20e-6, help="seconds a message hop (default 20 us)")
    p.add_argument("--gbits", type=float, nargs="+", default=[10, 100], help="link bandwidths, Gbit/s")
    p.add_argument("--machines", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64])
    a = p.parse_args()
    if a.batch_tokens % a.micro_tokens or any(a.batch_tokens // a.micro_tokens % n for n in a.machines):
        p.error("--batch-tokens must split into --micro-tokens micro-batches, a multiple of every --machines")
    one = 6.0 * a.params * a.batch_tokens / a.flops
    print(f"{a.params:,} parameters ({a.params * a.bytes / 1e6:.1f} MB of gradient), {a.batch_tokens:,} tokens a step "
          f"in micro-batches of {a.micro_tokens:,}; {a.flops:.3g} FLOP/s a machine: {one:.3g} s a step on one; "
          f"latency {a.latency * 1e6:.0f} us a hop\n")
    head = "| N | rounds A | compute s |"
    rule = "|---|---|---|"
    for g in a.gbits:
        head += f" tformer comm s @{g:g}G | eff. | one all-reduce s @{g:g}G | eff. |"
        rule += "---|---|---|---|"
    print(head)
    print(rule)
    for n in a.machines:
        row = ""
        for g in a.gbits:
            rounds, compute, ours, allreduce = step(n, a, g)
            row += f" {ours:.3g} | {compute / (compute + ours):.0%} | {allreduce:.3g} | {compute / (compute + allreduce):.0%} |"
        print(f"| {n} | {rounds} | {compute:.3g} |" + row)


if __name__ == "__main__":
    main()
