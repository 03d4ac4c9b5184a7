#!/bin/sh
# docs/vision.md's digits figures (make vision-digits): a ViT trained from scratch on
# scikit-learn's 8x8 digits, the last 20% (359 images) held out, beside scikit-learn's
# classical classifiers fitted on the same first 1,438 images (a reference no one here wrote).
#   sh tools/digits_results.sh TFORMER OUT_DIR
# Two recipes: plain (shifts of 1 pixel, label smoothing; 3,000 steps) and DeiT-like
# (+ RandAugment 2 ops at magnitude 5, drop path 0.1, EMA 0.999; 6,000 steps). Patch 2
# (16 tokens), d_model 64, 4 blocks of 4 heads, batch 64, AdamW 1e-3 with warmup + cosine.
# Minutes on one core. DIGITS: the csv (default: Debian's python3-sklearn copy). The plain
# recipe is also trained with each seed of SEEDS (default "1 2": with the default seed 1337,
# three runs) and their mean printed: one run of it moves by a dozen of the 359 images with the
# BLAS's kernels (docs/vision.md).
set -eu
tf=$1 out=$2
digits=${DIGITS:-/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz}
seeds=${SEEDS-1 2}
mkdir -p "$out"
common="--arch vit --data $digits --image-size 8 --patch-size 2 --d-model 64 --n-layer 4 --n-head 4 --batch 64
    --lr 1e-3 --val-fraction 0.2 --eval-every 500 --log-every 500 --label-smoothing 0.1 --shift 1"
# shellcheck disable=SC2086 # $common is a list of flags
"$tf" train $common --steps 3000 --warmup 200 --out "$out/plain" --overwrite > "$out/plain.log" 2>&1
# shellcheck disable=SC2086
"$tf" train $common --steps 6000 --warmup 300 --randaug-ops 2 --randaug-magnitude 5 --drop-path 0.1 \
    --ema-decay 0.999 --out "$out/deit" --overwrite > "$out/deit.log" 2>&1
for seed in $seeds; do
    # shellcheck disable=SC2086
    "$tf" train $common --steps 3000 --warmup 200 --seed "$seed" --out "$out/plain-$seed" --overwrite \
        > "$out/plain-$seed.log" 2>&1
done
last() { tail -n 1 "$1/losses.csv" | awk -F, '{print $NF}'; }
for r in plain deit; do
    echo "ViT $r: held-out accuracy at the last step: $(last "$out/$r")"
done
runs="$out/plain" n=1
for seed in $seeds; do
    echo "ViT plain, seed $seed: held-out accuracy at the last step: $(last "$out/plain-$seed")"
    runs="$runs $out/plain-$seed" n=$((n + 1))
done
# shellcheck disable=SC2086 # $runs is a list of folders
echo "ViT plain, mean of $n seeds: held-out accuracy at the last step: $(for d in $runs; do last "$d"; done |
    awk '{ s += $1 } END { printf "%.4f", s / NR }')"
/usr/bin/python3 - "$digits" <<'PY'
import sys
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC
d = np.loadtxt(sys.argv[1], delimiter=",")
X, y = d[:, :64], d[:, 64].astype(int)
k = len(X) - int(len(X) * np.float32(0.2))  # tformer's split: the last floor(n * 0.2f) held out
for name, m, s in [("SVC (RBF, gamma 0.001)", SVC(gamma=0.001), 1), ("3-nearest neighbours", KNeighborsClassifier(3), 16),
                   ("logistic regression", LogisticRegression(max_iter=5000), 16)]:
    m.fit(X[:k] / s, y[:k])
    print(f"scikit-learn {name}: held-out accuracy {m.score(X[k:] / s, y[k:]):.4f} ({len(X) - k} images)")
PY
