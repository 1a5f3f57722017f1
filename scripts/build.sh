#!/usr/bin/env bash
# Installs the dependencies (if missing), configures and builds collc in
# build/. Safe to run again: each part only does what is not done yet.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > build-configure.log 2>&1 || {
  cat build-configure.log; exit 1; }
rm -f build-configure.log
cmake --build build -j "$(nproc)"
