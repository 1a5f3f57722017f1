#!/usr/bin/env bash
# A folder that runs the benchmark harness on another x86-64 Linux machine
# that has Open MPI (or the MPI this build used) and nothing else of ours:
# collc and coll_bench stripped, libz3 beside them, the specs, the drop-in
# and bench.sh, a few tens of MiB.
#
#   bash scripts/bundle.sh DIR          (after scripts/build.sh; BUILD=build)
# and there:
#   bash DIR/bench.sh RESULTS_DIR       (BENCH_RANKS=2,8,16 ...; see bench.sh)
# leaves table.txt, bench.csv, calibrate.txt and model.coll in RESULTS_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: bundle.sh DIR}
build=${BUILD:-build}
cmake --build "$build" --target collc coll_bench collc_mpi >/dev/null
rm -rf "$dir"
cmake --install "$build" --prefix "$dir" --strip >/dev/null
# Only what running needs: no headers, CMake package or static runtime.
rm -rf "$dir/include" "$dir/lib/cmake" "$dir/lib/libcollc_runtime.a" \
       "$dir/share/collc/dropin"
z3=$(ldd "$dir/bin/collc" | awk '/libz3/ {print $3}')
[[ -n $z3 ]] && cp -L "$z3" "$dir/lib/"
cp scripts/bench.sh scripts/bench_dropin.sh "$dir/"
du -sh "$dir"
