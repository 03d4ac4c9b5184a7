"""Fixtures for tformer's k-means (tests/test_imagegpt.c) from scikit-learn.

KMeans(init=<given centres>, n_init=1, algorithm="lloyd", tol=0) on fixed
random points: grey values (dim 1, k 16, as ImageGPT's grey palette),
RGB-like points (dim 3, k 8) and a 2-D case. The points are float32
values (stored exactly as %.9g) and run in float64, so the centres differ
from tformer's (double sums, float centres) by float rounding only.
Run from the repository root:

    build/hfvenv/bin/python tests/ref/gen_kmeans_fixtures.py [--out tests/fixtures_imagegpt]

Output kmeans.txt: a header line, then per case the lines
"case DIM K N", "x v...", "init v...", "centers v..." and "labels l...".
"""
import argparse
import os

import numpy as np
import sklearn
from sklearn.cluster import KMeans


def case(rng, n, dim, k, clumps):
    # points around `clumps` random means, so every cluster keeps points (no empty-cluster relocation)
    means = rng.random((clumps, dim))
    x = means[rng.integers(0, clumps, n)] + 0.08 * rng.standard_normal((n, dim))
    x = np.clip(x, 0, 1).astype(np.float32)
    init = x[rng.choice(n, k, replace=False)]
    km = KMeans(n_clusters=k, init=init.astype(np.float64), n_init=1, algorithm="lloyd", tol=0, max_iter=300)
    km.fit(x.astype(np.float64))
    return x, init, km.cluster_centers_, km.labels_


def fmt(v):
    return " ".join("%.9g" % float(a) for a in np.asarray(v).ravel())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures_imagegpt")
    a = ap.parse_args()
    rng = np.random.default_rng(12)
    lines = ["# scikit-learn %s numpy %s" % (sklearn.__version__, np.__version__)]
    for n, dim, k, clumps in [(400, 1, 16, 20), (300, 3, 8, 10), (200, 2, 5, 5)]:
        x, init, centers, labels = case(rng, n, dim, k, clumps)
        lines += ["case %d %d %d" % (dim, k, n), "x " + fmt(x), "init " + fmt(init), "centers " + fmt(centers),
                  "labels " + " ".join(str(int(v)) for v in labels)]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "kmeans.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
