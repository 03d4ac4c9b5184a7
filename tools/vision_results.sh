#!/bin/sh
# docs/vision.md's long runs (make vision-results; make swin-results, ARCH=swin):
# a ViT (or a Swin) trained from scratch on Fashion-MNIST with a DeiT recipe sized for a
# 0.3 M-parameter model on 28x28 images (issue 12's 93% on the t10k test set), then the last and
# the best (EMA) models scored on t10k.
#   sh tools/vision_results.sh TFORMER OUT_DIR
# On one thread (THREADS, default 1: one run on two threads is only about 1.5x one thread, so
# two runs side by side, one core each, use this 2-core machine best) the ViT's 25,000 steps take
# about 1 h 50 min. Each call trains for at most HOURS (2.5) and stops with a checkpoint;
# calling it again continues bit for bit (--resume) until STEPS are done, then it scores.
# Settings: STEPS (25000), D_MODEL (64; Swin 48), N_LAYER (6), BATCH (128), STEM (conv: the
# convolutional stem; patch: one strided projection), POOLING (cls; mean, seq: what the
# classifier reads, docs/vision.md "Pooling"), MIX_PROB (0.2: the share of batches
# mixed by mixup 0.8 / cutmix 1.0; 0: none), DROP_PATH (0.1); Swin's DEPTHS (2,4), HEADS (3,6),
# WINDOW (7), patch 2 (14x14 tokens, then 7x7); DATA (/usr/share/datasets/fashion-mnist,
# Debian's dataset-fashion-mnist).
# The recipe: AdamW (lr 1e-3, 1,000 warmup steps, cosine to 1e-5, weight decay 0.05), label
# smoothing 0.1, horizontal flips, RandAugment 2 ops at magnitude 6 (DeiT's 9 moves a 28-pixel
# image by up to 11 pixels), random erasing 0.25, stochastic depth and mixing as above, EMA
# 0.9995; no repeated augmentation. The first long run (docs/vision.md) was STEPS=18000
# STEM=patch MIX_PROB=0.5 DROP_PATH=0.1.
set -eu
tf=$1 out=$2
data=${DATA:-/usr/share/datasets/fashion-mnist}
steps=${STEPS:-25000} n_layer=${N_LAYER:-6} batch=${BATCH:-128} hours=${HOURS:-2.5} arch=${ARCH:-vit}
mix_prob=${MIX_PROB:-0.2} drop_path=${DROP_PATH:-0.1}
if [ "$arch" = swin ]; then
    model="--patch-size 2 --d-model ${D_MODEL:-48} --depths ${DEPTHS:-2,4} --heads ${HEADS:-3,6} --window ${WINDOW:-7}"
    again=swin-results
else
    model="--stem ${STEM:-conv} --patch-size 4 --d-model ${D_MODEL:-64} --n-layer $n_layer --n-head 4 --pooling ${POOLING:-cls}"
    again=vision-results
fi
if [ "$mix_prob" = 0 ]; then
    mix="--mixup 0 --cutmix 0"
else
    mix="--mixup 0.8 --cutmix 1.0 --mix-prob $mix_prob --switch-prob 0.5"
fi
mkdir -p "$out"
resume=""
[ -f "$out/run/checkpoint.safetensors" ] && resume=--resume
if [ ! -f "$out/run/done" ]; then
    secs=$(awk "BEGIN { printf \"%d\", $hours * 3600 }")
    rc=0
    # shellcheck disable=SC2086 # $model and $mix are lists of flags
    TFORMER_THREADS=${THREADS:-${TFORMER_THREADS:-1}} timeout -s TERM "$secs" "$tf" train --arch "$arch" --data-dir "$data" --out "$out/run" $resume $model \
        --label-names "T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot" \
        --batch "$batch" --steps "$steps" \
        --lr 1e-3 --min-lr 1e-5 --warmup 1000 --weight-decay 0.05 --eval-every 1000 --checkpoint-every 500 \
        --log-every 100 --label-smoothing 0.1 --hflip 0.5 --randaug-ops 2 --randaug-magnitude 6 --randaug-mstd 0.5 \
        $mix --erase-prob 0.25 --erase-mode pixel --drop-path "$drop_path" --ema-decay 0.9995 || rc=$?
    if [ "$rc" = 124 ]; then
        echo "stopped after $hours h with a checkpoint: run make $again again to continue"
        exit 0
    fi
    [ "$rc" = 0 ] || exit "$rc"
    touch "$out/run/done"
fi
for model in run run/best; do
    echo "$model (EMA weights) on t10k:"
    "$tf" eval --model "$out/$model" --data-dir "$data" | tee "$out/$(echo "$model" | tr / _).t10k.txt"
done
