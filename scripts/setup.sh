#!/usr/bin/env bash
# Installs collc's build and test dependencies from Debian packages.
# Idempotent: packages already present are not touched.
set -euo pipefail

packages=(
  build-essential cmake ninja-build
  libz3-dev            # the prover
  llvm-14-dev          # LLVM Support: SourceMgr, Expected, ADT, command line
  llvm-14-tools        # lit and FileCheck for the golden tests
  clang-14 libclang-rt-14-dev  # libFuzzer and sanitizers for the fuzz target
  libboost-dev         # Spirit X3
  libgtest-dev         # unit tests
  libopenmpi-dev openmpi-bin   # the runtime's MPI backend
  mpich libmpich-dev           # the second MPI (-DCOLLC_MPI=mpich; e2e runs under both)
  gfortran             # the drop-in's Fortran test (a Fortran MPI program)
  libxml2-utils        # xmllint: collc draw's SVG is well formed
  chromium             # collc draw's SVG renders (headless screenshot test)
  python3
  python3-psutil       # lit's --timeout, a time limit per lit test
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all dependencies present"
fi
