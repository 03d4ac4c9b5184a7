"""One JSON record per benchmark run (make bench; docs/performance.md, "The record").

Each bench script calls `row(...)` once per ratio it prints. When BENCH_RECORD
names a file, the row is added to it: one JSON object per run with the machine
(CPU model, the instruction sets that matter, cores, threads), the versions of
tformer and of the peers' libraries, and a list of rows. The file is rewritten
atomically (a temporary file renamed over it) after each row, so an interrupted
run keeps the rows measured so far. Without BENCH_RECORD nothing is written.

    {"format": "tformer-bench 1", "started": "2026-12-02T08:00:00Z",
     "machine": {"cpu": "AMD EPYC ...", "cpu_id": "vendor_id AuthenticAMD cpu family 25 model 17 stepping 1",
                 "cores": 2, "isa": ["avx512f", ...],
                 "env": {"OPENBLAS_CORETYPE": null, ...}},
     "versions": {"tformer": "0.1.0", "torch": "2.5.1", ...},
     "rows": [{"bench": "gpt", "workload": "train nanoGPT char ...", "threads": 2,
               "precision": "fp32", "unit": "tokens/s", "tformer": 5800.0,
               "peer": "PyTorch", "peer_value": 2700.0, "ratio": 2.15,
               "higher_is_better": true, "extra": {"of_peak": 0.41}}, ...]}

tools/bench_compare.py OLD NEW prints what moved between two such files.
"""
import datetime
import json
import os
import platform
import subprocess
import sys

FORMAT = "tformer-bench 1"
# The CPU flags that decide which kernels run (tformer's and the peers').
ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "avx_vnni",
             "amx_tile", "amx_bf16", "amx_int8")
ENV_KEYS = ("OPENBLAS_CORETYPE", "TFORMER_ISA", "TFORMER_BLAS", "TFORMER_THREADS", "OMP_NUM_THREADS")


def machine():
    """The CPU model, its relevant flags, the cores and the environment that steers kernels. The
    family / model / stepping numbers tell apart what the model name may not: a virtual machine's
    "AMD EPYC" was a Zen 5 (family 26) one day and a Zen 4 (family 25, half the AVX-512 FMA rate)
    the next."""
    cpu, flags, ids = "?", set(), {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name" and cpu == "?":
                    cpu = value
                elif key == "flags" and not flags:
                    flags = set(value.split())
                elif key in ("vendor_id", "cpu family", "model", "stepping") and key not in ids:
                    ids[key] = value
    except OSError:
        pass
    cpu_id = " ".join(f"{k} {ids[k]}" for k in ("vendor_id", "cpu family", "model", "stepping") if k in ids)
    return {"cpu": cpu, "cpu_id": cpu_id or "?", "cores": os.cpu_count(), "kernel": platform.release(),
            "isa": [f for f in ISA_FLAGS if f in flags],
            "env": {k: os.environ.get(k) for k in ENV_KEYS}}


def _version_of(module):
    """The version of a peer the bench script has imported (none is imported here:
    an import costs seconds and may print)."""
    m = sys.modules.get(module)
    return getattr(m, "__version__", "?") if m is not None else None


def _tformer_version(binary):
    for b in (binary, os.path.join(os.path.dirname(binary or "."), "tformer")):
        if b and os.path.exists(b):
            try:
                out = subprocess.run([b, "version"], capture_output=True, text=True, timeout=10).stdout
                if out.strip():
                    return out.strip()
            except (OSError, subprocess.SubprocessError):
                pass
    return None


def _openblas():
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libopenblas0-pthread"],
                             capture_output=True, text=True, timeout=10).stdout
        return out or None
    except (OSError, subprocess.SubprocessError):
        return None


def versions(binary=None, peers=("torch", "transformers", "onnxruntime", "ctranslate2",
                                 "sentence_transformers", "llama_cpp", "numpy")):
    v = {"tformer": _tformer_version(binary), "python": platform.python_version(), "openblas": _openblas()}
    for p in peers:
        got = _version_of(p)
        if got is not None:
            v[p] = got
    return v


def _load(path):
    try:
        with open(path) as f:
            rec = json.load(f)
        if rec.get("format") == FORMAT:
            return rec
    except (OSError, ValueError):
        pass
    return None


def _save(path, rec):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(rec, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def row(bench, workload, threads, tformer, peer, peer_value, unit, precision="fp32",
        higher_is_better=True, binary=None, **extra):
    """Add one ratio to $BENCH_RECORD (when set). `tformer` and `peer_value` are the two
    measurements in `unit`; the ratio is tformer's advantage (>1: tformer ahead)."""
    path = os.environ.get("BENCH_RECORD")
    if not path:
        return
    rec = _load(path) or {"format": FORMAT,
                          "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                          "machine": machine(), "versions": {}, "rows": []}
    for k, v in versions(binary).items():  # every script adds the peers its interpreter has
        if v is not None:
            rec["versions"].setdefault(k, v)
    ratio = None
    if tformer and peer_value:
        ratio = tformer / peer_value if higher_is_better else peer_value / tformer
    rec["rows"].append({"bench": bench, "workload": workload, "threads": int(threads), "precision": precision,
                        "unit": unit, "tformer": tformer, "peer": peer, "peer_value": peer_value,
                        "ratio": ratio, "higher_is_better": bool(higher_is_better), "extra": extra})
    _save(path, rec)
