#!/bin/sh
# docs/vision.md's long runs (make vision-results; make swin-results, ARCH=swin):
# a ViT (or a Swin) trained from scratch on Fashion-MNIST with a DeiT recipe sized for a
# 0.3 M-parameter model on 28x28 images (issue 12's 93% on the t10k test set), then the last and
# the best (EMA) models scored on t10k.
#   sh tools/vision_results.sh TFORMER OUT_DIR
# On one thread (THREADS, default 1: one core of the 2 is as fast per core and leaves the other
# free) the ViT's 18,000 steps take about 1 h 40 min. Each call trains for at most HOURS (2.5)
# and stops with a checkpoint; calling it again continues bit for bit (--resume) until STEPS are
# done, then it scores. Settings: STEPS (18000), D_MODEL (64; Swin 48), N_LAYER (6), BATCH (128);
# Swin's DEPTHS (2,4), HEADS (3,6), WINDOW (7), patch 2 (14x14 tokens, then 7x7);
# DATA (/usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist).
# The recipe: AdamW (lr 1e-3, 1,000 warmup steps, cosine to 1e-5, weight decay 0.05), label
# smoothing 0.1, horizontal flips, RandAugment 2 ops at magnitude 6 (DeiT's 9 moves a 28-pixel
# image by up to 11 pixels), mixup 0.8 / cutmix 1.0 on half the batches, random erasing 0.25,
# stochastic depth 0.1, EMA 0.9995; no repeated augmentation.
set -eu
tf=$1 out=$2
data=${DATA:-/usr/share/datasets/fashion-mnist}
steps=${STEPS:-18000} n_layer=${N_LAYER:-6} batch=${BATCH:-128} hours=${HOURS:-2.5} arch=${ARCH:-vit}
if [ "$arch" = swin ]; then
    model="--patch-size 2 --d-model ${D_MODEL:-48} --depths ${DEPTHS:-2,4} --heads ${HEADS:-3,6} --window ${WINDOW:-7}"
    again=swin-results
else
    model="--patch-size 4 --d-model ${D_MODEL:-64} --n-layer $n_layer --n-head 4"
    again=vision-results
fi
mkdir -p "$out"
resume=""
[ -f "$out/run/checkpoint.safetensors" ] && resume=--resume
if [ ! -f "$out/run/done" ]; then
    secs=$(awk "BEGIN { printf \"%d\", $hours * 3600 }")
    rc=0
    # shellcheck disable=SC2086 # $model is a list of flags
    TFORMER_THREADS=${THREADS:-${TFORMER_THREADS:-1}} timeout -s TERM "$secs" "$tf" train --arch "$arch" --data-dir "$data" --out "$out/run" $resume $model \
        --label-names "T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot" \
        --batch "$batch" --steps "$steps" \
        --lr 1e-3 --min-lr 1e-5 --warmup 1000 --weight-decay 0.05 --eval-every 1000 --checkpoint-every 500 \
        --log-every 100 --label-smoothing 0.1 --hflip 0.5 --randaug-ops 2 --randaug-magnitude 6 --randaug-mstd 0.5 \
        --mixup 0.8 --cutmix 1.0 --mix-prob 0.5 --switch-prob 0.5 --erase-prob 0.25 --erase-mode pixel \
        --drop-path 0.1 --ema-decay 0.9995 || rc=$?
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
