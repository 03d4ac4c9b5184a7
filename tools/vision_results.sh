#!/bin/sh
# The long runs of docs/results/vision-runs.md (make vision-results; make swin-results, ARCH=swin):
# a ViT (or a Swin) trained from scratch on Fashion-MNIST with a DeiT recipe sized for a
# 0.3-0.5 M-parameter model on 28x28 images (issue 12's 93% on the t10k test set), then the last and
# the best (EMA) models scored on t10k, with and without the mirror-image average.
#   sh tools/vision_results.sh TFORMER OUT_DIR
# The ViT's defaults are the fourteenth run of docs/results/vision-runs.md (93.29% on t10k): d_model 80, 32,000 steps
# on both cores as two processes of one thread (PROCS, 2; THREADS, 1: under mpirun, a batch's two
# halves side by side), the last CLEAN_STEPS (3,200) without RandAugment, mixup, cutmix and erasing
# (a first phase stopped by --stop-at, then --resume --allow-changes), a twentieth of the training
# images held out (VAL_FRACTION, 0.05), the convolutional stem 1 -> 32 -> 64 channels (STEM_WIDTH,
# 32) with a stride-1 convolution after each stride-2 one (STEM_DEPTH, 2): 1 h 45 min on a 2-core
# AMD EPYC Zen 5 (the seventh run: D_MODEL=64 STEM_DEPTH=1 STEPS=30000 CLEAN_STEPS=3000, 1 h 53 min). Each call trains for at most HOURS (2.5) and stops with a checkpoint;
# calling it again continues (--resume) until STEPS are done, then it scores.
# Settings: STEPS (32000; Swin 25000), D_MODEL (80; Swin 48), N_LAYER (6), BATCH (128), STEM
# (conv: the convolutional stem; patch: one strided projection), STEM_WIDTH (32; 0: d_model /
# patch_size), STEM_DEPTH (2: 3x3 convolutions per halving, the others of stride 1), POOLING (cls; mean, seq: what the classifier reads, docs/vision.md "Pooling"),
# LSA (false; true: locality self-attention, docs/vision.md "Locality self-attention"),
# SEED (1337, the trainer's default: initial weights, data order, augmentations; the held-out
# images do not depend on it), MIX_PROB (0.2: the share of batches mixed by mixup 0.8 / cutmix 1.0; 0: none), DROP_PATH (0.1);
# Swin's DEPTHS (2,4), HEADS (3,6), WINDOW (7), patch 2 (14x14 tokens, then 7x7), and for it
# THREADS 1, PROCS 1, VAL_FRACTION 0.1, CLEAN_STEPS 0; DATA (/usr/share/datasets/fashion-mnist,
# Debian's dataset-fashion-mnist); PROCS: that many processes under mpirun (Debian's openmpi-bin),
# each THREADS threads (the ViT's default 2 x 1, Swin's 1; as root the script sets Open MPI's
# OMPI_ALLOW_RUN_AS_ROOT and its confirmation, which mpirun asks for).
# The recipe: AdamW (lr 1e-3, 1,000 warmup steps, cosine to 1e-5, weight decay 0.05), label
# smoothing 0.1, horizontal flips, RandAugment 2 ops at magnitude 6 (DeiT's 9 moves a 28-pixel
# image by up to 11 pixels), random erasing 0.25, stochastic depth and mixing as above, EMA
# 0.9995; no repeated augmentation. Earlier runs (docs/results/vision-runs.md): the first STEPS=18000
# STEM=patch MIX_PROB=0.5 VAL_FRACTION=0.1 CLEAN_STEPS=0 THREADS=1; the second STEPS=25000
# STEM_WIDTH=0 VAL_FRACTION=0.1 CLEAN_STEPS=0 THREADS=1 PROCS=1; the fifth STEPS=22000
# CLEAN_STEPS=2000 THREADS=2 PROCS=1.
set -eu
tf=$1 out=$2
data=${DATA:-/usr/share/datasets/fashion-mnist}
n_layer=${N_LAYER:-6} batch=${BATCH:-128} hours=${HOURS:-2.5} arch=${ARCH:-vit}
mix_prob=${MIX_PROB:-0.2} drop_path=${DROP_PATH:-0.1} seed=${SEED:-1337}
if [ "$arch" = swin ]; then
    model="--patch-size 2 --d-model ${D_MODEL:-48} --depths ${DEPTHS:-2,4} --heads ${HEADS:-3,6} --window ${WINDOW:-7}"
    again=swin-results steps=${STEPS:-25000} threads=${THREADS:-${TFORMER_THREADS:-1}} val=${VAL_FRACTION:-0.1} clean=${CLEAN_STEPS:-0}
