#!/bin/sh
# docs/video.md's results table (make video-results): each ViViT model (1
# joint, 2 factorised encoder, 3 factorised self-attention, 4 factorised
# dot-product attention) x embedding (tubelet, frame) trained on the same
# budget of moving-object clips, then the frame-shuffled control of each
# model with tubelets and of the best configuration.
#   sh tools/video_results.sh TFORMER OUT_DIR [--timing-only]
# Writes OUT_DIR/results.csv and OUT_DIR/results.md (the table, also printed).
# Test accuracy: VAL_CLIPS clips made of the held-out last 10% of the train
# images (no image of them is trained on), scored once, after the last step
# (no model selection). Train time: the wall time of `tformer train` (clip
# generation and the final scoring included), CPU time its user + system
# time; clips/s: STEPS x BATCH over the wall time.
# --timing-only: TIMING_STEPS (200) steps per configuration, 32 scoring clips, no
# control, to re-measure the time columns quickly (accuracy then meaningless).
# Settings: STEPS (2000), THREADS (1), DATA (/usr/share/datasets/fashion-mnist);
# RUNS: only these cells, each MODEL,EMBEDDING,SHUFFLED (e.g. "4,tubelet,false").
set -eu
tf=$1 out=$2 timing=${3:-}
data=${DATA:-/usr/share/datasets/fashion-mnist}
steps=${STEPS:-2000} threads=${THREADS:-1} val=${VAL_CLIPS:-1024} batch=32
py=python3
[ -x build/hfvenv/bin/python ] && py=build/hfvenv/bin/python
if [ "$timing" = --timing-only ]; then
    steps=${TIMING_STEPS:-200} val=32
elif [ -n "$timing" ]; then
    echo "usage: sh tools/video_results.sh TFORMER OUT_DIR [--timing-only]" >&2
    exit 2
fi
# The budget: 32x32 canvas, 14-pixel objects at 1 pixel per frame, 8 frames,
# 8x8 patches, tubelets 2 frames long, d_model 32, 4 heads, 2 layers (Model
# 2: 2 spatial + 2 temporal), direction labels (4 classes: chance 25%, the
# shuffled control at most 50%).
clip="--image-size 32 --object-size 14 --speed 1 --num-frames 8 --labels direction --n-labels 4"
model="--tubelet-t 2 --tubelet-h 8 --tubelet-w 8 --d-model 32 --n-head 4 --n-layer 2 --n-layer-temporal 2"
flops="--image 32 --frames 8 --patch 8 --tubelet-t 2 --d-model 32 --layers 2 --layers-temporal 2 --labels 4"
mkdir -p "$out"
csv=$out/results.csv
echo "model,embedding,shuffled,parameters,flops,accuracy,train_s,cpu_s,clips_per_s" >"$csv"

# run KIND EMBEDDING SHUFFLE: one training, one row of results.csv
run() {
    name=m$1_$2$([ "$3" = true ] && echo _shuffled || true)
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e %U %S" -o "$out/$name.time" nice -n 10 "$tf" train --arch vivit --data-dir "$data" --out "$out/$name" --overwrite $clip $model \
        --model-kind "$1" --embedding "$2" --shuffle-frames "$3" --steps "$steps" --batch $batch --warmup 100 \
        --lr 1e-3 --eval-every "$steps" --checkpoint-every "$steps" --log-every 500 --val-clips "$val" \
        --seed 1337 --threads "$threads" >"$out/$name.log" 2>&1 || { cat "$out/$name.log" >&2; exit 1; }
    acc=$(tail -n 1 "$out/$name/losses.csv" | cut -d, -f6)
    pf=$($py bench/video_flops.py $flops --kinds "$1" --embeddings "$2" --csv | cut -d, -f4,5)
    awk -v k="$1" -v e="$2" -v s="$3" -v pf="$pf" -v a="$acc" -v n="$((steps * batch))" \
        '{ printf "%s,%s,%s,%s,%s,%.1f,%.1f,%.1f\n", k, e, s, pf, a, $1, $2 + $3, n / $1 }' "$out/$name.time" >>"$csv"
    tail -n 1 "$csv"
}

# Every model x embedding in order, or RUNS' cells only (make results-check)
cells=${RUNS:-"1,tubelet,false 1,frame,false 2,tubelet,false 2,frame,false 3,tubelet,false 3,frame,false
    4,tubelet,false 4,frame,false"}
for cell in $cells; do
    IFS=, read -r kind emb shuf <<EOF_CELL
$cell
EOF_CELL
    run "$kind" "$emb" "$shuf"
done
if [ "$timing" != --timing-only ] && [ -z "${RUNS:-}" ]; then
    for kind in 1 2 3 4; do run $kind tubelet true; done
    best=$(awk -F, 'NR > 1 && $3 == "false" && $6 > a { a = $6; b = $1 "," $2 } END { print b }' "$csv")
    case $best in *,frame) run "${best%,*}" frame true ;; esac
fi

{
    echo "| model | embedding | frames | parameters | MFLOPs per clip | test accuracy | train time (s) | CPU time (s) | clips/s |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
    awk -F, -v t="$timing" '
        function commas(n) { return n < 1000 ? n : commas(int(n / 1000)) sprintf(",%03d", n % 1000) }
        NR > 1 {
            acc = t == "--timing-only" ? "-" : sprintf("%.3f", $6)
            printf "| %s | %s | %s | %s | %.1f | %s | %s | %s | %s |\n", $1, $2, $3 == "true" ? "shuffled" : "in order",
                   commas($4), $5 / 1e6, acc, $7, $8, $9 }' "$csv"
} | tee "$out/results.md"
