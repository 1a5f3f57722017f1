#!/usr/bin/env bash
# The whole test suite, from a fresh machine: set up, build, and run every
# test (GoogleTest unit tests, lit golden tests, the front-end fuzzer) with
# ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
