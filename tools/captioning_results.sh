#!/bin/sh
# docs/caption.md's results table (make captioning-results): the three captioners of issue 58 -- the
# deck's CNN + GRU with attention (with and without the doubly-stochastic regulariser), the
# baseline without attention and the Transformer captioner -- trained on the same scenes and steps,
# each timed; their last validation (held-out word accuracy, exact captions, BLEU-4, CIDEr-D,
# attention precision), parameters and wall time into OUT/results.md; each run's loss curve
# (RUN/loss.png), and the attention figures of held-out scenes into IMG.
#   sh tools/captioning_results.sh TFORMER OUT_DIR
# Settings: STEPS (1500), BATCH (32), ITEMS (3), VALID (200), THREADS (2), IMG (OUT/img; docs/img to
# refresh the documentation's figures). STEPS=20 VALID=20 is a smoke run of a few seconds.
set -eu
tf=$1 out=$2
steps=${STEPS:-1500} batch=${BATCH:-32} items=${ITEMS:-3} valid=${VALID:-200} threads=${THREADS:-2}
img=${IMG:-$out/img}
mkdir -p "$out" "$img"
every=$((steps < 500 ? steps : 500))
common="--scene-items $items --steps $steps --batch $batch --warmup 50 --eval-every $every --eval-batches 7 \
--scene-valid $valid --weight-decay 0 --log-every $every --threads $threads --overwrite"

# name | label | flags
runs="att|CNN + GRU with attention, regulariser \`--alpha-c 1\` (the paper's)|--lr 3e-3
att_noreg|CNN + GRU with attention, \`--alpha-c 0\`|--lr 3e-3 --alpha-c 0
base|baseline: pooled vector, no attention (\`--attention false\`)|--lr 3e-3 --attention false
transformer|Transformer captioner (\`--decoder transformer --lr 1e-3\`)|--decoder transformer --lr 1e-3"

# The last line's field named $2 of losses.csv $1 (empty when absent).
field() {
    awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i } END { if (c) print $c }' "$1"
}

params() {
    "$tf" inspect "$1" | awk '{ s = $3; gsub(/[()]/, "", s); n = split(s, d, ","); p = 1; for (i = 1; i <= n; i++) p *= d[i]; t += p }
        END { printf "%.0f k", t / 1000 }'
}

table="$out/results.md"
{
    echo "| model | parameters | held-out word accuracy | held-out captions exactly right ($valid) | BLEU-4 | CIDEr-D | attention precision | time |"
    echo "|---|---|---|---|---|---|---|---|"
} > "$table"
echo "$runs" | while IFS='|' read -r name label flags; do
    start=$(date +%s)
    # shellcheck disable=SC2086
    "$tf" train --arch caption --out "$out/$name" $common $flags > "$out/$name.log" 2>&1
    secs=$(($(date +%s) - start))
    csv="$out/$name/losses.csv"
    acc=$(field "$csv" val_word_accuracy) exact=$(field "$csv" val_exact) bleu=$(field "$csv" val_bleu4)
    cider=$(field "$csv" val_cider_d) prec=$(field "$csv" val_attention_precision)
    printf '| %s | %s | %.4f | %.1f%% | %.3f | %.3f | %s | %d s |\n' "$label" "$(params "$out/$name/model.safetensors")" \
        "$acc" "$(awk "BEGIN { print 100 * $exact }")" "$bleu" "$cider" \
        "$([ -n "$prec" ] && printf '%.3f' "$prec" || echo '–')" "$secs" >> "$table"
    echo "$name: $secs s (losses: $csv, curve: $out/$name/loss.png)"
done
"$tf" caption --model "$out/att" --attention-png "$out/att_png" "$out/att/scenes/"0[0-7].png > "$out/att_captions.tsv"
"$tf" caption --model "$out/transformer" --attention-png "$out/transformer_png" "$out/transformer/scenes/"0[0-7].png \
    > "$out/transformer_captions.tsv"
cp "$out/att_png/06.png" "$img/caption_attention.png"
cp "$out/transformer_png/06.png" "$img/caption_attention_transformer.png"
echo "held-out captions (greedy) against the scenes' own: $out/att/scenes/captions.tsv, $out/att_captions.tsv"
cat "$table"
