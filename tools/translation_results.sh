#!/bin/sh
# docs/translation.md's results (make translation-results): Multi30k en->de,
# a joint BPE vocabulary, the Transformer trained on these cores (validation
# BLEU each evaluation, the best model and the mean of the last 5 checkpoints
# kept), then the test set (test_2016_flickr) translated by the last, the best
# and the averaged model, greedy and with beam 5, scored cased and
# detokenised (sacreBLEU's default) and lower-cased (like for like with
# tokenised-BLEU figures), with the decoding speed.
#   sh tools/translation_results.sh TFORMER OUT_DIR
# STEPS (5000), DROPOUT (0.3), ATTN_DROPOUT (0.1), ACTIVATION_DROPOUT (0.1),
# THREADS (TFORMER_THREADS); a finished run in OUT_DIR is kept, an interrupted
# one continues (--resume).
set -eu
tf=$1 out=$2
steps=${STEPS:-5000}
dropout=${DROPOUT:-0.3} attn_dropout=${ATTN_DROPOUT:-0.1} activation_dropout=${ACTIVATION_DROPOUT:-0.1}
d=$out/data
mkdir -p "$d"
for s in train val test_2016_flickr; do
    for l in en de; do [ -f "$d/$s.$l" ] || zcat "../shared/data/multi30k/$s.$l.gz" > "$d/$s.$l"; done
done
[ -f "$out/tok/vocab.json" ] || "$tf" tokenizer-train --type bpe --vocab-size 8000 --out "$out/tok" "$d/train.en" "$d/train.de"
resume=""
[ -f "$out/run/checkpoint.safetensors" ] && resume=--resume
if [ ! -f "$out/run/done" ]; then
    "$tf" train --arch seq2seq --src "$d/train.en" --tgt "$d/train.de" --valid-src "$d/val.en" --valid-tgt "$d/val.de" \
        --tokenizer "$out/tok" --out "$out/run" $resume --steps "$steps" --log-every 50 --eval-every 500 \
        --checkpoint-every 500 --d-model 128 --n-head 4 --d-ff 512 --n-encoder-layers 4 --n-decoder-layers 4 \
        --share-embeddings true --max-tokens 4096 --schedule inverse_sqrt --lr 2e-3 --warmup 500 --dropout "$dropout" \
        --attn-dropout "$attn_dropout" --activation-dropout "$activation_dropout" --label-smoothing 0.1 --val-bleu 1014 --keep-checkpoints 5 --average-last 5
    touch "$out/run/done"
fi
for model in run run/best run/averaged; do
    for beam in 1 5; do
        hyp=$out/test.$(echo "$model" | tr / _).beam$beam.de
        t0=$(date +%s.%N)
        [ -f "$hyp" ] || "$tf" translate --model "$out/$model" --beam "$beam" < "$d/test_2016_flickr.en" > "$hyp"
        t1=$(date +%s.%N)
        echo "$model beam $beam ($(awk "BEGIN { printf \"%.1f\", 1000 / ($t1 - $t0) }") sentences/s, cached runs excepted)"
        echo "  cased:       $("$tf" bleu --ref "$d/test_2016_flickr.de" --metrics bleu chrf < "$hyp" | tr '\n' ' ')"
        echo "  lower-cased: $("$tf" bleu --ref "$d/test_2016_flickr.de" --lowercase < "$hyp")"
    done
done