else
    stem=${STEM:-conv}
    model="--stem $stem --patch-size 4 --d-model ${D_MODEL:-80} --n-layer $n_layer --n-head 4 --pooling ${POOLING:-cls} --lsa ${LSA:-false}"
    [ "$stem" = conv ] && model="$model --stem-width ${STEM_WIDTH:-32} --stem-depth ${STEM_DEPTH:-2}"
    again=vision-results steps=${STEPS:-32000} threads=${THREADS:-${TFORMER_THREADS:-1}} val=${VAL_FRACTION:-0.05} clean=${CLEAN_STEPS:-3200}
    procs=${PROCS:-2}
fi
if [ "$mix_prob" = 0 ]; then
    mix="--mixup 0 --cutmix 0"
else
    mix="--mixup 0.8 --cutmix 1.0 --mix-prob $mix_prob --switch-prob 0.5"
fi
aug="--randaug-ops 2 --randaug-magnitude 6 --randaug-mstd 0.5 $mix --erase-prob 0.25 --erase-mode pixel"
mkdir -p "$out"
# PROCS > 1: that many processes of THREADS threads each under mpirun (docs/distributed.md: the
# same bits as one process with --accum PROCS)
procs=${procs:-${PROCS:-1}} launch=""
if [ "$procs" -gt 1 ]; then
    launch="mpirun -np $procs --bind-to core -x TFORMER_THREADS=$threads"
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# one phase: its flags after the common ones; 124 when HOURS ran out (a checkpoint stays)
phase() {
    secs=$(awk "BEGIN { printf \"%d\", $hours * 3600 }")
    resume=--overwrite # a folder without a checkpoint starts afresh
    [ -f "$out/run/checkpoint.safetensors" ] && resume=--resume
    [ "$resume" = --resume ] && [ -f "$out/run/augmented" ] && resume="--resume --allow-changes"
    rc=0
    # shellcheck disable=SC2086 # $model and the flags are lists
    TFORMER_THREADS=$threads timeout -s TERM "$secs" $launch "$tf" train --arch "$arch" --data-dir "$data" --out "$out/run" $resume $model \
        --label-names "T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot" \
        --batch "$batch" --steps "$steps" --val-fraction "$val" \
        --lr 1e-3 --min-lr 1e-5 --warmup 1000 --weight-decay 0.05 --eval-every 1000 --checkpoint-every 500 \
        --log-every 100 --seed "$seed" --label-smoothing 0.1 --hflip 0.5 --drop-path "$drop_path" --ema-decay 0.9995 "$@" || rc=$?
    if [ "$rc" = 124 ]; then
        echo "stopped after $hours h with a checkpoint: run make $again again to continue"
        exit 0
    fi
    [ "$rc" = 0 ] || exit "$rc"
}
if [ ! -f "$out/run/done" ]; then
    last=$aug # the flags of the last (or only) phase
    if [ "$clean" -gt 0 ]; then
        # shellcheck disable=SC2086
        [ -f "$out/run/augmented" ] || { phase $aug --stop-at $((steps - clean)) && touch "$out/run/augmented"; }
        last="--randaug-ops 0 --mixup 0 --cutmix 0 --erase-prob 0"
    fi
    # shellcheck disable=SC2086
    phase $last
    touch "$out/run/done"
fi
for model in run run/best; do
    name=$(echo "$model" | tr / _)
    echo "$model (EMA weights) on t10k:"
    "$tf" eval --model "$out/$model" --data-dir "$data" | tee "$out/$name.t10k.txt"
    echo "$model with the mirror-image average (--hflip-tta):"
    "$tf" eval --model "$out/$model" --data-dir "$data" --hflip-tta | tee "$out/$name.t10k_tta.txt"
done
