#!/bin/sh
# docs/translation.md's results (make translation-results): Multi30k en->de,
# a joint BPE vocabulary, a model trained on these cores (validation BLEU each
# evaluation, the best model and the mean of the last 5 checkpoints kept),
# then the test set (test_2016_flickr) translated by the last, the best and
# the averaged model, greedy and with beam 5, scored cased and detokenised
# (sacreBLEU's default) and lower-cased (like for like with tokenised-BLEU
# figures), with the decoding speed.
#   sh tools/translation_results.sh TFORMER OUT_DIR
# MODEL: transformer (default; run folder OUT_DIR/run) or rnn (the GRU +
# Bahdanau baseline; OUT_DIR/rnn). Transformer: STEPS (5000), DROPOUT (0.3),
# ATTN_DROPOUT (0.1), ACTIVATION_DROPOUT (0.1); RNN: RNN_STEPS (2400),
# RNN_DROPOUT (0.3). THREADS (TFORMER_THREADS). A finished run in OUT_DIR is
# kept, an interrupted one continues (--resume).
set -eu
tf=$1 out=$2
model=${MODEL:-transformer}
d=$out/data
mkdir -p "$d"
for s in train val test_2016_flickr; do
    for l in en de; do [ -f "$d/$s.$l" ] || zcat "../shared/data/multi30k/$s.$l.gz" > "$d/$s.$l"; done
done
[ -f "$out/tok/vocab.json" ] || "$tf" tokenizer-train --type bpe --vocab-size 8000 --out "$out/tok" "$d/train.en" "$d/train.de"
common="--src $d/train.en --tgt $d/train.de --valid-src $d/val.en --valid-tgt $d/val.de --tokenizer $out/tok
    --log-every 50 --eval-every 500 --checkpoint-every 500 --batch-tokens 4096 --label-smoothing 0.1 --val-bleu 1014
    --keep-checkpoints 5 --average-last 5"
if [ "$model" = rnn ]; then
    run=rnn
    settings="--arch rnn --steps ${RNN_STEPS:-2400} --emb-dim 256 --hidden 512 --attn-size 512 --maxout 256
        --dropout ${RNN_DROPOUT:-0.3} --schedule cosine --lr 1e-3 --warmup 200"
else
    run=run
    settings="--arch seq2seq --steps ${STEPS:-5000} --d-model 128 --n-head 4 --d-ff 512 --n-encoder-layers 4
        --n-decoder-layers 4 --share-embeddings true --schedule inverse_sqrt --lr 2e-3 --warmup 500
        --dropout ${DROPOUT:-0.3} --attn-dropout ${ATTN_DROPOUT:-0.1} --activation-dropout ${ACTIVATION_DROPOUT:-0.1}"
fi
resume=--overwrite # a folder without a checkpoint starts afresh
[ -f "$out/$run/checkpoint.safetensors" ] && resume=--resume
if [ ! -f "$out/$run/done" ]; then
    # shellcheck disable=SC2086 # the settings are words
    "$tf" train $settings $common --out "$out/$run" $resume
    touch "$out/$run/done"
fi
for m in $run $run/best $run/averaged; do
    for beam in 1 5; do
        hyp=$out/test.$(echo "$m" | tr / _).beam$beam.de
        t0=$(date +%s.%N)
        [ -f "$hyp" ] || "$tf" translate --model "$out/$m" --beam "$beam" < "$d/test_2016_flickr.en" > "$hyp"
        t1=$(date +%s.%N)
        echo "$m beam $beam ($(awk "BEGIN { printf \"%.1f\", 1000 / ($t1 - $t0) }") sentences/s, cached runs excepted)"
        echo "  cased:       $("$tf" bleu --ref "$d/test_2016_flickr.de" --metrics bleu chrf < "$hyp" | tr '\n' ' ')"
        echo "  lower-cased: $("$tf" bleu --ref "$d/test_2016_flickr.de" --lowercase < "$hyp")"
    done
done
