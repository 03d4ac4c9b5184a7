"""tformer serve under load (make bench-serve; docs/serve.md): throughput and p50 / p99 latency at
1, 4, 16 and 64 concurrent clients, for GPT-2 completions (greedy) and MiniLM embeddings;
tformer batched (continuous batching; embeddings coalesced) against tformer one at a time
(--max-rows 1 --parallel 1 --max-batch 1) and against llama.cpp's llama-server (F32 and Q8_0
GGUF files of the same GPT-2, --parallel slots = the clients), whose greedy texts are compared
with tformer's. Our own load generator (threads over http.client), 127.0.0.1 only; each level is
bounded by --requests and --seconds. Prints a markdown table; timings belong on a quiet machine.

    python3 bench/serve_bench.py --tformer build/tformer --gpt2 DIR [--minilm DIR]
        [--llama-server BIN --gguf-f32 FILE --gguf-q8 FILE] [--clients 1,4,16,64]
        [--requests 64] [--seconds 60] [--max-tokens 32] [--threads N]"""
import argparse
import http.client
import json
import re
import subprocess
import sys
import threading
import time

HOST = "127.0.0.1"  # loopback only: nothing here listens on or sends to another address
PROMPTS = ["The meaning of life is", "Once upon a time", "In the beginning", "The quick brown fox",
           "It was a dark and stormy night", "To be or not to be", "The first rule of", "Call me"]
TEXTS = ["A man is eating food.", "A cat sat on the mat.", "The weather is lovely today.",
         "Two dogs run across a green field.", "She reads a book in the library.", "Prices rose again in May."]


def start(args, pattern, log_name):
    """A server process; its port from the line of its log that pattern matches (60 s at most)."""
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    for line in p.stderr:
        m = re.search(pattern, line)
        if m:
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()  # keep draining
            return p, int(m.group(1))
        if time.time() > deadline:
            break
    p.kill()
    sys.exit("serve_bench: %s did not start" % log_name)


def start_tformer(a, one_at_a_time):
    args = [a.tformer, "serve", "--host", HOST, "--port", "0", "--threads", str(a.threads), "--model", "gpt2=" + a.gpt2]
    if a.minilm:
        args += ["--model", "minilm=" + a.minilm]
    args += ["--max-rows", "1", "--parallel", "1", "--max-batch", "1"] if one_at_a_time else \
            ["--max-rows", "64", "--max-batch", "16", "--max-queue", "1024", "--max-connections", "1024"]
    return start(args, r"listening on http://127\.0\.0\.1:(\d+)/v1", "tformer serve")


def start_llama(a, gguf, slots):
    free = subprocess.run([sys.executable, "-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); "
                           "print(s.getsockname()[1])"], capture_output=True, text=True).stdout.strip()
    args = [a.llama_server, "-m", gguf, "--host", HOST, "--port", free, "--parallel", str(slots),
            "-c", str(1024 * slots), "-t", str(a.threads)]
    return start(args, r"listening on http://127\.0\.0\.1:(\d+)", "llama-server")


def post(port, path, body):
    c = http.client.HTTPConnection(HOST, port, timeout=600)
    t0 = time.perf_counter()
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = json.loads(r.read())
    c.close()
    if r.status != 200:
        raise RuntimeError("%s: %d %s" % (path, r.status, data))
    return time.perf_counter() - t0, data


def completion(model, i, max_tokens, chars):
    return "/v1/completions", {"model": model, "prompt": PROMPTS[i % len(PROMPTS)][:chars], "max_tokens": max_tokens,
                               "temperature": 0}


def embedding(i):
    return "/v1/embeddings", {"model": "minilm", "input": TEXTS[i % len(TEXTS)]}


