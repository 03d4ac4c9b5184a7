#!/bin/sh
# ListOps results of docs/long-sequences.md (make listops-results): a BERT
# encoder trained from scratch on LRA-sized ListOps (expressions of 501 to
# 1999 tokens, context 2048; batches bucketed by length, BUCKET (64) a
# multiple: about half the padding of context-long batches) with full,
# BigBird and Nystrom attention (D_MODEL, default 64; 4 layers), each
# within BUDGET_S seconds (default 3 hours), then each best model scored on
# 2,000 test expressions (tformer eval --listops: drawn apart from training
# and validation) and the table of test and validation accuracy and time per
# step (tools/listops_table.py).
#   sh tools/listops_results.sh TFORMER OUT_DIR
# Each kind first runs CALIB_STEPS (20) steps, then twice as many, to measure the
# marginal time of a step, then trains for as many steps as fit 85% of the
# budget (the rest: evaluations).
# KINDS (default "full bigbird nystrom"), BATCH (32), threads: TFORMER_THREADS;
# JOBS (1): kinds trained at a time (with more, each on TFORMER_THREADS=1 unless
# set: on this 2-core machine JOBS=2 trains two kinds side by side);
# LISTOPS_ARGS: more flags after these (later flags win: a quick dry run with
# a short context, say).
# Hours of work: run it on a quiet machine, never on a shared one.
set -eu
tf=$1 out=$2
budget=${BUDGET_S:-10800} calib=${CALIB_STEPS:-20} batch=${BATCH:-32} d=${D_MODEL:-64}
mkdir -p "$out"
common="--arch listops --context 2048 --n-layer 4 --d-model $d --n-head 4 --d-ff $((4 * d)) --batch $batch --lr 1e-3
    --min-lr 1e-5 --dropout 0.1 --attn-dropout 0 --listops-seed 1 --listops-bucket ${BUCKET:-64} --log-every 20
    ${LISTOPS_ARGS:-}"
now() { date +%s.%N; }
# A calibration run of $1 steps of $kind (flags $att), its log kept.
calib_run() {
    rm -rf "$out/calib_$kind"
    # shellcheck disable=SC2086 # $common and $att are lists of flags
    $tf train $common $att --out "$out/calib_$kind" --steps "$1" --warmup 1 --eval-every 100000 \
        --eval-batches 1 > "$out/calib_$kind.log" 2>&1 || { tail -3 "$out/calib_$kind.log"; return 1; }
}
# One kind: calibrate, train for the budget, score best/ on the test set.
one() {
    kind=$1
    case $kind in
    full) att="--attention full" ;;
    bigbird) att="--attention bigbird --window 64 --block-size 64 --global-tokens 1 --random-blocks 3" ;;
    nystrom) att="--attention nystrom --landmarks 64" ;;
    *) echo "unknown kind $kind" >&2; return 2 ;;
    esac
    run=$out/$kind
    if [ ! -f "$run/timing.txt" ]; then
        # The marginal time of a step: runs of CALIB_STEPS and twice as many,
        # the difference divided by CALIB_STEPS. The first steps of a run cost
        # far more (building the data, faulting in gigabytes of fresh arena
        # pages: ~20 s of system time at context 2048), so one short run's
        # average would plan half the steps the budget holds.
        t0=$(now)
        calib_run "$calib"
        t1=$(now)
        calib_run $(( 2 * calib ))
        t2=$(now)
        per_step=$(awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$calib" 'BEGIN {
            m = ((c - b) - (b - a)) / n; if (m <= 0) m = (c - b) / (2 * n); printf "%.3f", m }')
        steps=$(awk -v b="$budget" -v m="$per_step" 'BEGIN { printf "%d", b * 0.85 / m }')
        every=$(( steps / 5 > 0 ? steps / 5 : 1 ))
        echo "$kind: about ${per_step} s a step: $steps steps" | tee "$out/plan_$kind.txt"
        t0=$(date +%s)
        # shellcheck disable=SC2086
        $tf train $common $att --out "$run" --steps "$steps" --warmup $(( steps / 20 + 1 )) --eval-every "$every" \
            --eval-batches $(( 2000 / batch )) --checkpoint-every "$every" > "$run.log" 2>&1 || { tail -3 "$run.log"; return 1; }
        echo "steps=$steps seconds=$(( $(date +%s) - t0 )) batch=$batch" > "$run/timing.txt"
    fi
    if [ ! -f "$run/test.txt" ]; then # written whole or not at all: a failed scoring is tried again next call
        "$tf" eval --model "$run/best" --listops "${TEST_N:-2000}" > "$run/test.txt.tmp" || return 1
        mv "$run/test.txt.tmp" "$run/test.txt"
    fi
    echo "$kind: $(head -1 "$run/test.txt")"
}
jobs=${JOBS:-1}
if [ "$jobs" -gt 1 ] && [ -z "${TFORMER_THREADS:-}" ]; then
    export TFORMER_THREADS=1
fi
pids="" running=0 failed=0
for kind in ${KINDS:-full bigbird nystrom}; do
    one "$kind" &
    pids="$pids $!" running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        for p in $pids; do wait "$p" || failed=1; done
        pids="" running=0
    fi
done
for p in $pids; do wait "$p" || failed=1; done
[ "$failed" = 0 ] || exit 1
python3 tools/listops_table.py "$out" | tee "$out/results.md"
