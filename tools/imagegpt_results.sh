#!/bin/sh
# docs/vision.md's ImageGPT run (make imagegpt-results): a GPT on Fashion-MNIST
# downscaled to 14x14 and quantised to 16 grey levels (k-means), validated on
# the whole t10k test set (bits per pixel), then completion grids of test
# images from their top half written to docs/img/.
#   sh tools/imagegpt_results.sh TFORMER OUT_DIR
# Each call trains for at most HOURS (2.5) and stops with a checkpoint; calling
# it again continues bit for bit (--resume) until STEPS are done. Settings:
# STEPS (20000), D_MODEL (128), N_LAYER (4), BATCH (32), SIZE (14), CLUSTERS (16),
# DATA (/usr/share/datasets/fashion-mnist), IMG (docs/img).
set -eu
tf=$1 out=$2
data=${DATA:-/usr/share/datasets/fashion-mnist} img=${IMG:-docs/img}
steps=${STEPS:-20000} d_model=${D_MODEL:-128} n_layer=${N_LAYER:-4} batch=${BATCH:-32} hours=${HOURS:-2.5}
size=${SIZE:-14} clusters=${CLUSTERS:-16}
mkdir -p "$out" "$img"
resume=--overwrite # a folder without a checkpoint starts afresh
[ -f "$out/run/checkpoint.safetensors" ] && resume=--resume
if [ ! -f "$out/run/done" ]; then
    secs=$(awk "BEGIN { printf \"%d\", $hours * 3600 }")
    rc=0
    timeout -s TERM "$secs" "$tf" train --arch imagegpt --data-dir "$data" --out "$out/run" $resume \
        --image-size "$size" --n-clusters "$clusters" --d-model "$d_model" --n-layer "$n_layer" --n-head 4 \
        --batch "$batch" --steps "$steps" --lr 1e-3 --min-lr 1e-5 --warmup 500 --weight-decay 0.01 \
        --eval-every 2000 --checkpoint-every 250 --log-every 100 || rc=$?
    if [ "$rc" = 124 ]; then
        echo "stopped after $hours h with a checkpoint: run make imagegpt-results again to continue"
        exit 0
    fi
    [ "$rc" = 0 ] || exit "$rc"
    touch "$out/run/done"
fi
echo "test bits per pixel (t10k, the last evaluation): $(tail -n 1 "$out/run/losses.csv")"
for i in 0 1 2 3 4 5; do
    python3 tools/idx_png.py "$data/t10k-images-idx3-ubyte.gz" "$i" "$out/test_$i.png"
    "$tf" complete-image --model "$out/run" --input "$out/test_$i.png" --resize --keep-rows $((size / 2)) \
        --samples 5 --seed "$i" --out "$img/imagegpt_fashion_$i.png"
done