def load(port, make, clients, requests, seconds):
    """clients threads sending make(i) until `requests` are answered or `seconds` pass:
    (req/s, units/s, p50, p99, replies); a failed request is counted and reported, not timed."""
    lock, lat, replies, nxt = threading.Lock(), [], {}, [0]
    units, errors = [0], []
    deadline = time.time() + seconds

    def worker():
        while time.time() < deadline:
            with lock:
                i = nxt[0]
                if i >= requests:
                    return
                nxt[0] += 1
            path, body = make(i)
            try:
                dt, data = post(port, path, body)
            except (OSError, RuntimeError, ValueError) as e:
                with lock:
                    errors.append(str(e))
                continue
            u = data.get("usage", {})
            with lock:
                lat.append(dt)
                units[0] += u.get("completion_tokens") or len(data.get("data", []))
                replies[i] = data
    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(clients)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    wall = time.perf_counter() - t0
    if errors:
        print("serve_bench: %d requests failed, the first: %s" % (len(errors), errors[0]), file=sys.stderr)
    lat.sort()
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))] * 1000 if lat else float("nan")
    return len(lat) / wall, units[0] / wall, q(0.5), q(0.99), replies


def texts(replies):
    return {i: r["choices"][0]["text"] for i, r in replies.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tformer", default="build/tformer")
    ap.add_argument("--gpt2", required=True, help="a GPT-2 folder (config.json, model.safetensors, vocab.json, merges.txt)")
    ap.add_argument("--minilm", help="all-MiniLM-L6-v2's folder (sentence-transformers layout)")
    ap.add_argument("--llama-server")
    ap.add_argument("--gguf-f32")
    ap.add_argument("--gguf-q8")
    ap.add_argument("--clients", default="1,4,16,64")
    ap.add_argument("--requests", type=int, default=64, help="requests per level, at most")
    ap.add_argument("--seconds", type=float, default=60, help="seconds per level, at most")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--prompt-chars", type=int, default=1000, help="prompts cut to this many characters (a small model)")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    levels = [int(c) for c in a.clients.split(",")]
    if any(c < 1 or c > 256 for c in levels) or a.requests < 1 or a.requests > 10000 or a.seconds <= 0:
        sys.exit("serve_bench: clients in [1,256], requests in [1,10000], seconds > 0")
    rows, greedy = [], {}
    for one in (False, True):
        p, port = start_tformer(a, one)
        name = "tformer one at a time" if one else "tformer batched"
        try:
            for c in levels:
                rps, tps, p50, p99, rep = load(port, lambda i: completion("gpt2", i, a.max_tokens, a.prompt_chars), c, a.requests, a.seconds)
                rows.append(("GPT-2 completions", name, c, rps, tps, "tokens/s", p50, p99))
                greedy.setdefault(c, texts(rep))
                if a.minilm:
                    rps, tps, p50, p99, _ = load(port, embedding, c, a.requests, a.seconds)
                    rows.append(("MiniLM embeddings", name, c, rps, tps, "texts/s", p50, p99))
        finally:
            p.terminate()
            p.wait(timeout=120)
    same = {}
    for label, gguf in (("llama-server F32", a.gguf_f32), ("llama-server Q8_0", a.gguf_q8)):
        if not (a.llama_server and gguf):
            continue
        for c in levels:
            p, port = start_llama(a, gguf, c)
            try:
                rps, tps, p50, p99, rep = load(port, lambda i: completion("gpt2", i, a.max_tokens, a.prompt_chars), c, a.requests, a.seconds)
            finally:
                p.terminate()
                p.wait(timeout=120)
            rows.append(("GPT-2 completions", label, c, rps, tps, "tokens/s", p50, p99))
            ours, theirs = greedy.get(c, {}), texts(rep)
            both = [i for i in theirs if i in ours]
            same[(label, c)] = (sum(ours[i] == theirs[i] for i in both), len(both))
    print("| workload | server | clients | requests/s | throughput | p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|---|")
    for w, s, c, rps, tps, unit, p50, p99 in rows:
        print("| %s | %s | %d | %.2f | %.1f %s | %.1f | %.1f |" % (w, s, c, rps, tps, unit, p50, p99))
    for (label, c), (k, n) in sorted(same.items()):
        print("greedy texts equal to tformer's, %s, %d clients: %d of %d" % (label, c, k, n))


if __name__ == "__main__":
    main()
