#!/usr/bin/env bash
# The test suite, from a fresh machine: set up, build, and run the default
# tier with ctest: GoogleTest unit tests, lit golden tests (the library
# proved over small ranges), end-to-end and drop-in runs under Open MPI
# and MPICH, the front-end fuzzer. About 10 minutes of ctest on 2 cores.
#
#   bash scripts/test.sh           the default tier (what CI runs)
#   bash scripts/test.sh --full    the full tier only: the library proved
#                                  over its declared ranges (ctest -C full
#                                  -L full), about 25 minutes on 2 cores
#   bash scripts/test.sh --mpich   only the runs under MPICH, end to end
#                                  and the drop-in's (ctest -L mpich)
# Other arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
select=()
args=()
for a in "$@"; do
  case "$a" in
    --full) select=(-C full -L full) ;;
    --mpich) select=(-L mpich) ;;
    *) args+=("$a") ;;
  esac
done
bash scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "${select[@]}" "${args[@]}"
