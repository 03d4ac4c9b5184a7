# tformer: `make` builds the library and the CLI, `make test` runs every test.
CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN    := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wno-unused-parameter
CPPFLAGS := -Iinclude -D_POSIX_C_SOURCE=200809L
LDLIBS  := -lcjson -lm
SAN     ?=

LIB_SRC := $(wildcard src/*/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_SRC := $(wildcard cli/*.c)
TEST_SRC := $(wildcard tests/*.c)

all: $(BUILD)/libtformer.a $(BUILD)/libtformer.so $(BUILD)/tformer

$(BUILD)/%.o: %.c include/tformer.h src/core/internal.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -fPIC -fvisibility=default -c $< -o $@

$(BUILD)/libtformer.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libtformer.so: $(LIB_OBJ)
	$(CC) -shared $(SAN) -o $@ $^ $(LDLIBS)

$(BUILD)/tformer: $(CLI_SRC) $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -o $@ $(CLI_SRC) $(BUILD)/libtformer.a $(LDLIBS)

$(BUILD)/run_tests: $(TEST_SRC) tests/test.h $(BUILD)/libtformer.a
	$(CC) $(CPPFLAGS) -Isrc $(WARN) $(CFLAGS) $(SAN) -o $@ $(TEST_SRC) $(BUILD)/libtformer.a $(LDLIBS)

# Every test; the runner's last line is "N passed, N failed".
test: all $(BUILD)/run_tests
	$(BUILD)/run_tests
	sh tests/cli_test.sh $(BUILD)/tformer

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer.
test-sanitize:
	$(MAKE) BUILD=build-san OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

# Compare against PyTorch on cases generated now with a fresh seed (needs python3-torch).
SEED ?= $(shell date +%s)
conformance: $(BUILD)/run_tests
	rm -rf $(BUILD)/fresh && python3 tests/ref/gen_torch_fixtures.py --seed $(SEED) --random-sizes --out $(BUILD)/fresh
	$(BUILD)/run_tests --fixtures $(BUILD)/fresh torch_

# A bounded libFuzzer run of the safetensors reader (clang).
FUZZ_TIME ?= 60
fuzz:
	@mkdir -p $(BUILD)/fuzz
	clang $(CPPFLAGS) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -o $(BUILD)/fuzz/fuzz_safetensors \
	    tests/fuzz/fuzz_safetensors.c src/io/safetensors.c src/core/arena.c src/core/tensor.c \
	    src/ops/*.c $(LDLIBS)
	mkdir -p $(BUILD)/fuzz/corpus && cp tests/fuzz/corpus/* $(BUILD)/fuzz/corpus/
	$(BUILD)/fuzz/fuzz_safetensors -max_total_time=$(FUZZ_TIME) -max_len=4096 -timeout=10 $(BUILD)/fuzz/corpus

clean:
	rm -rf build build-san

.PHONY: all test test-sanitize conformance fuzz clean
