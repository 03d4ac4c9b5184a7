#!/usr/bin/env python3
"""bench/bench_record.py writes one record a run, tools/bench_compare.py reads two
(make bench-record-check, run by make test). Exits 1 naming the first failure."""
import json
import os
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "bench"))
import bench_record  # noqa: E402


def fail(msg):
    sys.exit(f"test_bench_record: {msg}")


def record(path, rows):
    os.environ["BENCH_RECORD"] = path
    for r in rows:
        bench_record.row(*r)
    del os.environ["BENCH_RECORD"]
    with open(path) as f:
        return json.load(f)


with tempfile.TemporaryDirectory() as d:
    old, new = os.path.join(d, "a", "old.json"), os.path.join(d, "new.json")
    a = record(old, [("gpt", "train nanoGPT", 2, 1000.0, "PyTorch", 500.0, "tokens/s"),
                     ("gpt", "train nanoGPT", 1, 600.0, "PyTorch", 300.0, "tokens/s"),
                     ("embed", "MiniLM", 2, 0.5, "ONNX Runtime", 0.6, "s", "int8", False),
                     ("gone", "only in old", 2, 1.0, "x", 1.0, "s"),
                     ("llama", "decode", 1, 140.0, "llama.cpp", 100.0, "tokens/s")])
    if a["format"] != bench_record.FORMAT or len(a["rows"]) != 5:
        fail(f"the record holds {len(a['rows'])} rows, not 5, or no format")
    if a["rows"][0]["ratio"] != 2.0 or abs(a["rows"][2]["ratio"] - 1.2) > 1e-12:
        fail(f"ratios {a['rows'][0]['ratio']}, {a['rows'][2]['ratio']}: want 2.0 and 1.2 (seconds: peer / tformer)")
    if not a["machine"]["cpu"] or "isa" not in a["machine"] or "python" not in a["versions"]:
        fail("the machine or the versions are missing")
    record(new, [("gpt", "train nanoGPT", 2, 1200.0, "PyTorch", 500.0, "tokens/s"),   # +20%: moved
                 ("gpt", "train nanoGPT", 1, 606.0, "PyTorch", 300.0, "tokens/s"),    # +1%: not moved
                 ("embed", "MiniLM", 2, 0.6, "ONNX Runtime", 0.6, "s", "int8", False),  # slower: worse
                 ("new", "only in new", 2, 1.0, "x", 1.0, "s"),
                 # three rounds of one key: the median (150, +7%) stands for them, not the last (160)
                 ("llama", "decode", 1, 160.0, "llama.cpp", 100.0, "tokens/s"),
                 ("llama", "decode", 1, 150.0, "llama.cpp", 100.0, "tokens/s"),
                 ("llama", "decode", 1, 130.0, "llama.cpp", 100.0, "tokens/s")])
    if os.path.exists("/proc/cpuinfo") and "cpu family" not in a["machine"].get("cpu_id", ""):
        fail(f"the machine's cpu_id {a['machine'].get('cpu_id')!r} lacks the CPU family")
    with open(new) as f:  # the same model name, another family: the compare must say so
        b = json.load(f)
    b["machine"]["cpu_id"] = "vendor_id AuthenticAMD cpu family 26 model 2 stepping 1"
    with open(new, "w") as f:
        json.dump(b, f)
    out = subprocess.run([sys.executable, os.path.join(root, "tools", "bench_compare.py"), old, new],
                         capture_output=True, text=True)
    if out.returncode:
        fail(f"bench_compare exited {out.returncode}: {out.stderr}")
    lines = out.stdout.splitlines()
    by = lambda s: next((l for l in lines if s in l), "")
    checks = [(by("train nanoGPT vs PyTorch") , "moved (better)"),
              ("3 of 4 rows moved by more than 5%; 1 new, 1 gone", "3 of 4 rows moved"),
              (by("MiniLM vs ONNX Runtime"), "moved (worse)"),
              (by("only in new"), "new"), (by("only in old"), "gone")]
    for line, want in checks:
        if want not in line and want not in out.stdout:
            fail(f"bench_compare's output lacks {want!r}:\n{out.stdout}")
    if "machine cpu_id differs" not in out.stdout:
        fail(f"bench_compare does not note another CPU family:\n{out.stdout}")
    thr1 = [l for l in lines if "train nanoGPT vs PyTorch" in l and " 1 fp32" in l]
    if not thr1 or "moved" in thr1[0]:
        fail(f"a 1% change is marked moved:\n{out.stdout}")
    if "3 of 4 rows moved by more than 5%; 1 new, 1 gone" not in out.stdout:
        fail(f"the summary line is wrong:\n{out.stdout}")
    med = by("decode vs llama.cpp (median of 3)")
    if "150" not in med or "+7.1" not in med or "moved (better)" not in med:
        fail(f"three rounds of a key are not compared by their median (150, +7.1%):\n{out.stdout}")
    with open(os.path.join(d, "bad.json"), "w") as f:
        f.write("{}")
    bad = subprocess.run([sys.executable, os.path.join(root, "tools", "bench_compare.py"), old,
                          os.path.join(d, "bad.json")], capture_output=True, text=True)
    if bad.returncode != 2 or "not a benchmark record" not in bad.stderr:
        fail(f"a file that is not a record: exit {bad.returncode}, {bad.stderr!r}")
print("bench-record-check: ok")
