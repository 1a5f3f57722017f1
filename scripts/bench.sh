#!/usr/bin/env bash
# The benchmark harness in one command: calibrate t_s and t_w on this
# machine, then time every collective (collc's emitted function against the
# MPI library's own) at 2 and 8 ranks, and write the results to a directory:
#   model.coll     the calibrated models (collc calibrate): a ping-pong of 2
#                  ranks, and a ring of each rank count, which the bench
#                  chooses schedules and predicts times by
#   table.txt      the terminal tables and the ratio summary
#   bench.csv      every row (medians, spreads, model, bandwidth)
#   COLLECTIVE.svg ours/MPI against size, a line per rank count
#   same-algorithm/  the same, with MPI forced to its algorithm with the
#                  schedule's steps and messages (collc bench
#                  --same-algorithm): the implementations compared alone
#
#   bash scripts/bench.sh [RESULTS_DIR]      (default bench-results/)
# Environment: BENCH_BYTES (comma-separated sizes; default 8 B..16 MiB in
# powers of 4), BENCH_QUICK=1 (8 B..1 MiB, 5 calls per size: a few minutes
# on 2 cores), BENCH_RANKS (default 2,8), BENCH_ITERATIONS, BUILD (build dir,
# default build/, built by scripts/build.sh when missing).
# From a bundle (scripts/bundle.sh DIR): bash DIR/bench.sh RESULTS_DIR runs
# DIR/bin/collc, on a machine with MPI alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ -x $here/bin/collc ]]; then
  collc=$here/bin/collc data=$here/share/collc/bench
  out=${1:-bench-results}
else
  cd "$here/.."
  out=${1:-bench-results}
  build=${BUILD:-build}
  collc=$build/collc data=bench
  if [[ ! -x $build/collc || ! -x $build/bench/coll_bench ]]; then
    if [[ -z ${BUILD:-} ]]; then bash scripts/build.sh; fi
    cmake --build "$build" --target collc coll_bench
  fi
fi
ranks=${BENCH_RANKS:-2,8}
bytes=${BENCH_BYTES:-8,32,128,512,2048,8192,32768,131072,524288,2097152,8388608,16777216}
iterations=()
if [[ ${BENCH_QUICK:-0} == 1 ]]; then
  bytes=${BENCH_BYTES:-8,128,2048,32768,262144,1048576}
  iterations=(--iterations 5)
fi
if [[ -n ${BENCH_ITERATIONS:-} ]]; then
  iterations=(--iterations "$BENCH_ITERATIONS")
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"

echo "== collc calibrate -o $out/model.coll"
"$collc" calibrate -o "$out/model.coll" | tee "$out/calibrate.txt"
# What a step costs with N ranks sharing the machine: the bench chooses and
# predicts by the model of its rank count.
models="$out/model.coll:measured"
for n in ${ranks//,/ }; do
  echo
  echo "== collc calibrate --pattern ring --ranks $n --name ring_$n"
  "$collc" calibrate --pattern ring --ranks "$n" --name "ring_$n" \
    -o "$out/model.coll" | tee -a "$out/calibrate.txt"
  models+=",$n=$out/model.coll:ring_$n"
done

# What the ranks can copy in memory at once: the bound large messages are
# printed against (bench/copy_bound.py).
for n in 1 ${ranks//,/ }; do
  echo
  echo "== collc calibrate --pattern copy --ranks $n"
  "$collc" calibrate --pattern copy --ranks "$n" --bytes 16777216,67108864 \
    | tee -a "$out/calibrate.txt"
done

echo
echo "== collc bench --collective all --ranks $ranks --bytes $bytes"
"$collc" bench --collective all --ranks "$ranks" --bytes "$bytes" \
  "${iterations[@]}" --model "$models" --csv "$out/bench.csv" \
  --svg-dir "$out" --check-choice | tee "$out/table.txt"

echo
python3 "$data/copy_bound.py" "$out/bench.csv" "$out/calibrate.txt" |
  tee -a "$out/table.txt"

echo
echo "== collc bench ... --same-algorithm"
mkdir -p "$out/same-algorithm"
"$collc" bench --collective all --ranks "$ranks" --bytes "$bytes" \
  "${iterations[@]}" --model "$models" --same-algorithm \
  --csv "$out/same-algorithm/bench.csv" --svg-dir "$out/same-algorithm" |
  tee "$out/same-algorithm/table.txt"
echo
echo "results in $out/: table.txt, bench.csv, calibrate.txt, model.coll, *.svg;"
echo "  $out/same-algorithm/: table.txt, bench.csv, *.svg"
