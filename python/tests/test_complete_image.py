"""Model.complete_image against `tformer complete-image`: the completions of one folder, seed for seed,
read back from the CLI's PNG grid (8 bits a pixel, so compared at 1/255), and the bad arguments refused."""
import os
import struct
import zlib

import numpy as np
import pytest

import tformer

from conftest import png


def read_grey_png(path):
    """An 8-bit grey PNG (every row filter of the format undone) as (H, W) uint8."""
    with open(path, "rb") as f:
        raw = f.read()
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(raw):
        n, kind = struct.unpack(">I4s", raw[pos:pos + 8])
        body = raw[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour == 0, (depth, colour)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    data, out = zlib.decompress(idat), np.zeros((h, w), np.int32)
    for y in range(h):
        f, row = data[y * (w + 1)], np.frombuffer(data, np.uint8, w, y * (w + 1) + 1).astype(np.int32)
        up = out[y - 1] if y else np.zeros(w, np.int32)
        for x in range(w):
            a, b, c = (out[y, x - 1] if x else 0), up[x], (up[x - 1] if x else 0)
            p = a + b - c
            pred = [0, a, b, (a + b) // 2, a if abs(p - a) <= min(abs(p - b), abs(p - c)) else
                    b if abs(p - b) <= abs(p - c) else c][f]
            out[y, x] = (row[x] + pred) & 255
    return out.astype(np.uint8)


@pytest.fixture(scope="module")
def imagegpt(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("imagegpt")
    rng = np.random.default_rng(3)
    rows = [",".join(str(v) for v in list(rng.integers(0, 17, 64)) + [int(rng.integers(0, 10))]) for _ in range(48)]
    (d / "digits.csv").write_text("\n".join(rows) + "\n")
    cli(["train", "--arch", "imagegpt", "--data", str(d / "digits.csv"), "--out", str(d / "run"), "--steps", "4",
         "--n-clusters", "6", "--kmeans-iters", "5", "--n-layer", "1", "--n-head", "2", "--n-embd", "16",
         "--batch", "4", "--eval-every", "4", "--eval-batches", "1"])
    img = (rng.random((8, 8)) * 255).astype(np.uint8)
    png(d / "in.png", img)
    return str(d / "run"), str(d / "in.png"), img


def test_complete_image_equals_the_cli(cli, imagegpt, tmp_path):
    run, path, img = imagegpt
    m = tformer.load(run)
    assert "complete-image" in m.capabilities
    for keep, temperature in ((3, 1.0), (0, 0.0)):
        grid = tmp_path / f"grid{keep}.png"
        cli(["complete-image", "--model", run, "--input", path, "--keep-rows", str(keep), "--samples", "3",
             "--seed", "7", "--temperature", str(temperature), "--scale", "1", "--out", str(grid)])
        got = m.complete_image(img, keep, samples=3, temperature=temperature, seed=7)
        assert got.shape == (3, 8, 8) and got.dtype == np.float32
        g = read_grey_png(grid).astype(np.float32) / 255  # panels of 8 after a gap of 2: given | 3 | original
        for i in range(3):
            panel = g[2:10, 2 + (i + 1) * 10:10 + (i + 1) * 10]
            assert np.abs(panel - got[i]).max() <= 0.5 / 255 + 1e-6, (keep, i)
        if temperature == 0:
            assert (got == got[0]).all()  # greedy: every completion the same
    assert np.array_equal(m.complete_image(img, 2, samples=2, seed=1), m.complete_image(img, 2, samples=2, seed=1))


def test_complete_image_bad_arguments(imagegpt, gpt_dir):
    run, _, img = imagegpt
    m = tformer.load(run)
    with pytest.raises(tformer.InputError, match="keep_rows 8 must lie in"):
        m.complete_image(img, 8)
    with pytest.raises(tformer.InputError, match="samples must be an int in 1..64"):
        m.complete_image(img, 2, samples=0)
    with pytest.raises(tformer.InputError, match="the model takes 8x8"):
        m.complete_image(img[:4], 2)
    with pytest.raises(tformer.CapabilityError, match=r"\(gpt\) cannot complete-image"):
        tformer.load(gpt_dir).complete_image(img, 2)
