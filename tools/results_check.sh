#!/bin/sh
# make results-check: rerun the documented figures that take under 10 minutes
# each and compare what they print with the values the docs state, within a
# stated tolerance. Not in CI (about 10 minutes in all on 2 cores); run it after
# a change that could move a trained model's figures.
#   sh tools/results_check.sh TFORMER OUT_DIR [CHECK...]
# CHECKs: digits (docs/vision.md's digits table: tools/digits_results.sh),
# vivit (docs/video.md's Model 4 cell with tubelets, in order and shuffled:
# tools/video_results.sh with RUNS). Default: all. Prints one line a figure:
#   ok|FAIL  figure  documented  got  (tolerance)
# and exits 1 if any figure is outside its tolerance or could not be read.
# Tolerances: trained figures move with the kernels (AVX2, AVX-512, the BLAS)
# since a different rounding takes training down another path; on the machine
# that documented them they repeat to the bit. Classical baselines (scikit-learn)
# are deterministic: 1e-4.
set -eu
[ $# -ge 2 ] || { echo "usage: sh tools/results_check.sh TFORMER OUT_DIR [digits|vivit...]" >&2; exit 2; }
tf=$1 out=$2
shift 2
checks=${*:-digits vivit}
mkdir -p "$out"
bad=0

# check FIGURE DOCUMENTED GOT TOLERANCE
check() {
    if [ -z "$3" ]; then
        printf 'FAIL  %-52s %8s %8s  (not found in the output)\n' "$1" "$2" "-"
        bad=$((bad + 1))
    elif awk -v d="$2" -v g="$3" -v t="$4" 'BEGIN { x = g - d; exit !(x <= t && -x <= t) }'; then
        printf 'ok    %-52s %8s %8s  (+-%s)\n' "$1" "$2" "$3" "$4"
    else
        printf 'FAIL  %-52s %8s %8s  (+-%s)\n' "$1" "$2" "$3" "$4"
        bad=$((bad + 1))
    fi
}

# a run that failed: say which, with the end of its logs and what may be missing
failed() {
    echo "FAIL  $1: the run failed (logs in $out/$1*):" >&2
    tail -n 3 "$out/$1.txt" "$out/$1"/*.log 2>/dev/null >&2 || true
    echo "  (its data: sh tools/install-deps.sh --results)" >&2
    bad=$((bad + 1))
}

# the last number of the first line of FILE that contains TEXT
value() { grep -F -- "$2" "$1" | head -n 1 | awk '{ print $NF }'; }

for c in $checks; do
    case $c in
    digits) # docs/vision.md, "make vision-digits": about 4 minutes on 2 cores
        sh tools/digits_results.sh "$tf" "$out/digits" >"$out/digits.txt" 2>&1 || { failed digits; continue; }
        f=$out/digits.txt
        # the plain ViT as the mean of its 3 seeds: one run moves by 3.3 points with the BLAS's
        # kernels, the mean by 0.5 (0.9554 Haswell, 0.9508 SkylakeX; docs/vision.md)
        check "digits: ViT plain, mean of 3 seeds" 0.9554 "$(value "$f" "ViT plain, mean of 3 seeds:")" 0.01
        check "digits: ViT + RandAugment, drop path, EMA" 0.9554 "$(value "$f" "ViT deit:")" 0.01
        check "digits: scikit-learn SVC" 0.9582 "$(grep -F "SVC" "$f" | awk '{ print $(NF-2) }')" 0.0001
        check "digits: scikit-learn 3-nearest neighbours" 0.9666 "$(grep -F "3-nearest" "$f" | awk '{ print $(NF-2) }')" 0.0001
        check "digits: scikit-learn logistic regression" 0.9025 "$(grep -F "logistic" "$f" | awk '{ print $(NF-2) }')" 0.0001
        ;;
    vivit) # docs/video.md's table, Model 4 with tubelets: about 2 minutes on one core
        RUNS="4,tubelet,false 4,tubelet,true" sh tools/video_results.sh "$tf" "$out/vivit" >"$out/vivit.txt" 2>&1 ||
            { failed vivit; continue; }
        f=$out/vivit/results.csv
        check "ViViT Model 4, tubelets, in order: test accuracy" 0.981 \
            "$(awk -F, '$1 == 4 && $2 == "tubelet" && $3 == "false" { print $6 }' "$f")" 0.015
        check "ViViT Model 4, tubelets, frames shuffled" 0.477 \
            "$(awk -F, '$1 == 4 && $2 == "tubelet" && $3 == "true" { print $6 }' "$f")" 0.03
        ;;
    *)
        echo "results_check: unknown check '$c' (digits, vivit)" >&2
        exit 2
        ;;
    esac
done
[ "$bad" -eq 0 ] && echo "results-check: every figure within its tolerance" && exit 0
echo "results-check: $bad figure(s) outside their tolerance (logs in $out)" >&2
exit 1
