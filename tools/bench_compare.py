#!/usr/bin/env python3
"""What moved between two benchmark records (bench/bench_record.py's JSON).

    python3 tools/bench_compare.py OLD.json NEW.json [--threshold PCT]

Rows are matched by (bench, workload, threads, precision, peer). A key that a
record holds several times (the rounds of make bench-llama) stands for its
median row by tformer's value (the lower middle of an even count), and the
line says "median of N". For each it
prints tformer's value and its ratio to the peer in both runs, and the change
of each in percent; a change of more than --threshold percent (default 5) in
tformer's value or in the ratio is marked `moved`. Rows in one file only are
listed as `new` or `gone`. A record made on another CPU, or with other ISA
flags or kernel-steering environment, is said first, since its figures are not
like for like. Exit status: 0, or 2 for a file that is not a record.
"""
import argparse
import json
import sys

FORMAT = "tformer-bench 1"


def die(msg):
    print(f"bench_compare: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{path}: {e}")
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        die(f"{path}: not a benchmark record (no \"format\": \"{FORMAT}\")")
    return rec


def key(r):
    return (r.get("bench"), r.get("workload"), r.get("threads"), r.get("precision"), r.get("peer"))


def rows_by_key(rec):
    """key -> (the median row by tformer's value among the rows with that key, how many there were)."""
    groups = {}
    for r in rec.get("rows", []):
        groups.setdefault(key(r), []).append(r)
    out = {}
    for k, rs in groups.items():
        rs = sorted(rs, key=lambda r: r["tformer"] if r.get("tformer") is not None else float("-inf"))
        out[k] = (rs[(len(rs) - 1) // 2], len(rs))
    return out


def pct(old, new):
    if not old or new is None:
        return None
    return 100.0 * (new - old) / old


def fmt(x, spec=".4g"):
    return "-" if x is None else format(x, spec)


def machine_notes(a, b):
    notes = []
    ma, mb = a.get("machine", {}), b.get("machine", {})
    for field in ("cpu", "cpu_id", "cores", "isa", "env"):
        if ma.get(field) != mb.get(field):
            notes.append(f"machine {field} differs: {ma.get(field)!r} -> {mb.get(field)!r}")
    va, vb = a.get("versions", {}), b.get("versions", {})
    for k in sorted(set(va) | set(vb)):
        if va.get(k) != vb.get(k):
            notes.append(f"version {k}: {va.get(k)} -> {vb.get(k)}")
    return notes


def compare(a, b, threshold):
    """The report's lines."""
    out = [f"# {a.get('started', '?')} -> {b.get('started', '?')}"]
    out += [f"# {n}" for n in machine_notes(a, b)]
    old_n, new_n = rows_by_key(a), rows_by_key(b)
    old = {k: v[0] for k, v in old_n.items()}
    new = {k: v[0] for k, v in new_n.items()}
    out.append(f"{'workload':<58}{'thr':>4} {'prec':<5}{'tformer old':>12}{'new':>10}{'%':>7}"
               f"{'ratio old':>10}{'new':>7}{'%':>7}  ")
    moved = 0
    for k in list(old) + [k for k in new if k not in old]:
        o, n = old.get(k), new.get(k)
        r = n or o
        rounds = max(old_n.get(k, (None, 1))[1], new_n.get(k, (None, 1))[1])
        tag = f" (median of {rounds})" if rounds > 1 else ""
        name = f"{r['bench']}: {r['workload']} vs {r['peer']}"[:57 - len(tag)] + tag
        if o is None or n is None:
            out.append(f"{name:<58}{r['threads']:>4} {r['precision']:<5}"
                       f"{fmt(o and o['tformer']):>12}{fmt(n and n['tformer']):>10}{'':>7}"
                       f"{fmt(o and o['ratio'], '.2f'):>10}{fmt(n and n['ratio'], '.2f'):>7}{'':>7}  "
                       f"{'new' if o is None else 'gone'}")
            continue
        sign = 1 if n.get("higher_is_better", True) else -1
        dv, dr = pct(o["tformer"], n["tformer"]), pct(o["ratio"], n["ratio"])
        flag = ""
        if any(d is not None and abs(d) > threshold for d in (dv, dr)):
            moved += 1
            better = (dv or 0) * sign > 0 if dv is not None else (dr or 0) > 0
            flag = "moved (better)" if better else "moved (worse)"
        out.append(f"{name:<58}{n['threads']:>4} {n['precision']:<5}{fmt(o['tformer']):>12}{fmt(n['tformer']):>10}"
                   f"{fmt(dv, '+.1f'):>7}{fmt(o['ratio'], '.2f'):>10}{fmt(n['ratio'], '.2f'):>7}{fmt(dr, '+.1f'):>7}"
                   f"  {flag}")
    out.append(f"{moved} of {len(set(old) & set(new))} rows moved by more than {threshold:g}%; "
               f"{len(set(new) - set(old))} new, {len(set(old) - set(new))} gone")
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--threshold", type=float, default=5.0, help="percent change that counts as moved (5)")
    args = p.parse_args(argv)
    print("\n".join(compare(load(args.old), load(args.new), args.threshold)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
