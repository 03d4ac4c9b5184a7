#!/bin/sh
# GPT-2-124M greedy decoding, tformer against llama.cpp on the same cores
# (docs/performance.md, "Int8 weights"): F32 against F32, int8 against Q8_0,
# at 1 and 2 threads, alternated ROUNDS times. llama.cpp is built from the
# sources in PyPI's llama-cpp-python sdist; the model is a random GPT-2-124M
# written by transformers and converted by llama.cpp's convert_hf_to_gguf.py.
#   sh bench/llama_cpp_bench.sh BUILD_DIR WORK_DIR
# BUILD_DIR holds bench_gpt; WORK_DIR keeps the sdist, llama.cpp's build and
# the GGUF files between runs. HF_PY: a python with torch and transformers for
# the random model (build/hfvenv); CONV_PY: one with torch >= 2.1 and
# transformers for the converter (build/pt2venv plus `pip install transformers`).
# Minutes of compiling the first time; run it on a quiet machine.
set -eu
build=$1 work=$2
rounds=${ROUNDS:-2} new=${NEW_TOKENS:-64}
hf_py=${HF_PY:-build/hfvenv/bin/python} conv_py=${CONV_PY:-build/pt2venv/bin/python}
TARGETS=llama-bench HF_PY=$hf_py CONV_PY=$conv_py sh "$(dirname "$0")"/llama_cpp_prep.sh "$work"
ll=$work/src/vendor/llama.cpp
bench_dir=$(cd "$(dirname "$0")" && pwd)
llv=$(ls "$work"/llama_cpp_python-*.tar.gz 2>/dev/null | sed -n 's/.*llama_cpp_python-\(.*\)\.tar\.gz/\1/p' | tail -1)
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $new tokens, tokens/s"
# The memory's limit for F32: a token reads the model's 498 MB of float weights once
# (bench_stream: the read rate of a plain sum, GB/s). For int8, the bytes a token reads: the
# 123.5 M weights of the products (12 blocks' 85.0 M and the tied head's 50,257 x 768) as
# tformer's packed copies, 36 bytes a block of 32 (the bytes and a float scale; the int16
# byte sums stored beside them are not read for one input row; the head's rows padded to
# 50,272), 139.0 MB; and as llama.cpp's Q8_0, 34 bytes a block, 131.2 MB. "of limit": a
# rate over bench_stream's, each with its own bytes.
# With BENCH_RECORD set (make bench-llama sets it), each row is also two rows of that record
# (bench/bench_record.py): F32 against F32 and int8 against Q8_0, with the limits as extras.
# GPT-2-124M's shape (llama_cpp_prep.sh writes the same), and the GB a token reads, once:
# float, tformer's int8, Q8_0
L=12 H=12 C=768 T=1024 V=50257
gb=$(awk -v L=$L -v C=$C -v V=$V 'BEGIN { w = L * (4 * C * C + 2 * C * 4 * C); v16 = int((V + 15) / 16) * 16
    printf "0.498 %.6f %.6f", (w + v16 * C) * 36 / 32e9, (w + V * C) * 34 / 32e9 }')
echo "| threads | llama.cpp F32 | tformer F32 | ratio | memory limit F32 | llama.cpp Q8_0 | tformer int8 | ratio | int8 limit, tformer / Q8_0 | of limit, tformer / Q8_0 |"
echo "|---|---|---|---|---|---|---|---|---|---|"
r=0
while [ $r -lt "$rounds" ]; do
    for th in 1 2; do
        lf=$("$ll"/build/bin/llama-bench -m "$work"/gpt2-f32.gguf -p 0 -n "$new" -t $th -r 3 -o csv 2>/dev/null |
            tail -1 | awk -F, '{gsub(/"/, "", $(NF-1)); print $(NF-1)}')
        lq=$("$ll"/build/bin/llama-bench -m "$work"/gpt2-q8_0.gguf -p 0 -n "$new" -t $th -r 3 -o csv 2>/dev/null |
            tail -1 | awk -F, '{gsub(/"/, "", $(NF-1)); print $(NF-1)}')
        tf=$(TFORMER_THREADS=$th "$build"/bench_gpt generate $L $H $C $T $V "$new")
        tq=$(TFORMER_QUANTIZE=int8 TFORMER_THREADS=$th "$build"/bench_gpt generate $L $H $C $T $V "$new")
        bw=$("$build"/bench_stream 512 $th)
        awk -v th=$th -v lf="$lf" -v tf="$tf" -v lq="$lq" -v tq="$tq" -v bw="$bw" -v gb="$gb" 'BEGIN {
            split(gb, g, " "); mf = g[1]; mt = g[2]; mq = g[3]
            printf "| %d | %.1f | %.1f | %.2f | %.0f (%.1f GB/s) | %.1f | %.1f | %.2f | %.0f / %.0f | %.2f / %.2f |\n", th, lf, tf,
                tf / lf, bw / mf, bw, lq, tq, tq / lq, bw / mt, bw / mq, tq * mt / bw, lq * mq / bw }'
        [ -z "${BENCH_RECORD:-}" ] || python3 - "$bench_dir" "$build"/tformer $th "$lf" "$tf" "$lq" "$tq" "$bw" "$gb" "$new" "${llv:-?}" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import bench_record
binary, th, lf, tf, lq, tq, bw = sys.argv[2], int(sys.argv[3]), *map(float, sys.argv[4:9])
mf, mt, mq = map(float, sys.argv[9].split())
work = f"GPT-2-124M greedy decoding, {sys.argv[10]} tokens"
peer = f"llama.cpp (llama-cpp-python {sys.argv[11]} sdist)"
bench_record.row("llama", work, th, tf, peer + " F32", lf, "tokens/s", "fp32", binary=binary, stream_gb_s=bw,
                 of_limit=tf * mf / bw, peer_of_limit=lf * mf / bw)
bench_record.row("llama", work, th, tq, peer + " Q8_0", lq, "tokens/s", "int8", binary=binary, stream_gb_s=bw,
                 of_limit=tq * mt / bw, peer_of_limit=lq * mq / bw)
PY
    done
    r=$((r + 1))
done
