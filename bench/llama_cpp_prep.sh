#!/bin/sh
# llama.cpp and a GPT-2-124M for it, kept in WORK_DIR between runs (bench/llama_cpp_bench.sh,
# bench/serve_bench.py through make bench-serve): llama.cpp's sources from PyPI's llama-cpp-python
# sdist, its TARGETS built (default llama-bench; llama-server too for bench-serve), a random
# GPT-2-124M written by transformers (WORK_DIR/gpt2, with GPT-2's tokenizer files from
# ../shared/data/gpt2) and converted by llama.cpp's convert_hf_to_gguf.py to
# WORK_DIR/gpt2-f32.gguf and gpt2-q8_0.gguf.
#   TARGETS="llama-bench llama-server" sh bench/llama_cpp_prep.sh WORK_DIR
# HF_PY: a python with torch and transformers (build/hfvenv); CONV_PY: one with torch >= 2.1 and
# transformers for the converter (build/pt2venv plus `pip install transformers`).
set -eu
work=$1
targets=${TARGETS:-llama-bench}
hf_py=${HF_PY:-build/hfvenv/bin/python} conv_py=${CONV_PY:-build/pt2venv/bin/python}
mkdir -p "$work"
if [ ! -d "$work"/src ]; then
    # --no-binary for this package only: with :all: pip builds every build requirement from source
    # (scikit-build-core, cmake, ...) on a fresh machine to prepare the sdist's metadata (many minutes)
    /usr/bin/python3 -m pip download -q llama-cpp-python --no-deps --no-binary llama-cpp-python -d "$work"
    mkdir -p "$work"/src && tar xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"/src --strip-components=1
fi
ll=$work/src/vendor/llama.cpp
for target in $targets; do
    [ -x "$ll"/build/bin/$target ] && continue
    cmake -S "$ll" -B "$ll"/build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON > "$work"/cmake.log
    cmake --build "$ll"/build --target $target -j 2 > "$work"/build-$target.log
done
model=$work/gpt2
if [ ! -f "$model"/model.safetensors ]; then
    # transformers 5 leaves n_ctx out of GPT-2 configs; the converter reads it
    "$hf_py" -c "
import json, sys, torch, transformers
torch.manual_seed(0)
transformers.GPT2LMHeadModel(transformers.GPT2Config()).save_pretrained(sys.argv[1], safe_serialization=True)
c = json.load(open(sys.argv[1] + '/config.json')); c['n_ctx'] = c['n_positions']
json.dump(c, open(sys.argv[1] + '/config.json', 'w'), indent=1)" "$model"
    cp ../shared/data/gpt2/encoder.json "$model"/vocab.json && cp ../shared/data/gpt2/vocab.bpe "$model"/merges.txt
fi
for t in f32 q8_0; do
    [ -f "$work"/gpt2-$t.gguf ] || PYTHONPATH="$ll"/gguf-py "$conv_py" "$ll"/convert_hf_to_gguf.py "$model" \
        --outtype $t --outfile "$work"/gpt2-$t.gguf > "$work"/convert_$t.log 2>&1
done
