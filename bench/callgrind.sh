#!/bin/sh
# Instruction counts (valgrind --tool=callgrind) of a fixed small GPT training
# run — counts, not seconds, so they repeat exactly whatever the machine is
# doing — for each kernel set, compared with the figures recorded in
# bench/callgrind.txt. Valgrind has no AVX-512, so its CPU reports AVX2 at most.
#   sh bench/callgrind.sh build/bench_gpt [--record]
set -eu
bin=$1
record=${2:-}
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# 2 layers, 2 heads, width 64, context 32, batch 4, vocabulary 65: 3 warm-up steps + 1
run() { # name, then environment assignments
    name=$1; shift
    env "$@" TFORMER_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell \
        valgrind --tool=callgrind --callgrind-out-file="$tmp/$name.out" "$bin" train 2 2 64 32 4 65 1 \
        >/dev/null 2>"$tmp/$name.log"
    ir=$(sed -n 's/^summary: //p' "$tmp/$name.out")
    old=$(sed -n "s/^$name //p" "$dir/callgrind.txt" 2>/dev/null | cut -d' ' -f1)
    if [ -n "$old" ]; then
        echo "$name $ir instructions (recorded $old, $(awk -v a="$ir" -v b="$old" 'BEGIN{printf "%+.2f%%", 100*(a-b)/b}'))"
    else
        echo "$name $ir instructions"
    fi
    echo "$name $ir" >>"$tmp/new.txt"
}
run portable TFORMER_ISA=portable TFORMER_BLAS=0
run avx2 TFORMER_ISA=avx2 TFORMER_BLAS=0
run avx2+openblas TFORMER_ISA=avx2
if [ "$record" = "--record" ]; then
    { echo "# bench/callgrind.sh: instructions of bench_gpt train 2 2 64 32 4 65 1 (one thread)"
      echo "# recorded $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
      cat "$tmp/new.txt"; } >"$dir/callgrind.txt"
    echo "recorded in $dir/callgrind.txt"
fi
