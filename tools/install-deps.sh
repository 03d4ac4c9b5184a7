#!/bin/sh
# Install the Debian packages tformer needs: the build and tests by default (python3 with venv, its
# headers, numpy, pytest, setuptools and wheel: the Python package and its pytest suite, which `make test`
# runs without the network; the tests against transformers and sentence-transformers need --reference);
# with --reference also PyTorch (Debian's python3-torch) for the fixture
# scripts in tests/ref/ and `make conformance`, and BLIS for `make bench`; with
# --results the data of the results runs (scikit-learn's digits, Fashion-MNIST).
# --reference also brings chromium for the serve page's test and Fashion-MNIST for the caption
# family's training on its scenes (both skipped without them).
set -eu
pkgs="build-essential make clang libcjson-dev libpcre2-dev libutf8proc-dev libopenblas-dev libpng-dev zlib1g-dev libcairo2-dev fortunes libclang-rt-14-dev libfuzzer-14-dev libomp-14-dev libopenmpi-dev openmpi-bin libmicrohttpd-dev libcurl4-openssl-dev python3 python3-venv python3-dev python3-numpy python3-pytest python3-setuptools python3-wheel"
# both may be given (`--reference --results`); anything else is refused, not ignored
for arg in "$@"; do
    case $arg in
    --reference) pkgs="$pkgs python3-torch libblis-serial-dev valgrind chromium dataset-fashion-mnist" ;;
    # the data of the results runs (make results-check, vision-results, video-results, vision-digits)
    --results) pkgs="$pkgs python3-sklearn dataset-fashion-mnist" ;;
    *) echo "install-deps: unknown argument '$arg' (--reference, --results or both)" >&2; exit 2 ;;
    esac
done
if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi
echo "install-deps: installing$missing"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
