#!/bin/sh
# docs/caption.md's results table (make captioning-results): the captioners of issue 58 on the
# Fashion-MNIST scenes -- the baseline without attention, the deck's CNN + GRU with attention and
# the Transformer captioner -- trained on the same scenes and steps, each timed; their last
# validation on held-out (t10k) scenes: BLEU-4 and CIDEr-D against the five references, object F1,
# attention precision against where the items are and its control with the cells shuffled, held-out
# word accuracy, captions matching a reference; parameters and wall time into OUT/results.md; each
# run's loss curve (RUN/loss.png), the attention figures of held-out scenes (one the model gets
# right, one it gets wrong, if any) into IMG, and captions of real photos (PHOTOS, any size:
# scaled to 96x96) into OUT/photos.tsv with their figures in OUT/photos_png/.
#   sh tools/captioning_results.sh TFORMER OUT_DIR
# Settings: ROWS (the runs to train: "base att att_ref0 transformer vit"; the table has every run OUT
# holds, so calls with one row each can train side by side), STEPS (8000), BATCH (32), ITEMS (4),
# VALID (200), TRAIN (20000), THREADS (1), IMG
# (OUT/img; docs/img to refresh the documentation's figures), FASHION_DIR (Debian's
# dataset-fashion-mnist), PHOTOS (PNG files; none by default). STEPS=20 VALID=20 is a smoke run.
set -eu
tf=$1 out=$2
steps=${STEPS:-8000} batch=${BATCH:-32} items=${ITEMS:-4} valid=${VALID:-200} train=${TRAIN:-20000}
threads=${THREADS:-1} rows=${ROWS:-base att att_ref0 transformer vit} img=${IMG:-$out/img} fashion=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
mkdir -p "$out" "$img"
every=$((steps < 500 ? steps : 500))
common="--grammar fashion --image-size 96 --vocab 31 --n-conv 5 --context 32 --scene-items $items \
--scene-train $train --scene-valid $valid --scene-export 16 --fashion-dir $fashion --steps $steps --batch $batch \
--warmup 50 --eval-every $every --eval-batches 7 --weight-decay 0 --log-every $every --threads $threads --overwrite"

# name | label | flags
runs="base|baseline: pooled vector, no attention (\`--attention false\`)|--lr 3e-3 --attention false
att|CNN + GRU with attention (\`--alpha-c 0\`)|--lr 3e-3 --alpha-c 0
att_ref0|CNN + GRU with attention, trained on the first reference only (\`--scene-refs 1\`)|--lr 3e-3 --alpha-c 0 --scene-refs 1
transformer|Transformer captioner (\`--decoder transformer --lr 1e-3\`, 2 blocks of 64, 4 heads)|--decoder transformer --lr 1e-3
vit|ViT captioner (\`--encoder vit --patch-size 16 --cnn-dim 64\`: a VisionEncoderDecoderModel, 6x6 patches)|--encoder vit --decoder transformer --patch-size 16 --cnn-dim 64 --lr 1e-3"

# The last line's field named $2 of losses.csv $1 (empty when absent).
field() {
    awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i } END { if (c) print $c }' "$1"
}

params() {
    "$tf" inspect "$1" | awk '{ s = $3; gsub(/[()]/, "", s); n = split(s, d, ","); p = 1; for (i = 1; i <= n; i++) p *= d[i]; t += p }
        END { printf "%.0f k", t / 1000 }'
}

# A number to 3 places, or "–" when absent.
num() { if [ -n "$1" ]; then printf '%.3f' "$1"; else printf '–'; fi; }

echo "$runs" | while IFS='|' read -r name label flags; do
    case " $rows " in *" $name "*) ;; *) continue ;; esac
    start=$(date +%s)
    # shellcheck disable=SC2086
    "$tf" train --arch caption --out "$out/$name" $common $flags > "$out/$name.log" 2>&1
    echo $(($(date +%s) - start)) > "$out/$name.secs"
    echo "$name: $(cat "$out/$name.secs") s (losses: $out/$name/losses.csv, curve: $out/$name/loss.png)"
done

table="$out/results.md"
{
    echo "| model | parameters | BLEU-4 | CIDEr-D | object F1 | attention precision | (shuffled cells) | word accuracy | a reference exactly ($valid) | time |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
} > "$table"
echo "$runs" | while IFS='|' read -r name label flags; do
    csv="$out/$name/losses.csv"
    [ -f "$csv" ] && [ -f "$out/$name.secs" ] || continue
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %.1f%% | %d s |\n' "$label" "$(params "$out/$name/model.safetensors")" \
        "$(num "$(field "$csv" val_bleu4)")" "$(num "$(field "$csv" val_cider_d)")" "$(num "$(field "$csv" val_object_f1)")" \
        "$(num "$(field "$csv" val_attention_precision)")" "$(num "$(field "$csv" val_attention_shuffled)")" \
        "$(num "$(field "$csv" val_word_accuracy)")" "$(awk "BEGIN { print 100 * $(field "$csv" val_exact) }")" \
        "$(cat "$out/$name.secs")" >> "$table"
done

# The held-out scenes' greedy captions and attention figures: the first scene the attention
# captioner captions as one of its references, and the first it does not (if any).
for name in att transformer; do
    [ -f "$out/$name/model.safetensors" ] || continue
    "$tf" caption --model "$out/$name" --attention-png "$out/${name}_png" "$out/$name/scenes/"[0-9][0-9].png \
        > "$out/${name}_captions.tsv"
done
# The first file of captions $2 whose caption is (want 1) or is not (want 0) one of references $1's.
first() {
    awk -F'\t' -v want="$3" 'NR == FNR { ok[$1 "\t" $2] = 1; next }
        { n = split($1, p, "/"); if (!ok[p[n] "\t" $2] != want) { print p[n]; exit } }' "$1" "$2"
}
if [ -f "$out/att_captions.tsv" ] && [ -f "$out/transformer_captions.tsv" ]; then
    right=$(first "$out/att/scenes/captions.tsv" "$out/att_captions.tsv" 1)
    wrong=$(first "$out/att/scenes/captions.tsv" "$out/att_captions.tsv" 0)
    cp "$out/att_png/${right:-00.png}" "$img/caption_fashion_attention.png"
    cp "$out/transformer_png/${right:-00.png}" "$img/caption_fashion_attention_transformer.png"
    [ -z "$wrong" ] || cp "$out/att_png/$wrong" "$img/caption_fashion_attention_wrong.png"
    echo "held-out scenes the attention captioner gets right: ${right:-none} (drawn: ${right:-00.png}); wrong: ${wrong:-none}"
fi
if [ -n "${PHOTOS:-}" ]; then
    # shellcheck disable=SC2086
    "$tf" caption --model "$out/att" --resize --attention-png "$out/photos_png" $PHOTOS > "$out/photos.tsv"
    cat "$out/photos.tsv"
fi
echo "held-out captions (greedy) against the scenes' references: $out/att/scenes/captions.tsv, $out/att_captions.tsv"
cat "$table"
