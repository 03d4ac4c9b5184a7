"""tformer serve against the real `openai` Python client (PyPI): models.list, embeddings.create
(float and base64) and completions.create (plain and stream=True), each compared with what the
CLI prints for the same input (`tformer embed`, `tformer generate`), the embeddings also with
sentence-transformers' (the fixture's embeddings.safetensors); logprobs, stop lists, n,
and 16 clients at once (continuous batching) each getting their answer alone. Loopback only.

    python3 tests/ref/serve_openai.py [--tformer build/tformer]     (make serve-openai)

Exits 0 with "skipped" when the openai package is not installed."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ST_DIR = "tests/fixtures_roberta_st/tiny_roberta_st"
KEY = "sk-tformer-test"


def start(tformer, models):
    args = [tformer, "serve", "--port", "0", "--threads", "1", "--api-key", KEY]
    for m in models:
        args += ["--model", m]
    p = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    for line in p.stderr:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/v1", line)
        if m:
            return p, int(m.group(1))
    p.kill()
    sys.exit("serve_openai: the server did not start")


def cli(tformer, *args, stdin=None):
    return subprocess.run([tformer, *args], input=stdin, capture_output=True, text=True, check=True).stdout


def check_embeddings(client, tformer):
    texts = ["The cat sat on the mat.", "A dog ran."]
    want = [[float(x) for x in line.split()] for line in cli(tformer, "embed", "--model", ST_DIR,
                                                             stdin="\n".join(texts) + "\n").splitlines()]
    got = client.embeddings.create(model="st", input=texts)
    assert len(got.data) == 2 and got.usage.prompt_tokens > 0, got
    for row, ref in zip(got.data, want):
        assert len(row.embedding) == len(ref)
        assert max(abs(a - b) for a, b in zip(row.embedding, ref)) < 1e-6, (row.embedding[:4], ref[:4])
    # the client asks base64 by default when numpy is installed; ask it explicitly here
    b64 = client.embeddings.create(model="st", input=texts[1], encoding_format="base64")
    import base64
    import struct
    raw = b64.data[0].embedding
    vals = struct.unpack("<%df" % (len(want[1])), base64.b64decode(raw)) if isinstance(raw, str) else raw
    assert max(abs(a - b) for a, b in zip(vals, want[1])) < 1e-6
    print("serve_openai: embeddings.create equals tformer embed (float and base64)")
    # and sentence-transformers: the fixture's embeddings.safetensors holds SentenceTransformer.encode()
    # of answers.json's texts (tests/ref/gen_roberta_embed_fixture.py), read here without safetensors
    import json
    texts = [t["text"] for t in json.load(open(os.path.join(ST_DIR, "answers.json"), encoding="utf-8"))["texts"]]
    with open(os.path.join(ST_DIR, "embeddings.safetensors"), "rb") as f:
        head = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["embeddings"]
        assert head["dtype"] == "F32", head
        f.seek(head["data_offsets"][0], 1)
        n, dim = head["shape"]
        ref = struct.unpack("<%df" % (n * dim), f.read(4 * n * dim))
    got = client.embeddings.create(model="st", input=texts, encoding_format="float")
    worst = max(abs(a - ref[i * dim + j]) for i, row in enumerate(got.data) for j, a in enumerate(row.embedding))
    assert len(got.data) == n and all(len(r.embedding) == dim for r in got.data), (len(got.data), n)
    assert worst <= 1e-5, worst  # the tolerance of roberta_embed_matches_sentence_transformers
    print("serve_openai: embeddings.create of %d texts within %.1e of sentence-transformers" % (n, worst))


def check_completions(client, tformer, gpt_dir):
    want = cli(tformer, "generate", "--model", gpt_dir, "--prompt", "ab", "--max-tokens", "10", "--temperature", "0")
    want = want[2:].rstrip("\n")
    got = client.completions.create(model="gpt", prompt="ab", max_tokens=10, temperature=0)
    assert got.choices[0].text == want, (got.choices[0].text, want)
    pieces = [c.choices[0].text for c in client.completions.create(model="gpt", prompt="ab", max_tokens=10,
                                                                     temperature=0, stream=True)]
    assert "".join(pieces) == want, (pieces, want)
    seeded = cli(tformer, "generate", "--model", gpt_dir, "--prompt", "ab", "--max-tokens", "12", "--temperature", "0.9",
                 "--seed", "7")[2:].rstrip("\n")
    got = client.completions.create(model="gpt", prompt="ab", max_tokens=12, temperature=0.9, seed=7)
    assert got.choices[0].text == seeded, (got.choices[0].text, seeded)
    print("serve_openai: completions.create (greedy, seeded, stream=True) equals tformer generate: %r, %r"
          % (want, seeded))


def check_batched(client):
    """logprobs and a stop list through the client's types; 16 threads at once equal one at a time."""
    got = client.completions.create(model="gpt", prompt="ab", max_tokens=8, temperature=0, logprobs=2)
    lp = got.choices[0].logprobs
    assert "".join(lp.tokens) == got.choices[0].text and len(lp.token_logprobs) == 8, lp
    assert all(v <= 0 for v in lp.token_logprobs) and all(1 <= len(t) <= 2 for t in lp.top_logprobs), lp
    assert all(max(t.values()) == v for t, v in zip(lp.top_logprobs, lp.token_logprobs)), lp  # greedy: the likeliest
    assert lp.text_offset == [sum(len(t) for t in lp.tokens[:i]) for i in range(8)], lp
    full = client.completions.create(model="gpt", prompt="ab", max_tokens=12, temperature=0.9, seed=3).choices[0].text
    stops = [full[4:6], full[2], "\u00a7never"]
    cut = min(full.find(s) for s in stops if s and s in full)
    got = client.completions.create(model="gpt", prompt="ab", max_tokens=12, temperature=0.9, seed=3, stop=stops)
    assert got.choices[0].text == full[:cut] and got.choices[0].finish_reason == "stop", (got, full, stops)
    reqs = [dict(model="gpt", prompt=["ab", "x", "hello"][i % 3], max_tokens=5 + i, temperature=0.1 * (i % 4),
                 seed=i, n=1 + i % 2, top_p=0.9) for i in range(16)]
    alone = [client.completions.create(**r) for r in reqs]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(16) as pool:
        together = list(pool.map(lambda r: client.completions.create(**r), reqs))
    for a, t in zip(alone, together):
        assert [(c.text, c.finish_reason) for c in a.choices] == [(c.text, c.finish_reason) for c in t.choices], (a, t)
        assert a.usage == t.usage, (a.usage, t.usage)
    print("serve_openai: logprobs, stop lists, and 16 clients at once equal to one at a time")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tformer", default=os.environ.get("TFORMER_BIN", "build/tformer"))
    a = ap.parse_args()
    try:
        import openai
    except ImportError:
        print("serve_openai: skipped (pip install openai)")
        return
    gpt_dir = tempfile.mkdtemp(prefix="tformer_serve_openai_")
    p = None
    try:
        cli(a.tformer, "train", "--data", "tests/data/unicode_stress.txt", "--tokenizer", "char", "--out", gpt_dir,
            "--steps", "6", "--layers", "1", "--heads", "2", "--width", "16", "--context", "16", "--batch", "4",
            "--eval-every", "3", "--eval-batches", "2")
        p, port = start(a.tformer, ["st=" + ST_DIR, "gpt=" + gpt_dir])
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key=KEY, max_retries=0, timeout=60)
        ids = sorted(m.id for m in client.models.list())
        assert ids == ["gpt", "st"], ids
        print("serve_openai: models.list:", ids)
        check_embeddings(client, a.tformer)
        check_completions(client, a.tformer, gpt_dir)
        check_batched(client)
        try:
            client.embeddings.create(model="gpt", input="ab")
            raise AssertionError("a GPT embedded")
        except openai.UnprocessableEntityError as e:
            assert "cannot embed" in str(e), e
        bad = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key="wrong", max_retries=0)
        try:
            bad.models.list()
            raise AssertionError("a wrong key was taken")
        except openai.AuthenticationError:
            pass
        print("serve_openai: 422 and 401 as openai's exceptions")
    finally:
        if p:
            p.terminate()
            assert p.wait(timeout=60) == 0
        shutil.rmtree(gpt_dir, ignore_errors=True)
    print("serve_openai: ok")


if __name__ == "__main__":
    main()
