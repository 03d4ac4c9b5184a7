#!/bin/sh
# The main job: train a small character-level GPT on a corpus a fresh Debian
# machine can get (the fortunes package, or DATA=files), then print samples
# and the validation loss. About five minutes on two cores.
set -eu
tformer=${TFORMER:-build/tformer}
out=${OUT:-build/demo}
steps=${STEPS:-2000}
if [ -n "${DATA:-}" ]; then
    files=$DATA
else
    if [ ! -d /usr/share/games/fortunes ]; then
        echo "demo: installing the fortunes package for its text"
        sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
        $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq fortunes
    fi
    files=$(find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' | sort)
fi
rm -rf "$out"
echo "demo: training a 4-layer, 128-wide GPT on $(cat $files | wc -c) bytes for $steps steps"
$tformer train --data $files --tokenizer char --out "$out" --steps "$steps" --n-layer 4 --n-head 4 --d-model 128 \
    --context 64 --batch 12 --lr 1e-3 --warmup 100 --eval-every 500 --eval-batches 100 --log-every 100
echo
echo "demo: samples (temperature 0.8, top-k 40)"
for prompt in "Q: " "The " "A "; do
    echo "----"
    $tformer generate --model "$out" --prompt "$prompt" --max-tokens 200 --temperature 0.8 --top-k 40 --seed 7
done
echo "----"
val=$(awk -F, 'NR > 1 && $3 != "" { v = $3 } END { print v }' "$out/losses.csv")  # the last evaluation's
echo "demo: validation loss $val (model, tokenizer, losses.csv and loss.png in $out)"
