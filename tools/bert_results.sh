#!/bin/sh
# The BERT results of docs/bert.md (make bert-results): the data sets, the
# baselines, a BERT pre-trained from scratch on the training text, then each
# task fine-tuned from it and from all-MiniLM-L6-v2, and the table.
#   sh tools/bert_results.sh TFORMER MINILM_DIR OUT_DIR PYTHON_WITH_SKLEARN
# Steps: PRE_STEPS (2000), FT_STEPS (300); threads: TFORMER_THREADS.
set -eu
tf=$1 minilm=$2 out=$3 py=$4
pre_steps=${PRE_STEPS:-2000} ft_steps=${FT_STEPS:-300}
mkdir -p "$out"
python3 tools/bert_data.py "$out/data"
"$py" tools/bert_baselines.py "$out/data" "$out/baselines.json" > /dev/null
[ -f "$out/tok/vocab.txt" ] || "$tf" tokenizer-train --type wordpiece --vocab-size 8000 --out "$out/tok" "$out/data/pretrain.txt"
if [ ! -f "$out/pretrain/model.safetensors" ]; then
    "$tf" train --arch bert --data "$out/data/pretrain.txt" --tokenizer "$out/tok" --out "$out/pretrain" --overwrite \
        --steps "$pre_steps" --context 64 --d-model 256 --n-layer 4 --n-head 4 --batch 32 --lr 3e-4 --min-lr 3e-5 \
        --warmup 200 --eval-every 250 --eval-batches 20 --log-every 50 --checkpoint-every 250
fi
# task name, --task, file type, max_len, batch; lr 1e-4 for MiniLM, 5e-4 for the small model pre-trained here
for init in scratch minilm; do
    model=$out/pretrain lr=5e-4
    [ "$init" = minilm ] && model=$minilm lr=1e-4
    for spec in "fortunes classify tsv 128 16" "punct tag conll 48 32" "nsp pairs tsv 64 32"; do
        set -- $spec
        run=$out/ft_${init}_$1 len=$4
        [ "$init" = scratch ] && [ "$len" -gt 64 ] && len=64 # its context
        [ -f "$run/metrics.json" ] && continue
        "$tf" finetune --model "$model" --task "$2" --train "$out/data/$1_train.$3" --valid "$out/data/$1_valid.$3" \
            --out "$run" --overwrite --steps "$ft_steps" --batch "$5" --max-len "$len" --lr "$lr" --warmup 40 --eval-every "$ft_steps" \
            --log-every 50
    done
done
python3 tools/bert_table.py "$out" | tee "$out/results.md"
