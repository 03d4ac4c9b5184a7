"""Agreement of reduced-precision embeddings with float ones (docs/performance.md,
"Reduced precision for inference"): for each (texts, width) .npy file after the
first (the f32 reference, `tformer embed --format npy`), the smallest and mean
cosine of each text's embedding with the reference's, and Spearman's rank
correlation of the pairwise cosine similarities of every pair of texts (what a
search ranks) with the reference's. Figures only: nothing is timed.

    python3 bench/precision_agreement.py f32.npy bf16.npy int8.npy
"""
import sys

import numpy as np


def unit(x):
    x = x.astype(np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def ranks(v):
    """Ranks 0..n-1 of v (ties broken by position: pairwise cosines of
    distinct texts hardly tie)."""
    r = np.empty(len(v), dtype=np.float64)
    r[np.argsort(v, kind="stable")] = np.arange(len(v), dtype=np.float64)
    return r


def pair_sims(u):
    s = u @ u.T
    return s[np.triu_indices(len(u), k=1)]


def main(paths):
    ref = unit(np.load(paths[0]))
    ref_pairs = pair_sims(ref)
    ref_ranks = ranks(ref_pairs)
    print(f"{paths[0]}: {ref.shape[0]} texts, width {ref.shape[1]}; {len(ref_pairs)} pairs")
    for p in paths[1:]:
        e = unit(np.load(p))
        if e.shape != ref.shape:
            sys.exit(f"{p}: shape {e.shape}, the reference's {ref.shape}")
        cos = np.sum(e * ref, axis=1)
        pairs = pair_sims(e)
        rho = np.corrcoef(ranks(pairs), ref_ranks)[0, 1]
        print(f"{p}: cosine with f32 smallest {cos.min():.6f} mean {cos.mean():.6f}; "
              f"pairwise similarities: Spearman {rho:.6f}, largest |difference| {np.abs(pairs - ref_pairs).max():.2e}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1:])
