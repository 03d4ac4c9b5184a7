#!/bin/sh
# ListOps results of docs/long-sequences.md (make listops-results): a BERT
# encoder trained from scratch on LRA-sized ListOps (expressions of 501 to
# 1999 tokens, context 2048; batches bucketed by length, BUCKET (64) a
# multiple: about half the padding of context-long batches) with full,
# BigBird and Nystrom attention, then each best model scored on 2,000 test
# expressions (tformer eval --listops: drawn apart from training and
# validation) and the table of test and validation accuracy and time per
# step (tools/listops_table.py), and the validation curves
# (tools/listops_plot.py: listops_curves.png).
#   sh tools/listops_results.sh TFORMER OUT_DIR
# The model defaults to the Nystromformer paper's LRA re-run's ListOps
# config (2 layers, d_model 64, 2 heads, d_ff 128, batch 32, no weight
# decay, pre-LN blocks with a final LayerNorm, the classifier on the
# tokens' mean; NORM_FIRST=false POOLING=cls give BERT's post-LN and
# [CLS], POOLING=last the last token (make listops-best, 37.85-38.50%);
# Nystrom: 64 landmarks and the convolution of 35 taps over the values,
# CONV_KERNEL, 0: none); its schedule (lr 1e-4, 1,000 warmup
# steps, 5,000 steps) sat at the most frequent answer for 1,250-1,750
# steps here, so: lr 1e-3 (LRA's own peak is about 1.6e-3), warmup a fifth of the run (+1), 3,000 steps,
# cosine to lr/10: N_LAYER, D_MODEL, N_HEAD, D_FF, BATCH, LR, WARMUP, STEPS.
# BUDGET_S (default 3 hours) caps each kind: it first runs CALIB_STEPS (20)
# steps, then twice as many, to measure the marginal time of a step, and
# trains min(STEPS, the steps that fit 85% of the budget) (the rest:
# evaluations). CALIB_STEPS=0 skips the calibration (STEPS steps).
# KINDS (default "full bigbird nystrom"; local: a window of WINDOW (32) keys each side and one
# global token), threads: TFORMER_THREADS; JOBS (1):
# lanes of kinds trained side by side, each lane taking the next kind when it
# is free (with more than one, each on TFORMER_THREADS=1 unless set: on this
# 2-core machine JOBS=2 trains full in one lane, bigbird then nystrom in the
# other); LISTOPS_ARGS: more flags after these (later flags win: a quick dry
# run with a short context, say). PRETRAIN_STEPS (0): self-pretraining
# first, that many steps of masked-token prediction on the training
# expressions (--listops-objective mlm, the same model and schedule, warmup a
# tenth), whose last model starts the classifier (--listops-init); with the
# calibration both phases share the budget (the classifier gets what is left).
# SHORT_STEPS (0): a curriculum, the first that many of the STEPS steps on
# shorter expressions (SHORT_MIN_LEN 100 < length < SHORT_MAX_LEN 500, the
# same generator, depth and arguments; validated on 512 of them), the rest on
# LRA's lengths, resumed (--resume --allow-changes: one schedule; best/ from
# the LRA-length evaluations only, --best-after).
# Hours of work: run it on a quiet machine, never on a shared one.
set -eu
tf=$1 out=$2
budget=${BUDGET_S:-10800} calib=${CALIB_STEPS:-20} batch=${BATCH:-32} max_steps=${STEPS:-3000} lr=${LR:-1e-3}
mkdir -p "$out"
common="--arch listops --context 2048 --n-layer ${N_LAYER:-2} --d-model ${D_MODEL:-64} --n-head ${N_HEAD:-2}
    --d-ff ${D_FF:-128} --norm-first ${NORM_FIRST:-true} --pooling ${POOLING:-mean} --batch $batch --lr $lr --min-lr $(awk -v l="$lr" 'BEGIN { print l / 10 }') --weight-decay 0
    --dropout 0.1 --attn-dropout 0 --listops-seed 1 --listops-bucket ${BUCKET:-64} --log-every 20 ${LISTOPS_ARGS:-}"
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
    nystrom) att="--attention nystrom --landmarks 64 --conv-kernel ${CONV_KERNEL:-35}" ;;
    local) att="--attention local --window ${WINDOW:-32} --global-tokens 1" ;;
    *) echo "unknown kind $kind" >&2; return 2 ;;
    esac
    run=$out/$kind
    if [ ! -f "$run/timing.txt" ]; then
        steps=$max_steps
        if [ "$calib" -gt 0 ]; then
            # The marginal time of a step: runs of CALIB_STEPS and twice as
            # many, the difference divided by CALIB_STEPS. The first steps of
            # a run cost far more (building the data, faulting in fresh arena
            # pages), so one short run's average would plan too few steps.
            t0=$(now)
            calib_run "$calib"
            t1=$(now)
            calib_run $(( 2 * calib ))
            t2=$(now)
            per_step=$(awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$calib" 'BEGIN {
                m = ((c - b) - (b - a)) / n; if (m <= 0) m = (c - b) / (2 * n); printf "%.3f", m }')
            fit=$(awk -v b="$budget" -v m="$per_step" 'BEGIN { printf "%d", b * 0.85 / m }')
            [ "$fit" -lt "$steps" ] && steps=$fit
            echo "$kind: about ${per_step} s a step: $steps steps" | tee "$out/plan_$kind.txt"
        fi
        pre=${PRETRAIN_STEPS:-0} init="" t0=$(date +%s)
        if [ "$pre" -gt 0 ]; then
            [ "$calib" -gt 0 ] && steps=$(( steps < fit - pre ? steps : fit - pre ))
            [ "$steps" -ge 1 ] || { echo "$kind: PRETRAIN_STEPS=$pre leave no steps of the budget for the classifier" >&2; return 1; }
            every=$(( pre / 20 > 0 ? pre / 20 : 1 ))
            if [ ! -f "$run.mlm/done" ]; then
                # shellcheck disable=SC2086
                $tf train $common $att --listops-objective mlm --out "$run.mlm" --overwrite --steps "$pre" --warmup $(( pre / 10 + 1 )) \
                    --eval-every "$every" --eval-batches $(( 2000 / batch )) --checkpoint-every "$every" > "$run.mlm.log" 2>&1 ||
                    { tail -3 "$run.mlm.log"; return 1; }
                touch "$run.mlm/done"
            fi
            init="--listops-init $run.mlm"
        fi
        w=${WARMUP:-$(( steps / 5 + 1 ))} # a fifth of the steps run, budget-cut or not
        every=$(( steps / 20 > 0 ? steps / 20 : 1 ))
        short=${SHORT_STEPS:-0}
        if [ "$short" -gt 0 ] && [ ! -f "$run/short_done" ]; then
            [ "$short" -lt "$steps" ] && [ -z "$init" ] ||
                { echo "$kind: SHORT_STEPS=$short must be under the $steps steps, without PRETRAIN_STEPS" >&2; return 1; }
            # shellcheck disable=SC2086
            $tf train $common $att --out "$run" --overwrite --steps "$steps" --stop-at "$short" --warmup "$w" --eval-every "$every" \
                --listops-min-len "${SHORT_MIN_LEN:-100}" --listops-max-len "${SHORT_MAX_LEN:-500}" --listops-valid 512 \
                --eval-batches $(( 512 / batch )) --checkpoint-every "$every" > "$run.short.log" 2>&1 ||
                { tail -3 "$run.short.log"; return 1; }
            touch "$run/short_done"
        fi
        resume=--overwrite
        [ "$short" -gt 0 ] && resume="--resume --allow-changes --best-after $short"
        # shellcheck disable=SC2086
        $tf train $common $att $init $resume --out "$run" --steps "$steps" --warmup "$w" --eval-every "$every" \
            --eval-batches $(( 2000 / batch )) --checkpoint-every "$every" > "$run.log" 2>&1 || { tail -3 "$run.log"; return 1; }
        echo "steps=$steps seconds=$(( $(date +%s) - t0 )) batch=$batch pretrain_steps=$pre" > "$run/timing.txt"
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
# JOBS lanes side by side; each takes the next kind no lane has claimed (the
# claim: mkdir, atomic), so a lane that finishes early starts the next kind.
lane() {
    rc=0
    for kind in ${KINDS:-full bigbird nystrom}; do
        if mkdir "$out/.claim_$kind" 2>/dev/null; then one "$kind" || rc=1; fi
    done
    return $rc
}
rm -rf "$out"/.claim_*
pids="" failed=0 l=0
while [ "$l" -lt "$jobs" ]; do
    lane &
    pids="$pids $!" l=$(( l + 1 ))
done
for p in $pids; do wait "$p" || failed=1; done
rm -rf "$out"/.claim_*
[ "$failed" = 0 ] || exit 1
python3 tools/listops_table.py "$out" | tee "$out/results.md"
# The curves (matplotlib: Debian's python3-matplotlib; PLOT_PYTHON picks the python)
"${PLOT_PYTHON:-/usr/bin/python3}" tools/listops_plot.py "$out" "$out/listops_curves.png" ||
    echo "no plot: tools/listops_plot.py needs matplotlib" >&2
