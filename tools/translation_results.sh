#!/bin/sh
# docs/translation.md's results (make translation-results): Multi30k en->de,
# a joint sub-word vocabulary, a model trained on these cores (validation BLEU each
# evaluation, the best model and the mean of the last 5 checkpoints kept).
# Then every choice is made on the validation set: which of the last, the
# best and the averaged model, and the length penalty of beam 5 (LENGTH_PENALTIES),
# by sacreBLEU on val; the test set (test_2016_flickr) is translated once, by
# the choice, and scored cased and detokenised (sacreBLEU's default) and
# lower-cased (like for like with tokenised-BLEU figures), with the decoding
# speed and the wall times.
#   sh tools/translation_results.sh TFORMER OUT_DIR
# MODEL: transformer (default; run folder OUT_DIR/run) or rnn (the GRU +
# Bahdanau baseline; OUT_DIR/rnn). Transformer: STEPS (10000), D_MODEL (128),
# D_FF (512), N_HEAD (4), SCHEDULE (cosine; or inverse_sqrt), LR (2e-3),
# MIN_LR (1e-5, cosine's end), DROPOUT (0.3),
# ATTN_DROPOUT (0.1), ACTIVATION_DROPOUT (0.1); RNN: RNN_STEPS (2400),
# RNN_DROPOUT (0.3). TOKENIZER_TYPE: the joint vocabulary's --type, 8,000
# tokens, in OUT_DIR/tok-TYPE: byte-bpe (GPT-2's: words split from their
# punctuation; the Transformer's default) or bpe (the lecture decks' sub-words
# of whitespace-split words; the RNN's default). A finished run in OUT_DIR is
# kept, an interrupted one continues (--resume).
set -eu
tf=$1 out=$2
model=${MODEL:-transformer}
d=$out/data
mkdir -p "$d"
for s in train val test_2016_flickr; do
    for l in en de; do [ -f "$d/$s.$l" ] || zcat "../shared/data/multi30k/$s.$l.gz" > "$d/$s.$l"; done
done
if [ "$model" = rnn ]; then
    run=rnn tok_type=${TOKENIZER_TYPE:-bpe}
    settings="--arch rnn --steps ${RNN_STEPS:-2400} --emb-dim 256 --hidden 512 --attn-size 512 --maxout 256
        --dropout ${RNN_DROPOUT:-0.3} --schedule cosine --lr 1e-3 --warmup 200"
else
    run=run tok_type=${TOKENIZER_TYPE:-byte-bpe}
    settings="--arch seq2seq --steps ${STEPS:-10000} --d-model ${D_MODEL:-128} --n-head ${N_HEAD:-4} --d-ff ${D_FF:-512} --n-encoder-layers 4
        --n-decoder-layers 4 --share-embeddings true --schedule ${SCHEDULE:-cosine} --lr ${LR:-2e-3} --warmup 500
        --dropout ${DROPOUT:-0.3} --attn-dropout ${ATTN_DROPOUT:-0.1} --activation-dropout ${ACTIVATION_DROPOUT:-0.1}"
    [ "${SCHEDULE:-cosine}" = cosine ] && settings="$settings --min-lr ${MIN_LR:-1e-5}"
fi
tok=$out/tok-$tok_type
[ -f "$tok/vocab.json" ] || "$tf" tokenizer-train --type "$tok_type" --vocab-size 8000 --out "$tok" "$d/train.en" "$d/train.de"
common="--src $d/train.en --tgt $d/train.de --valid-src $d/val.en --valid-tgt $d/val.de --tokenizer $tok
    --log-every 50 --eval-every 500 --checkpoint-every 500 --batch-tokens 4096 --label-smoothing 0.1 --val-bleu 1014
    --keep-checkpoints 5 --average-last 5"
resume=--overwrite # a folder without a checkpoint starts afresh
[ -f "$out/$run/checkpoint.safetensors" ] && resume=--resume
t_start=$(date +%s)
if [ ! -f "$out/$run/done" ]; then
    # shellcheck disable=SC2086 # the settings are words
    "$tf" train $settings $common --out "$out/$run" $resume
    touch "$out/$run/done"
    echo "training: $(( ($(date +%s) - t_start + 30) / 60 )) min wall time (this invocation)"
fi
# The choices, on val: the model kept (last, best, averaged) and the length penalty of beam 5.
best_bleu=-1 best_m= best_lp=
echo "validation (val.en, beam 5), sacreBLEU by length penalty:"
for m in $run $run/best $run/averaged; do
    [ -f "$out/$m/config.json" ] || continue
    line="  $m:"
    for lp in ${LENGTH_PENALTIES:-0.6 1.0 1.4 2.0}; do
        hyp=$out/val.$(echo "$m" | tr / _).lp$lp.de
        [ -f "$hyp" ] || "$tf" translate --model "$out/$m" --beam 5 --length-penalty "$lp" < "$d/val.en" > "$hyp"
        b=$("$tf" bleu --ref "$d/val.de" < "$hyp" | sed -n 's/^BLEU = \([0-9.]*\).*/\1/p')
        line="$line lp $lp $b"
        if awk "BEGIN { exit !($b > $best_bleu) }"; then best_bleu=$b best_m=$m best_lp=$lp; fi
    done
    echo "$line"
done
echo "chosen on validation: $best_m, beam 5, length penalty $best_lp (val BLEU $best_bleu)"
# The test set, once, by that choice.
hyp=$out/test.$(echo "$best_m" | tr / _).beam5.lp$best_lp.de
t0=$(date +%s.%N)
[ -f "$hyp" ] || "$tf" translate --model "$out/$best_m" --beam 5 --length-penalty "$best_lp" \
    < "$d/test_2016_flickr.en" > "$hyp"
t1=$(date +%s.%N)
echo "test_2016_flickr, $best_m beam 5 length penalty $best_lp ($(awk "BEGIN { printf \"%.1f\", 1000 / ($t1 - $t0) }") sentences/s, cached runs excepted)"
echo "  cased:       $("$tf" bleu --ref "$d/test_2016_flickr.de" --metrics bleu chrf < "$hyp" | tr '\n' ' ')"
echo "  lower-cased: $("$tf" bleu --ref "$d/test_2016_flickr.de" --lowercase < "$hyp")"
echo "wall time of this invocation: $(( ($(date +%s) - t_start + 30) / 60 )) min"
